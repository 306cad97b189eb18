//! `agent.cancel_task`: stops one of the caller's delegated tasks (and, deepest first, the
//! tasks it delegated in turn). It runs below the engine on narrow inputs: the caller's profile
//! and a [`TaskControl`] the engine implements, which lists tasks and stops one through the
//! scheduler (`engine::tasks::tools::RunTaskView`).

use serde_json::json;
use tt_domain::error_codes;
use tt_domain::ids::TaskId;
use tt_domain::profile::ResolvedProfile;
use tt_domain::task::{AgentTaskRecord, TaskContinuation};
use tt_domain::tool::{AgentToolCall, ToolName};
use tt_ports::TaskTransitionOutcome;

use crate::delegation::args::parse_cancel_task_args;
use crate::delegation::list::TaskView;
use crate::error::{ApplicationResult, ToolCallError, ToolError};
use crate::tools::ToolSuccess;

/// Reason recorded when the delegating agent stops a task without saying why.
pub(crate) const CALLER_CANCELLED_REASON: &str = "stopped by the agent that delegated it";

/// What `agent.cancel_task` needs of the engine beyond the caller's tasks.
pub(crate) trait TaskControl: TaskView {
    /// Every task of the run (read only to tell "not yours" from "unknown").
    async fn run_tasks(&self) -> ApplicationResult<Vec<AgentTaskRecord>>;
    /// Stops the task's worker and records it cancelled by the caller with `reason` (its own
    /// delegated tasks first); `changed` is false when it had already ended.
    async fn stop(
        &self,
        task_id: &TaskId,
        reason: &str,
    ) -> ApplicationResult<TaskTransitionOutcome>;
}

/// `agent.cancel_task`: stops one task this agent delegated (and whatever that task delegated
/// in turn); its other tasks keep running. The cancelled result is delivered later like any
/// other, so each result still reaches the agent exactly once.
pub(crate) async fn agent_cancel_task(
    caller: &ResolvedProfile,
    tasks: &impl TaskControl,
    call: &AgentToolCall,
) -> Result<ToolSuccess, ToolCallError> {
    let args = parse_cancel_task_args(&call.arguments)?;
    if !caller.definition.delegation.can_delegate {
        return Err(ToolError::with_reason(
            error_codes::AGENT_DELEGATION_POLICY_DENIED,
            error_codes::AGENT_PROFILE_CANNOT_DELEGATE,
            "you have no delegated tasks to stop.",
        )
        .into());
    }
    let mine = tasks.delegated_tasks().await?;
    let Some(task) = mine.iter().find(|task| task.id.as_str() == args.task_id) else {
        // Only on this error path is the whole run listed, to tell "not yours" from "unknown".
        let elsewhere = tasks.run_tasks().await?.into_iter().any(|task| {
            task.id.as_str() == args.task_id
                && task.continuation == TaskContinuation::ReturnToParent
        });
        let (code, message) = if elsewhere {
            (
                error_codes::AGENT_CANCEL_TASK_NOT_YOURS,
                format!(
                    "`{}` is a task another agent delegated; you can only stop tasks you delegated yourself.",
                    args.task_id
                ),
            )
        } else {
            (
                error_codes::AGENT_CANCEL_TASK_NOT_FOUND,
                format!(
                    "`{}` is not one of your delegated tasks. Call `{}` with `mode: \"statusOnly\"` to see their ids.",
                    args.task_id,
                    ToolName::AgentAwait.model_alias()
                ),
            )
        };
        return Err(ToolError::new(code, message).into());
    };
    if task.status.is_terminal() {
        return Err(cancel_already_finished(task));
    }
    let reason = args
        .reason
        .unwrap_or_else(|| CALLER_CANCELLED_REASON.to_owned());
    let outcome = tasks.stop(&task.id, &reason).await?;
    if !outcome.changed {
        // It ended on its own while being stopped; its result stands.
        return Err(cancel_already_finished(&outcome.task));
    }
    let agent_id = &task.target_profile_id;
    let content = format!(
        "Stopped the task for `{agent_id}` (task id `{}`). Your other tasks keep running. What it had written before it stopped reaches you with its result, like any other result.",
        task.id
    );
    Ok(ToolSuccess::new(
        content,
        json!({"taskId": task.id, "status": "cancelled", "agentId": agent_id, "reason": reason}),
    ))
}

