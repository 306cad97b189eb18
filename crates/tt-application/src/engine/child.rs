//! A delegated task's worker: prepares the target agent's invocation (child policy, frozen tool
//! snapshot, system prompt and markdown brief), runs its tool loop to `task.return`, and
//! contains every failure inside the task so the delegating agent's run goes on.

use crate::error::BestEffort;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tt_domain::error_codes;
use tt_domain::event::EventLevel;
use tt_domain::event_payload as payload;
use tt_domain::invocation::{ExitPolicy, InvocationStatus};
use tt_domain::run::Presentation;
use tt_domain::task::{AgentTaskRecord, TaskStatus};

use super::scheduler::{TaskHost, transition_task};
use crate::delegation::policy::apply_nested_invocation_policy;
use crate::delegation::rendering::render_stored_brief;
use crate::engine::context::{RunContext, RunScheduler};
use crate::engine::invocation::InvocationRuntime;
use crate::engine::invocation_setup::Origin;
use crate::engine::tool_loop::{LoopOutcome, run_tool_loop};
use crate::error::{ApplicationError, ApplicationResult};

/// The run as its scheduler sees it. Implemented here, beside the worker the scheduler starts,
/// so the scheduler reaches the tool loop only through this runner, which it calls with
/// itself.
impl TaskHost for RunContext {
    fn run_id(&self) -> &tt_domain::ids::RunId {
        &self.run_id
    }

    fn services(&self) -> &crate::services::RuntimeServices {
        &self.services
    }

    fn events(&self) -> &crate::events::EventSink {
        &self.events
    }

    fn cancel(&self) -> &CancellationToken {
        &self.cancel
    }

    fn set_invocation_status(
        &self,
        invocation: &mut tt_domain::invocation::AgentInvocation,
        status: InvocationStatus,
    ) -> impl Future<Output = ApplicationResult<bool>> + Send {
        RunContext::set_invocation_status(self, invocation, status)
    }

    async fn run_task(
        scheduler: Arc<RunScheduler>,
        task: AgentTaskRecord,
        cancel: CancellationToken,
        started: bool,
    ) -> bool {
        run_delegated_task(&scheduler, task, cancel, started).await
    }

    fn fail_task(
        &self,
        task: &AgentTaskRecord,
        error: &ApplicationError,
    ) -> impl Future<Output = ApplicationResult<()>> + Send {
        fail_task(self, task, None, error)
    }
}

/// Runs one delegated task to a terminal state. Cancellation is recorded by whoever cancelled
/// (the scheduler), so a cancelled worker returns without writing anything more.
///
/// `started`: the admission queue already marked the task running. Returns `false` when the
/// task failed and the store refused to record that (the task then never ends by itself).
pub(crate) async fn run_delegated_task(
    scheduler: &Arc<RunScheduler>,
    task: AgentTaskRecord,
    cancel: CancellationToken,
    started: bool,
) -> bool {
    if cancel.is_cancelled() {
        return true;
    }
    let ctx = scheduler.host();
    let mut invocation_slot = None;
    let mut delegates = false;
    // Boxed: the agent's loop is kilobytes of state, which a future holding it inline would
    // copy each time it is moved (into the worker's box, and on each await that builds it).
    let result = Box::pin(drive(
        scheduler,
        &task,
        &cancel,
        started,
        &mut delegates,
        &mut invocation_slot,
    ))
    .await;
    if cancel.is_cancelled() || matches!(&result, Err(error) if error.is_cancelled()) {
        return true;
    }
    // What it delegated and did not wait for ends with it, like at workspace.finish: before
    // its failure is recorded (so its end comes after theirs, as for a stopped task), or
    // after its result was returned.
    let cancel_below = || async {
        if delegates {
            let _ = scheduler
                .cancel_unfinished_for_parent(&task.child_invocation_id, TASK_ENDED_REASON)
                .await;
        }
    };
    let mut recorded = true;
    match result {
        Err(error) => {
            cancel_below().await;
            let failed = fail_task(ctx, &task, invocation_slot, &error).await;
            recorded = failed.is_ok();
            failed.best_effort("fail the delegated task");
            // Waiters wake to the failure, or, when it could not be recorded, to a task they
            // must not wait for any more.
            scheduler.notify();
        }
        Ok(()) => cancel_below().await,
    }
    recorded
}

