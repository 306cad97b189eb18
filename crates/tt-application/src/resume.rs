//! Resuming an interrupted run (`AgentRunService::resume_run`, docs/resume.md): reading back
//! from the journal and the stored records what each unfinished agent already did, checking
//! that the profiles still give each agent the tools it was frozen with, and bringing the run,
//! its agents and its tasks back to work with journaled events.

use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use tt_domain::error_codes;
use tt_domain::event::{AgentRunEvent, EventLevel, RunEventType};
use tt_domain::event_payload as payload;
use tt_domain::ids::{CommitId, InvocationId, RunId, TaskId};
use tt_domain::invocation::{AgentInvocation, ExitPolicy, InvocationStatus};
use tt_domain::model::AgentModelResponse;
use tt_domain::profile::ResolvedProfile;
use tt_domain::run::{AgentRun, Presentation};
use tt_domain::task::{AgentTaskRecord, TaskContinuation, TaskStatus, TaskTransition};
use tt_domain::tool::AgentToolResult;
use tt_ports::RunDocument;

use crate::engine::context::{CommitRecord, RunContext};
use crate::engine::records::call_file_key;
use crate::error::{ApplicationError, ApplicationResult};
use crate::journal_read::{JournalPages, guidance_ids, payload_strings, round_of};
use crate::replay::{Replay, UnregisteredAgent};
use crate::services::RuntimeServices;

/// What the journal says about an interrupted run.
#[derive(Debug, Default)]
pub(crate) struct JournalState {
    /// `run_interrupted.lastSeq` of the latest interruption.
    pub from_seq: u64,
    /// Stored steps by invocation (model responses and tool results are read separately).
    pub replays: HashMap<InvocationId, Replay>,
    /// Calls with a stored result, by invocation: (round, call id).
    pub stored_calls: HashMap<InvocationId, Vec<(u32, String)>>,
    /// Confirmed commits in order, with the agent and the file key of the call that made them.
    pub commits: Vec<(InvocationId, String, CommitRecord)>,
    /// Calls journaled `tool_call_started`, by invocation: (round, call id).
    pub started_calls: HashMap<InvocationId, Vec<(u32, String)>>,
    /// Invocations that had started their loop.
    pub started: HashSet<InvocationId>,
    /// Invocations whose `agent_invocation_created` was journaled, with the task it named.
    pub created: HashMap<InvocationId, Option<TaskId>>,
    /// Last journaled sha256 of each workspace file.
    pub written: BTreeMap<String, String>,
    /// Whether the interrupted process journaled `persistent_changes_committed`.
    pub promoted: bool,
    /// Every guidance note submitted to the run, in order (`user_guidance_submitted`); the
    /// mailbox numbers new notes after them.
    pub guidance_submitted: u64,
    /// Guidance submitted but neither read nor dropped when the process died, in order:
    /// (guidance id, client guidance id, text). The resumed mailbox holds it again.
    pub pending_guidance: Vec<(String, Option<String>, String)>,
    /// The run's spend and its spend approval, as journaled.
    pub spend: crate::spend_limit::JournaledSpend,
}

/// The decision a journaled `tool_approval_resolved` recorded.
fn journaled_decision(
    resolved: &payload::ToolApprovalResolved,
) -> Option<tt_domain::approval::ApprovalDecision> {
    use tt_domain::approval::ApprovalDecision;
    match resolved.decision.as_str() {
        "approve" => Some(ApprovalDecision::Approve),
        "approve_with_arguments" => Some(ApprovalDecision::ApproveWithArguments {
            arguments: resolved.arguments.clone()?,
        }),
        "deny" => Some(ApprovalDecision::Deny {
            message: resolved.message.clone(),
        }),
        _ => None,
    }
}

