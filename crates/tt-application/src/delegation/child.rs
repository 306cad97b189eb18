//! A delegated task's worker: prepares the target agent's invocation (child policy, frozen tool
//! snapshot, system prompt and markdown brief), runs its tool loop to `task.return`, and
//! contains every failure inside the task so the delegating agent's run goes on.

use serde_json::json;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tt_domain::event::RunEventType;
use tt_domain::invocation::{ExitPolicy, InvocationStatus};
use tt_domain::profile::{ModelMode, ResolvedProfile};
use tt_domain::run::Presentation;
use tt_domain::task::{AgentTaskBudget, AgentTaskRecord, TaskStatus};
use tt_domain::tool::ToolName;

use super::rendering::render_task_brief;
use super::scheduler::transition_task;
use crate::context::{InvocationRuntime, RunContext, ToolSession};
use crate::error::{ApplicationError, ApplicationResult};
use crate::tool_loop::{LoopOutcome, run_tool_loop};

/// The target profile as a delegated agent runs it: background presentation, no parent-only
/// tools (commit, finish, and the four agent tools), and the task's downward budget.
pub fn apply_child_invocation_policy(
    profile: &ResolvedProfile,
    budget: Option<AgentTaskBudget>,
) -> ResolvedProfile {
    let mut profile = profile.clone();
    let definition = &mut profile.definition;
    definition.run.presentation = Presentation::Background;
    definition.tools.allow.retain(|name| {
        ToolName::from_canonical(name).is_none_or(|tool| !ToolName::PARENT_ONLY.contains(&tool))
    });
    if let Some(budget) = budget {
        if let Some(rounds) = budget.max_rounds {
            definition.tools.max_rounds = rounds.min(definition.tools.max_rounds);
        }
        if let Some(calls) = budget.max_tool_calls {
            definition.tools.max_calls_per_run = calls.min(definition.tools.max_calls_per_run);
        }
    }
    profile
}

/// Fails fast when a profile cannot run because its model is not configured.
pub fn check_model_configured(profile: &ResolvedProfile) -> ApplicationResult<()> {
    match profile.definition.model.mode {
        ModelMode::RequiresConfiguration => Err(ApplicationError::fatal(
            "agent.profile_model_requires_configuration",
            format!(
                "profile `{}` needs a model to be configured before it can run",
                profile.id()
            ),
        )),
        ModelMode::CurrentPromptSnapshot | ModelMode::ConnectionRef => Ok(()),
    }
}

/// Runs one delegated task to a terminal state. Cancellation is recorded by whoever cancelled
/// (the scheduler), so a cancelled worker returns without writing anything more.
///
/// `started`: the admission queue already marked the task running.
pub async fn run_delegated_task(
    ctx: &Arc<RunContext>,
    task: AgentTaskRecord,
    cancel: CancellationToken,
    started: bool,
) {
    if cancel.is_cancelled() {
        return;
    }
    let mut invocation_slot = None;
    let result = drive(ctx, &task, &cancel, started, &mut invocation_slot).await;
    if cancel.is_cancelled() || matches!(&result, Err(error) if error.is_cancelled()) {
        return;
    }
    if let Err(error) = result {
        let _ = fail_task(ctx, &task, invocation_slot, &error).await;
    }
}

async fn drive(
    ctx: &Arc<RunContext>,
    task: &AgentTaskRecord,
    cancel: &CancellationToken,
    already_started: bool,
    invocation_slot: &mut Option<tt_domain::invocation::AgentInvocation>,
) -> ApplicationResult<()> {
    let services = &ctx.services;
    if !already_started {
        let started = transition_task(ctx, &task.id, TaskStatus::Running, None, None).await?;
        if !started.changed {
            // Cancelled (or otherwise ended) before it could start.
            return Err(ApplicationError::cancelled());
        }
    }
    ctx.scheduler.notify();
    // The idle limit counts from the start of its work, not from delegation.
    ctx.scheduler.mark_started(&task.child_invocation_id);
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
    check_model_configured(&target)?;
    let profile = apply_child_invocation_policy(&target, task.budget);
    let prepared = crate::invocation_setup::prepare_invocation(
        ctx,
        crate::invocation_setup::InvocationSetup {
            invocation: &invocation,
            profile: &profile,
            exit_policy: ExitPolicy::TaskReturnRequired,
            presentation: Presentation::Background,
            task_id: &task.id,
            brief: render_task_brief(&task.task),
        },
        cancel,
    )
    .await?;
    let mut inv = InvocationRuntime {
        invocation,
        policy: profile.access_policy(),
        profile,
        snapshot: prepared.snapshot,
        session: ToolSession::default(),
        cancel: cancel.clone(),
        model: prepared.model,
        skills: prepared.skills,
        delivered: Default::default(),
    };
    let messages = prepared.messages;
    let outcome = run_tool_loop(ctx, &mut inv, messages).await;
    *invocation_slot = Some(inv.invocation.clone());
    match outcome? {
        LoopOutcome::TaskReturned { .. } => {
            ctx.set_invocation_status(&mut inv.invocation, InvocationStatus::Completed)
                .await?;
            *invocation_slot = Some(inv.invocation);
            ctx.scheduler.notify();
            Ok(())
        }
        LoopOutcome::Transferred { .. } => Err(ApplicationError::fatal(
            "agent.child_handoff_denied",
            "a delegated agent cannot hand the job off",
        )),
        LoopOutcome::Finished { .. } => Err(ApplicationError::fatal(
            "agent.child_invocation_missing_return",
            "the delegated agent ended without task.return",
        )),
    }
}

/// Marks the task and its invocation failed and journals `agent_child_invocation_failed`.
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
    ctx.events
        .warn(
            &ctx.run_id,
            RunEventType::AgentChildInvocationFailed,
            json!({"taskId": task.id, "childInvocationId": task.child_invocation_id, "parentInvocationId": task.parent_invocation_id, "message": message}),
        )
        .await?;
    ctx.scheduler.notify();
    Ok(())
}