/// `agent.cancel_task_already_finished`, naming how the task ended.
fn cancel_already_finished(task: &AgentTaskRecord) -> ToolCallError {
    ToolError::new(
        error_codes::AGENT_CANCEL_TASK_ALREADY_FINISHED,
        format!(
            "The task for `{}` (task id `{}`) has already ended ({}); there is nothing to stop.",
            task.target_profile_id,
            task.id,
            task.status.as_str()
        ),
    )
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delegation::testing::task_record as task;
    use serde_json::Value;
    use std::sync::Mutex;
    use tt_domain::profile::{ProfileSource, default_writer_definition, resolve_profile};
    use tt_domain::task::TaskStatus;

    /// The caller delegated `task_mine` (running) and `task_done` (completed); another agent
    /// delegated `task_other`. `ends_first`: the task finishes on its own while being stopped.
    struct Tasks {
        ends_first: bool,
        stopped: Mutex<Vec<(TaskId, String)>>,
    }

    impl Tasks {
        fn new(ends_first: bool) -> Self {
            Self {
                ends_first,
                stopped: Mutex::new(Vec::new()),
            }
        }
    }

    impl TaskView for Tasks {
        async fn delegated_tasks(&self) -> ApplicationResult<Vec<AgentTaskRecord>> {
            Ok(vec![
                task("task_mine", "inv_root", TaskStatus::Running),
                task("task_done", "inv_root", TaskStatus::Completed),
            ])
        }

        fn queue_position(&self, _: &AgentTaskRecord) -> Option<usize> {
            None
        }

        fn task_tokens(&self) -> Option<(u64, u64)> {
            None
        }

        fn run_tokens(&self) -> (u64, Option<u64>) {
            (0, None)
        }
    }

    impl TaskControl for Tasks {
        async fn run_tasks(&self) -> ApplicationResult<Vec<AgentTaskRecord>> {
            let mut all = self.delegated_tasks().await?;
            all.push(task("task_other", "inv_other", TaskStatus::Running));
            Ok(all)
        }

        async fn stop(
            &self,
            task_id: &TaskId,
            reason: &str,
        ) -> ApplicationResult<TaskTransitionOutcome> {
            self.stopped
                .lock()
                .unwrap()
                .push((task_id.clone(), reason.to_owned()));
            let status = if self.ends_first {
                TaskStatus::Completed
            } else {
                TaskStatus::Cancelled
            };
            Ok(TaskTransitionOutcome {
                task: task(task_id.as_str(), "inv_root", status),
                changed: !self.ends_first,
            })
        }
    }

    fn lead() -> ResolvedProfile {
        let mut lead = default_writer_definition();
        lead.delegation.can_delegate = true;
        resolve_profile(lead, ProfileSource::built_in()).unwrap()
    }

    async fn cancel(tasks: &Tasks, arguments: Value) -> Result<ToolSuccess, ToolCallError> {
        let call = AgentToolCall::new("call_1", "agent_cancel_task", arguments);
        agent_cancel_task(&lead(), tasks, &call).await
    }

    fn code(result: Result<ToolSuccess, ToolCallError>) -> &'static str {
        match result {
            Err(ToolCallError::Recoverable(error)) => error.code.as_str(),
            other => panic!("expected a recoverable error, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn stops_the_callers_task_with_the_default_reason() {
        let tasks = Tasks::new(false);
        let stopped = cancel(&tasks, json!({"taskId": "task_mine"}))
            .await
            .unwrap();
        assert_eq!(stopped.structured["status"], "cancelled");
        assert_eq!(
            *tasks.stopped.lock().unwrap(),
            [(
                TaskId::from_raw("task_mine"),
                CALLER_CANCELLED_REASON.to_owned()
            )]
        );
    }

    #[tokio::test]
    async fn tells_another_agents_task_from_an_unknown_one_and_stops_neither() {
        let tasks = Tasks::new(false);
        assert_eq!(
            code(cancel(&tasks, json!({"taskId": "task_other"})).await),
            "agent.cancel_task_not_yours"
        );
        assert_eq!(
            code(cancel(&tasks, json!({"taskId": "task_nobody"})).await),
            "agent.cancel_task_not_found"
        );
        assert_eq!(
            code(cancel(&tasks, json!({"taskId": "task_done"})).await),
            "agent.cancel_task_already_finished"
        );
        assert!(tasks.stopped.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_task_that_ends_while_being_stopped_keeps_its_result() {
        let tasks = Tasks::new(true);
        assert_eq!(
            code(cancel(&tasks, json!({"taskId": "task_mine", "reason": "enough"})).await),
            "agent.cancel_task_already_finished"
        );
        assert_eq!(tasks.stopped.lock().unwrap().len(), 1);
    }
}
