//! Branching a run (`AgentRunService::fork_run`, docs/branching.md): what a host asks for (the
//! fork point and the changes), where the cut really falls (the nearest point at or before the
//! requested one that a resume can continue from), and what the source's journal says about
//! its agents, tasks, stored steps and workspace at that point.
//!
//! The branch itself is built by `copy` and continued by the ordinary resume path.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use tt_domain::error_codes;
use tt_domain::event::{AgentRunEvent, RunEventType};
use tt_domain::ids::{InvocationId, RunId, TaskId};
use tt_domain::invocation::InvocationStatus;
use tt_domain::run::AgentRunStatus;
use tt_domain::task::TaskStatus;

use crate::error::{ApplicationError, ApplicationResult};
use crate::journal_read::{guidance_ids, round_of};
use crate::services::RuntimeServices;

pub(crate) mod copy;

/// Where a branch leaves its source run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    tag = "kind"
)]
pub enum ForkPoint {
    /// After the source's journal event `seq`.
    Seq { seq: u64 },
    /// After the source's last published commit (`chat_commit_recorded`, and the result of
    /// the `workspace.commit` call that made it).
    LastCommit,
    /// Just before agent `invocationId` started its model round `round` (1 = its first).
    AgentRound {
        invocation_id: InvocationId,
        round: u32,
    },
}

/// What the branch does differently from its source after the fork point.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkChanges {
    /// A note for the foreground agent, read before its first model request after the fork
    /// point (as if the user had sent it as guidance then).
    pub guidance: Option<String>,
    /// The named model connection the branch's `currentPromptSnapshot` agents talk to
    /// (replaces the source's `connectionRef`).
    pub connection_ref: Option<String>,
    /// Generation settings for every agent of the branch, over the source run's.
    pub generation: Option<tt_domain::generation::GenerationSettings>,
    /// The model of chosen profiles' agents, by profile id: another named connection (its
    /// default model) and generation settings over the run's. Replaces what the source run
    /// had for those profiles.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub profiles: BTreeMap<tt_domain::ids::ProfileId, tt_domain::run::ProfileModelChange>,
    /// The user's request, edited: replaces the last user message of the run's input. Only
    /// for a branch whose foreground agent has not answered yet (a cut before its first model
    /// round), else `agent.fork_point_invalid`: later turns already answered the old request.
    pub user_request: Option<String>,
}

/// Most characters of an edited user request.
pub(crate) const MAX_FORK_USER_REQUEST_CHARS: usize = 100_000;

/// A host's request to branch a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkRunRequest {
    pub at: ForkPoint,
    #[serde(default)]
    pub changes: ForkChanges,
}

pub(crate) fn fork_point_invalid(message: impl Into<String>) -> ApplicationError {
    ApplicationError::fatal(error_codes::AGENT_FORK_POINT_INVALID, message)
}

/// Reads the whole journal of `run_id`, in pages.
pub(crate) async fn read_all_events(
    services: &RuntimeServices,
    run_id: &RunId,
) -> ApplicationResult<Vec<AgentRunEvent>> {
    Ok(crate::journal_read::read_all_events(services.journal.as_ref(), run_id).await?)
}

fn field<'a>(event: &'a AgentRunEvent, name: &str) -> Option<&'a str> {
    event.payload.get(name).and_then(Value::as_str)
}

/// Events that end a run or begin its ending: a branch never contains them, it is cut before
/// the first (a branch of a finished run continues from before its end).
fn ends_the_run(event: &AgentRunEvent) -> bool {
    match event.event_type {
        RunEventType::PersistentChangesCommitted
        | RunEventType::PersistentChangesCommitFailed
        | RunEventType::PersistentStateMetadataUpdateRequested
        | RunEventType::RunCompleted
        | RunEventType::RunPartialSuccess
        | RunEventType::RunCancelRequested
        | RunEventType::RunCancelled
        | RunEventType::RunFailed => true,
        RunEventType::StatusChanged => event
            .payload
            .get("status")
            .and_then(|status| serde_json::from_value::<AgentRunStatus>(status.clone()).ok())
            .is_some_and(|status| status.is_terminal() && status != AgentRunStatus::Interrupted),
        _ => false,
    }
}

/// The events a store journals when it finds a run's owner gone.
fn marks_interruption(event: &AgentRunEvent) -> bool {
    matches!(
        event.event_type,
        RunEventType::AgentTaskInterrupted
            | RunEventType::AgentInvocationInterrupted
            | RunEventType::RunInterrupted
            | RunEventType::RunReopened
    )
}

