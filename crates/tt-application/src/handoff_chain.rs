//! The foreground chain: bringing a handoff target in (its task and invocation start, its
//! profile, tools, prompt and brief are prepared) and settling handoff tasks when an owner
//! finishes, fails or is cancelled.

use crate::error::BestEffort;
use std::sync::Arc;
use tt_domain::ids::{InvocationId, TaskId};
use tt_domain::invocation::{ExitPolicy, InvocationStatus};
use tt_domain::model::AgentModelMessage;
use tt_domain::task::{TaskContinuation, TaskStatus};

use crate::delegation::rendering::render_stored_brief;
use crate::engine::context::{RunContext, RunScheduler};
use crate::engine::invocation::InvocationRuntime;
use crate::engine::scheduler::transition_task;
use crate::error::{ApplicationError, ApplicationResult};
use crate::profiles::check_model_configured;

/// Moves a task to `status` (first terminal write wins) and journals the change.
pub(crate) async fn settle_task(
    ctx: &RunContext,
    task_id: &TaskId,
    status: TaskStatus,
    error: Option<String>,
) -> ApplicationResult<()> {
    transition_task(ctx, task_id, status, None, error).await?;
    Ok(())
}

/// Ends every unfinished handoff task of the run (and its not-yet-ended invocation) as
/// `status`: used when the foreground owner fails or the run is cancelled.
pub(crate) async fn settle_open_handoffs(
    ctx: &RunContext,
    status: TaskStatus,
    reason: &str,
) -> ApplicationResult<()> {
    let invocation_status = match status {
        TaskStatus::Cancelled => InvocationStatus::Cancelled,
        TaskStatus::Interrupted => InvocationStatus::Interrupted,
        TaskStatus::Queued | TaskStatus::Running | TaskStatus::Completed | TaskStatus::Failed => {
            InvocationStatus::Failed
        }
    };
    let open: Vec<_> = ctx
        .services
        .invocations
        .list_tasks(&ctx.run_id)
        .await?
        .into_iter()
        .filter(|task| {
            task.continuation == TaskContinuation::TransferControl && !task.status.is_terminal()
        })
        .collect();
    for task in open {
        settle_task(ctx, &task.id, status, Some(reason.to_owned())).await?;
        let mut invocation = ctx
            .services
            .invocations
            .load_invocation(&ctx.run_id, &task.child_invocation_id)
            .await?;
        if !invocation.status.is_terminal() {
            ctx.set_invocation_status(&mut invocation, invocation_status)
                .await?;
        }
    }
    Ok(())
}

/// Starts the handoff target brought in by `task_id`: the task and invocation start, the target
/// profile is resolved and checked, its tool snapshot is frozen, and its first messages are its
/// system prompt and the markdown handoff brief (prior turns are not carried over). A target
/// that cannot start fails with its task. It runs on the run `scheduler` serves.
pub(crate) async fn prepare_handoff(
    scheduler: &Arc<RunScheduler>,
    task_id: &TaskId,
    invocation_id: &InvocationId,
) -> ApplicationResult<(InvocationRuntime, Vec<AgentModelMessage>)> {
    let ctx = scheduler.host().as_ref();
    let services = &ctx.services;
    let started = transition_task(ctx, task_id, TaskStatus::Running, None, None).await?;
    let task = started.task;
    let mut invocation = services
        .invocations
        .load_invocation(&ctx.run_id, invocation_id)
        .await?;
    ctx.set_invocation_status(&mut invocation, InvocationStatus::Running)
        .await?;
    let prepared = async {
        let profile = crate::profiles::resolve(
            services.profiles.as_ref(),
            Some(task.target_profile_id.as_str()),
        )
        .await?;
        check_model_configured(&profile)?;
        // The finish rules are the run's: a foreground run needs a commit before it ends.
        let presentation = ctx.run_snapshot().await.presentation;
        let prepared = crate::engine::invocation_setup::prepare_invocation(
            ctx,
            crate::engine::invocation_setup::InvocationSetup {
                invocation: &invocation,
                profile: &profile,
                exit_policy: ExitPolicy::RunFinishAllowed,
                presentation,
                origin: crate::engine::invocation_setup::Origin::Task {
                    task_id: &task.id,
                    brief: render_stored_brief(&task.task, task.continuation),
                },
            },
            &ctx.cancel,
        )
        .await?;
        Ok::<_, ApplicationError>((profile, prepared))
    }
    .await;
    match prepared {
        Ok((profile, prepared)) => Ok((
            InvocationRuntime::start(
                invocation,
                profile,
                &prepared,
                ctx.cancel.clone(),
                None,
                Arc::clone(scheduler),
            ),
            prepared.messages,
        )),
        Err(error) => {
            let (task_status, invocation_status) = if error.is_cancelled() {
                (TaskStatus::Cancelled, InvocationStatus::Cancelled)
            } else {
                (TaskStatus::Failed, InvocationStatus::Failed)
            };
            settle_task(ctx, task_id, task_status, Some(error.to_string()))
                .await
                .best_effort("settle the handoff task");
            ctx.set_invocation_status(&mut invocation, invocation_status)
                .await
                .best_effort("end the handoff invocation");
            Err(error)
        }
    }
}