fn text(event: &AgentRunEvent, field: &str) -> Option<String> {
    event
        .payload
        .get(field)
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The context-window step a `context_trimmed` or `context_compacted` event journaled.
fn context_step(event: &AgentRunEvent) -> Option<crate::replay::ContextStep> {
    use crate::replay::ContextStep;
    use tt_domain::event_payload::RunEventPayload;
    let to_index = |index: u64| usize::try_from(index).ok();
    match event.typed_payload()?.ok()? {
        RunEventPayload::ContextTrimmed(trimmed) => {
            Some(ContextStep::Trim(tt_domain::context_window::TrimPlan {
                removed: trimmed
                    .removed_messages
                    .into_iter()
                    .filter_map(to_index)
                    .collect(),
                stubbed: trimmed
                    .stubbed_messages
                    .into_iter()
                    .filter_map(to_index)
                    .collect(),
            }))
        }
        RunEventPayload::ContextCompacted(compacted) => Some(ContextStep::Summary {
            first: to_index(compacted.first_message)?,
            count: to_index(compacted.replaced_messages)?,
            summary: compacted.summary,
            kept: compacted.kept_message.and_then(to_index),
        }),
        _ => None,
    }
}

/// Reads the whole journal of `run_id` once, in pages.
pub(crate) async fn read_journal(
    services: &RuntimeServices,
    run_id: &RunId,
) -> ApplicationResult<JournalState> {
    let mut reader = JournalReader::default();
    let mut pages = JournalPages::new(services.journal.as_ref(), run_id);
    while let Some(page) = pages.next().await? {
        for event in &page {
            reader.read(event);
        }
    }
    Ok(reader.state)
}

/// The fold of [`read_journal`]: the state read so far and what later events refer back to.
#[derive(Default)]
struct JournalReader {
    state: JournalState,
    /// Per invocation: the round of its last stored response.
    last_round: HashMap<InvocationId, u32>,
    /// Per invocation: the file key of its last started call.
    last_call: HashMap<InvocationId, String>,
    guidance_texts: HashMap<String, String>,
    /// The run's confirmed commits so far (`chat_commit_recorded`), which reminders and
    /// injected results mention.
    commits: usize,
}

impl JournalReader {
    fn read(&mut self, event: &AgentRunEvent) {
        let invocation = text(event, "invocationId").map(InvocationId::from_raw);
        let state = &mut self.state;
        state.spend.read(event);
        match &event.event_type {
            RunEventType::RunInterrupted => {
                state.from_seq = event
                    .payload
                    .get("lastSeq")
                    .and_then(Value::as_u64)
                    .unwrap_or(event.seq.saturating_sub(1));
            }
            RunEventType::AgentInvocationStarted => {
                if let Some(id) = invocation {
                    state.started.insert(id);
                }
            }
            RunEventType::AgentInvocationCreated => {
                if let Some(id) = invocation {
                    let task = text(event, "taskId").map(|task| TaskId::from_raw(&task));
                    state.created.insert(id, task);
                }
            }
            RunEventType::ModelResponseStored => {
                if let (Some(id), Some(round)) = (invocation, round_of(event)) {
                    state
                        .replays
                        .entry(id.clone())
                        .or_default()
                        .record_journaled_round(round, self.commits);
                    self.last_round.insert(id, round);
                }
            }
            RunEventType::AgentModelFallbackSwitched => {
                let index = event.payload.get("fallbackIndex").and_then(Value::as_u64);
                if let (Some(id), Some(index)) =
                    (invocation, index.and_then(|i| u32::try_from(i).ok()))
                {
                    state.replays.entry(id).or_default().record_fallback(index);
                }
            }
            RunEventType::ToolCallStarted => self.call_started(event, invocation),
            RunEventType::ToolApprovalResolved => self.approval_resolved(event),
            RunEventType::TaskReturnGraded => self.return_graded(event),
            RunEventType::ToolResultStored => self.result_stored(event, invocation),
            RunEventType::AgentResultsInjected => self.results_injected(event, invocation),
            RunEventType::ChatCommitStarted => {
                if let (Some(id), Some(commit)) = (invocation, text(event, "commitId"))
                    && let Some(key) = self.last_call.get(&id).cloned()
                {
                    state
                        .replays
                        .entry(id)
                        .or_default()
                        .record_commit_id(key, CommitId::from_raw(&commit));
                }
            }
            RunEventType::ChatCommitRecorded => self.commit_recorded(event, invocation),
            RunEventType::UserGuidanceSubmitted => self.guidance_submitted(event),
            RunEventType::UserGuidanceDiscarded => {
                let done = guidance_ids(event);
                state
                    .pending_guidance
                    .retain(|(id, _, _)| !done.contains(id));
            }
            RunEventType::UserGuidanceApplied => self.guidance_applied(event, invocation),
            RunEventType::ContextTrimmed | RunEventType::ContextCompacted => {
                if let (Some(id), Some(round), Some(step)) =
                    (invocation, round_of(event), context_step(event))
                {
                    state
                        .replays
                        .entry(id)
                        .or_default()
                        .record_context_step(round, step);
                }
            }
            RunEventType::PersistentChangesCommitted => state.promoted = true,
            RunEventType::WorkspaceFileWritten | RunEventType::WorkspacePatchApplied => {
                if let (Some(path), Some(sha256)) = (text(event, "path"), text(event, "sha256")) {
                    state.written.insert(path, sha256);
                }
            }
            _ => {}
        }
    }

    fn call_started(&mut self, event: &AgentRunEvent, invocation: Option<InvocationId>) {
        let (Some(id), Some(round), Some(call)) =
            (invocation, round_of(event), text(event, "callId"))
        else {
            return;
        };
        let key = call_file_key(&id, round, &call);
        self.state
            .replays
            .entry(id.clone())
            .or_default()
            .record_started(key.clone());
        self.state
            .started_calls
            .entry(id.clone())
            .or_default()
            .push((round, call));
        self.last_call.insert(id, key);
    }

    fn approval_resolved(&mut self, event: &AgentRunEvent) {
        if let Ok(resolved) =
            serde_json::from_value::<payload::ToolApprovalResolved>(event.payload.clone())
            && let Some(decision) = journaled_decision(&resolved)
        {
            let key = call_file_key(&resolved.invocation_id, resolved.round, &resolved.call_id);
            self.state
                .replays
                .entry(resolved.invocation_id.clone())
                .or_default()
                .record_approval(key, decision, resolved.decided_by);
        }
    }

    fn return_graded(&mut self, event: &AgentRunEvent) {
        if let Ok(graded) =
            serde_json::from_value::<payload::TaskReturnGraded>(event.payload.clone())
        {
            let key = call_file_key(&graded.invocation_id, graded.round, &graded.call_id);
            self.state
                .replays
                .entry(graded.invocation_id.clone())
                .or_default()
                .record_grading(key, graded);
        }
    }

    fn result_stored(&mut self, event: &AgentRunEvent, invocation: Option<InvocationId>) {
        if let (Some(id), Some(round), Some(call)) =
            (invocation, round_of(event), text(event, "callId"))
        {
            self.state
                .replays
                .entry(id.clone())
                .or_default()
                .record_journaled_result(call_file_key(&id, round, &call));
            self.state
                .stored_calls
                .entry(id)
                .or_default()
                .push((round, call));
        }
    }

    fn results_injected(&mut self, event: &AgentRunEvent, invocation: Option<InvocationId>) {
        let Some(id) = invocation else {
            return;
        };
        let tasks: Vec<TaskId> = payload_strings(event, "taskIds")
            .map(TaskId::from_raw)
            .collect();
        let round = self.last_round.get(&id).copied().unwrap_or(0);
        self.state
            .replays
            .entry(id)
            .or_default()
            .record_injection(round, tasks, self.commits);
    }

    fn commit_recorded(&mut self, event: &AgentRunEvent, invocation: Option<InvocationId>) {
        if let (Some(id), Some(path), Some(mode), Some(message_id)) = (
            invocation,
            text(event, "path"),
            text(event, "mode"),
            text(event, "messageId"),
        ) {
            self.commits += 1;
            let key = self.last_call.get(&id).cloned().unwrap_or_default();
            let round = self.last_round.get(&id).copied().unwrap_or(0);
            self.state.commits.push((
                id,
                key,
                CommitRecord {
                    path,
                    mode,
                    message_id,
                    round,
                },
            ));
        }
    }

    fn guidance_submitted(&mut self, event: &AgentRunEvent) {
        if let (Some(id), Some(note)) = (text(event, "guidanceId"), text(event, "text")) {
            self.state.guidance_submitted += 1;
            self.state.pending_guidance.push((
                id.clone(),
                text(event, "clientGuidanceId"),
                note.clone(),
            ));
            self.guidance_texts.insert(id, note);
        }
    }

    fn guidance_applied(&mut self, event: &AgentRunEvent, invocation: Option<InvocationId>) {
        let done = guidance_ids(event);
        self.state
            .pending_guidance
            .retain(|(id, _, _)| !done.contains(id));
        if let (Some(id), Some(round)) = (invocation, round_of(event)) {
            let texts: Vec<String> = payload_strings(event, "guidanceIds")
                .filter_map(|id| self.guidance_texts.get(id).cloned())
                .collect();
            self.state
                .replays
                .entry(id)
                .or_default()
                .record_guidance(round, texts);
        }
    }
}

/// The stored steps of `invocation`: its responses round by round until the first missing
/// one, and its stored tool results. `invocations` are the run's agent records.
pub(crate) async fn load_replay(
    services: &RuntimeServices,
    run_id: &RunId,
    invocation: &InvocationId,
    invocations: &[AgentInvocation],
    journal: &mut JournalState,
) -> ApplicationResult<Replay> {
    let mut replay = journal.replays.remove(invocation).unwrap_or_default();
    for (path, sha256) in &journal.written {
        replay.record_written(path.clone(), sha256.clone());
    }
    for round in 1u32.. {
        let document = RunDocument::ModelResponse {
            invocation_id: invocation.clone(),
            round,
        };
        let Some(stored) = services.runs.read_document(run_id, &document).await? else {
            break;
        };
        let response: AgentModelResponse = decode(&stored["response"], &document)?;
        replay.record_response(round, response);
    }
    let mut stored_keys = HashSet::new();
    // Tasks whose `agent.delegate` answer reached the agent.
    let mut answered_tasks = HashSet::new();
    // Calls whose result the journal records, then calls whose result was written but not
    // journaled before the interruption.
    let journaled = journal.stored_calls.remove(invocation).unwrap_or_default();
    let started = journal
        .started_calls
        .get(invocation)
        .cloned()
        .unwrap_or_default();
    for (round, call_id) in journaled.iter().chain(&started) {
        let key = call_file_key(invocation, *round, call_id);
        if stored_keys.contains(&key) {
            continue;
        }
        let document = RunDocument::ToolResult {
            call_file_key: key.clone(),
        };
        if let Some(stored) = services.runs.read_document(run_id, &document).await? {
            let result: AgentToolResult = decode(&stored, &document)?;
            if let Some(task) = result.structured.get("taskId").and_then(Value::as_str) {
                answered_tasks.insert(task.to_owned());
            }
            stored_keys.insert(key.clone());
            replay.record_result(key, result);
        }
    }
    // A call that registered its task before the interruption: an `agent.delegate` that left
    // no result (the task record names the call, and no stored answer names the task), or an
    // `agent.handoff`, which always runs again and must not hand the run over twice.
    let tasks = services
        .invocations
        .list_tasks_by_parent(run_id, invocation)
        .await?;
    let started = journal.started_calls.remove(invocation).unwrap_or_default();
    if let Some((round, call_id)) = started.last() {
        let key = call_file_key(invocation, *round, call_id);
        let registered = tasks
            .iter()
            .any(|task| task.created_by_tool_call_id.as_deref() == Some(call_id.as_str()));
        if !stored_keys.contains(&key)
            && !registered
            && let Some(agent) = unregistered_agent(invocation, invocations, &tasks)
        {
            replay.record_unregistered_agent(UnregisteredAgent {
                call_id: call_id.clone(),
                journaled_task: journal.created.get(&agent.id).cloned().flatten(),
                invocation_id: agent.id.clone(),
            });
        }
    }
    for (round, call_id) in started {
        let key = call_file_key(invocation, round, &call_id);
        let registered = tasks.iter().find(|task| {
            task.created_by_tool_call_id.as_deref() == Some(call_id.as_str())
                && match task.continuation {
                    TaskContinuation::ReturnToParent => {
                        !stored_keys.contains(&key) && !answered_tasks.contains(task.id.as_str())
                    }
                    TaskContinuation::TransferControl => true,
                }
        });
        if let Some(task) = registered {
            replay.record_registered_task(key, task.id.clone());
        }
    }
    Ok(replay)
}

/// The newest agent `invocation` created that never got a task: an `agent.delegate` or
/// `agent.handoff` call died between writing the agent and registering its task. Only the call
/// in flight at the interruption can have left one.
fn unregistered_agent<'a>(
    invocation: &InvocationId,
    invocations: &'a [AgentInvocation],
    tasks: &[AgentTaskRecord],
) -> Option<&'a AgentInvocation> {
    invocations
        .iter()
        .filter(|agent| {
            agent.parent_invocation_id.as_ref() == Some(invocation)
                && agent.status == InvocationStatus::Interrupted
                && !tasks
                    .iter()
                    .any(|task| task.child_invocation_id == agent.id)
        })
        .max_by_key(|agent| agent.creation_seq)
}

