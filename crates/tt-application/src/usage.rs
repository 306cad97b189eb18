//! Token usage of a run, summed per invocation and in total from the journal's
//! `model_completed` events (so it is exact for stored runs too, after a restart). Failed model
//! call attempts (`model_call_attempt_failed`) are counted apart: they return no usage. Tool
//! calls are counted from `tool_call_completed` / `tool_call_failed`, and each invocation's
//! figures are also rolled up over the sub-tree of tasks it delegated (from
//! `agent_invocation_created`'s `parentInvocationId`).

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
    /// Tool calls it made (completed or failed).
    #[serde(default)]
    pub tool_calls: u64,
    /// The invocation that created it (`None` for the root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_invocation_id: Option<String>,
    /// This invocation plus everything delegated below it, at any depth.
    #[serde(default)]
    pub subtree: UsageTotals,
}

/// Summed figures of a sub-tree.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageTotals {
    pub model_calls: u64,
    pub tool_calls: u64,
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
    let mut parents: BTreeMap<String, String> = BTreeMap::new();
    let mut tool_calls: BTreeMap<String, u64> = BTreeMap::new();
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
        for event in &page {
            let id = event.payload.get("invocationId").and_then(|v| v.as_str());
            match (event.event_type.as_str(), id) {
                ("agent_invocation_created", Some(id)) => {
                    if let Some(parent) = event
                        .payload
                        .get("parentInvocationId")
                        .and_then(|v| v.as_str())
                    {
                        parents.insert(id.to_owned(), parent.to_owned());
                    }
                }
                ("tool_call_completed" | "tool_call_failed", Some(id)) => {
                    *tool_calls.entry(id.to_owned()).or_default() += 1;
                }
                _ => {}
            }
        }
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
                    tool_calls: 0,
                    parent_invocation_id: None,
                    subtree: UsageTotals::default(),
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
    let mut by_invocation: Vec<InvocationUsage> =
        order.iter().filter_map(|id| sums.remove(id)).collect();
    for usage in &mut by_invocation {
        usage.tool_calls = tool_calls.get(&usage.invocation_id).copied().unwrap_or(0);
        usage.parent_invocation_id = parents.get(&usage.invocation_id).cloned();
    }
    // Each invocation's own figures are added to it and to every invocation above it.
    let own: Vec<(String, UsageTotals)> = by_invocation
        .iter()
        .map(|u| {
            (
                u.invocation_id.clone(),
                UsageTotals {
                    model_calls: u.model_calls,
                    tool_calls: u.tool_calls,
                    input_tokens: u.input_tokens,
                    output_tokens: u.output_tokens,
                },
            )
        })
        .collect();
    let index: BTreeMap<String, usize> = by_invocation
        .iter()
        .enumerate()
        .map(|(i, u)| (u.invocation_id.clone(), i))
        .collect();
    for (id, totals) in own {
        let mut current = Some(id);
        let mut hops = 0;
        while let Some(id) = current {
            if let Some(&i) = index.get(&id) {
                let subtree = &mut by_invocation[i].subtree;
                subtree.model_calls += totals.model_calls;
                subtree.tool_calls += totals.tool_calls;
                subtree.input_tokens += totals.input_tokens;
                subtree.output_tokens += totals.output_tokens;
            }
            // A malformed journal cannot make this loop forever.
            hops += 1;
            current = parents.get(&id).cloned().filter(|_| hops <= parents.len());
        }
    }
    Ok(RunUsage {
        model_calls: by_invocation.iter().map(|u| u.model_calls).sum(),
        failed_model_calls: by_invocation.iter().map(|u| u.failed_model_calls).sum(),
        input_tokens: by_invocation.iter().map(|u| u.input_tokens).sum(),
        output_tokens: by_invocation.iter().map(|u| u.output_tokens).sum(),
        by_invocation,
    })
}
