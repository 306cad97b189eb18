//! [`RunHandle`]: one run, and everything a host does with it, in one place: its events with
//! typed payloads (a `Stream`) from the start or any seq, waiting for its end and its outcome
//! (`result`), cancelling it or one of its tasks, guidance, resume, abandon and branching, the
//! requests it is waiting on the host for (commits, the persistent-state metadata update, prompt
//! assemblies, approvals), each answered by id, and what is read of it (`reads`: usage,
//! timeline, conversations, check, workspace files). The calls on
//! [`AgentRuntime`] that take a run id stay; the handle is the one obvious way to drive a run
//! (docs/host-api.md, "Driving a run through its handle").

use serde::{Deserialize, Serialize};
use tt_domain::event::AgentRunEvent;
use tt_domain::event_payload::RunEventPayload;
use tt_domain::ids::RunId;
use tt_domain::run::AgentRun;
use tt_domain::task::AgentTaskRecord;
use tt_ports::{ChatCommitRequest, PersistentStateMetadataUpdate, PromptAssemblyRequest};

use tt_application::{
    ForkRunRequest, GuidanceReceipt, PendingToolApproval, ResolveToolApprovalRequest,
    StartRunRequest, SubmitGuidanceRequest, ToolApprovalReceipt,
};
use tt_domain::approval::ApprovalDecision;

use crate::dto::{
    HostResult, ResolveChatCommitRequest, ResolvePersistentStateMetadataUpdateRequest,
    ResolvePromptAssemblyRequest,
};
use crate::host::{AgentRuntime, EventSubscription};

mod outcome;
mod reads;

pub use outcome::{PublishedCommit, RunFailure, RunResult};

/// One run of an [`AgentRuntime`], by id. Cheap: it holds the runtime by reference and the
/// run's id; a handle to a run this runtime does not execute still reads its events and
/// record.
#[derive(Debug, Clone)]
pub struct RunHandle<'r> {
    runtime: &'r AgentRuntime,
    run_id: RunId,
}

/// One event with its payload decoded by type (`None` for a type this build does not know,
/// or a payload that does not decode: the raw `event.payload` is still there). On the wire:
/// `{"event": {…}, "payload": {"type": …, "payload": {…}} | null}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TypedRunEvent {
    pub event: AgentRunEvent,
    pub payload: Option<RunEventPayload>,
}

/// The run's events from a seq on (its first by default), live until its end, each with its
/// typed payload. A [`futures_core::Stream`] of `HostResult<TypedRunEvent>` (combine it with
/// `StreamExt`), and its own [`next`](Self::next), which Rust prefers over `StreamExt::next`.
/// For an unknown run the first item is the `agent.not_found` error, then the end.
#[derive(Debug)]
pub struct RunEvents {
    inner: EventSubscription,
}

fn typed(event: AgentRunEvent) -> TypedRunEvent {
    TypedRunEvent {
        payload: event.typed_payload().and_then(Result::ok),
        event,
    }
}

impl RunEvents {
    /// The next event; `Ok(None)` after the run's terminal event (or the runtime's shutdown).
    pub async fn next(&mut self) -> HostResult<Option<TypedRunEvent>> {
        Ok(self.inner.next().await?.map(typed))
    }
}

impl futures_core::Stream for RunEvents {
    type Item = HostResult<TypedRunEvent>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        std::pin::Pin::new(&mut self.inner)
            .poll_next(cx)
            .map(|item| item.map(|event| event.map(typed)))
    }
}

/// What a run is waiting on the host for, right now. Empty lists for a kind the runtime's
/// bridge answers by itself (a transcript or handler commit bridge, the template broker).
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingHostRequests {
    /// Commits to publish, oldest first, with their text.
    pub commits: Vec<ChatCommitRequest>,
    /// Persistent-state metadata updates to acknowledge, by id.
    pub metadata_updates: Vec<PersistentStateMetadataUpdate>,
    /// Prompts to assemble, by id.
    pub prompt_assemblies: Vec<PromptAssemblyRequest>,
    /// Tool calls waiting for a person's approval, oldest first, with their arguments.
    pub approvals: Vec<PendingToolApproval>,
    /// Calls of host-answered tools waiting for the host's answer (docs/tools.md, "Host
    /// tools from another language").
    #[serde(default)]
    pub host_tool_calls: Vec<crate::PendingHostToolCall>,
    /// The run is parked at its spend limit until a person raises it or refuses
    /// (docs/host-api.md, "Run spend approval").
    pub spend_limit: Option<crate::PendingSpendLimit>,
}

