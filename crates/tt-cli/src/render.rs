//! Terminal rendering: one line per interesting event, indented by the agent's place in the
//! tree, and the agent tree of a run.

use serde_json::Value;
use std::collections::HashMap;
use std::fmt::Write as _;
use tt_runtime::{AgentRunEvent, TimelineInvocation, TimelineProjection};

/// Follows invocation creation events to label and indent each agent's lines.
#[derive(Debug, Default)]
pub struct EventPrinter {
    /// invocation id -> (profile id, depth)
    agents: HashMap<String, (String, usize)>,
}

impl EventPrinter {
    /// The line to print for `event`, if it is worth showing.
    pub fn line(&mut self, event: &AgentRunEvent) -> Option<String> {
        let p = &event.payload;
        let s = |key: &str| p.get(key).and_then(Value::as_str).unwrap_or("").to_owned();
        let n = |key: &str| p.get(key).and_then(Value::as_u64).unwrap_or(0);
        if event.event_type == "agent_invocation_created" {
            // Delegated agents are drawn under their caller; a handoff target takes its
            // caller's place in the foreground.
            let step = usize::from(s("kind") != "handoff");
            let depth = self
                .agents
                .get(&s("parentInvocationId"))
                .map_or(0, |(_, depth)| depth + step);
            self.agents
                .insert(s("invocationId"), (s("profileId"), depth));
        }
        let scope = p
            .get("eventScope")
            .and_then(|scope| scope.get("invocationId"))
            .and_then(Value::as_str);
        let (who, depth) = scope
            .and_then(|id| self.agents.get(id).cloned())
            .unwrap_or_else(|| ("run".to_owned(), 0));
        let agent_of = |printer: &Self, key: &str| {
            p.get(key)
                .and_then(Value::as_str)
                .and_then(|id| printer.agents.get(id))
                .map_or_else(|| s("targetProfileId"), |(profile, _)| profile.clone())
        };
        // Run-level statuses belong to the run, whoever owns the foreground.
        // So do the run's own events and the user's guidance (addressed to the run).
        let (who, depth) = if event.event_type == "status_changed"
            || event.event_type.starts_with("run_")
            || event.event_type.starts_with("user_guidance_")
        {
            ("run".to_owned(), 0)
        } else {
            (who, depth)
        };
        let body = match event.event_type.as_str() {
            "run_created" => format!("run created ({})", s("presentation")),
            "agent_invocation_created" if depth == 0 => {
                format!("{} takes the foreground", s("profileId"))
            }
            "agent_invocation_created" => return None,
            "status_changed" => match s("status").as_str() {
                status @ ("awaiting_host_commit" | "finishing" | "cancelling") => {
                    format!("status → {status}")
                }
                _ => return None,
            },
            "model_call_attempt_failed" => format!("model call failed: {}", s("message")),
            "model_call_retry_scheduled" => format!("retrying in {} ms", n("intervalMs")),
            "model_completed" => {
                let narration = p
                    .get("narration")
                    .and_then(|n| n.get("text"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if narration.is_empty() {
                    return None;
                }
                format!("“{narration}”")
            }
            "model_delta" => {
                let text = s("text");
                let text = text.trim();
                if text.is_empty() {
                    return None;
                }
                // Live output, one coalesced piece at a time.
                let shown: String = text.chars().take(100).collect();
                let more = if text.chars().count() > 100 {
                    "…"
                } else {
                    ""
                };
                format!("  … {shown}{more}")
            }
            "tool_call_started" => format!("▸ {}", s("name")),
            "tool_call_failed" => format!("✗ {} [{}] {}", s("name"), s("errorCode"), s("message")),
            "workspace_file_written" => format!("  wrote {} ({} chars)", s("path"), n("chars")),
            "workspace_patch_applied" => format!(
                "  patched {} ({} replacement(s))",
                s("path"),
                n("replacements")
            ),
            "agent_delegate_started" => format!("  delegated a task to {}", s("targetProfileId")),
            "agent_task_started" => {
                format!("  {} started working", agent_of(self, "childInvocationId"))
            }
            "agent_task_completed" | "agent_task_failed" | "agent_task_cancelled" => {
                format!("  {} {}", agent_of(self, "childInvocationId"), s("status"))
            }
            "agent_await_started" => format!(
                "  waiting ({}) for {} task(s)",
                s("mode"),
                p.get("taskIds")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len)
            ),
            "agent_await_completed" => format!("  wait over: {} task(s) reported", n("taskCount")),
            "agent_results_injected" => format!(
                "  {} finished result(s) arrived automatically",
                n("taskCount")
            ),
            "agent_child_invocation_failed" => {
                format!("  a delegated task failed: {}", s("message"))
            }
            "skill_scopes_resolved" => {
                let count = p
                    .get("effectiveSkills")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
                if count == 0 {
                    return None;
                }
                format!("  {count} skill(s) available")
            }
            "user_guidance_submitted" => {
                let text: String = s("text").chars().take(100).collect();
                format!("guidance from the user: “{}”", text.trim())
            }
            "user_guidance_applied" => {
                format!(
                    "  read {} guidance note(s) before its next step",
                    n("count")
                )
            }
            "user_guidance_discarded" => format!(
                "{} guidance note(s) dropped ({})",
                n("count"),
                s("reason").replace('_', " ")
            ),
            "prompt_assembly_completed" => "  prompt assembled from its preset".to_owned(),
            "prompt_assembly_failed" => format!("  prompt assembly failed: {}", s("message")),
            "direct_output_captured" => format!("  plain text saved to {}", s("path")),
            "drift_recovery_attempted" => "reminded the model to use its tools".to_owned(),
            "chat_commit_requested" => format!("publishing {} ({} chars)", s("path"), n("chars")),
            "chat_commit_completed" => format!("published as message {}", s("messageId")),
            "persistent_changes_committed" => {
                format!("memory saved ({} change(s))", n("changeCount"))
            }
            "run_completed" => "run completed".to_owned(),
            "run_partial_success" => format!("run ended with partial success: {}", s("message")),
            "run_failed" => format!("run failed [{}]: {}", s("code"), s("message")),
            "run_cancel_requested" => "cancel requested".to_owned(),
            "run_cancelled" => "run cancelled".to_owned(),
            _ => return None,
        };
        Some(format!(
            "[{:>4}] {}{:<18} {body}",
            event.seq,
            "  ".repeat(depth),
            who
        ))
    }
}

/// The budget ledger under the agent tree: each agent's own model calls, tool calls, tokens
/// and wall time, and the same over everything it delegated (its sub-tree): summed, except
/// wall time, which is how long the branch took, followed by its agents' times added up.
pub fn usage_rollup(projection: &TimelineProjection, usage: &tt_runtime::RunUsage) -> String {
    let mut out = String::from("usage (own | with its sub-tree):\n");
    for entry in &usage.by_invocation {
        let profile = projection
            .invocations
            .iter()
            .find(|inv| inv.invocation_id.as_str() == entry.invocation_id)
            .map_or_else(
                || entry.invocation_id.clone(),
                |inv| inv.profile_id.to_string(),
            );
        let _ = writeln!(
            out,
            "  {profile}: {} model calls, {} tool calls, {} tokens, {} | {} model calls, {} tool calls, {} tokens, {} (agent time {})",
            entry.model_calls,
            entry.tool_calls,
            entry.input_tokens + entry.output_tokens,
            seconds(entry.wall_time_ms),
            entry.subtree.model_calls,
            entry.subtree.tool_calls,
            entry.subtree.input_tokens + entry.subtree.output_tokens,
            seconds(entry.subtree.wall_time_ms),
            seconds(entry.subtree.agent_time_ms),
        );
    }
    out
}

/// `1234` ms as `1.2 s` (tenths, rounded down).
fn seconds(ms: u64) -> String {
    format!("{}.{} s", ms / 1000, ms % 1000 / 100)
}

/// The agent tree of a run, one invocation per line, delegated agents under their caller.
pub fn agent_tree(projection: &TimelineProjection) -> String {
    let mut out = String::new();
    for root in projection
        .invocations
        .iter()
        .filter(|inv| inv.parent_invocation_id.is_none())
    {
        write_node(projection, root, 0, &mut out);
    }
    if out.is_empty() {
        out.push_str("(no agents)\n");
    }
    out
}

fn write_node(
    projection: &TimelineProjection,
    node: &TimelineInvocation,
    depth: usize,
    out: &mut String,
) {
    let edge = projection
        .delegation_edges
        .iter()
        .find(|edge| edge.target_invocation_id == node.invocation_id);
    let via = edge.map_or_else(String::new, |edge| {
        let how = match edge.continuation {
            tt_runtime::TaskContinuation::ReturnToParent => "delegated",
            tt_runtime::TaskContinuation::TransferControl => "handoff",
        };
        format!("  [{how}, task {}]", edge.status.as_str())
    });
    let _ = writeln!(
        out,
        "{}{} ({}, {}){via}",
        "  ".repeat(depth),
        node.profile_id,
        node.kind.as_str(),
        node.status.as_str()
    );
    for child in projection
        .invocations
        .iter()
        .filter(|inv| inv.parent_invocation_id.as_ref() == Some(&node.invocation_id))
    {
        write_node(projection, child, depth + 1, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tt_runtime::{InvocationUsage, RunUsage, UsageTotals};

    #[test]
    fn the_ledger_shows_wall_time_own_and_per_sub_tree() {
        let totals = |model_calls, tokens, wall_time_ms, agent_time_ms| UsageTotals {
            model_calls,
            tool_calls: model_calls,
            input_tokens: tokens,
            output_tokens: 0,
            wall_time_ms,
            agent_time_ms,
        };
        let entry = |id: &str, parent: Option<&str>, wall_time_ms, subtree| InvocationUsage {
            invocation_id: id.to_owned(),
            model_calls: 2,
            failed_model_calls: 0,
            input_tokens: 100,
            output_tokens: 0,
            tool_calls: 2,
            wall_time_ms,
            parent_invocation_id: parent.map(str::to_owned),
            subtree,
        };
        let usage = RunUsage {
            model_calls: 4,
            failed_model_calls: 0,
            input_tokens: 200,
            output_tokens: 0,
            by_invocation: vec![
                entry("inv_root", None, 3_050, totals(4, 200, 3_050, 4_299)),
                entry(
                    "inv_a",
                    Some("inv_root"),
                    1_249,
                    totals(2, 100, 1_249, 1_249),
                ),
            ],
        };
        let projection = TimelineProjection {
            foreground_invocation_ids: Vec::new(),
            invocations: Vec::new(),
            delegation_edges: Vec::new(),
        };
        assert_eq!(
            usage_rollup(&projection, &usage),
            "usage (own | with its sub-tree):\n\
             \x20 inv_root: 2 model calls, 2 tool calls, 100 tokens, 3.0 s | 4 model calls, 4 tool calls, 200 tokens, 3.0 s (agent time 4.2 s)\n\
             \x20 inv_a: 2 model calls, 2 tool calls, 100 tokens, 1.2 s | 2 model calls, 2 tool calls, 100 tokens, 1.2 s (agent time 1.2 s)\n"
        );
    }
}
