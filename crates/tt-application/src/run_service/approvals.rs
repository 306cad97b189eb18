//! The host's side of tool approvals (docs/host-api.md, "Approving tool calls"): listing the
//! calls that wait for a person and answering them; and of the run's spend approval
//! (docs/host-api.md, "Run spend approval"): whether the run is parked at its spend limit, and
//! raising the limit or refusing. All go to the process that runs the run, like guidance:
//! parked calls live in its memory, and answers are journaled by it.

use tt_domain::error_codes;
use tt_domain::ids::RunId;

use crate::approvals::{PendingToolApproval, ResolveToolApprovalRequest, ToolApprovalReceipt};
use crate::error::{ApplicationError, ApplicationResult};
use crate::spend_limit::{AnswerSpendLimitRequest, PendingSpendLimit, SpendLimitReceipt};

use super::AgentRunService;
use crate::engine::context::RunContext;

impl AgentRunService {
    /// The tool calls of a run waiting for a person, oldest first, with their arguments. A run
    /// that has ended has none; a run executing in another process (or in none, after a
    /// restart) is refused with `agent.run_locked`: resume it here to see its calls again.
    pub async fn pending_approvals(
        &self,
        run_id: &RunId,
    ) -> ApplicationResult<Vec<PendingToolApproval>> {
        self.waiting_now_or(run_id, |ctx| ctx.approvals.pending())
            .await
    }

    /// The tool calls waiting for a person in a run executing in this process, right now
    /// (empty for any other run).
    pub fn pending_approvals_now(&self, run_id: &RunId) -> Vec<PendingToolApproval> {
        self.active_context(run_id)
            .map(|ctx| ctx.approvals.pending())
            .unwrap_or_default()
    }

    /// Answers a waiting call: approve it, approve it with edited arguments (checked against
    /// the tool's schema first, `agent.approval_invalid`), or deny it with a message the agent
    /// reads. Journaled (`tool_approval_resolved`) before this returns. Answering an approval
    /// a second time changes nothing and returns the first answer (`alreadyResolved`);
    /// an unknown one is `agent.approval_not_found`; a run that ended,
    /// `agent.run_not_running`; a run executing elsewhere, `agent.run_locked`.
    pub async fn resolve_tool_approval(
        &self,
        run_id: &RunId,
        approval_id: &str,
        request: ResolveToolApprovalRequest,
    ) -> ApplicationResult<ToolApprovalReceipt> {
        match self.active_context(run_id) {
            Some(ctx) => {
                ctx.approvals
                    .resolve(&self.events, run_id, approval_id, request)
                    .await
            }
            None => Err(self.not_active(run_id).await),
        }
    }

    /// The run's spend approval, when it is parked at its spend limit
    /// (`limits.askAboveTotalCostUsd`): what it spent and the limit it reached. `None` for a
    /// run that is not parked or has ended; `agent.run_locked` for a run executing elsewhere.
    pub async fn pending_spend_limit(
        &self,
        run_id: &RunId,
    ) -> ApplicationResult<Option<PendingSpendLimit>> {
        self.waiting_now_or(run_id, |ctx| ctx.spend.pending()).await
    }

    /// The spend approval a run executing in this process waits for, right now.
    pub fn pending_spend_limit_now(&self, run_id: &RunId) -> Option<PendingSpendLimit> {
        self.active_context(run_id)
            .and_then(|ctx| ctx.spend.pending())
    }

    /// Answers a run parked at its spend limit: raise the limit (above what it spent;
    /// `agent.spend_limit_invalid` otherwise) and it goes on, or refuse and its agents end
    /// with `agent.run_spend_refused`. Journaled (`spend_limit_answered`) before this returns.
    /// A run not parked is `agent.spend_limit_not_reached` (so a second answer changes
    /// nothing); a run that ended, `agent.run_not_running`; one executing elsewhere,
    /// `agent.run_locked`.
    pub async fn answer_spend_limit(
        &self,
        run_id: &RunId,
        request: AnswerSpendLimitRequest,
    ) -> ApplicationResult<SpendLimitReceipt> {
        match self.active_context(run_id) {
            Some(ctx) => ctx.spend.answer(&self.events, run_id, request).await,
            None => Err(self.not_active(run_id).await),
        }
    }

    /// What `waiting` reads from a run executing here; for any other run nothing
    /// (`T::default()`) once it has ended, and `agent.run_locked` while it is unfinished
    /// (another process, or none, runs it).
    async fn waiting_now_or<T: Default>(
        &self,
        run_id: &RunId,
        waiting: impl FnOnce(&RunContext) -> T,
    ) -> ApplicationResult<T> {
        if let Some(ctx) = self.active_context(run_id) {
            return Ok(waiting(&ctx));
        }
        let run = self.services.runs.load_run(run_id).await?;
        if run.status.is_terminal() {
            Ok(T::default())
        } else {
            Err(not_here(run_id))
        }
    }

    /// Why a run not executing here cannot be answered.
    async fn not_active(&self, run_id: &RunId) -> ApplicationError {
        let run = match self.services.runs.load_run(run_id).await {
            Ok(run) => run,
            Err(error) => return error.into(),
        };
        if run.status.is_terminal() {
            ApplicationError::fatal(
                error_codes::AGENT_RUN_NOT_RUNNING,
                format!(
                    "run {run_id} has ended ({}); it no longer waits",
                    run.status.as_str()
                ),
            )
        } else {
            not_here(run_id)
        }
    }
}

fn not_here(run_id: &RunId) -> ApplicationError {
    ApplicationError::fatal(
        error_codes::AGENT_RUN_LOCKED,
        format!(
            "run {run_id} is not executing in this process; its approvals are answered by the process that runs it (resume it here to answer them)"
        ),
    )
}