impl PendingHostRequests {
    pub fn is_empty(&self) -> bool {
        self.commits.is_empty()
            && self.metadata_updates.is_empty()
            && self.prompt_assemblies.is_empty()
            && self.approvals.is_empty()
            && self.host_tool_calls.is_empty()
            && self.spend_limit.is_none()
    }
}

impl AgentRuntime {
    /// A handle on run `run_id`: its events, end, cancel, guidance and pending host requests
    /// in one place (docs/host-api.md, "Driving a run through its handle").
    pub fn run(&self, run_id: &str) -> RunHandle<'_> {
        RunHandle::new(self, RunId::from_raw(run_id))
    }

    /// Starts a run (see [`start_run`](Self::start_run)) and returns its handle.
    pub async fn start(&self, request: StartRunRequest) -> HostResult<RunHandle<'_>> {
        let run = self.start_run(request).await?;
        Ok(RunHandle::new(self, run.id))
    }

    /// Resumes an interrupted run (see [`resume_run`](Self::resume_run)) and returns its
    /// handle.
    pub async fn resume(&self, run_id: &str) -> HostResult<RunHandle<'_>> {
        let run = self.resume_run(run_id).await?;
        Ok(RunHandle::new(self, run.id))
    }

    /// Branches a run (see [`fork_run`](Self::fork_run)) and returns the branch's handle.
    pub async fn fork(
        &self,
        run_id: &str,
        request: tt_application::ForkRunRequest,
    ) -> HostResult<RunHandle<'_>> {
        let run = self.fork_run(run_id, request).await?;
        Ok(RunHandle::new(self, run.id))
    }

    /// What run `run_id` waits on the host for now: commits, metadata updates, prompt
    /// assemblies, approvals and its spend limit (empty lists for the kinds this runtime's bridges answer by
    /// themselves). `agent.not_found` for an unknown run.
    pub async fn pending_requests(&self, run_id: &str) -> HostResult<PendingHostRequests> {
        self.ensure_open()?;
        let run_id = RunId::from_raw(run_id);
        let (commits, metadata_updates) = match self.host_commit_bridge() {
            Some(bridge) => (
                bridge.pending_for_run(&run_id),
                bridge.pending_metadata_updates(&run_id),
            ),
            None => (Vec::new(), Vec::new()),
        };
        let pending = PendingHostRequests {
            commits,
            metadata_updates,
            prompt_assemblies: self.host_prompt_broker().pending_for_run(run_id.as_str()),
            approvals: self.pending_approvals_now(&run_id),
            host_tool_calls: self.tools.host.answers.pending_for_run(run_id.as_str()),
            spend_limit: self.pending_spend_limit_now(&run_id),
        };
        if pending.is_empty() {
            // Nothing waits: say so only of a run that exists.
            self.service.get_run(&run_id).await?;
        }
        Ok(pending)
    }
}

impl<'r> RunHandle<'r> {
    pub(crate) fn new(runtime: &'r AgentRuntime, run_id: RunId) -> Self {
        Self { runtime, run_id }
    }

    pub fn run_id(&self) -> &str {
        self.run_id.as_str()
    }

    /// The run's record as it is now.
    pub async fn get(&self) -> HostResult<AgentRun> {
        self.runtime.get_run(self.run_id.as_str()).await
    }

    /// Every event from the run's first, then live ones until its end.
    pub fn events(&self) -> RunEvents {
        self.events_after(0)
    }

    /// The events after `after_seq` (0: from the first), then live ones until its end: how a
    /// view that already shows some events (a reloaded page) goes on without a gap.
    pub fn events_after(&self, after_seq: u64) -> RunEvents {
        RunEvents {
            inner: self
                .runtime
                .subscribe(self.run_id.as_str(), after_seq, None),
        }
    }

    /// Waits for the run's end and returns its final record.
    pub async fn wait(&self) -> HostResult<AgentRun> {
        self.runtime.wait_for_run(self.run_id.as_str()).await
    }

    /// Asks the run to stop (see [`AgentRuntime::cancel_run`]).
    pub async fn cancel(&self) -> HostResult<AgentRun> {
        self.runtime.cancel_run(self.run_id.as_str()).await
    }

    /// Resumes the run in this runtime (see [`AgentRuntime::resume_run`]); the handle stays
    /// valid, the run's id does not change.
    pub async fn resume(&self) -> HostResult<AgentRun> {
        self.runtime.resume_run(self.run_id.as_str()).await
    }