fn decode<T: serde::de::DeserializeOwned>(
    value: &Value,
    document: &RunDocument,
) -> ApplicationResult<T> {
    serde_json::from_value(value.clone()).map_err(|err| {
        ApplicationError::fatal(
            error_codes::AGENT_STORAGE_CORRUPT,
            format!("{} cannot be read back: {err}", document.relative_path()),
        )
    })
}

/// `agent.resume_profile_changed` unless `snapshot`, rebuilt from today's profiles, is the
/// one `invocation` was frozen with: a resumed agent must be offered the same tools, budgets
/// and roots its stored history was made with. An agent with no frozen snapshot yet passes.
pub(crate) async fn check_snapshot(
    services: &RuntimeServices,
    run_id: &RunId,
    invocation: &InvocationId,
    snapshot: &tt_domain::tool::InvocationToolSnapshot,
) -> ApplicationResult<()> {
    let document = RunDocument::InvocationToolSnapshot(invocation.clone());
    let stored = services.runs.read_document(run_id, &document).await?;
    let now = serde_json::to_value(snapshot).unwrap_or(Value::Null);
    match stored {
        Some(stored) if stored == now => Ok(()),
        Some(_) => Err(ApplicationError::fatal(
            error_codes::AGENT_RESUME_PROFILE_CHANGED,
            format!(
                "profile `{}` no longer gives {invocation} the tools, budgets and roots it started with ({}); the run cannot be resumed",
                snapshot.profile_id,
                document.relative_path()
            ),
        )),
        // Interrupted before its snapshot was frozen: it made no step the snapshot must match.
        None => Ok(()),
    }
}

