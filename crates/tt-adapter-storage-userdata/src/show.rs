//! Reading any stored record of a run by the reference events use (`argumentsRef`,
//! `modelResponsePath`, `resultRef`, …) or by its kind and id, for `tt-agent show` and hosts.

use serde_json::Value;
use tt_domain::error_codes;
use tt_domain::ids::{InvocationId, RunId, TaskId};
use tt_domain::workspace::CheckpointRecord;
use tt_ports::{
    AgentInvocationRepository, AgentRunRepository, RunDocument, StorageError, StorageResult,
};

use crate::layout::{MANIFEST_FILE, RUN_FILE, check_segment};
use crate::owned::RecordKind;
use crate::{RunAccess, UserDataStore, reader};

/// Every reference form [`UserDataStore::read_record`] understands, for error messages.
pub const RECORD_REFERENCES: &str = "run.json, manifest.json, input/<name>.json, \
input/invocations/<invocationId>/<name>.json, tool-args/<key>.json, tool-results/<key>.json, \
model-responses/[<invocationId>/]round-NNN.json, agent-results/<invocationId>.json, \
tasks/<taskId>.json, invocations/<invocationId>.json, checkpoints/<checkpointId>, \
blobs/<sha256>";

fn to_value<T: serde::Serialize>(value: T) -> StorageResult<Value> {
    serde_json::to_value(value).map_err(|err| StorageError::Other(err.to_string()))
}

/// The id in a record's file name (`<id>.json`), refused unless it is a storage segment (`what`
/// names it in the message).
fn record_id<'a>(what: &str, name: &'a str) -> StorageResult<&'a str> {
    let id = name.strip_suffix(".json").unwrap_or(name);
    check_segment(what, id)?;
    Ok(id)
}

/// The run document a reference names, if it names one.
fn document_of(reference: &str) -> Option<RunDocument> {
    RunDocument::from_relative_path(reference)
}

impl UserDataStore {
    /// The stored record `reference` names in run `run_id` (see [`RECORD_REFERENCES`]);
    /// `Ok(None)` when the run has no such record. Works for any run, from any process.
    pub async fn read_record(
        &self,
        run_id: &RunId,
        reference: &str,
    ) -> StorageResult<Option<Value>> {
        let reference = reference.trim().trim_start_matches("./");
        let unknown = || {
            StorageError::Domain(tt_domain::DomainError::new(
                error_codes::AGENT_RECORD_REFERENCE_INVALID,
                format!("`{reference}` names no kind of record; use one of: {RECORD_REFERENCES}"),
            ))
        };
        if let Some(document) = document_of(reference) {
            return self.read_document(run_id, &document).await;
        }
        let dir = self.inner.run_location(run_id)?.dir;
        let parts: Vec<&str> = reference.split('/').collect();
        let not_found_is_none = |result: StorageResult<Value>| match result {
            Ok(value) => Ok(Some(value)),
            Err(StorageError::NotFound { .. }) => Ok(None),
            Err(other) => Err(other),
        };
        match parts.as_slice() {
            [RUN_FILE] => Ok(Some(to_value(self.load_run(run_id).await?)?)),
            [MANIFEST_FILE] => crate::fsutil::read_json(&dir.join(MANIFEST_FILE)),
            ["tasks", name] => {
                let id = TaskId::from_raw(record_id("task id", name)?);
                not_found_is_none(self.load_task(run_id, &id).await.and_then(to_value))
            }
            ["invocations", name] => {
                let id = InvocationId::from_raw(record_id("invocation id", name)?);
                not_found_is_none(self.load_invocation(run_id, &id).await.and_then(to_value))
            }
            ["checkpoints", id] => {
                let id = id.strip_suffix("/checkpoint.json").unwrap_or(id);
                self.checkpoint(run_id, id)?.map(to_value).transpose()
            }
            ["blobs", sha256] => Ok(self.blob_text(run_id, sha256)?.map(Value::String)),
            _ => Err(unknown()),
        }
    }

    /// Checkpoint `id` of run `run_id`, from its writer when this process owns the run, else
    /// read from its files; `None` when the run has no such checkpoint.
    pub(crate) fn checkpoint(
        &self,
        run_id: &RunId,
        id: &str,
    ) -> StorageResult<Option<CheckpointRecord>> {
        check_segment("checkpoint id", id)?;
        match self.inner.access(run_id)? {
            RunAccess::Owned(run) => run.checkpoint(id),
            RunAccess::Reader { dir, view } => {
                self.reader_record(&dir, &view, RecordKind::Checkpoint, id)
            }
        }
    }

    /// The text of blob `sha256` of run `run_id` (`blobs.jsonl`), from its writer when this
    /// process owns the run, else read from its files.
    pub(crate) fn blob_text(&self, run_id: &RunId, sha256: &str) -> StorageResult<Option<String>> {
        check_segment("sha256", sha256)?;
        match self.inner.access(run_id)? {
            RunAccess::Owned(run) => run.blob(sha256),
            RunAccess::Reader { dir, view } => {
                reader::blob(&dir, &view.segments, &self.inner.journal_bytes_read, sha256)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_document_reference_round_trips() {
        let documents = [
            RunDocument::PromptSnapshot,
            RunDocument::ResolvedProfile,
            RunDocument::PersistSnapshot,
            RunDocument::InvocationToolSnapshot(InvocationId::from_raw("inv_a")),
            RunDocument::InvocationResolvedSkills(InvocationId::from_raw("inv_a")),
            RunDocument::InvocationResolvedSkills(InvocationId::root()),
            RunDocument::InvocationPromptSnapshot(InvocationId::from_raw("inv_a")),
            RunDocument::InvocationPromptAssembly(InvocationId::from_raw("inv_a")),
            RunDocument::ToolArgs {
                call_file_key: "call_0123".to_owned(),
            },
            RunDocument::ToolResult {
                call_file_key: "call_0123".to_owned(),
            },
            RunDocument::ModelResponse {
                invocation_id: InvocationId::root(),
                round: 7,
            },
            RunDocument::ModelResponse {
                invocation_id: InvocationId::from_raw("inv_b"),
                round: 12,
            },
            RunDocument::AgentResult(InvocationId::from_raw("inv_b")),
        ];
        for document in documents {
            assert_eq!(document_of(&document.relative_path()), Some(document));
        }
        assert_eq!(document_of("tasks/task_1.json"), None);
        assert_eq!(document_of("model-responses/round-x.json"), None);
    }
}
