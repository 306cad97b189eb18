//! What a [`RunHandle`] reads of its run: its outcome, usage, agent graph, an agent's
//! conversation, damage, workspace files, a page of its journal, stored records and the
//! approvals it waits for. Each is the [`AgentRuntime`] call of the same name for this run, and
//! each answers `agent.not_found` for a run that does not exist.

use tt_application::{AgentConversation, PendingToolApproval, RunUsage, TimelineProjection};
use tt_domain::damage::RunDamage;

use super::{RunHandle, RunResult};
use crate::dto::{HostResult, ReadEventsRequest, ReadEventsResponse, WorkspaceFileDto};

impl RunHandle<'_> {
    /// Waits for the run to stop executing and returns its outcome: the final record, why it
    /// failed, and the text it published (see [`AgentRuntime::run_result`]).
    ///
    /// [`AgentRuntime::run_result`]: crate::AgentRuntime::run_result
    pub async fn result(&self) -> HostResult<RunResult> {
        self.runtime.run_result(self.run_id.as_str()).await
    }

    /// Token usage and cost, in total and per agent; a branch's apart from what it inherited.
    pub async fn usage(&self) -> HostResult<RunUsage> {
        self.runtime.usage(self.run_id.as_str()).await
    }

    /// The agent graph, with what the records show damaged.
    pub async fn timeline(&self) -> HostResult<TimelineProjection> {
        self.runtime.timeline_projection(self.run_id.as_str()).await
    }

    /// One agent's conversation as a chat (`inv_root` for the root agent).
    pub async fn conversation(&self, invocation_id: &str) -> HostResult<AgentConversation> {
        self.runtime
            .agent_conversation(self.run_id.as_str(), invocation_id)
            .await
    }

    /// Checks the stored run for damage, read-only.
    pub async fn check(&self) -> HostResult<RunDamage> {
        self.runtime.check_run(self.run_id.as_str()).await
    }

    /// One file of the run's workspace, by its logical path (`output/main.md`).
    pub async fn read_file(&self, path: &str) -> HostResult<WorkspaceFileDto> {
        self.runtime
            .read_workspace_file(self.run_id.as_str(), path)
            .await
    }

    /// Every file of the run's workspace, as logical paths sorted by path.
    pub async fn list_files(&self) -> HostResult<Vec<String>> {
        self.runtime
            .list_workspace_files(self.run_id.as_str())
            .await
    }

    /// One page of the run's journal (the request's `runId` is this run's).
    pub async fn read_events(
        &self,
        mut request: ReadEventsRequest,
    ) -> HostResult<ReadEventsResponse> {
        request.run_id = self.run_id.to_string();
        self.runtime.read_events(request).await
    }

    /// A stored record by the reference its events carry (docs/storage.md).
    pub async fn read_record(&self, reference: &str) -> HostResult<serde_json::Value> {
        self.runtime
            .read_record(self.run_id.as_str(), reference)
            .await
    }

    /// The tool calls waiting for a person's approval, also of a run another process executes
    /// (see [`AgentRuntime::pending_approvals`]).
    ///
    /// [`AgentRuntime::pending_approvals`]: crate::AgentRuntime::pending_approvals
    pub async fn pending_approvals(&self) -> HostResult<Vec<PendingToolApproval>> {
        self.runtime.pending_approvals(self.run_id.as_str()).await
    }
}