/// The seq the branch is cut after: `at` resolved, then moved back to the nearest point a
/// resume can continue from without publishing or finishing twice:
/// - before the run's ending (promotion, terminal events, a cancel request);
/// - before a trailing interruption (the branch journals its own);
/// - before a commit whose `workspace.commit` call had not ended at the cut (the branch makes
///   it again under a new id, as a new message, instead of offering it again under the
///   source's id, which the host already has);
/// - before a stored write result whose file change is journaled only after the cut.
///
/// Refused (`agent.fork_point_invalid`) when `at` is outside the journal, names no commit or
/// round, or falls before the root agent started.
pub(crate) fn resolve_cut(events: &[AgentRunEvent], at: &ForkPoint) -> ApplicationResult<u64> {
    let last = events.last().map_or(0, |event| event.seq);
    let requested = match at {
        ForkPoint::Seq { seq } => {
            if *seq == 0 || *seq > last {
                return Err(fork_point_invalid(format!(
                    "seq {seq} is outside the run's journal (1..={last})"
                )));
            }
            *seq
        }
        ForkPoint::LastCommit => last_commit(events)
            .ok_or_else(|| fork_point_invalid("the run has published no commit"))?,
        ForkPoint::AgentRound {
            invocation_id,
            round,
        } => events
            .iter()
            .find(|event| {
                field(event, "invocationId") == Some(invocation_id.as_str())
                    && round_of(event) == Some(*round)
            })
            .map(|event| event.seq.saturating_sub(1))
            .ok_or_else(|| {
                fork_point_invalid(format!(
                    "agent {invocation_id} has no model round {round} in this run"
                ))
            })?,
    };
    let mut cut = requested;
    if let Some(end) = events
        .iter()
        .take_while(|event| event.seq <= cut)
        .find(|event| ends_the_run(event))
    {
        cut = end.seq.saturating_sub(1);
    }
    loop {
        let before = cut;
        while let Some(event) = event_at(events, cut)
            && marks_interruption(event)
        {
            cut -= 1;
        }
        if let Some(open) = open_commit(events, cut) {
            cut = open.saturating_sub(1);
        }
        if let Some(stored) = unjournaled_write(events, cut) {
            cut = stored.saturating_sub(1);
        }
        if cut == before {
            break;
        }
    }
    let root_started = events
        .iter()
        .find(|event| {
            event.event_type == RunEventType::AgentInvocationStarted
                && field(event, "invocationId") == Some(InvocationId::root().as_str())
        })
        .map(|event| event.seq);
    match root_started {
        Some(started) if cut >= started => Ok(cut),
        _ => Err(fork_point_invalid(format!(
            "the nearest point at or before seq {requested} that a branch can continue from \
             is before the run's first agent started; start a new run instead"
        ))),
    }
}

fn event_at(events: &[AgentRunEvent], seq: u64) -> Option<&AgentRunEvent> {
    let index = usize::try_from(seq).ok()?.checked_sub(1)?;
    events.get(index).filter(|event| event.seq == seq)
}

/// The seq of a `chat_commit_started` at or before `cut` whose `workspace.commit` call had not
/// stored its result by `cut`: cut there, the branch would offer the commit again under the
/// source's `commitId`, or publish a commit the source already published.
fn open_commit(events: &[AgentRunEvent], cut: u64) -> Option<u64> {
    let mut open: BTreeMap<&str, u64> = BTreeMap::new();
    for event in events.iter().take_while(|event| event.seq <= cut) {
        let Some(invocation) = field(event, "invocationId") else {
            continue;
        };
        match event.event_type {
            RunEventType::ChatCommitStarted => {
                open.insert(invocation, event.seq);
            }
            RunEventType::ToolResultStored => {
                open.remove(invocation);
            }
            _ => {}
        }
    }
    open.values().min().copied()
}

/// The end of the `workspace.commit` call that published the run's last commit: its stored
/// result after the last `chat_commit_recorded` (the recorded event itself when the source
/// stopped before storing it).
fn last_commit(events: &[AgentRunEvent]) -> Option<u64> {
    let recorded = events
        .iter()
        .rfind(|event| event.event_type == RunEventType::ChatCommitRecorded)?;
    let invocation = field(recorded, "invocationId");
    Some(
        events
            .iter()
            .skip_while(|event| event.seq <= recorded.seq)
            .find(|event| {
                event.event_type == RunEventType::ToolResultStored
                    && field(event, "invocationId") == invocation
            })
            .map_or(recorded.seq, |stored| stored.seq),
    )
}

