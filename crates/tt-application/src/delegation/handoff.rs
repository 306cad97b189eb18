//! `agent.handoff`: hand the foreground of the run to another agent (reference §2.4). The
//! caller's part ends; the executor continues the same run with a new `handoff` invocation that
//! reads a markdown handoff brief (reference §4 "Handoff chain").

use serde_json::json;
use tt_domain::event::RunEventType;
use tt_domain::ids::{InvocationId, ProfileId, TaskId};
use tt_domain::invocation::{AgentInvocation, ExitPolicy, InvocationKind, InvocationStatus};
use tt_domain::profile::ResolvedProfile;
use tt_domain::task::{AgentTaskRecord, TaskContinuation, TaskStatus, next_workspace_key};
use tt_domain::tool::{AgentToolCall, ToolName};

use super::args::{PENDING_TASK_POLICY_DENY_IF_PENDING, parse_handoff_args};
use super::child::check_model_configured;
use crate::context::{InvocationRuntime, RunContext};
use crate::error::{ApplicationError, ToolCallError, ToolError};
use crate::tools::ToolSuccess;

/// An accepted handoff: the task that carries it and the invocation that takes over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandoffAccepted {
    pub task_id: TaskId,
    pub new_invocation_id: InvocationId,
}

/// Validates and records a handoff. The caller's loop ends after this call.
pub async fn agent_handoff(
    ctx: &RunContext,
    inv: &InvocationRuntime,
    call: &AgentToolCall,
) -> Result<(ToolSuccess, HandoffAccepted), ToolCallError> {
    let args = parse_handoff_args(&call.arguments)?;
    // Journaled before the policy checks, so a refused handoff still shows the request.
    ctx.events
        .info(
            &ctx.run_id,
            RunEventType::AgentHandoffRequested,
            json!({
                "sourceInvocationId": inv.invocation.id, "targetProfileId": args.agent_id,
                "pendingTaskPolicy": PENDING_TASK_POLICY_DENY_IF_PENDING,
            }),
        )
        .await?;
    let caller = &inv.profile.definition.delegation;
    if !caller.can_handoff {
        return Err(ToolError::new(
            "agent.handoff_policy_denied",
            "agent.profile_cannot_handoff: you cannot hand this job to another agent.",
        )
        .into());
    }
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
            "agent.handoff_pending_tasks",
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
        return Err(ToolError::new(
            "agent.handoff_depth_exhausted",
            format!(
                "agent.max_handoff_depth_exhausted: this job has already changed hands {depth} times, the most allowed. Finish it yourself."
            ),
        )
        .into());
    }
    let agent_id = ProfileId::parse(&args.agent_id).map_err(|_| {
        ToolError::invalid_arguments(format!(
            "`agentId` `{}` is not an agent id; use an id from `{}`.",
            args.agent_id,
            ToolName::AgentList.model_alias()
        ))
    })?;
    let target =
        match crate::profiles::resolve(ctx.services.profiles.as_ref(), Some(agent_id.as_str()))
            .await
        {
            Ok(target) => target,
            Err(ApplicationError::Fatal {
                code: "agent.profile_not_found",
                ..
            }) => {
                return Err(ToolError::new(
                    "agent.target_profile_not_found",
                    format!(
                        "There is no agent `{agent_id}`. Use `{}` to see who you can hand off to.",
                        ToolName::AgentList.model_alias()
                    ),
                )
                .into());
            }
            Err(other) => return Err(other.into()),
        };
    if let Some(prefix) = handoff_target_denial(&target, inv.profile.id()) {
        return Err(ToolError::new(
            "agent.handoff_policy_denied",
            format!(
                "{prefix}: `{agent_id}` cannot take this job over from you. Use `{}` to see who can.",
                ToolName::AgentList.model_alias()
            ),
        )
        .into());
    }

    let now = ctx.services.clock.now();
    let workspace_key = next_workspace_key(
        agent_id.as_str(),
        tasks.iter().map(|task| task.workspace_key.as_str()),
    );
    let new_invocation_id = InvocationId::generate(&ctx.services.ids.next_token());
    let task_id = TaskId::generate_handoff(&ctx.services.ids.next_token());
    let successor = AgentInvocation {
        id: new_invocation_id.clone(),
        run_id: ctx.run_id.clone(),
        parent_invocation_id: Some(inv.invocation.id.clone()),
        profile_id: agent_id.clone(),
        kind: InvocationKind::Handoff,
        status: InvocationStatus::Created,
        exit_policy: ExitPolicy::RunFinishAllowed,
        created_at: now,
        updated_at: now,
    };
    ctx.services.invocations.save_invocation(&successor).await?;
    ctx.events
        .info(
            &ctx.run_id,
            RunEventType::AgentInvocationCreated,
            json!({
                "invocationId": successor.id, "parentInvocationId": inv.invocation.id, "profileId": agent_id,
                "kind": successor.kind.as_str(), "status": successor.status.as_str(),
                "exitPolicy": successor.exit_policy.as_str(), "taskId": task_id,
            }),
        )
        .await?;
    let task = AgentTaskRecord {
        id: task_id.clone(),
        run_id: ctx.run_id.clone(),
        parent_invocation_id: inv.invocation.id.clone(),
        child_invocation_id: new_invocation_id.clone(),
        target_profile_id: agent_id.clone(),
        workspace_key: workspace_key.clone(),
        continuation: TaskContinuation::TransferControl,
        status: TaskStatus::Queued,
        task: args.handoff.clone(),
        budget: None,
        created_by_tool_call_id: Some(call.id.clone()),
        result_ref: None,
        error: None,
        created_at: now,
        updated_at: now,
    };
    ctx.services.invocations.create_task(&task).await?;
    ctx.events
        .info(
            &ctx.run_id,
            RunEventType::AgentTaskRegistered,
            json!({
                "taskId": task_id, "parentInvocationId": inv.invocation.id, "childInvocationId": new_invocation_id,
                "targetProfileId": agent_id, "workspaceKey": workspace_key, "continuation": "transfer_control",
                "status": "queued",
            }),
        )
        .await?;
    ctx.events
        .info(
            &ctx.run_id,
            RunEventType::AgentHandoffAccepted,
            json!({
                "taskId": task_id, "sourceInvocationId": inv.invocation.id, "newInvocationId": new_invocation_id,
                "targetProfileId": agent_id, "workspaceKey": workspace_key,
            }),
        )
        .await?;
    let content = format!(
        "Handoff accepted for Agent {agent_id}. Your part is complete; make no further tool calls."
    );
    let success = ToolSuccess::new(
        content,
        json!({"handoffId": task_id, "taskId": task_id, "status": "accepted", "agentId": agent_id}),
    );
    Ok((
        success,
        HandoffAccepted {
            task_id,
            new_invocation_id,
        },
    ))
}

/// Why `target` cannot take the foreground from `caller` (a contract message prefix).
fn handoff_target_denial(target: &ResolvedProfile, caller: &ProfileId) -> Option<&'static str> {
    let policy = &target.definition.delegation;
    if !policy.callable {
        Some("agent.target_not_callable")
    } else if !policy.allow_as_handoff_target {
        Some("agent.target_not_handoff")
    } else if !policy.allows_caller(caller) {
        Some("agent.target_caller_denied")
    } else if check_model_configured(target).is_err() {
        Some("agent.profile_model_requires_configuration")
    } else {
        None
    }
}
