//! The approval gate of a tool call (docs/host-api.md, "Approving tool calls"): a call the
//! profile's `tools.approval` asks about waits here, after its checks and before
//! `tool_call_started`, until a person answers, its timeout denies it, or its agent stops.
//!
//! Only this agent waits: it is `awaiting_approval` (and so is the run, when it is the
//! foreground agent), its task keeps its slot, every other agent keeps running. A resumed
//! agent whose call was answered before the interruption takes the journaled answer; one that
//! was still waiting asks again under the same approval id.

use serde_json::Value;
use std::time::Duration;
use tt_domain::approval::{self, ApprovalDecision, DECIDED_BY_TIMEOUT};
use tt_domain::event_payload as payload;
use tt_domain::invocation::InvocationStatus;
use tt_domain::run::AgentRunStatus;
use tt_domain::tool::{AgentToolCall, AgentToolSpec, ToolName};
use tt_domain::tool_model::ToolPermission;
use tt_domain::workspace::WorkspacePath;

use crate::approvals::{ApprovalAnswer, ArgumentCheck, PendingToolApproval};
use crate::engine::context::RunContext;
use crate::engine::invocation::InvocationRuntime;
use crate::engine::records::call_file_key;
use crate::error::{ApplicationError, ApplicationResult, ToolCallError, ToolError};

/// The code of a call a person (or the timeout) declined.
pub(crate) const DENIED_CODE: tt_domain::error_codes::Code =
    tt_domain::error_codes::AGENT_TOOL_CALL_DENIED;

/// What the gate lets through.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Gate {
    /// Run the call; with the person's edited arguments when `Some`.
    Run(Option<Value>),
    /// The call does not run: the agent reads this error.
    Denied(ToolError),
}

/// Whether the gate lets `call` through at once, without a write: the profile asks no
/// approval of it. The caller may then journal `tool_call_requested` and
/// `tool_call_started` together.
pub(crate) fn passes_at_once(
    inv: &InvocationRuntime,
    spec: &AgentToolSpec,
    call: &AgentToolCall,
) -> bool {
    asks(inv, spec, call).is_none()
}

/// Whether `call` waits for a person before it runs.
pub(crate) fn asks_before(
    inv: &InvocationRuntime,
    spec: &AgentToolSpec,
    call: &AgentToolCall,
) -> bool {
    asks(inv, spec, call).is_some()
}

/// Why `call` waits for a person, or `None` when it runs at once. Without a delegation's
/// estimate (`estimated_usd`), a cost rule asks.
fn asks(inv: &InvocationRuntime, spec: &AgentToolSpec, call: &AgentToolCall) -> Option<String> {
    asks_at(inv, spec, call, None)
}

fn asks_at(
    inv: &InvocationRuntime,
    spec: &AgentToolSpec,
    call: &AgentToolCall,
    estimated_usd: Option<f64>,
) -> Option<String> {
    let facts = spec.facts();
    let policy = &inv.profile.definition.tools.approval;
    if policy.is_empty() && facts.permission == ToolPermission::Allow {
        return None;
    }
    let path = call_path(inv, spec, &call.arguments);
    approval::asks(policy, &spec.name, &facts, path.as_ref(), estimated_usd)
}

/// Why `call` waits, with what a delegation is expected to cost (`agent.delegate` only, and
/// only when some rule could ask: no estimate is made otherwise).
async fn asks_with_estimate(
    ctx: &RunContext,
    inv: &InvocationRuntime,
    spec: &AgentToolSpec,
    call: &AgentToolCall,
) -> Option<(String, Option<tt_domain::approval::DelegationEstimate>)> {
    let reason = asks(inv, spec, call)?;
    if spec.name != ToolName::AgentDelegate {
        return Some((reason, None));
    }
    let estimate = crate::engine::delegation_estimate::estimate(ctx, inv, call).await;
    let estimated_usd = estimate
        .as_ref()
        .and_then(|estimate| estimate.estimated_usd);
    let reason = asks_at(inv, spec, call, estimated_usd)?;
    Some((reason, estimate))
}

/// `tool_approval_requested` of `pending`, whose arguments are stored at `arguments_ref`.
fn requested_event(
    pending: &PendingToolApproval,
    arguments_ref: &str,
) -> payload::ToolApprovalRequested {
    payload::ToolApprovalRequested {
        approval_id: pending.approval_id.clone(),
        invocation_id: pending.invocation_id.clone(),
        round: pending.round,
        call_id: pending.call_id.clone(),
        tool: pending.tool.clone(),
        arguments_ref: arguments_ref.to_owned(),
        reason: pending.reason.clone(),
        timeout_ms: pending.timeout_ms,
        estimate: pending.estimate.clone(),
    }
}