/// The profile a delegated agent runs with (the same policy its worker applies) and its
/// rebuilt tool snapshot.
pub(crate) async fn child_profile(
    ctx: &RunContext,
    task: &AgentTaskRecord,
) -> ApplicationResult<(ResolvedProfile, tt_domain::tool::InvocationToolSnapshot)> {
    let target = crate::profiles::resolve(
        ctx.services.profiles.as_ref(),
        Some(task.target_profile_id.as_str()),
    )
    .await?;
    crate::profiles::check_model_configured(&target)?;
    let policy = &target.definition.delegation;
    let may_delegate = policy.can_delegate
        && policy.allow_nested_delegation
        && crate::engine::child::invocation_depth(ctx, &task.child_invocation_id).await?
            < crate::engine::child::max_delegation_depth(ctx).await?;
    let profile = crate::delegation::policy::apply_nested_invocation_policy(
        &target,
        task.budget,
        may_delegate,
    );
    let external = crate::registry::external_definitions(
        &ctx.services,
        &ctx.run_id,
        &task.child_invocation_id,
        &profile,
    )
    .await?;
    let mut snapshot = crate::registry::build_tool_snapshot(
        &profile,
        &task.child_invocation_id,
        ExitPolicy::TaskReturnRequired,
        Presentation::Background,
        &external,
    )?;
    crate::engine::fork_prefix::offer_fork_mode(
        ctx.services.profiles.as_ref(),
        &profile,
        &mut snapshot,
    )
    .await?;
    Ok((profile, snapshot))
}

