//! The foreground chain: bringing a handoff target in (its task and invocation start, its
//! profile, tools, prompt and brief are prepared) and settling handoff tasks when an owner
//! finishes, fails or is cancelled.

use serde_json::{Value, json};
use std::sync::Arc;
use tt_domain::event::RunEventType;
use tt_domain::ids::{InvocationId, TaskId};
use tt_domain::invocation::{ExitPolicy, InvocationStatus};
use tt_domain::model::{AgentModelMessage, ModelRole};
use tt_domain::task::{TaskContinuation, TaskStatus, TaskTransition};
use tt_ports::RunDocument;

use crate::context::{InvocationRuntime, RunContext, ToolSession};
use crate::delegation::child::check_model_configured;
use crate::delegation::rendering::render_handoff_brief;
use crate::delegation::scheduler::emit_task_event;
use crate::error::{ApplicationError, ApplicationResult};
use crate::prompt::agent_system_prompt;
use crate::registry::build_tool_snapshot;

/// Moves a task to `status` (first terminal write wins) and journals the change.
pub async fn settle_task(
    ctx: &RunContext,
    task_id: &TaskId,
    status: TaskStatus,
    error: Option<String>,
) -> ApplicationResult<()> {
    let outcome = ctx
        .services
        .invocations
        .transition_task(
            &ctx.run_id,
            task_id,
            &TaskTransition {
                status,
                result_ref: None,
                error,
            },
            ctx.services.clock.now(),
        )
        .await?;
    if outcome.changed {
        emit_task_event(ctx, &outcome.task).await?;
    }
    Ok(())
}

/// Ends every unfinished handoff task of the run (and its not-yet-ended invocation) as
/// `status`: used when the foreground owner fails or the run is cancelled.
pub async fn settle_open_handoffs(
    ctx: &RunContext,
    status: TaskStatus,
    reason: &str,
) -> ApplicationResult<()> {
    let invocation_status = match status {
        TaskStatus::Cancelled => InvocationStatus::Cancelled,
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
/// that cannot start fails with its task.
pub async fn prepare_handoff(
    ctx: &RunContext,
    task_id: &TaskId,
    invocation_id: &InvocationId,
) -> ApplicationResult<(InvocationRuntime, Vec<AgentModelMessage>)> {
    let services = &ctx.services;
    let started = services
        .invocations
        .transition_task(
            &ctx.run_id,
            task_id,
            &TaskTransition {
                status: TaskStatus::Running,
                result_ref: None,
                error: None,
            },
            services.clock.now(),
        )
        .await?;
    if started.changed {
        emit_task_event(ctx, &started.task).await?;
    }
    let task = started.task;
    let mut invocation = services
        .invocations
        .load_invocation(&ctx.run_id, invocation_id)
        .await?;
    ctx.set_invocation_status(&mut invocation, InvocationStatus::Running)
        .await?;
    let prepared = async {
        let profile = crate::profiles::resolve(services.profiles.as_ref(), Some(task.target_profile_id.as_str())).await?;
        check_model_configured(&profile)?;
        // The finish rules are the run's: a foreground run needs a commit before it ends.
        let presentation = ctx.run_snapshot().await.presentation;
        let snapshot = build_tool_snapshot(&profile, &invocation.id, ExitPolicy::RunFinishAllowed, presentation)?;
        services
            .runs
            .write_document(
                &ctx.run_id,
                &RunDocument::InvocationToolSnapshot(invocation.id.clone()),
                &serde_json::to_value(&snapshot).unwrap_or(Value::Null),
            )
            .await?;
        let messages = vec![
            AgentModelMessage::text(ModelRole::System, agent_system_prompt(&profile, &snapshot)),
            AgentModelMessage::text(ModelRole::User, render_handoff_brief(&task.task)),
        ];
        ctx.events
            .info(
                &ctx.run_id,
                RunEventType::ContextAssembled,
                json!({
                    "request": {
                        "provider": services.model.name(), "model": profile.definition.model.model_id,
                        "messageCount": messages.len(), "toolCount": snapshot.tools.len(),
                    },
                    "invocationId": invocation.id,
                    "taskId": task.id,
                    "tools": snapshot.model_names(),
                    "maxRounds": snapshot.budgets.max_rounds,
                    "contextPolicy": profile.definition.context,
                    "modelRetry": profile.definition.run.model_retry,
                }),
            )
            .await?;
        Ok::<_, ApplicationError>((profile, snapshot, messages))
    }
    .await;
    match prepared {
        Ok((profile, snapshot, messages)) => Ok((
            InvocationRuntime {
                invocation,
                policy: profile.access_policy(),
                profile,
                snapshot: Arc::new(snapshot),
                session: ToolSession::default(),
                cancel: ctx.cancel.clone(),
                delivered: Default::default(),
            },
            messages,
        )),
        Err(error) => {
            let (task_status, invocation_status) = if error.is_cancelled() {
                (TaskStatus::Cancelled, InvocationStatus::Cancelled)
            } else {
                (TaskStatus::Failed, InvocationStatus::Failed)
            };
            let _ = settle_task(ctx, task_id, task_status, Some(error.to_string())).await;
            let _ = ctx
                .set_invocation_status(&mut invocation, invocation_status)
                .await;
            Err(error)
        }
    }
}
