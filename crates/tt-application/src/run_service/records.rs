//! Reading a stored record of a run by the reference events carry (`argumentsRef`,
//! `modelResponsePath`, `resultRef`, `checkpoints/<id>`, `blobs/<sha256>`, …), through the
//! storage ports: the same call answers for the file store and for PostgreSQL (`tt-agent
//! show`, the inspector).

use serde_json::Value;
use tt_domain::error_codes;
use tt_domain::ids::{CheckpointId, InvocationId, RunId, TaskId};
use tt_ports::{RunDocument, StorageError};

use crate::error::{ApplicationError, ApplicationResult};

use super::AgentRunService;

/// Every reference form [`AgentRunService::read_record`] reads.
const RECORD_REFERENCES: &str = "run.json, manifest.json, input/<name>.json, \
input/invocations/<invocationId>/<name>.json, tool-args/<key>.json, tool-results/<key>.json, \
model-responses/[<invocationId>/]round-NNN.json, agent-results/<invocationId>.json, \
tasks/<taskId>.json, invocations/<invocationId>.json, checkpoints/<checkpointId>, blobs/<sha256>";

impl AgentRunService {
    /// The record `reference` names in run `run_id`; `Ok(None)` when the run has no such
    /// record, `agent.record_reference_invalid` when the reference names no kind of record.
    pub async fn read_record(
        &self,
        run_id: &RunId,
        reference: &str,
    ) -> ApplicationResult<Option<Value>> {
        let reference = reference.trim().trim_start_matches("./");
        let services = &self.services;
        if let Some(document) = RunDocument::from_relative_path(reference) {
            return Ok(services.runs.read_document(run_id, &document).await?);
        }
        let stem = |name: &str| name.strip_suffix(".json").unwrap_or(name).to_owned();
        match reference.split('/').collect::<Vec<_>>().as_slice() {
            ["run.json"] => Ok(Some(to_value(services.runs.load_run(run_id).await?)?)),
            ["manifest.json"] => Ok(Some(to_value(services.runs.load_manifest(run_id).await?)?)),
            ["tasks", name] => found(
                services
                    .invocations
                    .load_task(run_id, &TaskId::from_raw(stem(name)))
                    .await,
            ),
            ["invocations", name] => found(
                services
                    .invocations
                    .load_invocation(run_id, &InvocationId::from_raw(stem(name)))
                    .await,
            ),
            ["checkpoints", id] | ["checkpoints", id, "checkpoint.json"] => {
                let record = services
                    .workspace
                    .checkpoint_record(run_id, &CheckpointId::from_raw(*id))
                    .await?;
                record.map(to_value).transpose()
            }
            ["blobs", sha256] => Ok(services
                .workspace
                .checkpoint_blob(run_id, sha256)
                .await?
                .map(Value::String)),
            _ => Err(ApplicationError::fatal(
                error_codes::AGENT_RECORD_REFERENCE_INVALID,
                format!("`{reference}` names no kind of record; use one of: {RECORD_REFERENCES}"),
            )),
        }
    }
}

/// A loaded record as JSON; `None` when the store has no such record.
fn found<T: serde::Serialize>(loaded: Result<T, StorageError>) -> ApplicationResult<Option<Value>> {
    let value = loaded
        .and_then(|record| to_value(record).map_err(|err| StorageError::Other(err.to_string())));
    match value {
        Ok(value) => Ok(Some(value)),
        Err(StorageError::NotFound { .. }) => Ok(None),
        Err(other) => Err(ApplicationError::from(other)),
    }
}

fn to_value<T: serde::Serialize>(value: T) -> Result<Value, ApplicationError> {
    serde_json::to_value(value)
        .map_err(|err| ApplicationError::fatal(error_codes::AGENT_INTERNAL_ERROR, err.to_string()))
}