/// Moves an interrupted invocation back to `running` and journals `agent_invocation_resumed`.
pub(crate) async fn resume_invocation(
    ctx: &RunContext,
    invocation: &mut AgentInvocation,
) -> ApplicationResult<()> {
    invocation.transition(InvocationStatus::Running, ctx.services.clock.now())?;
    ctx.services.invocations.save_invocation(invocation).await?;
    ctx.events
        .record(
            &ctx.run_id,
            EventLevel::Info,
            &payload::AgentInvocationResumed::of(invocation),
        )
        .await?;
    Ok(())
}

/// Moves an interrupted task back to `status` (`queued` or `running`) and journals
/// `agent_task_resumed`.
pub(crate) async fn resume_task(
    ctx: &RunContext,
    task: &AgentTaskRecord,
    status: TaskStatus,
) -> ApplicationResult<AgentTaskRecord> {
    let outcome = ctx
        .services
        .invocations
        .transition_task(
            &ctx.run_id,
            &task.id,
            &TaskTransition {
                status,
                result_ref: None,
                error: None,
            },
            ctx.services.clock.now(),
        )
        .await?;
    let task = outcome.task;
    ctx.events
        .record(
            &ctx.run_id,
            EventLevel::Info,
            &payload::AgentTaskResumed::of(&task),
        )
        .await?;
    Ok(task)
}

