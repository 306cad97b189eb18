//! The host's side of tool approvals on [`AgentRuntime`] (docs/host-api.md, "Approving tool
//! calls"): list the calls that wait for a person, and answer them; and of the run's spend
//! approval (docs/host-api.md, "Run spend approval"): see whether a run is parked at its spend
//! limit, and raise the limit or refuse.

use tt_application::{
    AnswerSpendLimitRequest, PendingSpendLimit, PendingToolApproval, ResolveToolApprovalRequest,
    SpendLimitReceipt, ToolApprovalReceipt,
};
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

    /// Whether a run is parked at its spend limit (`limits.askAboveTotalCostUsd`): what it
    /// spent and the limit it reached; `None` when it is not (or has ended).
    /// `agent.run_locked` for a run another process executes.
    pub async fn pending_spend_limit(&self, run_id: &str) -> HostResult<Option<PendingSpendLimit>> {
        self.ensure_open()?;
        Ok(self
            .service
            .pending_spend_limit(&RunId::from_raw(run_id))
            .await?)
    }

    /// Answers a run parked at its spend limit: `{decision: "raise", limitUsd}` (above what it
    /// spent) lets its agents go on, `{decision: "refuse"}` ends them with
    /// `agent.run_spend_refused`. Journaled before it returns. Codes:
    /// `agent.spend_limit_not_reached` (not parked, or answered already),
    /// `agent.spend_limit_invalid`, `agent.run_not_running`, `agent.run_locked`.
    pub async fn answer_spend_limit(
        &self,
        run_id: &str,
        request: AnswerSpendLimitRequest,
    ) -> HostResult<SpendLimitReceipt> {
        self.ensure_open()?;
        Ok(self
            .service
            .answer_spend_limit(&RunId::from_raw(run_id), request)
            .await?)
    }

    /// The spend approval a run executing here waits for, right now.
    pub(crate) fn pending_spend_limit_now(&self, run_id: &RunId) -> Option<PendingSpendLimit> {
        self.service.pending_spend_limit_now(run_id)
    }

    /// Tool calls of a run executing here that wait for a person, right now.
    pub(crate) fn pending_approvals_now(&self, run_id: &RunId) -> Vec<PendingToolApproval> {
        self.service.pending_approvals_now(run_id)
    }
}