/// Passes a call that needs no approval at once; otherwise parks its agent until an answer.
pub(crate) async fn gate(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    round: u32,
    spec: &AgentToolSpec,
    call: &AgentToolCall,
    arguments_ref: &str,
) -> Result<Gate, ToolCallError> {
    let Some((mut reason, estimate)) = asks_with_estimate(ctx, inv, spec, call).await else {
        return Ok(Gate::Run(None));
    };
    let file_key = call_file_key(&inv.invocation.id, round, &call.id);
    // A resumed call of an outside tool that was sent and never answered is never sent again
    // unasked, whatever was approved before it was sent: the person is asked anew (under an
    // approval id of its own) and learns that it may already have run.
    let resent = spec.facts().in_flight == tt_domain::tool_model::InFlightRule::OutcomeUnknown
        && inv
            .replay
            .as_ref()
            .is_some_and(|replay| replay.was_started(&file_key));
    let stored = inv
        .replay
        .as_mut()
        .and_then(|replay| replay.take_approval(&file_key))
        .filter(|_| !resent);
    let approval_id = if resent {
        reason.push_str("; it was sent before the run stopped and may already have run");
        approval::approval_id_for(&format!(
            "{file_key}/resent/{}",
            ctx.services.ids.next_token()
        ))
    } else {
        approval::approval_id_for(&file_key)
    };
    let timeout_ms = inv.profile.definition.tools.approval_timeout_ms;
    if let Some((decision, decided_by)) = stored {
        let answer = ApprovalAnswer {
            decision,
            decided_by,
        };
        ctx.approvals.remember(&approval_id, &answer);
        return Ok(pass(answer));
    }

    let pending = PendingToolApproval {
        approval_id: approval_id.clone(),
        invocation_id: inv.invocation.id.clone(),
        profile_id: inv.invocation.profile_id.clone(),
        round,
        call_id: call.id.clone(),
        tool: spec.name.canonical().to_owned(),
        arguments: call.arguments.clone(),
        reason,
        timeout_ms,
        estimate,
    };
    let check = ArgumentCheck {
        input_schema: crate::registry::full_input_schema(spec),
        max_bytes: inv.profile.definition.limits.max_tool_argument_bytes,
    };
    let requested = requested_event(&pending, arguments_ref);
    let mut answer = ctx
        .approvals
        .ask(&ctx.events, &ctx.run_id, pending, check, &requested)
        .await?;
    set_awaiting_person(ctx, inv, true, AgentRunStatus::DispatchingTool).await?;
    let timeout = async {
        match timeout_ms {
            Some(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
            None => std::future::pending().await,
        }
    };
    let answer = tokio::select! {
        answer = &mut answer => answer.ok(),
        () = inv.cancel.cancelled() => None,
        () = timeout => match ctx.approvals.time_out(&ctx.events, &ctx.run_id, &approval_id).await? {
            Some(denied) => Some(denied),
            // Answered just before: the answer is already sent.
            None => answer.await.ok(),
        },
    };
    let Some(answer) = answer else {
        // Stopped (or, if the answer's sender is gone, stopping): withdraw the call, unless an
        // answer was journaled first, which then applies on resume.
        let reason = if ctx.cancel.is_cancelled() {
            "run_cancelled"
        } else {
            "agent_stopped"
        };
        ctx.approvals
            .withdraw(&ctx.events, &ctx.run_id, &approval_id, reason)
            .await?;
        inv.scheduler.set_awaiting_person(&inv.invocation.id, false);
        return Err(ApplicationError::cancelled().into());
    };
    set_awaiting_person(ctx, inv, false, AgentRunStatus::DispatchingTool).await?;
    Ok(pass(answer))
}

/// The path a call names, for an `outside` rule: its `path` argument, or for a commit without
/// one the agent's message body.
fn call_path(
    inv: &InvocationRuntime,
    spec: &AgentToolSpec,
    arguments: &Value,
) -> Option<WorkspacePath> {
    if !spec.facts().names_path {
        return None;
    }
    match arguments.get("path").and_then(Value::as_str) {
        Some(raw) if !raw.trim().is_empty() => WorkspacePath::parse(raw).ok(),
        _ if spec.name == ToolName::WorkspaceCommit => Some(inv.snapshot.message_body_path.clone()),
        _ => None,
    }
}

/// Parks the agent to wait for a person (`waiting`) or wakes it to go on at `awake`: its
/// record, its idle limit and watchdog, and the run status when it owns the run.
pub(crate) async fn set_awaiting_person(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    waiting: bool,
    awake: AgentRunStatus,
) -> ApplicationResult<()> {
    let (status, run_status) = if waiting {
        (
            InvocationStatus::AwaitingApproval,
            AgentRunStatus::AwaitingApproval,
        )
    } else {
        (InvocationStatus::Running, awake)
    };
    inv.scheduler
        .set_awaiting_person(&inv.invocation.id, waiting);
    ctx.set_invocation_status(&mut inv.invocation, status)
        .await?;
    if inv.owns_run() {
        ctx.try_set_status(run_status).await?;
    }
    Ok(())
}

/// What an answer lets through.
fn pass(answer: ApprovalAnswer) -> Gate {
    match answer.decision {
        ApprovalDecision::Approve => Gate::Run(None),
        ApprovalDecision::ApproveWithArguments { arguments } => Gate::Run(Some(arguments)),
        ApprovalDecision::Deny { message } => {
            Gate::Denied(denial(message.as_deref(), &answer.decided_by))
        }
    }
}

/// The error the agent reads for a declined call.
pub(crate) fn denial(message: Option<&str>, decided_by: &str) -> ToolError {
    let text = if decided_by == DECIDED_BY_TIMEOUT {
        "No one approved this call in time, so it did not run. Go on without it, or try another way.".to_owned()
    } else {
        match message.map(str::trim).filter(|message| !message.is_empty()) {
            Some(message) => format!("The user declined this call: {message}"),
            None => "The user declined this call. Go on without it, or try another way.".to_owned(),
        }
    };
    ToolError::new(DENIED_CODE, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_agent_reads_when_a_call_is_declined() {
        insta::assert_snapshot!(
            [
                denial(Some("Keep the ending; change only the middle."), "host").message,
                denial(Some("  "), "alice").message,
                denial(None, "host").message,
                denial(None, DECIDED_BY_TIMEOUT).message,
            ]
            .join("\n"),
            @r"
        The user declined this call: Keep the ending; change only the middle.
        The user declined this call. Go on without it, or try another way.
        The user declined this call. Go on without it, or try another way.
        No one approved this call in time, so it did not run. Go on without it, or try another way.
        "
        );
    }
}