/// The seq of a `tool_result_stored` at or before `cut` whose call changed a workspace file
/// that the source journals only after `cut` (`workspace_file_written` or
/// `workspace_patch_applied`, then its checkpoint): cut there, the branch would hold the
/// call's result without the file it wrote. Cut before the result instead, the call runs
/// again in the branch, as after a crash.
fn unjournaled_write(events: &[AgentRunEvent], cut: u64) -> Option<u64> {
    let writes = |event: &AgentRunEvent| {
        matches!(
            event.event_type,
            RunEventType::WorkspaceFileWritten | RunEventType::WorkspacePatchApplied
        )
    };
    // Per agent: the seq of the stored result of its last writing call with no write
    // journaled since.
    let mut pending: BTreeMap<&str, u64> = BTreeMap::new();
    let mut writing: BTreeMap<&str, bool> = BTreeMap::new();
    for event in events.iter().take_while(|event| event.seq <= cut) {
        let Some(invocation) = field(event, "invocationId") else {
            continue;
        };
        match event.event_type {
            RunEventType::ToolCallStarted => {
                let name = field(event, "name").unwrap_or_default();
                // A tool whose facts say it writes the workspace journals its write after
                // its result.
                let writes_workspace = tt_domain::tool_model::ToolId::parse(name)
                    .ok()
                    .and_then(|tool| tool.builtin())
                    .is_some_and(|tool| {
                        tool.facts().side_effect
                            == tt_domain::tool_model::SideEffect::WritesWorkspace
                    });
                writing.insert(invocation, writes_workspace);
                pending.remove(invocation);
            }
            RunEventType::ToolResultStored if writing.get(invocation).copied().unwrap_or(false) => {
                pending.insert(invocation, event.seq);
            }
            _ if writes(event) => {
                pending.remove(invocation);
            }
            _ => {}
        }
    }
    pending
        .into_iter()
        .filter(|(invocation, _)| {
            events
                .iter()
                .skip_while(|event| event.seq <= cut)
                .filter(|event| field(event, "invocationId") == Some(invocation))
                .take_while(|event| {
                    !matches!(
                        event.event_type,
                        RunEventType::ToolCallRequested
                            | RunEventType::ToolCallStarted
                            | RunEventType::ModelRequestCreated
                            | RunEventType::AgentLoopFinished
                    )
                })
                .any(writes)
        })
        .map(|(_, seq)| seq)
        .min()
}

/// What the source's journal says about its state after event `cut`.
#[derive(Debug, Default)]
pub(crate) struct CutState {
    /// Every invocation journaled as created by then (the root always), with its status then.
    pub invocations: BTreeMap<InvocationId, InvocationStatus>,
    /// Every task registered by then, with its status then.
    pub tasks: BTreeMap<TaskId, TaskStatus>,
    /// Stored model responses: (invocation, round).
    pub responses: BTreeSet<(InvocationId, u32)>,
    /// Calls whose arguments were stored (`tool_call_requested` or `_started`): file keys.
    pub call_args: BTreeSet<String>,
    /// Calls whose result was stored (`tool_result_stored`): file keys.
    pub call_results: BTreeSet<String>,
    /// Delegated agents that recorded their `task.return` result or whose task had ended (the
    /// branch copies their stored result, if any).
    pub returned: BTreeSet<InvocationId>,
    /// Tool outputs saved to the workspace without a checkpoint (`tool_output_saved`):
    /// (path, call file key, sha256).
    pub saved_outputs: Vec<(String, String, String)>,
    /// `user_guidance_submitted` events by then, and how many of them no agent had read.
    pub guidance_submitted: u64,
    pub guidance_pending: u64,
    /// The run's last journaled status by then.
    pub status: Option<AgentRunStatus>,
    /// The workspace then: each file's sha256, from the checkpoints taken of writes journaled
    /// by then (a checkpoint journaled just after the cut counts when its write is before it).
    pub files: BTreeMap<String, String>,
}

fn parse_status<T: serde::de::DeserializeOwned>(event: &AgentRunEvent) -> Option<T> {
    serde_json::from_value(event.payload.get("status")?.clone()).ok()
}

/// Reads the state after `cut` out of the source's whole journal.
pub(crate) fn state_at(events: &[AgentRunEvent], cut: u64) -> CutState {
    let mut state = CutState::default();
    state
        .invocations
        .insert(InvocationId::root(), InvocationStatus::Created);
    let mut pending_guidance: BTreeSet<String> = BTreeSet::new();
    for event in events.iter().take_while(|event| event.seq <= cut) {
        state.read(event, &mut pending_guidance);
    }
    state.guidance_pending = pending_guidance.len() as u64;
    state.files = files_at(events, cut);
    state
}

