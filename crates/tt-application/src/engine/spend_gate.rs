//! The run's spend approval at each agent's model call (docs/delegation.md, "Run spend
//! approval"): before a live model call, an agent of a run whose priced spend reached
//! `limits.askAboveTotalCostUsd` parks until a person answers (`spend_limit::SpendLimit`). The
//! first agent to find the limit reached journals `spend_limit_reached`; every agent that
//! reaches the gate meanwhile waits too, as it waits for an approval: its record and (for the
//! foreground agent) the run are `awaiting_approval`, and neither its idle limit nor its
//! watchdog runs. A raise lets them go on; a refusal ends each with `agent.run_spend_refused`.

use tt_domain::model::ModelUsage;
use tt_domain::run::AgentRunStatus;

use crate::engine::approval_gate::set_awaiting_person;
use crate::engine::context::RunContext;
use crate::engine::invocation::InvocationRuntime;
use crate::error::{ApplicationError, ApplicationResult};
use crate::spend_limit::SpendCheck;

/// Lets `inv` make its next live model call once the run may spend more: at once under the
/// limit, after a person's raise when parked; a refusal is the error that ends the agent, a
/// cancel ends the wait.
pub(crate) async fn pass(ctx: &RunContext, inv: &mut InvocationRuntime) -> ApplicationResult<()> {
    let mut changed = ctx.spend.subscribe();
    let mut parked = false;
    let outcome = loop {
        let check = match ctx.spend.check() {
            SpendCheck::Wait => {
                ctx.spend
                    .park(&ctx.events, &ctx.run_id, &inv.invocation.id)
                    .await?
            }
            check => check,
        };
        match check {
            SpendCheck::Go => break Ok(()),
            SpendCheck::Refused(error) => break Err(error),
            SpendCheck::Wait => {}
        }
        if !parked {
            set_awaiting_person(ctx, inv, true, AgentRunStatus::CallingModel).await?;
            parked = true;
        }
        tokio::select! {
            changed = changed.changed() => if changed.is_err() {
                break Err(ApplicationError::cancelled());
            },
            () = inv.cancel.cancelled() => break Err(ApplicationError::cancelled()),
        }
    };
    if parked {
        if outcome.is_ok() {
            set_awaiting_person(ctx, inv, false, AgentRunStatus::CallingModel).await?;
        } else {
            inv.scheduler.set_awaiting_person(&inv.invocation.id, false);
        }
    }
    outcome
}

/// Counts the priced cost of a model call that journals no `model_completed` (a history's
/// summary, `context_compacted`) against the run's spend limit; answers are counted where
/// their `model_completed` is journaled (`model_turn`).
pub(crate) fn count(ctx: &RunContext, inv: &InvocationRuntime, usage: Option<&ModelUsage>) {
    if let Some(cost) = crate::engine::model_turn::call_cost(inv, usage)
        .and_then(tt_domain::cost::Usd::from_dollars)
    {
        ctx.spend.add(cost);
    }
}
