//! Token budgets of the run and of each delegated task: a task's budget is charged with its own
//! model answers and those of every task below it, and a task over budget is ended with
//! `agent.task_budget_exhausted`; the run's budget stops the run.
use tt_domain::ids::{InvocationId, TaskId};

use super::{CancelledBy, TaskScheduler};
use crate::engine::context::RunContext;
use crate::error::{ApplicationError, ApplicationResult};

impl TaskScheduler {
    /// Gives `task` (started, run by `invocation`) a token budget for its whole sub-tree.
    pub(crate) fn set_token_budget(&self, invocation: &InvocationId, task: &TaskId, limit: u64) {
        self.lock().tokens.insert(
            invocation.clone(),
            TaskTokens {
                task: task.clone(),
                used: 0,
                limit,
                from_below: false,
            },
        );
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
            .map(|tokens| (tokens.used, tokens.limit))
    }

    /// Charges `used` model tokens of `invocation` to the run and to every task budget on its
    /// way up (its own task's, and those of the tasks that delegated it, at any depth).
    ///
    /// Past the run's budget every agent's next answer is `agent.run_budget_exhausted`. Past
    /// its own task's budget this is `agent.task_budget_exhausted`, which ends that task (the
    /// delegating agent goes on). Past the budget of a task above it, that task is ended with
    /// `agent.task_budget_exhausted` in the background (its sub-tree, this agent included, is
    /// cancelled first) and this agent stops here, as cancelled.
    pub(crate) fn charge_tokens(
        &self,
        ctx: &RunContext,
        invocation: &InvocationId,
        used: u64,
    ) -> ApplicationResult<()> {
        let mut state = self.lock();
        state.run_tokens.0 += used;
        if let (spent, Some(limit)) = state.run_tokens
            && spent > limit
        {
            drop(state);
            // Every agent's next model answer ends it; the run's own agent ending this way
            // ends the run (partial success keeps what was published). A run's agent waiting
            // in `agent.await` is woken to end it now, without waiting for its tasks.
            if spent - used <= limit {
                self.notify();
            }
            return Err(run_budget_error(spent, limit));
        }
        // The topmost budget crossed ends its task, and with it everything below.
        let mut crossed: Option<InvocationId> = None;
        let mut current = Some(invocation.clone());
        // A malformed chain cannot make this loop forever.
        let mut hops = state.delegators.len() + 1;
        while let Some(at) = current.take() {
            if let Some(tokens) = state.tokens.get_mut(&at) {
                tokens.used += used;
                tokens.from_below |= &at != invocation;
                if tokens.used > tokens.limit {
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
        let shared = ctx.shared()?;
        tokio::spawn(async move {
            let ended = shared
                .scheduler
                .end_over_budget(&shared, &tokens.task, &exhausted)
                .await;
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
        &self,
        ctx: &RunContext,
        task_id: &TaskId,
        exhausted: &ApplicationError,
    ) -> ApplicationResult<()> {
        let freed = self.stop_worker(task_id).await;
        let task = ctx
            .services
            .invocations
            .load_task(&ctx.run_id, task_id)
            .await?;
        if !task.status.is_terminal() {
            self.cancel_below(ctx, &task, &CancelledBy::Runtime).await?;
            crate::engine::child::fail_task(ctx, &task, None, exhausted).await?;
        }
        self.notify();
        if let (Some(delegator), Ok(shared)) = (freed, ctx.shared()) {
            self.admit_waiting(&shared, &delegator).await;
        }
        Ok(())
    }

    /// `agent.run_budget_exhausted` once the run's agents together crossed its token budget.
    pub(crate) fn run_budget_exhausted(&self) -> Option<ApplicationError> {
        match self.lock().run_tokens {
            (spent, Some(limit)) if spent > limit => Some(run_budget_error(spent, limit)),
            _ => None,
        }
    }
}

/// A started task's token budget, charged with its own model answers and those of every task
/// below it.
pub(super) struct TaskTokens {
    task: TaskId,
    used: u64,
    limit: u64,
    /// Some of `used` came from tasks it delegated.
    from_below: bool,
}

/// `agent.task_budget_exhausted`, as the delegating agent reads it in the task's result.
pub(super) fn task_budget_error(tokens: &TaskTokens) -> ApplicationError {
    let (used, limit) = (tokens.used, tokens.limit);
    ApplicationError::fatal(
        "agent.task_budget_exhausted",
        if tokens.from_below {
            format!(
                "it used {used} model tokens together with the tasks it delegated, over its budget of {limit}"
            )
        } else {
            format!("it used {used} model tokens, over its budget of {limit}")
        },
    )
}

pub(super) fn run_budget_error(spent: u64, limit: u64) -> ApplicationError {
    ApplicationError::fatal(
        "agent.run_budget_exhausted",
        format!(
            "the run used {spent} model tokens, over its budget of {limit} (limits.maxTotalTokens)"
        ),
    )
}
