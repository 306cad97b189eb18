//! The host's side of tool approvals on [`AgentRuntime`] (docs/host-api.md, "Approving tool
//! calls"): list the calls that wait for a person, and answer them.

use tt_application::{PendingToolApproval, ResolveToolApprovalRequest, ToolApprovalReceipt};
use tt_domain::ids::RunId;

use crate::dto::HostResult;
use crate::host::AgentRuntime;

impl AgentRuntime {
    /// The tool calls of a run waiting for a person's approval, oldest first, with their
    /// arguments (docs/host-api.md, "Approving tool calls"). Empty for a run that ended;
    /// `agent.run_locked` for a run another process executes.
    pub async fn pending_approvals(&self, run_id: &str) -> HostResult<Vec<PendingToolApproval>> {
        self.ensure_open()?;
        Ok(self
            .service
            .pending_approvals(&RunId::from_raw(run_id))
            .await?)
    }

    /// Answers a tool call waiting for a person: `approve`, `approve_with_arguments` (checked
    /// against the tool's schema: `agent.approval_invalid`) or `deny` with a message the agent
    /// reads. Journaled before it returns; answering again returns the first answer
    /// (`alreadyResolved`). Codes: `agent.approval_not_found`, `agent.approval_invalid`,
    /// `agent.run_not_running`, `agent.run_locked`.
    pub async fn resolve_tool_approval(
        &self,
        run_id: &str,
        approval_id: &str,
        request: ResolveToolApprovalRequest,
    ) -> HostResult<ToolApprovalReceipt> {
        self.ensure_open()?;
        Ok(self
            .service
            .resolve_tool_approval(&RunId::from_raw(run_id), approval_id, request)
            .await?)
    }

    /// Tool calls of a run executing here that wait for a person, right now.
    pub(crate) fn pending_approvals_now(&self, run_id: &RunId) -> Vec<PendingToolApproval> {
        self.service.pending_approvals_now(run_id)
    }
}
