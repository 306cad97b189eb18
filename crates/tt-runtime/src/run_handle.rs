//! [`RunHandle`]: one run, and everything a host does with it, in one place: its events with
//! typed payloads from the start, waiting for its end, cancelling it or one of its tasks,
//! guidance, and the requests it is waiting on the host for (commits, the persistent-state
//! metadata update, prompt assemblies), each answered by id. The calls on
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
    GuidanceReceipt, PendingToolApproval, ResolveToolApprovalRequest, StartRunRequest,
    SubmitGuidanceRequest, ToolApprovalReceipt,
};
use tt_domain::approval::ApprovalDecision;

use crate::dto::{
    HostResult, ResolveChatCommitRequest, ResolvePersistentStateMetadataUpdateRequest,
    ResolvePromptAssemblyRequest,
};
use crate::host::{AgentRuntime, EventSubscription};

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
    #[serde(default)]
    pub payload: Option<RunEventPayload>,
}

/// The run's events from its first, live until its end, each with its typed payload.
#[derive(Debug)]
pub struct RunEvents {
    inner: EventSubscription,
}

impl RunEvents {
    /// The next event; `Ok(None)` after the run's terminal event (or the runtime's shutdown).
    pub async fn next(&mut self) -> HostResult<Option<TypedRunEvent>> {
        Ok(self.inner.next().await?.map(|event| TypedRunEvent {
            payload: event.typed_payload().and_then(Result::ok),
            event,
        }))
    }
}

/// What a run is waiting on the host for, right now. Empty lists for a kind the runtime's
/// bridge answers by itself (a transcript or handler commit bridge, the template broker).
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
}

impl PendingHostRequests {
    pub fn is_empty(&self) -> bool {
        self.commits.is_empty()
            && self.metadata_updates.is_empty()
            && self.prompt_assemblies.is_empty()
            && self.approvals.is_empty()
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

    /// What run `run_id` waits on the host for now (empty for kinds this runtime's bridges
    /// answer by themselves).
    pub(crate) fn pending_host_requests(&self, run_id: &RunId) -> PendingHostRequests {
        let (commits, metadata_updates) = match self.host_commit_bridge() {
            Some(bridge) => (
                bridge.pending_for_run(run_id),
                bridge.pending_metadata_updates(run_id),
            ),
            None => (Vec::new(), Vec::new()),
        };
        PendingHostRequests {
            commits,
            metadata_updates,
            prompt_assemblies: self.host_prompt_broker().pending_for_run(run_id.as_str()),
            approvals: self.pending_approvals_now(run_id),
        }
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
        RunEvents {
            inner: self.runtime.subscribe(self.run_id.as_str(), 0, None),
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

    /// Everything the run waits on the host for now.
    pub fn pending(&self) -> PendingHostRequests {
        self.runtime.pending_host_requests(&self.run_id)
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
