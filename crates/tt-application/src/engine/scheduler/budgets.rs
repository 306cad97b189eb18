//! Token and cost budgets of the run and of each delegated task: a task's budget is charged
//! with its own model answers and those of every task below it, and a task over budget is
//! ended with `agent.task_budget_exhausted`; the run's budget stops the run.
use std::sync::Arc;
use tt_domain::cost::Usd;
use tt_domain::error_codes;
use tt_domain::ids::{InvocationId, TaskId};

use crate::error::{ApplicationError, ApplicationResult};

use super::{CancelledBy, State, TaskHost, TaskScheduler, TaskTokens};

impl<H: TaskHost> TaskScheduler<H> {
    /// Gives `task` (started, run by `invocation`) a token budget and a cost budget for its
    /// whole sub-tree (either may be `None`; with both `None` nothing is bounded).
    pub(crate) fn set_task_budget(
        &self,
        invocation: &InvocationId,
        task: &TaskId,
        tokens: Option<u64>,
        cost: Option<Usd>,
    ) {
        if tokens.is_none() && cost.is_none() {
            return;
        }
        self.lock().tokens.insert(
            invocation.clone(),
            TaskTokens {
                task: task.clone(),
                used: 0,
                limit: tokens,
                cost: Usd::ZERO,
                cost_limit: cost,
                from_below: false,
            },
        );
    }

    /// Sets the run's cost budget (`limits.maxTotalCostUsd` of its root profile).
    pub(crate) fn set_run_cost_budget(&self, limit: Usd) {
        self.lock().run_cost.1 = Some(limit);
    }

    /// Sets the run's token budget (`limits.maxTotalTokens` of its root profile).
    pub(crate) fn set_run_token_budget(&self, limit: u64) {
        self.lock().run_tokens.1 = Some(limit);
    }

    /// Tokens the run used and its budget, if it has one.
    pub(crate) fn run_tokens(&self) -> (u64, Option<u64>) {
        self.lock().run_tokens
    }

    /// Tokens `invocation` (a task with a budget) and the tasks below it used, and its budget.
    pub(crate) fn task_tokens(&self, invocation: &InvocationId) -> Option<(u64, u64)> {
        self.lock()
            .tokens
            .get(invocation)
            .and_then(|tokens| Some((tokens.used, tokens.limit?)))
    }

    /// Charges `used` model tokens of `invocation` to the run and to every task budget on its
    /// way up (its own task's, and those of the tasks that delegated it, at any depth).
    ///
    /// Past the run's budget every agent's next answer is `agent.run_budget_exhausted`. Past
    /// its own task's budget this is `agent.task_budget_exhausted`, which ends that task (the
    /// delegating agent goes on). Past the budget of a task above it, that task is ended with
    /// `agent.task_budget_exhausted` in the background (its sub-tree, this agent included, is
    /// cancelled first) and this agent stops here, as cancelled.
    pub(crate) fn charge(
        self: &Arc<Self>,
        invocation: &InvocationId,
        spent: Spent,
    ) -> ApplicationResult<()> {
        let used = spent.tokens;
        let mut state = self.lock();
        let was_over = run_over(&state);
        state.run_tokens.0 += used;
        state.run_cost.0 = state.run_cost.0.saturating_add(spent.cost);
        if let Some(error) = run_budget_error(&state) {
            drop(state);
            // Every agent's next model answer ends it; the run's own agent ending this way
            // ends the run (partial success keeps what was published). A run's agent waiting
            // in `agent.await` is woken to end it now, without waiting for its tasks.
            if !was_over {
                self.notify();
            }
            return Err(error);
        }
        // The topmost budget crossed ends its task, and with it everything below.
        let mut crossed: Option<InvocationId> = None;
        let mut current = Some(invocation.clone());
        // A malformed chain cannot make this loop forever.
        let mut hops = state.delegators.len() + 1;
        while let Some(at) = current.take() {
            if let Some(tokens) = state.tokens.get_mut(&at) {
                tokens.used += used;
                tokens.cost = tokens.cost.saturating_add(spent.cost);
                tokens.from_below |= &at != invocation;
                if tokens.over_tokens() || tokens.over_cost() {
                    crossed = Some(at.clone());
                }
            }
            hops = hops.saturating_sub(1);
            current = state.delegators.get(&at).filter(|_| hops > 0).cloned();
        }
        let Some(crossed) = crossed else {
            return Ok(());
        };
        let Some(tokens) = state.tokens.remove(&crossed) else {
            return Ok(());
        };
        let exhausted = task_budget_error(&tokens);
        if &crossed == invocation {
            return Err(exhausted);
        }
        // Nothing more of the crossed task's starts; it is ended from outside this agent's
        // worker, since ending it stops (and waits for) this worker too.
        state.closed.insert(crossed);
        drop(state);
        let scheduler = Arc::clone(self);
        tokio::spawn(async move {
            let ended = scheduler.end_over_budget(&tokens.task, &exhausted).await;
            if let Err(error) = ended {
                tracing::warn!(%error, "could not end a task past its token budget");
            }
        });
        Err(ApplicationError::cancelled())
    }

