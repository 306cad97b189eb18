//! Terminal rendering: one line per interesting event, indented by the agent's place in the
//! tree, and the agent tree of a run.

use std::collections::HashMap;
use std::fmt::Write as _;
use tt_runtime::RunEventPayload as P;
use tt_runtime::{
    AgentRunEvent, InvocationId, ProfileId, RunEventType, TaskStatus, TimelineInvocation,
    TimelineProjection,
};

/// Follows invocation creation events to label and indent each agent's lines.
#[derive(Debug, Default)]
pub(crate) struct EventPrinter {
    /// invocation id -> (profile id, depth)
    agents: HashMap<String, (String, usize)>,
}

impl EventPrinter {
    /// The line to print for `event`, if it is worth showing. The payload is read through its
    /// typed struct (docs/events.md); an event this build does not know is not shown.
    // Long: one arm per event type the live view shows, each a line of text; split, the arms
    // would only move apart from the table they form.
    pub(crate) fn line(&mut self, event: &AgentRunEvent) -> Option<String> {
        let payload = event.typed_payload()?.ok()?;
        if let P::AgentInvocationCreated(created) = &payload {
            // Delegated agents are drawn under their caller; a handoff target takes its
            // caller's place in the foreground.
            let step = usize::from(created.kind.as_str() != "handoff");
            let depth = created
                .parent_invocation_id
                .as_ref()
                .and_then(|parent| self.agents.get(parent.as_str()))
                .map_or(0, |(_, depth)| depth + step);
            self.agents.insert(
                created.invocation_id.to_string(),
                (created.profile_id.to_string(), depth),
            );
        }
        let (who, depth) = event
            .scope_invocation_id()
            .and_then(|id| self.agents.get(id).cloned())
            .unwrap_or_else(|| ("run".to_owned(), 0));
        // The profile of a task's agent, as created, else the task's target.
        let agent_of = |printer: &Self, child: &InvocationId, target: &ProfileId| {
            printer
                .agents
                .get(child.as_str())
                .map_or_else(|| target.to_string(), |(profile, _)| profile.clone())
        };
        // Run-level statuses belong to the run, whoever owns the foreground.
        // So do the run's own events and the user's guidance (addressed to the run).
        let (who, depth) = if event.event_type.is_run_lifecycle()
            || matches!(
                event.event_type,
                RunEventType::StatusChanged
                    | RunEventType::UserGuidanceSubmitted
                    | RunEventType::UserGuidanceApplied
                    | RunEventType::UserGuidanceDiscarded
                    | RunEventType::SpendLimitReached
                    | RunEventType::SpendLimitAnswered
            ) {
            ("run".to_owned(), 0)
        } else {
            (who, depth)
        };
        let body = match &payload {
            P::RunCreated(e) => format!("run created ({})", e.presentation),
            P::AgentInvocationCreated(e) if depth == 0 => {
                format!("{} takes the foreground", e.profile_id)
            }
            P::StatusChanged(e) => match e.status.as_str() {
                status @ ("awaiting_host_commit" | "finishing" | "cancelling") => {
                    format!("status → {status}")
                }
                _ => return None,
            },
            P::ModelCallAttemptFailed(e) => format!("model call failed: {}", e.message),
            P::ModelSettingsDropped(e) => {
                let dropped: Vec<String> = e
                    .dropped
                    .iter()
                    .map(|d| format!("{} ({})", d.setting, d.reason))
                    .collect();
                format!(
                    "⚠ the connection drops settings {} does not take: {}",
                    e.provider,
                    dropped.join(", ")
                )
            }
            P::ModelCallRetryScheduled(e) => format!("retrying in {} ms", e.interval_ms),
            P::AgentInactivityWarned(e) => match e.stop_after_seconds {
                Some(stop) => format!(
                    "⚠ no activity for {} s; stopped if none in {stop} s more",
                    e.idle_seconds
                ),
                None => format!("⚠ no activity for {} s", e.idle_seconds),
            },
            P::AgentModelFallbackSwitched(e) => format!(
                "⚠ moved to fallback model {} ({}): {}",
                e.to.model_id.as_deref().unwrap_or(&e.to.provider),
                e.to.connection_ref.as_deref().unwrap_or(&e.to.provider),
                e.message
            ),
            P::ModelCompleted(e) => {
                let narration = e.narration.as_ref().map_or("", |n| n.text.as_str());
                if narration.is_empty() {
                    return None;
                }
                format!("“{narration}”")
            }
            P::ModelDelta(e) => {
                let text = e.text.trim();
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
            P::ToolCallStarted(e) => format!("▸ {}", e.name),
            P::ToolApprovalRequested(e) => {
                format!(
                    "⏸ {} waits for approval {} ({})",
                    e.tool, e.approval_id, e.reason
                )
            }
            P::ToolApprovalResolved(e) => match e.message.as_deref() {
                Some(message) => {
                    format!("  {} {} by {}: {message}", e.tool, e.decision, e.decided_by)
                }
                None => format!("  {} {} by {}", e.tool, e.decision, e.decided_by),
            },
            P::ToolApprovalCancelled(e) => {
                format!("  approval of {} withdrawn ({})", e.tool, e.reason)
            }
            P::SpendLimitReached(e) => format!(
                "⏸ the run has spent ${:.4}, reaching its spend limit of ${:.4}; it waits for a person",
                e.spent_usd, e.limit_usd
            ),
            P::SpendLimitAnswered(e) if e.decision == "raise" => format!(
                "  spend limit raised to ${:.4} by {}",
                e.limit_usd, e.decided_by
            ),
            P::SpendLimitAnswered(e) => format!(
                "  raising the spend limit refused by {}: the run stops",
                e.decided_by
            ),
            P::ToolCallFailed(e) => format!("✗ {} [{}] {}", e.name, e.error_code, e.message),
            P::WorkspaceFileWritten(e) => format!("  wrote {} ({} chars)", e.path, e.chars),
            P::WorkspacePatchApplied(e) => {
                format!("  patched {} ({} replacement(s))", e.path, e.replacements)
            }
            P::AgentDelegateStarted(e) => {
                format!("  delegated a task to {}", e.target_profile_id)
            }
            P::AgentTaskStarted(e) => format!(
                "  {} started working",
                agent_of(self, &e.child_invocation_id, &e.target_profile_id)
            ),
            P::AgentTaskCompleted(e) => task_line(
                agent_of(self, &e.child_invocation_id, &e.target_profile_id),
                e.status,
            ),
            P::AgentTaskFailed(e) => task_line(
                agent_of(self, &e.child_invocation_id, &e.target_profile_id),
                e.status,
            ),
            P::AgentTaskCancelled(e) => task_line(
                agent_of(self, &e.child_invocation_id, &e.target_profile_id),
                e.status,
            ),
            P::AgentAwaitStarted(e) => {
                format!("  waiting ({}) for {} task(s)", e.mode, e.task_ids.len())
            }
            P::AgentAwaitCompleted(e) => {
                format!("  wait over: {} task(s) reported", e.task_count)
            }
            P::AgentResultsInjected(e) => format!(
                "  {} finished result(s) arrived automatically",
                e.task_count
            ),
            P::AgentChildInvocationFailed(e) => {
                format!("  a delegated task failed: {}", e.message)
            }
            P::SkillScopesResolved(e) => {
                let count = e.effective_skills.as_array().map_or(0, Vec::len);
                if count == 0 {
                    return None;
                }
                format!("  {count} skill(s) available")
            }
            P::UserGuidanceSubmitted(e) => {
                let text: String = e.text.chars().take(100).collect();
                format!("guidance from the user: “{}”", text.trim())
            }
            P::UserGuidanceApplied(e) => {
                format!("  read {} guidance note(s) before its next step", e.count)
            }
            P::UserGuidanceDiscarded(e) => format!(
                "{} guidance note(s) dropped ({})",
                e.count,
                e.reason.replace('_', " ")
            ),
            P::PromptAssemblyCompleted(_) => "  prompt assembled from its preset".to_owned(),
            P::PromptAssemblyFailed(e) => format!("  prompt assembly failed: {}", e.message),
            P::DirectOutputCaptured(e) => format!("  plain text saved to {}", e.path),
            P::DriftRecoveryAttempted(_) => "reminded the model to use its tools".to_owned(),
            P::ContextTrimmed(e) => format!(
                "made room: {} older message(s) shortened, {} removed (~{} → ~{} of {} tokens)",
                e.stubbed_messages.len(),
                e.removed_messages.len(),
                e.estimated_tokens_before,
                e.estimated_tokens_after,
                e.window_tokens
            ),
            P::ToolOutputSaved(e) => {
                format!("  long output saved to {} ({} chars)", e.path, e.chars)
            }
            P::ContextCompacted(e) => format!(
                "made room: {} older message(s) summarized (~{} → ~{} of {} tokens)",
                e.replaced_messages,
                e.estimated_tokens_before,
                e.estimated_tokens_after,
                e.window_tokens
            ),
            P::ChatCommitRequested(e) => format!("publishing {} ({} chars)", e.path, e.chars),
            P::ChatCommitCompleted(e) => format!("published as message {}", e.message_id),
            P::PersistentChangesCommitted(e) => {
                format!("memory saved ({} change(s))", e.change_count)
            }
            P::RunCompleted(_) => "run completed".to_owned(),
            P::RunPartialSuccess(e) => format!("run ended with partial success: {}", e.message),
            P::RunFailed(e) => format!("run failed [{}]: {}", e.code, e.message),
            P::RunCancelRequested(_) => "cancel requested".to_owned(),
            P::RunCancelled(_) => "run cancelled".to_owned(),
            P::RunInterrupted(e) if e.reason == "owner_exited" => format!(
                "run interrupted: its process went away (it was {})",
                e.previous_status.as_str().replace('_', " ")
            ),
            P::RunInterrupted(e) => format!(
                "run reopened to resume ({}): it was {}",
                e.reason.replace('_', " "),
                e.previous_status.as_str().replace('_', " ")
            ),
            P::RunReopened(e) => format!(
                "run reopened: it had ended {}; {} task(s) and {} agent(s) are taken up again",
                e.previous_status.as_str().replace('_', " "),
                e.reopened_task_ids.len(),
                e.reopened_invocation_ids.len()
            ),
            P::RunAbandoned(e) => format!(
                "run abandoned: it stays {} and is never resumed",
                e.status.as_str().replace('_', " ")
            ),
            P::RunResumed(e) => format!(
                "run resumed: {} agent(s) go on from their stored steps",
                e.invocations.len()
            ),
            P::AgentTaskResumed(e) => format!(
                "  {} back to work ({})",
                agent_of(self, &e.child_invocation_id, &e.target_profile_id),
                e.status.as_str()
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

/// "<agent> completed", "<agent> failed", … for a task's end.
fn task_line(agent: String, status: TaskStatus) -> String {
    format!("  {agent} {}", status.as_str())
}

/// The run's totals: model calls (and failed attempts), tokens in and out with the cached
/// part, and the cost of the priced calls, or that it is unknown when no call had a price.
pub(crate) fn usage_total(usage: &tt_runtime::RunUsage) -> String {
    let cost = match usage.cost_usd {
        Some(usd) if usage.unpriced_model_calls > 0 => format!(
            "${usd:.4} + {} unpriced call(s), not counted",
            usage.unpriced_model_calls
        ),
        Some(usd) => format!("${usd:.4}"),
        None if usage.model_calls == 0 => "$0 (no model call)".to_owned(),
        None => "unknown: the model has no price (docs/providers.md, \"Cost\")".to_owned(),
    };
    format!(
        "run: {} model calls ({} failed attempts), {} input tokens{}, {} output tokens, cost {cost}\n",
        usage.model_calls,
        usage.failed_model_calls,
        usage.input_tokens,
        cached(usage.cached_input_tokens),
        usage.output_tokens,
    )
}

/// The budget ledger under the agent tree: each agent's own model calls, tool calls, tokens
/// and wall time, and the same over everything it delegated (its sub-tree): summed, except
/// wall time, which is how long the branch took, followed by its agents' times added up.
pub(crate) fn usage_rollup(
    projection: &TimelineProjection,
    usage: &tt_runtime::RunUsage,
) -> String {
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
            "  {profile}: {} model calls, {} tool calls, {} tokens{}{}, {} | {} model calls, {} tool calls, {} tokens{}{}, {} (agent time {})",
            entry.model_calls,
            entry.tool_calls,
            entry.input_tokens + entry.output_tokens,
            cached(entry.cached_input_tokens),
            cost(
                entry.cost_usd,
                entry.unpriced_model_calls,
                entry.model_calls
            ),
            seconds(entry.wall_time_ms),
            entry.subtree.model_calls,
            entry.subtree.tool_calls,
            entry.subtree.input_tokens + entry.subtree.output_tokens,
            cached(entry.subtree.cached_input_tokens),
            cost(
                entry.subtree.cost_usd,
                entry.subtree.unpriced_model_calls,
                entry.subtree.model_calls
            ),
            seconds(entry.subtree.wall_time_ms),
            seconds(entry.subtree.agent_time_ms),
        );
    }
    if let Some(line) = inherited_usage(usage) {
        let _ = writeln!(out, "  {line}");
    }
    out
}

/// A branch's line for what its source had paid before the fork point, which the figures of
/// the branch leave out; `None` for a run that is not a branch.
pub(crate) fn inherited_usage(usage: &tt_runtime::RunUsage) -> Option<String> {
    let inherited = usage.inherited.as_ref()?;
    Some(format!(
        "inherited from {} up to seq {} (paid by that run, not counted above): {} model calls, {} tool calls, {} tokens{}{}",
        inherited.run_id,
        inherited.seq,
        inherited.model_calls,
        inherited.tool_calls,
        inherited.input_tokens + inherited.output_tokens,
        cached(inherited.cached_input_tokens),
        cost(
            inherited.cost_usd,
            inherited.unpriced_model_calls,
            inherited.model_calls
        ),
    ))
}

/// One line per agent: its provider and model, the model's window and price when known, and
/// the generation settings its requests carry.
pub(crate) fn model_bindings(projection: &TimelineProjection, events: &[AgentRunEvent]) -> String {
    let mut out = String::from("models:\n");
    for event in events {
        let b = match event.typed_payload() {
            Some(Ok(tt_runtime::RunEventPayload::AgentModelBindingResolved(b))) => b,
            Some(Ok(tt_runtime::RunEventPayload::AgentModelFallbackSwitched(s))) => {
                let _ = writeln!(out, "{}", fallback_switch(projection, &s));
                continue;
            }
            _ => continue,
        };
        let who = agent_profile(projection, &b.invocation_id, &b.profile_id);
        let mut line = format!("  {who}: {}", b.provider);
        if let Some(model) = &b.model_id {
            let _ = write!(line, " {model}");
        }
        if let Some(connection) = &b.connection_ref {
            let _ = write!(line, " (connection {connection})");
        }
        if let Some(window) = b.context_window_tokens {
            let _ = write!(line, ", window {window} tokens");
            match (
                b.context_window_source.as_deref(),
                &b.context_window_endpoint,
            ) {
                (Some("server"), Some(endpoint)) => {
                    let _ = write!(line, " (from the server's {endpoint})");
                }
                (Some("modelId"), _) => line.push_str(" (known for the model id)"),
                (Some(source), _) => {
                    let _ = write!(line, " (declared by the {source})");
                }
                (None, _) => {}
            }
        }
        if let Some(price) = b.price {
            let _ = write!(
                line,
                ", ${}/${} per million tokens in/out",
                price.input, price.output
            );
        }
        if let Some(generation) = &b.generation {
            let _ = write!(
                line,
                ", settings {}",
                serde_json::to_string(generation).unwrap_or_default()
            );
        }
        let _ = writeln!(out, "{line}");
    }
    out
}

/// The profile of the agent `invocation_id` in `projection`, else `profile_id` (what the
/// event said).
fn agent_profile(
    projection: &TimelineProjection,
    invocation_id: &InvocationId,
    profile_id: &ProfileId,
) -> String {
    projection
        .invocations
        .iter()
        .find(|inv| &inv.invocation_id == invocation_id)
        .map_or_else(|| profile_id.to_string(), |inv| inv.profile_id.to_string())
}

/// `  critic: moved to openai qwen (connection local) at round 3 after rate_limited
/// (model.provider_rate_limited), window 128000 tokens, $0.5/$1.5 per million tokens in/out`:
/// a switch to a fallback model (`model.fallbacks`), under the binding it replaced.
fn fallback_switch(
    projection: &TimelineProjection,
    s: &tt_runtime::event_payload::AgentModelFallbackSwitched,
) -> String {
    let who = agent_profile(projection, &s.invocation_id, &s.profile_id);
    let mut line = format!("  {who}: moved to {}", s.to.provider);
    if let Some(model) = &s.to.model_id {
        let _ = write!(line, " {model}");
    }
    if let Some(connection) = &s.to.connection_ref {
        let _ = write!(line, " (connection {connection})");
    }
    let _ = write!(
        line,
        " at round {} after {} ({})",
        s.round, s.reason, s.code
    );
    if let Some(window) = s.context_window_tokens {
        let _ = write!(line, ", window {window} tokens");
    }
    if let Some(price) = s.price {
        let _ = write!(
            line,
            ", ${}/${} per million tokens in/out",
            price.input, price.output
        );
    }
    line
}

/// `, $0.0123` when some calls were priced (` + N unpriced` when not all were); nothing when
/// none was (`usd` is `None`: unpriced is never shown as free).
pub(crate) fn cost(usd: Option<f64>, unpriced: u64, calls: u64) -> String {
    let Some(usd) = usd.filter(|_| unpriced < calls) else {
        return String::new();
    };
    let unpriced = match unpriced {
        0 => String::new(),
        n => format!(" + {n} unpriced call(s)"),
    };
    format!(", ${usd:.4}{unpriced}")
}

/// ` (N cached)` when a provider served part of the input from its prompt cache.
fn cached(tokens: u64) -> String {
    match tokens {
        0 => String::new(),
        n => format!(" ({n} cached)"),
    }
}

/// `1234` ms as `1.2 s` (tenths, rounded down).
fn seconds(ms: u64) -> String {
    format!("{}.{} s", ms / 1000, ms % 1000 / 100)
}

/// The agent tree of a run, one invocation per line, delegated agents under their caller.
pub(crate) fn agent_tree(projection: &TimelineProjection) -> String {
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
    use serde_json::Value;
    use tt_runtime::{InvocationUsage, RunUsage, UsageTotals};

    /// One event of every type (the catalogue's samples), after a root agent and one delegated
    /// agent were created, each scoped to the agent its payload names.
    fn sample_events() -> Vec<AgentRunEvent> {
        let samples: serde_json::Map<String, Value> =
            serde_json::from_str(include_str!("../../tt-testkit/src/event_samples.json")).unwrap();
        let created = |invocation: &str, parent: Option<&str>, profile: &str| {
            serde_json::json!({
                "invocationId": invocation, "parentInvocationId": parent, "profileId": profile,
                "kind": if parent.is_some() { "subagent" } else { "root" }, "status": "created",
                "exitPolicy": if parent.is_some() { "task_return_required" } else { "run_finish_allowed" },
            })
        };
        let mut typed: Vec<(String, Value)> = vec![
            (
                "agent_invocation_created".to_owned(),
                created("inv_root", None, "writer"),
            ),
            (
                "agent_invocation_created".to_owned(),
                created(
                    "inv_00000000000000000000000000000002",
                    Some("inv_root"),
                    "critic",
                ),
            ),
        ];
        typed.extend(samples);
        typed
            .into_iter()
            .enumerate()
            .map(|(i, (event_type, mut payload))| {
                let scope = ["invocationId", "childInvocationId", "parentInvocationId"]
                    .iter()
                    .find_map(|key| payload.get(*key).and_then(Value::as_str))
                    .unwrap_or("inv_root")
                    .to_owned();
                payload["eventScope"] = serde_json::json!({"invocationId": scope});
                serde_json::from_value(serde_json::json!({
                    "seq": i + 1, "id": format!("evt_{i}"), "runId": "run_1",
                    "timestamp": "2026-01-01T00:00:00.000Z", "level": "info",
                    "type": event_type, "payload": payload,
                }))
                .unwrap()
            })
            .collect()
    }

    #[test]
    fn the_live_log_shows_one_line_per_event_worth_showing() {
        let mut printer = EventPrinter::default();
        let lines: Vec<String> = sample_events()
            .iter()
            .filter_map(|event| printer.line(event))
            .collect();
        insta::assert_snapshot!(lines.join("\n"));
    }

    #[test]
    fn the_graph_names_each_agents_model_window_price_and_settings() {
        let projection = TimelineProjection {
            foreground_invocation_ids: Vec::new(),
            invocations: Vec::new(),
            delegation_edges: Vec::new(),
            damage: Vec::new(),
        };
        insta::assert_snapshot!(model_bindings(&projection, &sample_events()));
    }

    #[test]
    fn the_total_never_shows_an_unpriced_run_as_free() {
        let unpriced = RunUsage {
            model_calls: 2,
            input_tokens: 300,
            output_tokens: 20,
            unpriced_model_calls: 2,
            ..RunUsage::default()
        };
        assert_eq!(
            usage_total(&unpriced),
            "run: 2 model calls (0 failed attempts), 300 input tokens, 20 output tokens, cost unknown: the model has no price (docs/providers.md, \"Cost\")\n"
        );
        let priced = RunUsage {
            cost_usd: Some(0.0125),
            unpriced_model_calls: 1,
            ..unpriced
        };
        assert!(usage_total(&priced).ends_with("cost $0.0125 + 1 unpriced call(s), not counted\n"));
    }

    #[test]
    fn the_ledger_shows_wall_time_own_and_per_sub_tree() {
        let totals = |model_calls, tokens, wall_time_ms, agent_time_ms| UsageTotals {
            model_calls,
            tool_calls: model_calls,
            input_tokens: tokens,
            cached_input_tokens: tokens / 4,
            cost_usd: Some(tokens as f64 / 8000.0),
            wall_time_ms,
            agent_time_ms,
            ..UsageTotals::default()
        };
        let entry = |id: &str, parent: Option<&str>, wall_time_ms, subtree| InvocationUsage {
            invocation_id: id.to_owned(),
            model_calls: 2,
            input_tokens: 100,
            cached_input_tokens: 25,
            cost_usd: Some(0.0125),
            unpriced_model_calls: u64::from(parent.is_some()),
            tool_calls: 2,
            wall_time_ms,
            parent_invocation_id: parent.map(str::to_owned),
            subtree,
            ..InvocationUsage::default()
        };
        let usage = RunUsage {
            model_calls: 4,
            input_tokens: 200,
            by_invocation: vec![
                entry("inv_root", None, 3_050, totals(4, 200, 3_050, 4_299)),
                entry(
                    "inv_a",
                    Some("inv_root"),
                    1_249,
                    totals(2, 100, 1_249, 1_249),
                ),
            ],
            ..RunUsage::default()
        };
        let projection = TimelineProjection {
            foreground_invocation_ids: Vec::new(),
            invocations: Vec::new(),
            delegation_edges: Vec::new(),
            damage: Vec::new(),
        };
        assert_eq!(
            usage_rollup(&projection, &usage),
            "usage (own | with its sub-tree):\n\
             \x20 inv_root: 2 model calls, 2 tool calls, 100 tokens (25 cached), $0.0125, 3.0 s | 4 model calls, 4 tool calls, 200 tokens (50 cached), $0.0250, 3.0 s (agent time 4.2 s)\n\
             \x20 inv_a: 2 model calls, 2 tool calls, 100 tokens (25 cached), $0.0125 + 1 unpriced call(s), 1.2 s | 2 model calls, 2 tool calls, 100 tokens (25 cached), $0.0125, 1.2 s (agent time 1.2 s)\n"
        );
    }
    #[test]
    fn a_branchs_ledger_says_what_it_inherited_apart() {
        let mut usage = RunUsage::default();
        assert_eq!(inherited_usage(&usage), None);
        usage.inherited = Some(tt_runtime::InheritedUsage {
            run_id: "run_source".to_owned(),
            seq: 42,
            model_calls: 3,
            input_tokens: 90,
            output_tokens: 10,
            cost_usd: Some(0.5),
            tool_calls: 2,
            ..tt_runtime::InheritedUsage::default()
        });
        assert_eq!(
            inherited_usage(&usage).unwrap(),
            "inherited from run_source up to seq 42 (paid by that run, not counted above): 3 model calls, 2 tool calls, 100 tokens, $0.5000"
        );
    }
}
