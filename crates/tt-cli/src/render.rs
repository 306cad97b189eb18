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
            "run_interrupted" => format!(
                "run interrupted: its process went away (it was {})",
                s("previousStatus").replace('_', " ")
            ),
            "run_resumed" => format!(
                "run_resumed: {} agent(s) go on from their stored steps",
                p.get("invocations")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len)
            ),
            "agent_task_resumed" => format!(
                "  {} back to work ({})",
                agent_of(self, "childInvocationId"),
                s("status")
            ),
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

/// The agent tree of a run, one invocation per line, delegated agents under their caller.
/// The budget ledger under the tree: each agent's own model calls, tool calls and tokens, and
/// the same summed over everything it delegated (its sub-tree).
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
            "  {profile}: {} model calls, {} tool calls, {} tokens | {} model calls, {} tool calls, {} tokens",
            entry.model_calls,
            entry.tool_calls,
            entry.input_tokens + entry.output_tokens,
            entry.subtree.model_calls,
            entry.subtree.tool_calls,
            entry.subtree.input_tokens + entry.subtree.output_tokens,
        );
    }
    out
}

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