/// The interrupted delegated tasks of a run, in creation order.
pub(crate) fn interrupted_delegations(tasks: &[AgentTaskRecord]) -> Vec<AgentTaskRecord> {
    tasks
        .iter()
        .filter(|task| {
            task.status == TaskStatus::Interrupted
                && task.continuation == TaskContinuation::ReturnToParent
        })
        .cloned()
        .collect()
}

/// `agent.run_not_resumable` with `why`.
pub(crate) fn not_resumable(run: &AgentRun, why: &str) -> ApplicationError {
    ApplicationError::fatal(
        error_codes::AGENT_RUN_NOT_RESUMABLE,
        format!("run {} cannot be resumed: {why}", run.id),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::ContextStep;
    use serde_json::json;
    use tt_domain::context_window::TrimPlan;
    use tt_domain::event::RunEventType;
    use tt_testkit::contract::journaled_event as event;

    #[test]
    fn a_journaled_trim_and_summary_come_back_as_the_steps_that_were_applied() {
        let trimmed = event(
            RunEventType::ContextTrimmed,
            json!({"invocationId": "inv_1", "round": 5, "stubbedMessages": [7],
                "removedMessages": [3, 4], "estimatedTokensBefore": 10, "estimatedTokensAfter": 5,
                "windowTokens": 100, "inputBudgetTokens": 80, "trigger": "estimate"}),
        );
        assert_eq!(
            context_step(&trimmed),
            Some(ContextStep::Trim(TrimPlan {
                removed: vec![3, 4],
                stubbed: vec![7],
            }))
        );
        // A journal written before removals existed reads as stubs only.
        let mut older = trimmed.clone();
        older
            .payload
            .as_object_mut()
            .map(|o| o.remove("removedMessages"));
        assert_eq!(
            context_step(&older),
            Some(ContextStep::Trim(TrimPlan {
                removed: vec![],
                stubbed: vec![7],
            }))
        );
        let compacted = event(
            RunEventType::ContextCompacted,
            json!({"invocationId": "inv_1", "round": 9, "firstMessage": 1, "keptMessage": 2,
                "replacedMessages": 6, "summary": "s", "estimatedTokensBefore": 10,
                "estimatedTokensAfter": 5, "windowTokens": 100, "usage": null}),
        );
        assert_eq!(
            context_step(&compacted),
            Some(ContextStep::Summary {
                first: 1,
                count: 6,
                summary: "s".into(),
                kept: Some(2),
            })
        );
    }
}
