//! What `agent.delegate` and `agent.handoff` share: resolving the target agent and opening the
//! task record with the target's invocation. Whether the target accepts the caller is
//! `crate::delegation::policy`.

use tt_domain::brief::StoredBrief;
use tt_domain::error_codes;
use tt_domain::event::EventLevel;
use tt_domain::event_payload as payload;
use tt_domain::ids::{InvocationId, ProfileId, TaskId};
use tt_domain::invocation::{AgentInvocation, InvocationKind, InvocationStatus};
use tt_domain::profile::ResolvedProfile;
use tt_domain::task::{AgentTaskBudget, AgentTaskRecord, TaskContinuation, TaskStatus};
use tt_domain::tool::{AgentToolCall, ToolName};

use crate::delegation::policy::Operation;
use crate::engine::context::RunContext;
use crate::engine::invocation::InvocationRuntime;
use crate::engine::workspace_keys::KeyReservation;
use crate::error::{ApplicationError, ApplicationResult, ToolCallError, ToolError};
use crate::events::EventSink;
use tt_ports::RunWrite;

/// Parses `agentId` and resolves the target profile; an unusable id or an unknown agent is
/// recoverable, any other resolution failure is fatal.
pub(crate) async fn resolve_target(
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
            code: error_codes::AGENT_PROFILE_NOT_FOUND,
            ..
        }) => {
            let purpose = match operation {
                Operation::Delegate => "call on",
                Operation::Handoff => "hand off to",
            };
            Err(ToolError::new(
                error_codes::AGENT_TARGET_PROFILE_NOT_FOUND,
                format!(
                    "There is no agent `{agent_id}`. Use `{list}` to see who you can {purpose}."
                ),
            )
            .into())
        }
        Err(other) => Err(other.into()),
    }
}

/// The task to open for a target.
#[derive(Debug)]
pub(crate) struct NewTask {
    pub target: ProfileId,
    pub continuation: TaskContinuation,
    /// The `task` or `handoff` brief.
    pub brief: StoredBrief,
    pub budget: Option<AgentTaskBudget>,
    /// The workspace key, when the caller reserved it already (together with its other
    /// reads); `None`: `open_task` reserves it.
    pub workspace_key: Option<KeyReservation>,
}

/// The target's invocation and the `queued` task that brings it in, not yet written: the task,
/// and the unit that writes them (the invocation record, `agent_invocation_created`, the task
/// record, in that order), which the caller finishes with `agent_task_registered` and its own
/// next event and writes as one (`EventSink::commit`). Workspace keys are unique per run
/// across delegations and handoffs: the caller keeps the task's key reservation once the unit
/// is written (`engine::workspace_keys`).
pub(crate) async fn open_task(
    ctx: &RunContext,
    inv: &InvocationRuntime,
    call: &AgentToolCall,
    new: NewTask,
) -> ApplicationResult<(AgentTaskRecord, Vec<RunWrite>, KeyReservation)> {
    let now = ctx.services.clock.now();
    let (kind, mut task_id) = match new.continuation {
        TaskContinuation::ReturnToParent => (
            InvocationKind::Subagent,
            TaskId::generate_delegate(ctx.services.ids.next_token()),
        ),
        TaskContinuation::TransferControl => (
            InvocationKind::Handoff,
            TaskId::generate_handoff(ctx.services.ids.next_token()),
        ),
    };
    let key = match new.workspace_key {
        Some(key) => key,
        None => {
            ctx.workspace_keys
                .reserve(&*ctx.services.invocations, &ctx.run_id, new.target.as_str())
                .await?
        }
    };
    let creation_seq = ctx.next_creation_seq().await?;
    let unregistered = unregistered_agent(ctx, inv, call, kind, &new.target).await?;
    let mut unit = Vec::with_capacity(5);
    let (target_invocation, journaled_task) = match unregistered {
        Some(adopted) => adopted,
        None => {
            let target_invocation = AgentInvocation {
                id: InvocationId::generate(ctx.services.ids.next_token()),
                run_id: ctx.run_id.clone(),
                parent_invocation_id: Some(inv.invocation.id.clone()),
                profile_id: new.target.clone(),
                kind,
                status: InvocationStatus::Created,
                exit_policy: kind.exit_policy(),
                creation_seq,
                created_at: now,
                updated_at: now,
            };
            unit.push(RunWrite::Invocation(target_invocation.clone()));
            (target_invocation, None)
        }
    };
    let journaled = journaled_task.is_some();
    if let Some(journaled_task) = journaled_task {
        task_id = journaled_task;
    }
    if !journaled {
        let created = EventSink::pending(
            EventLevel::Info,
            &payload::AgentInvocationCreated {
                invocation_id: target_invocation.id.clone(),
                parent_invocation_id: Some(inv.invocation.id.clone()),
                profile_id: new.target.clone(),
                kind,
                status: InvocationStatus::Created,
                exit_policy: target_invocation.exit_policy,
                task_id: Some(task_id.clone()),
            },
        )?;
        unit.push(ctx.events.stamp(&ctx.run_id, created));
    }
    let task = AgentTaskRecord {
        id: task_id,
        run_id: ctx.run_id.clone(),
        parent_invocation_id: inv.invocation.id.clone(),
        child_invocation_id: target_invocation.id.clone(),
        target_profile_id: new.target,
        workspace_key: key.key().to_owned(),
        continuation: new.continuation,
        status: TaskStatus::Queued,
        task: new.brief.into(),
        budget: new.budget,
        created_by_tool_call_id: Some(call.id.clone()),
        result_ref: None,
        error: None,
        creation_seq,
        created_at: now,
        updated_at: now,
    };
    unit.push(RunWrite::Task(task.clone()));
    Ok((task, unit, key))
}

/// The agent a resumed `call` had written before the process died, if it is of `kind` for
/// `target`, with the task its creation was journaled with: the call takes that agent up
/// (docs/resume.md), so no agent is left that never ran.
async fn unregistered_agent(
    ctx: &RunContext,
    inv: &InvocationRuntime,
    call: &AgentToolCall,
    kind: InvocationKind,
    target: &ProfileId,
) -> ApplicationResult<Option<(AgentInvocation, Option<TaskId>)>> {
    let Some(agent) = inv
        .replay
        .as_ref()
        .and_then(|replay| replay.unregistered_agent(&call.id))
    else {
        return Ok(None);
    };
    let record = ctx
        .services
        .invocations
        .load_invocation(&ctx.run_id, &agent.invocation_id)
        .await?;
    Ok(Some((record, agent.journaled_task.clone()))
        .filter(|(record, _)| record.kind == kind && &record.profile_id == target))
}

/// `agent_task_registered` of `task`, stamped now, for the end of its [`open_task`] unit.
pub(crate) fn registered(ctx: &RunContext, task: &AgentTaskRecord) -> ApplicationResult<RunWrite> {
    let registered = EventSink::pending(
        EventLevel::Info,
        &payload::AgentTaskRegistered {
            task_id: task.id.clone(),
            parent_invocation_id: task.parent_invocation_id.clone(),
            child_invocation_id: task.child_invocation_id.clone(),
            target_profile_id: task.target_profile_id.clone(),
            workspace_key: task.workspace_key.clone(),
            continuation: task.continuation,
            status: task.status,
            label: task.task.label(),
        },
    )?;
    Ok(ctx.events.stamp(&ctx.run_id, registered))
}