impl CutState {
    /// Folds one event of the journal up to the cut into the state; `pending_guidance` holds
    /// the guidance submitted and not yet applied or discarded.
    fn read(&mut self, event: &AgentRunEvent, pending_guidance: &mut BTreeSet<String>) {
        let invocation = field(event, "invocationId").map(InvocationId::from_raw);
        let call_key = || {
            Some(crate::engine::records::call_file_key(
                invocation.as_ref()?,
                round_of(event)?,
                field(event, "callId")?,
            ))
        };
        use RunEventType as T;
        match &event.event_type {
            T::AgentInvocationCreated
            | T::AgentInvocationStarted
            | T::AgentInvocationCompleted
            | T::AgentInvocationFailed
            | T::AgentInvocationCancelled
            | T::AgentInvocationTransferred
            | T::AgentInvocationInterrupted
            | T::AgentInvocationResumed => self.read_invocation(event, invocation),
            T::AgentTaskRegistered
            | T::AgentTaskQueued
            | T::AgentTaskStarted
            | T::AgentTaskCompleted
            | T::AgentTaskFailed
            | T::AgentTaskCancelled
            | T::AgentTaskInterrupted
            | T::AgentTaskResumed => self.read_task(event),
            T::ModelResponseStored => {
                if let (Some(id), Some(round)) = (invocation, round_of(event)) {
                    self.responses.insert((id, round));
                }
            }
            T::ToolCallRequested | T::ToolCallStarted => {
                if let Some(key) = call_key() {
                    self.call_args.insert(key);
                }
            }
            T::ToolResultStored => {
                if let Some(key) = call_key() {
                    self.call_results.insert(key);
                }
            }
            T::ToolOutputSaved => {
                if let (Some(path), Some(key), Some(sha256)) =
                    (field(event, "path"), call_key(), field(event, "sha256"))
                {
                    self.saved_outputs
                        .push((path.to_owned(), key, sha256.to_owned()));
                }
            }
            T::TaskReturnRecorded => {
                if let Some(id) = invocation {
                    self.returned.insert(id);
                }
            }
            T::UserGuidanceSubmitted => {
                self.guidance_submitted += 1;
                if let Some(id) = field(event, "guidanceId") {
                    pending_guidance.insert(id.to_owned());
                }
            }
            T::UserGuidanceApplied | T::UserGuidanceDiscarded => {
                for id in guidance_ids(event) {
                    pending_guidance.remove(&id);
                }
            }
            T::StatusChanged => {
                if let Some(status) = parse_status(event) {
                    self.status = Some(status);
                }
            }
            _ => {}
        }
    }

    /// An agent's lifecycle event: its status by then (an agent not created by then is not
    /// followed).
    fn read_invocation(&mut self, event: &AgentRunEvent, invocation: Option<InvocationId>) {
        use RunEventType as T;
        let kind = &event.event_type;
        let status = parse_status(event).unwrap_or(match kind {
            T::AgentInvocationCreated => InvocationStatus::Created,
            T::AgentInvocationCompleted => InvocationStatus::Completed,
            T::AgentInvocationFailed => InvocationStatus::Failed,
            T::AgentInvocationCancelled => InvocationStatus::Cancelled,
            T::AgentInvocationTransferred => InvocationStatus::Transferred,
            T::AgentInvocationInterrupted => InvocationStatus::Interrupted,
            _ => InvocationStatus::Running,
        });
        if let Some(id) = invocation
            && (*kind == T::AgentInvocationCreated || self.invocations.contains_key(&id))
        {
            self.invocations.insert(id, status);
        }
    }

    /// A task's lifecycle event: its status by then, and its agent's result kept when it ended.
    fn read_task(&mut self, event: &AgentRunEvent) {
        let (Some(task), Some(status)) =
            (field(event, "taskId"), parse_status::<TaskStatus>(event))
        else {
            return;
        };
        let task = TaskId::from_raw(task);
        // A task that ended by then keeps its result, whether or not its agent had journaled
        // `task_return_recorded` yet.
        if status.is_terminal()
            && let Some(child) = field(event, "childInvocationId")
        {
            self.returned.insert(InvocationId::from_raw(child));
        }
        if event.event_type == RunEventType::AgentTaskRegistered || self.tasks.contains_key(&task) {
            self.tasks.insert(task, status);
        }
    }
}

/// The workspace after `cut`: each file's sha256 from the checkpoints of writes journaled by
/// then (a checkpoint journaled just after the cut counts when its write is before it).
fn files_at(events: &[AgentRunEvent], cut: u64) -> BTreeMap<String, String> {
    let mut files_then = BTreeMap::new();
    for event in events {
        if event.event_type != RunEventType::CheckpointCreated {
            continue;
        }
        let made_by = event
            .payload
            .get("eventSeq")
            .and_then(Value::as_u64)
            .unwrap_or(event.seq);
        if made_by > cut {
            continue;
        }
        let files: Vec<tt_domain::workspace::FileFingerprint> = event
            .payload
            .get("files")
            .cloned()
            .and_then(|files| serde_json::from_value(files).ok())
            .unwrap_or_default();
        for file in files {
            files_then.insert(file.path.to_string(), file.sha256);
        }
    }
    files_then
}

#[cfg(test)]
mod tests;
