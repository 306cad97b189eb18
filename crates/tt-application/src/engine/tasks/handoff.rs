//! `agent.handoff`: hand the foreground of the run to another agent (reference §2.4). The
//! caller's part ends; the executor continues the same run with a new `handoff` invocation that
//! reads a markdown handoff brief (reference §4 "Handoff chain").

use serde_json::json;
use tt_domain::brief::StoredBrief;
use tt_domain::error_codes;
use tt_domain::event::EventLevel;
use tt_domain::event_payload as payload;
use tt_domain::ids::{InvocationId, TaskId};
use tt_domain::task::TaskContinuation;
use tt_domain::tool::{AgentToolCall, ToolName};

use super::targets::{NewTask, open_task, registered, resolve_target};
use super::tools::{caller_admitted, target_admitted};
use crate::delegation::args::{PENDING_TASK_POLICY_DENY_IF_PENDING, parse_handoff_args};
use crate::delegation::policy::Operation;
use crate::engine::context::RunContext;
use crate::engine::invocation::InvocationRuntime;
use crate::error::{ToolCallError, ToolError};
use crate::events::EventSink;
use crate::tools::ToolSuccess;

/// An accepted handoff: the task that carries it and the invocation that takes over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HandoffAccepted {
    pub task_id: TaskId,
    pub new_invocation_id: InvocationId,
}

/// Validates and records a handoff. The caller's loop ends after this call.
pub(crate) async fn agent_handoff(
    ctx: &RunContext,
    inv: &InvocationRuntime,
    call: &AgentToolCall,
) -> Result<(ToolSuccess, HandoffAccepted), ToolCallError> {
    let args = parse_handoff_args(&call.arguments)?;
    // Journaled before the policy checks, so a refused handoff still shows the request.
    ctx.events
        .record(
            &ctx.run_id,
            EventLevel::Info,
            &payload::AgentHandoffRequested {
                source_invocation_id: inv.invocation.id.clone(),
                target_profile_id: args.agent_id.clone(),
                pending_task_policy: PENDING_TASK_POLICY_DENY_IF_PENDING.to_owned(),
            },
        )
        .await?;
    let caller = &inv.profile.definition.delegation;
    caller_admitted(inv, Operation::Handoff)?;
    let tasks = ctx.services.invocations.list_tasks(&ctx.run_id).await?;
    let pending = tasks
        .iter()
        .filter(|task| {
            task.parent_invocation_id == inv.invocation.id
                && task.continuation == TaskContinuation::ReturnToParent
                && !task.status.is_terminal()
        })
        .count();
    if pending > 0 {
        return Err(ToolError::new(
            error_codes::AGENT_HANDOFF_PENDING_TASKS,
            format!(
                "{pending} task(s) you delegated are still running. Wait for them with `{}` before you hand off.",
                ToolName::AgentAwait.model_alias()
            ),
        )
        .into());
    }
    let depth = tasks
        .iter()
        .filter(|task| task.continuation == TaskContinuation::TransferControl)
        .count();
    if depth as u64 >= u64::from(caller.max_handoff_depth) {
        return Err(ToolError::with_reason(
            error_codes::AGENT_HANDOFF_DEPTH_EXHAUSTED,
            error_codes::AGENT_MAX_HANDOFF_DEPTH_EXHAUSTED,
            &format!(
                "this job has already changed hands {depth} times, the most allowed. Finish it yourself."
            ),
        )
        .into());
    }
    let (agent_id, target) = resolve_target(ctx, &args.agent_id, Operation::Handoff).await?;
    target_admitted(inv, &target, &agent_id, Operation::Handoff)?;
    let new = NewTask {
        target: agent_id.clone(),
        continuation: TaskContinuation::TransferControl,
        brief: StoredBrief::Handoff(args.handoff.clone()),
        budget: None,
        workspace_key: None,
    };
    let (task, mut unit, key) = open_task(ctx, inv, call, new).await?;
    let registered = registered(ctx, &task)?;
    let (task_id, new_invocation_id, workspace_key) =
        (task.id, task.child_invocation_id, task.workspace_key);
    let accepted_event = EventSink::pending(
        EventLevel::Info,
        &payload::AgentHandoffAccepted {
            task_id: task_id.clone(),
            source_invocation_id: inv.invocation.id.clone(),
            new_invocation_id: new_invocation_id.clone(),
            target_profile_id: agent_id.clone(),
            workspace_key,
        },
    )?;
    // The agent's and the task's records and events, one unit: one commit.
    unit.push(registered);
    unit.push(ctx.events.stamp(&ctx.run_id, accepted_event));
    ctx.events.commit(&ctx.run_id, unit).await?;
    key.keep();
    Ok(accepted(task_id, new_invocation_id, agent_id.as_str()))
}

/// The answer to a handoff the caller made before the run was interrupted (docs/resume.md):
/// its task was registered already, so running the call again hands the run over with that
/// task instead of registering a second one.
pub(crate) async fn already_accepted(
    ctx: &RunContext,
    task_id: &TaskId,
) -> Result<(ToolSuccess, HandoffAccepted), ToolCallError> {
    let task = ctx
        .services
        .invocations
        .load_task(&ctx.run_id, task_id)
        .await?;
    Ok(accepted(
        task.id,
        task.child_invocation_id,
        task.target_profile_id.as_str(),
    ))
}

fn accepted(
    task_id: TaskId,
    new_invocation_id: InvocationId,
    agent_id: &str,
) -> (ToolSuccess, HandoffAccepted) {
    let content = format!(
        "Handoff accepted for Agent {agent_id}. Your part is complete; make no further tool calls."
    );
    let success = ToolSuccess::new(
        content,
        json!({"handoffId": task_id, "taskId": task_id, "status": "accepted", "agentId": agent_id}),
    );
    (
        success,
        HandoffAccepted {
            task_id,
            new_invocation_id,
        },
    )
}