    /// Ends `task_id` `failed` with `exhausted` (its token budget, counted over its sub-tree,
    /// is spent): stops its worker, cancels the tasks below it deepest first, then records the
    /// failure, so the delegating agent gets a result it can act on.
    pub(super) async fn end_over_budget(
        self: &Arc<Self>,
        task_id: &TaskId,
        exhausted: &ApplicationError,
    ) -> ApplicationResult<()> {
        let (task, freed) = self.stop_sub_tree(task_id, &CancelledBy::Runtime).await?;
        if !task.status.is_terminal() {
            self.host.as_ref().fail_task(&task, exhausted).await?;
        }
        self.after_stop(freed).await;
        Ok(())
    }

    /// `agent.run_budget_exhausted` once the run's agents together crossed its token budget.
    pub(crate) fn run_budget_exhausted(&self) -> Option<ApplicationError> {
        run_budget_error(&self.lock())
    }
}

/// What one model answer spent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Spent {
    pub tokens: u64,
    /// Zero for a model without a known price.
    pub cost: Usd,
}

/// `agent.task_budget_exhausted`, as the delegating agent reads it in the task's result.
pub(super) fn task_budget_error(tokens: &TaskTokens) -> ApplicationError {
    // The token budget speaks when it was crossed (or is the only one), else the cost budget.
    let (spent, limit) = match (tokens.limit, tokens.cost_limit) {
        (Some(limit), cost) if tokens.over_tokens() || cost.is_none() => {
            (format!("{} model tokens", tokens.used), limit.to_string())
        }
        (_, Some(limit)) => (tokens.cost.to_string(), limit.to_string()),
        (_, None) => (format!("{} model tokens", tokens.used), String::new()),
    };
    ApplicationError::fatal(
        error_codes::AGENT_TASK_BUDGET_EXHAUSTED,
        format!("it used {spent}{}", budget_tail(tokens, &limit)),
    )
}

/// `, over its budget of N` (with what it delegated when that counted).
pub(super) fn budget_tail(tokens: &TaskTokens, limit: &str) -> String {
    if tokens.from_below {
        format!(" together with the tasks it delegated, over its budget of {limit}")
    } else {
        format!(", over its budget of {limit}")
    }
}

/// Whether the run is past one of its budgets.
pub(super) fn run_over(state: &State) -> bool {
    run_budget_error(state).is_some()
}

/// `agent.run_budget_exhausted` when the run is past its token or cost budget.
pub(super) fn run_budget_error(state: &State) -> Option<ApplicationError> {
    let message = match (state.run_tokens, state.run_cost) {
        ((spent, Some(limit)), _) if spent > limit => format!(
            "the run used {spent} model tokens, over its budget of {limit} (limits.maxTotalTokens)"
        ),
        (_, (spent, Some(limit))) if spent > limit => {
            format!("the run cost {spent}, over its budget of {limit} (limits.maxTotalCostUsd)")
        }
        _ => return None,
    };
    Some(ApplicationError::fatal(
        error_codes::AGENT_RUN_BUDGET_EXHAUSTED,
        message,
    ))
}