/// Reason recorded for a task whose delegating agent finished its own task first.
pub(crate) const TASK_ENDED_REASON: &str =
    "cancelled because the agent that delegated it finished its own task";

/// How deep `invocation` is: 0 for the run's own agents (root and handoff owners), one more
/// for each delegation above it.
pub(crate) async fn invocation_depth(
    ctx: &RunContext,
    invocation: &tt_domain::ids::InvocationId,
) -> ApplicationResult<u32> {
    let mut depth = 0;
    let mut current = ctx
        .services
        .invocations
        .load_invocation(&ctx.run_id, invocation)
        .await?;
    while current.kind == tt_domain::invocation::InvocationKind::Subagent {
        depth += 1;
        let Some(parent) = current.parent_invocation_id.clone() else {
            break;
        };
        current = ctx
            .services
            .invocations
            .load_invocation(&ctx.run_id, &parent)
            .await?;
    }
    Ok(depth)
}

/// The run's `delegation.maxDelegationDepth`, from the profile the run started with: read at
/// the first delegated agent's start and kept for the rest of the active run.
pub(crate) async fn max_delegation_depth(ctx: &RunContext) -> ApplicationResult<u32> {
    ctx.max_delegation_depth
        .get_or_try_init(|| async {
            let profile_id = ctx.read_run(|run| run.profile_id.clone()).await;
            let profile = crate::profiles::resolve(
                ctx.services.profiles.as_ref(),
                profile_id.as_ref().map(tt_domain::ids::ProfileId::as_str),
            )
            .await?;
            Ok(profile.definition.delegation.max_delegation_depth)
        })
        .await
        .copied()
}

