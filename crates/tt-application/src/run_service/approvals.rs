//! The host's side of tool approvals (docs/host-api.md, "Approving tool calls"): listing the
//! calls that wait for a person and answering them. Both go to the process that runs the run,
//! like guidance: parked calls live in its memory, and answers are journaled by it.

use tt_domain::error_codes;
use tt_domain::ids::RunId;

use crate::approvals::{PendingToolApproval, ResolveToolApprovalRequest, ToolApprovalReceipt};
use crate::error::{ApplicationError, ApplicationResult};

use super::AgentRunService;

impl AgentRunService {
    /// The tool calls of a run waiting for a person, oldest first, with their arguments. A run
    /// that has ended has none; a run executing in another process (or in none, after a
    /// restart) is refused with `agent.run_locked`: resume it here to see its calls again.
    pub async fn pending_approvals(
        &self,
        run_id: &RunId,
    ) -> ApplicationResult<Vec<PendingToolApproval>> {
        match self.active_context(run_id) {
            Some(ctx) => Ok(ctx.approvals.pending()),
            None => {
                let run = self.services.runs.load_run(run_id).await?;
                if run.status.is_terminal() {
                    Ok(Vec::new())
                } else {
                    Err(not_here(run_id))
                }
            }
        }
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
            None => {
                let run = self.services.runs.load_run(run_id).await?;
                Err(if run.status.is_terminal() {
                    ApplicationError::fatal(
                        error_codes::AGENT_RUN_NOT_RUNNING,
                        format!(
                            "run {run_id} has ended ({}); its calls no longer wait",
                            run.status.as_str()
                        ),
                    )
                } else {
                    not_here(run_id)
                })
            }
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
