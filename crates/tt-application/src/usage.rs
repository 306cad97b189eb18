//! Token usage of a run, summed per invocation and in total from the journal's
//! `model_completed` events (so it is exact for stored runs too, after a restart). Failed model
//! call attempts (`model_call_attempt_failed`) are counted apart: they return no usage.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tt_domain::ids::RunId;
use tt_domain::model::ModelUsage;
use tt_ports::{EventPage, RunJournal};

use crate::error::ApplicationResult;

/// Usage of one invocation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InvocationUsage {
    pub invocation_id: String,
    /// Model calls that completed.
    pub model_calls: u64,
    /// Model call attempts that failed (retried or not); not part of `model_calls`.
    pub failed_model_calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// Usage of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunUsage {
    /// Model calls that completed.
    pub model_calls: u64,
    /// Model call attempts that failed (retried or not); not part of `model_calls`.
    pub failed_model_calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// In order of first model call.
    pub by_invocation: Vec<InvocationUsage>,
}

/// Sums `usage` over every `model_completed` event of the run and counts the failed attempts.
pub async fn run_usage(journal: &dyn RunJournal, run_id: &RunId) -> ApplicationResult<RunUsage> {
    let mut order: Vec<String> = Vec::new();
    let mut sums: BTreeMap<String, InvocationUsage> = BTreeMap::new();
    let mut after = 0;
    loop {
        let page = journal
            .read(
                run_id,
                &EventPage {
                    after_seq: Some(after),
                    before_seq: None,
                    limit: Some(500),
                    invocation_id: None,
                },
            )
            .await?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        for event in page.iter().filter(|event| {
            event.event_type == "model_completed" || event.event_type == "model_call_attempt_failed"
        }) {
            let Some(id) = event.payload.get("invocationId").and_then(|v| v.as_str()) else {
                continue;
            };
            let entry = sums.entry(id.to_owned()).or_insert_with(|| {
                order.push(id.to_owned());
                InvocationUsage {
                    invocation_id: id.to_owned(),
                    model_calls: 0,
                    failed_model_calls: 0,
                    input_tokens: 0,
                    output_tokens: 0,
                }
            });
            if event.event_type == "model_call_attempt_failed" {
                entry.failed_model_calls += 1;
                continue;
            }
            let usage: ModelUsage = event
                .payload
                .get("usage")
                .and_then(|usage| serde_json::from_value(usage.clone()).ok())
                .unwrap_or_default();
            entry.model_calls += 1;
            entry.input_tokens += usage.input_tokens;
            entry.output_tokens += usage.output_tokens;
        }
    }
    let by_invocation: Vec<InvocationUsage> =
        order.iter().filter_map(|id| sums.remove(id)).collect();
    Ok(RunUsage {
        model_calls: by_invocation.iter().map(|u| u.model_calls).sum(),
        failed_model_calls: by_invocation.iter().map(|u| u.failed_model_calls).sum(),
        input_tokens: by_invocation.iter().map(|u| u.input_tokens).sum(),
        output_tokens: by_invocation.iter().map(|u| u.output_tokens).sum(),
        by_invocation,
    })
}
