//! Terminal rendering: one line per interesting event, and the agent tree of a run.

use serde_json::Value;
use std::collections::HashMap;
use tt_runtime::{AgentRunEvent, TimelineInvocation};

/// Labels invocations by profile as their creation events arrive.
#[derive(Debug, Default)]
pub struct EventPrinter {
    labels: HashMap<String, String>,
}

impl EventPrinter {
    /// The line to print for `event`, if it is worth showing.
    pub fn line(&mut self, event: &AgentRunEvent) -> Option<String> {
        let p = &event.payload;
        let s = |key: &str| p.get(key).and_then(Value::as_str).unwrap_or("").to_owned();
        if event.event_type == "agent_invocation_created" {
            self.labels.insert(s("invocationId"), s("profileId"));
        }
        let who = p
            .get("eventScope")
            .and_then(|scope| scope.get("invocationId"))
            .and_then(Value::as_str)
            .and_then(|id| self.labels.get(id).cloned())
            .unwrap_or_else(|| "run".to_owned());
        let body = match event.event_type.as_str() {
            "run_created" => format!("run created ({})", s("presentation")),
            "profile_resolved" => format!("profile {} ({})", s("profileId"), s("source")),
            "agent_invocation_created" => {
                format!("agent {} joined as {}", s("profileId"), s("kind"))
            }
            // Only the statuses a person waits on; the rest is visible in the tool lines.
            "status_changed" => match s("status").as_str() {
                status @ ("awaiting_host_commit" | "finishing" | "cancelling") => {
                    format!("status → {status}")
                }
                _ => return None,
            },
            "model_call_attempt_failed" => format!("model call failed: {}", s("message")),
            "model_call_retry_scheduled" => format!(
                "retrying in {} ms",
                p.get("intervalMs").and_then(Value::as_u64).unwrap_or(0)
            ),
            "model_completed" => {
                let calls = p.get("toolCallCount").and_then(Value::as_u64).unwrap_or(0);
                let narration = p
                    .get("narration")
                    .and_then(|n| n.get("text"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if narration.is_empty() {
                    format!("model answered with {calls} tool call(s)")
                } else {
                    format!("model: \"{narration}\" + {calls} tool call(s)")
                }
            }
            "tool_call_started" => format!("▸ {}", s("name")),
            "tool_call_completed" => format!("✓ {}", s("name")),
            "tool_call_failed" => format!("✗ {} [{}] {}", s("name"), s("errorCode"), s("message")),
            "workspace_file_written" => format!(
                "  wrote {} ({} chars, {})",
                s("path"),
                p.get("chars").and_then(Value::as_u64).unwrap_or(0),
                s("mode")
            ),
            "workspace_patch_applied" => format!(
                "  patched {} ({} replacement(s))",
                s("path"),
                p.get("replacements").and_then(Value::as_u64).unwrap_or(0)
            ),
            "direct_output_captured" => format!("  plain text saved to {}", s("path")),
            "drift_recovery_attempted" => "reminded the model to use its tools".to_owned(),
            "chat_commit_requested" => format!(
                "publishing {} ({} chars)",
                s("path"),
                p.get("chars").and_then(Value::as_u64).unwrap_or(0)
            ),
            "chat_commit_completed" => format!("published as message {}", s("messageId")),
            "persistent_changes_committed" => format!(
                "memory saved ({} change(s))",
                p.get("changeCount").and_then(Value::as_u64).unwrap_or(0)
            ),
            "run_completed" => "run completed".to_owned(),
            "run_partial_success" => format!("run ended with partial success: {}", s("message")),
            "run_failed" => format!("run failed [{}]: {}", s("code"), s("message")),
            "run_cancel_requested" => "cancel requested".to_owned(),
            "run_cancelled" => "run cancelled".to_owned(),
            _ => return None,
        };
        Some(format!("[{:>4}] {:<16} {body}", event.seq, who))
    }
}

/// The agent tree of a run, one invocation per line, children indented under their caller.
pub fn agent_tree(projection: &tt_runtime::TimelineProjection) -> String {
    let mut out = String::new();
    let roots: Vec<&TimelineInvocation> = projection
        .invocations
        .iter()
        .filter(|inv| inv.parent_invocation_id.is_none())
        .collect();
    for root in roots {
        write_node(projection, root, 0, &mut out);
    }
    if out.is_empty() {
        out.push_str("(no agents)\n");
    }
    out
}

fn write_node(
    projection: &tt_runtime::TimelineProjection,
    node: &TimelineInvocation,
    depth: usize,
    out: &mut String,
) {
    let edge = projection
        .delegation_edges
        .iter()
        .find(|edge| edge.target_invocation_id == node.invocation_id);
    let via = edge.map_or_else(String::new, |edge| {
        format!(" via {:?} [{}]", edge.continuation, edge.workspace_key)
    });
    out.push_str(&format!(
        "{}{} ({:?}, {:?}){via}\n",
        "  ".repeat(depth),
        node.profile_id,
        node.kind,
        node.status
    ));
    for child in projection
        .invocations
        .iter()
        .filter(|inv| inv.parent_invocation_id.as_ref() == Some(&node.invocation_id))
    {
        write_node(projection, child, depth + 1, out);
    }
}