    /// Branches the run (see [`AgentRuntime::fork_run`], docs/branching.md) and returns the
    /// branch's handle.
    pub async fn fork(&self, request: ForkRunRequest) -> HostResult<RunHandle<'r>> {
        self.runtime.fork(self.run_id.as_str(), request).await
    }

    /// Gives the run up so that it is never resumed (see [`AgentRuntime::abandon_run`]).
    pub async fn abandon(&self) -> HostResult<AgentRun> {
        self.runtime.abandon_run(self.run_id.as_str()).await
    }

    /// Stops one delegated task and what it delegated (see [`AgentRuntime::cancel_task`]).
    pub async fn cancel_task(&self, task_id: &str) -> HostResult<AgentTaskRecord> {
        self.runtime
            .cancel_task(self.run_id.as_str(), task_id)
            .await
    }

    /// Sends a line of guidance to the run's foreground agent.
    pub async fn submit_guidance(&self, text: impl Into<String>) -> HostResult<GuidanceReceipt> {
        self.runtime
            .submit_guidance(
                self.run_id.as_str(),
                SubmitGuidanceRequest {
                    text: text.into(),
                    client_guidance_id: None,
                },
            )
            .await
    }

    /// Approves a tool call waiting for a person (`approvalId` from
    /// [`pending`](Self::pending) or a `tool_approval_requested` event).
    pub async fn approve(&self, approval_id: &str) -> HostResult<ToolApprovalReceipt> {
        self.resolve_approval(approval_id, ApprovalDecision::Approve)
            .await
    }

    /// Approves a waiting tool call with edited arguments, checked against the tool's schema.
    pub async fn approve_with_arguments(
        &self,
        approval_id: &str,
        arguments: serde_json::Value,
    ) -> HostResult<ToolApprovalReceipt> {
        self.resolve_approval(
            approval_id,
            ApprovalDecision::ApproveWithArguments { arguments },
        )
        .await
    }

    /// Denies a waiting tool call; the agent reads `message` as the call's error.
    pub async fn deny(
        &self,
        approval_id: &str,
        message: impl Into<String>,
    ) -> HostResult<ToolApprovalReceipt> {
        let message = message.into();
        let message = (!message.trim().is_empty()).then_some(message);
        self.resolve_approval(approval_id, ApprovalDecision::Deny { message })
            .await
    }

    async fn resolve_approval(
        &self,
        approval_id: &str,
        decision: ApprovalDecision,
    ) -> HostResult<ToolApprovalReceipt> {
        self.runtime
            .resolve_tool_approval(
                self.run_id.as_str(),
                approval_id,
                ResolveToolApprovalRequest::new(decision),
            )
            .await
    }

    /// Everything the run waits on the host for now (see
    /// [`AgentRuntime::pending_requests`]).
    pub async fn pending(&self) -> HostResult<PendingHostRequests> {
        self.runtime.pending_requests(self.run_id.as_str()).await
    }

    /// Answers a pending commit: published as `message_id`.
    pub fn publish_commit(&self, commit_id: &str, message_id: impl Into<String>) -> HostResult<()> {
        self.runtime.resolve_chat_commit(ResolveChatCommitRequest {
            run_id: self.run_id.to_string(),
            commit_id: commit_id.to_owned(),
            message_id: Some(message_id.into()),
            error: None,
        })
    }

    /// Answers a pending commit: refused, with the reason.
    pub fn refuse_commit(&self, commit_id: &str, reason: impl Into<String>) -> HostResult<()> {
        self.runtime.resolve_chat_commit(ResolveChatCommitRequest {
            run_id: self.run_id.to_string(),
            commit_id: commit_id.to_owned(),
            message_id: None,
            error: Some(reason.into()),
        })
    }

    /// Answers a pending persistent-state metadata update: done, or failed with `error`.
    pub fn answer_metadata_update(&self, update_id: &str, error: Option<String>) -> HostResult<()> {
        self.runtime.resolve_agent_persistent_state_metadata_update(
            ResolvePersistentStateMetadataUpdateRequest {
                run_id: self.run_id.to_string(),
                update_id: update_id.to_owned(),
                error,
            },
        )
    }

    /// Answers a pending prompt assembly (the request's `runId` is this run's).
    pub fn resolve_prompt_assembly(
        &self,
        mut request: ResolvePromptAssemblyRequest,
    ) -> HostResult<()> {
        request.run_id = self.run_id.to_string();
        self.runtime.resolve_prompt_assembly(request)
    }
}
