//! What `agent.delegate` and `agent.handoff` share: resolving the target agent, checking that it
//! accepts the caller, and opening the task record with the target's invocation.

use serde_json::{Value, json};
use tt_domain::event::RunEventType;
use tt_domain::ids::{InvocationId, ProfileId, TaskId};
use tt_domain::invocation::{AgentInvocation, InvocationKind, InvocationStatus};
use tt_domain::profile::ResolvedProfile;
use tt_domain::task::{AgentTaskBudget, AgentTaskRecord, TaskContinuation, TaskStatus};
use tt_domain::tool::{AgentToolCall, ToolName};

use super::child::check_model_configured;
use crate::context::{InvocationRuntime, RunContext};
use crate::error::{ApplicationError, ApplicationResult, ToolCallError, ToolError};

/// How the caller wants to use the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Delegate,
    Handoff,
}

/// Parses `agentId` and resolves the target profile; an unusable id or an unknown agent is
/// recoverable, any other resolution failure is fatal.
pub async fn resolve_target(
    ctx: &RunContext,
    raw_agent_id: &str,
    operation: Operation,
) -> Result<(ProfileId, ResolvedProfile), ToolCallError> {
    let list = ToolName::AgentList.model_alias();
    let agent_id = ProfileId::parse(raw_agent_id).map_err(|_| {
        ToolError::invalid_arguments(format!(
            "`agentId` `{raw_agent_id}` is not an agent id; use an id from `{list}`."
        ))
    })?;
    match crate::profiles::resolve(ctx.services.profiles.as_ref(), Some(agent_id.as_str())).await {
        Ok(target) => Ok((agent_id, target)),
        Err(ApplicationError::Fatal {
            code: "agent.profile_not_found",
            ..
        }) => {
            let purpose = match operation {
                Operation::Delegate => "call on",
                Operation::Handoff => "hand off to",
            };
            Err(ToolError::new(
                "agent.target_profile_not_found",
                format!(
                    "There is no agent `{agent_id}`. Use `{list}` to see who you can {purpose}."
                ),
            )
            .into())
        }
        Err(other) => Err(other.into()),
    }
}

/// Why `target` refuses `caller` for `operation` (a contract message prefix), or `None`.
pub fn target_denial(
    target: &ResolvedProfile,
    caller: &ProfileId,
    operation: Operation,
) -> Option<&'static str> {
    let policy = &target.definition.delegation;
    let accepts = match operation {
        Operation::Delegate => policy.allow_as_subagent,
        Operation::Handoff => policy.allow_as_handoff_target,
    };
    if !policy.callable {
        Some("agent.target_not_callable")
    } else if !accepts {
        Some(match operation {
            Operation::Delegate => "agent.target_not_subagent",
            Operation::Handoff => "agent.target_not_handoff",
        })
    } else if !policy.allows_caller(caller) {
        Some("agent.target_caller_denied")
    } else if check_model_configured(target).is_err() {
        Some("agent.profile_model_requires_configuration")
    } else {
        None
    }
}

/// The task to open for a target.
#[derive(Debug)]
pub struct NewTask {
    pub target: ProfileId,
    pub continuation: TaskContinuation,
    /// The raw `task` / `handoff` object the model gave.
    pub brief: Value,
    pub budget: Option<AgentTaskBudget>,
}

/// Creates the target's invocation and the `queued` task that brings it in, journaling
/// `agent_invocation_created` and `agent_task_registered`. Workspace keys are unique per run
/// across delegations and handoffs.
pub async fn open_task(
    ctx: &RunContext,
    inv: &InvocationRuntime,
    call: &AgentToolCall,
    new: NewTask,
) -> ApplicationResult<AgentTaskRecord> {
    let now = ctx.services.clock.now();
    let (kind, task_id) = match new.continuation {
        TaskContinuation::ReturnToParent => (
            InvocationKind::Subagent,
            TaskId::generate_delegate(&ctx.services.ids.next_token()),
        ),
        TaskContinuation::TransferControl => (
            InvocationKind::Handoff,
            TaskId::generate_handoff(&ctx.services.ids.next_token()),
        ),
    };
    let workspace_key = ctx
        .services
        .invocations
        .next_workspace_key(&ctx.run_id, new.target.as_str())
        .await?;
    let target_invocation = AgentInvocation {
        id: InvocationId::generate(&ctx.services.ids.next_token()),
        run_id: ctx.run_id.clone(),
        parent_invocation_id: Some(inv.invocation.id.clone()),
        profile_id: new.target.clone(),
        kind,
        status: InvocationStatus::Created,
        exit_policy: kind.exit_policy(),
        created_at: now,
        updated_at: now,
    };
    ctx.services
        .invocations
        .save_invocation(&target_invocation)
        .await?;
    ctx.events
        .info(
            &ctx.run_id,
            RunEventType::AgentInvocationCreated,
            json!({
                "invocationId": target_invocation.id, "parentInvocationId": inv.invocation.id,
                "profileId": new.target, "kind": kind.as_str(), "status": target_invocation.status.as_str(),
                "exitPolicy": target_invocation.exit_policy.as_str(), "taskId": task_id,
            }),
        )
        .await?;
    let task = AgentTaskRecord {
        id: task_id,
        run_id: ctx.run_id.clone(),
        parent_invocation_id: inv.invocation.id.clone(),
        child_invocation_id: target_invocation.id.clone(),
        target_profile_id: new.target,
        workspace_key,
        continuation: new.continuation,
        status: TaskStatus::Queued,
        task: new.brief.into(),
        budget: new.budget,
        created_by_tool_call_id: Some(call.id.clone()),
        result_ref: None,
        error: None,
        created_at: now,
        updated_at: now,
    };
    ctx.services.invocations.create_task(&task).await?;
    let continuation = match task.continuation {
        TaskContinuation::ReturnToParent => "return_to_parent",
        TaskContinuation::TransferControl => "transfer_control",
    };
    ctx.events
        .info(
            &ctx.run_id,
            RunEventType::AgentTaskRegistered,
            json!({
                "taskId": task.id, "parentInvocationId": task.parent_invocation_id,
                "childInvocationId": task.child_invocation_id, "targetProfileId": task.target_profile_id,
                "workspaceKey": task.workspace_key, "continuation": continuation, "status": "queued",
            }),
        )
        .await?;
    Ok(task)
}
