//! The host's cancel of one delegated task (`AgentRunService::cancel_task`): the checks that
//! give the host a coded answer, then the scheduler's cancel, recorded as the user's.

use std::sync::Arc;

use tt_domain::error_codes;
use tt_domain::ids::TaskId;
use tt_domain::task::{AgentTaskRecord, TaskContinuation};

use super::{CancelledBy, TaskHost, TaskScheduler};
use crate::error::{ApplicationError, ApplicationResult};

/// Reason recorded when the host cancels a task.
const HOST_CANCELLED_REASON: &str = "stopped by the user";

/// The host's `cancel_task`: coded errors for an unknown task (`agent.task_not_found`), a
/// handoff (`agent.task_not_cancellable`: only delegated tasks can be cancelled alone) and a
/// task that already ended (`agent.task_already_finished`).
pub(crate) async fn cancel_task_as_host<H: TaskHost>(
    scheduler: &Arc<TaskScheduler<H>>,
    task_id: &TaskId,
) -> ApplicationResult<AgentTaskRecord> {
    let ctx = scheduler.host();
    let task = ctx
        .services()
        .invocations
        .list_tasks(ctx.run_id())
        .await?
        .into_iter()
        .find(|task| &task.id == task_id)
        .ok_or_else(|| {
            ApplicationError::fatal(
                error_codes::AGENT_TASK_NOT_FOUND,
                format!("run {} has no task {task_id}", ctx.run_id()),
            )
        })?;
    if task.continuation != TaskContinuation::ReturnToParent {
        return Err(ApplicationError::fatal(
            error_codes::AGENT_TASK_NOT_CANCELLABLE,
            format!("task {task_id} is a handoff; cancel the run instead"),
        ));
    }
    let already = |task: &AgentTaskRecord| {
        ApplicationError::fatal(
            error_codes::AGENT_TASK_ALREADY_FINISHED,
            format!("task {} already ended ({})", task.id, task.status.as_str()),
        )
    };
    if task.status.is_terminal() {
        return Err(already(&task));
    }
    let outcome = scheduler
        .cancel_task_by(task_id, HOST_CANCELLED_REASON, CancelledBy::Host)
        .await?;
    if !outcome.changed {
        return Err(already(&outcome.task));
    }
    Ok(outcome.task)
}