async fn drive(
    scheduler: &Arc<RunScheduler>,
    task: &AgentTaskRecord,
    cancel: &CancellationToken,
    already_started: bool,
    delegates: &mut bool,
    invocation_slot: &mut Option<tt_domain::invocation::AgentInvocation>,
) -> ApplicationResult<()> {
    let ctx = scheduler.host();
    let services = &ctx.services;
    if !already_started {
        let started =
            transition_task(ctx.as_ref(), &task.id, TaskStatus::Running, None, None).await?;
        if !started.changed {
            // Cancelled (or otherwise ended) before it could start.
            return Err(ApplicationError::cancelled());
        }
    }
    scheduler.notify();
    // The idle limit counts from the start of its work, not from delegation.
    scheduler.mark_started(&task.child_invocation_id);
    let mut invocation = services
        .invocations
        .load_invocation(&ctx.run_id, &task.child_invocation_id)
        .await?;
    ctx.set_invocation_status(&mut invocation, InvocationStatus::Running)
        .await?;
    *invocation_slot = Some(invocation.clone());

    let target = crate::profiles::resolve(
        services.profiles.as_ref(),
        Some(task.target_profile_id.as_str()),
    )
    .await?;
    crate::profiles::check_model_configured(&target)?;
    let policy = &target.definition.delegation;
    // Its budgets cover everything it delegates: tokens (the delegating agent's `budget`,
    // defaulting to the profile's) and money (the profile's `maxTaskCostUsd`).
    scheduler.set_task_budget(
        &task.child_invocation_id,
        &task.id,
        task.budget.and_then(|budget| budget.max_tokens),
        policy.max_task_cost_usd,
    );
    let may_delegate = policy.can_delegate
        && policy.allow_nested_delegation
        && invocation_depth(ctx, &task.child_invocation_id).await?
            < max_delegation_depth(ctx).await?;
    *delegates = may_delegate;
    let profile = apply_nested_invocation_policy(&target, task.budget, may_delegate);
    let origin = task_origin(ctx, &target, task).await?;
    let prepared = crate::engine::invocation_setup::prepare_invocation(
        ctx,
        crate::engine::invocation_setup::InvocationSetup {
            invocation: &invocation,
            profile: &profile,
            exit_policy: ExitPolicy::TaskReturnRequired,
            presentation: Presentation::Background,
            origin,
        },
        cancel,
    )
    .await?;
    // A resumed agent goes on from its stored steps (docs/resume.md).
    let replay = ctx.take_replay(&task.child_invocation_id);
    let mut inv = InvocationRuntime::start(
        invocation,
        profile,
        &prepared,
        cancel.clone(),
        replay,
        Arc::clone(scheduler),
    );
    let messages = prepared.messages;
    let outcome = run_tool_loop(ctx, &mut inv, messages).await;
    *invocation_slot = Some(inv.invocation.clone());
    match outcome? {
        LoopOutcome::TaskReturned { .. } => {
            ctx.set_invocation_status(&mut inv.invocation, InvocationStatus::Completed)
                .await?;
            *invocation_slot = Some(inv.invocation);
            scheduler.notify();
            Ok(())
        }
        LoopOutcome::Transferred { .. } => Err(ApplicationError::fatal(
            error_codes::AGENT_CHILD_HANDOFF_DENIED,
            "a delegated agent cannot hand the job off",
        )),
        LoopOutcome::Finished { .. } => Err(ApplicationError::fatal(
            error_codes::AGENT_CHILD_INVOCATION_MISSING_RETURN,
            "the delegated agent ended without task.return",
        )),
    }
}

/// Where the agent of `task` starts: from its brief, or, started in fork mode, from the
/// prefix stored for it (the same one on every start, so a resumed agent reads what it read).
async fn task_origin<'a>(
    ctx: &RunContext,
    target: &tt_domain::profile::ResolvedProfile,
    task: &'a AgentTaskRecord,
) -> ApplicationResult<Origin<'a>> {
    let stored =
        crate::engine::fork_prefix::stored_prefix(ctx, target, &task.child_invocation_id).await?;
    Ok(match stored {
        Some(prefix) => Origin::Fork {
            task_id: &task.id,
            brief: crate::delegation::rendering::render_fork_brief(&task.task),
            prefix,
        },
        None => Origin::Task {
            task_id: &task.id,
            brief: render_stored_brief(&task.task, task.continuation),
        },
    })
}

/// Marks the task and its invocation failed and journals `agent_child_invocation_failed`. The
/// caller wakes the scheduler's waiters.
async fn fail_task(
    ctx: &RunContext,
    task: &AgentTaskRecord,
    invocation: Option<tt_domain::invocation::AgentInvocation>,
    error: &ApplicationError,
) -> ApplicationResult<()> {
    let message = error.to_string();
    transition_task(
        ctx,
        &task.id,
        TaskStatus::Failed,
        None,
        Some(message.clone()),
    )
    .await?;
    let mut invocation = match invocation {
        Some(invocation) => invocation,
        None => {
            ctx.services
                .invocations
                .load_invocation(&ctx.run_id, &task.child_invocation_id)
                .await?
        }
    };
    if !invocation.status.is_terminal() {
        ctx.set_invocation_status(&mut invocation, InvocationStatus::Failed)
            .await?;
    }
    let failed = payload::AgentChildInvocationFailed {
        task_id: task.id.clone(),
        child_invocation_id: task.child_invocation_id.clone(),
        parent_invocation_id: task.parent_invocation_id.clone(),
        message,
    };
    ctx.events
        .record(&ctx.run_id, EventLevel::Warn, &failed)
        .await?;
    Ok(())
}
