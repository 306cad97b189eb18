//! The dispatcher: one model tool call from name resolution to stored result.
//!
//! Order: `tool_call_requested` + raw arguments stored; name resolved against the invocation's
//! frozen snapshot (unknown name: `model.unknown_tool_call`; known but not offered:
//! `agent.tool_policy_denied`); arguments checked (a JSON object within
//! `limits.maxToolArgumentBytes`, else `model.invalid_tool_call`); per-invocation budgets;
//! `tool_call_started`; execution; result stored; `tool_call_completed` / `tool_call_failed`;
//! then the follow-up events and checkpoints of the tool's effect. The checks live in
//! `call_checks`, the call's journal units in `call_journal`. A delegation's records go to the
//! store with the agent's neighbouring writes (`held_writes`).
//!
//! Model slips (an unknown tool, bad arguments, an unusable path) go back to the model as
//! recoverable errors; only more than `limits.maxConsecutiveSlips` of them in a row fail the
//! agent. The reference fails at the first one; small models slip often, so this runtime
//! deliberately gives them a bounded chance to correct themselves.

use serde_json::json;
use tracing::Instrument;
use tt_domain::error_codes;
use tt_domain::error_codes::is_model_slip;
use tt_domain::event::EventLevel;
use tt_domain::event_payload as payload;
use tt_domain::invocation::ExitPolicy;
use tt_domain::run::{AgentRunStatus, Presentation};
use tt_domain::tool::{AgentToolCall, AgentToolResult, AgentToolSpec, ToolName};
use tt_domain::tool_model::ToolId;
use tt_domain::workspace::CheckpointReason;
use tt_ports::RunWrite;

use crate::engine::approval_gate::{self, Gate};
use crate::engine::call_checks::{arguments_error, budget_error, error_result, unknown_tool_error};
use crate::engine::call_journal::{CallInFlight, record_call_end};
use crate::engine::commit::run_commit;
use crate::engine::context::RunContext;
use crate::engine::invocation::InvocationRuntime;
use crate::engine::records::{call_file_key, checkpoint};
use crate::engine::tasks::tools as delegation;
use crate::error::{ApplicationError, ApplicationResult, ToolCallError, ToolError};
use crate::tools::workspace::{self, WorkspaceToolEnv, parse_finish_args};
use crate::tools::{ToolEffect, ToolSuccess};

/// What a call means for the loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LoopControl {
    Continue,
    /// `workspace.finish` was accepted: the loop ends after this call.
    Finish {
        reason: Option<String>,
    },
    /// `task.return` recorded the delegated task's result: the loop ends after this call.
    TaskReturned(crate::delegation::task_return::TaskReturned),
    /// `agent.handoff` was accepted: the loop ends after this call.
    HandoffAccepted(crate::engine::tasks::handoff::HandoffAccepted),
}

/// A dispatched call: the result the model will see, and what the loop does next.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DispatchedCall {
    /// The tool the call resolved to; `None` for a name the agent was never offered.
    pub tool: Option<ToolId>,
    pub result: AgentToolResult,
    pub control: LoopControl,
}

/// A tool's successful execution plus its loop control.
struct Executed {
    success: ToolSuccess,
    control: LoopControl,
}

/// One call of a reply as the loop dispatches it: the round the reply came in and the size of
/// the call's arguments ([`argument_bytes`](crate::engine::call_checks::argument_bytes)).
#[derive(Clone, Copy)]
pub(crate) struct RoundCall<'a> {
    pub round: u32,
    pub call: &'a AgentToolCall,
    pub argument_bytes: u64,
}

/// Runs one call inside a `tool_call` span (round, tool name, call id) under the invocation's
/// span. `Err` is fail-fast for this invocation.
pub(crate) async fn dispatch_call(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    at: RoundCall<'_>,
) -> ApplicationResult<DispatchedCall> {
    let tools = std::sync::Arc::clone(&inv.snapshot.tools);
    let name = at.call.name.as_str();
    let tool = resolve(&tools, name).map_or(name, |spec| spec.name.canonical());
    let span = tracing::info_span!(
        "tool_call",
        round = at.round,
        tool,
        call_id = at.call.id.as_str()
    );
    dispatch(ctx, inv, at).instrument(span).await
}

async fn dispatch(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    at: RoundCall<'_>,
) -> ApplicationResult<DispatchedCall> {
    let RoundCall {
        round,
        call,
        argument_bytes,
    } = at;
    // The snapshot's specs outlive the borrows of `inv` below.
    let tools = std::sync::Arc::clone(&inv.snapshot.tools);
    let spec = resolve(&tools, &call.name);
    let mut flight = CallInFlight::new(inv, round, call, spec, argument_bytes)?;
    let (resolved, checked) = check_call(inv, call, spec, argument_bytes);
    // A call that starts at once (its checks pass and no approval is asked) has its arguments,
    // `tool_call_requested` and `tool_call_started` written together, one unit; any other has
    // its arguments and `tool_call_requested` written together now.
    let at_once =
        matches!(checked, Some(Ok(spec)) if approval_gate::passes_at_once(inv, spec, call));
    // What the agent held back (the end of its previous delegation) goes out with this call's
    // first commit (`held_writes`); its delegations' units are settled first, unless this
    // call is a delegation that joins their chain.
    let chained =
        at_once && matches!(checked, Some(Ok(spec)) if spec.name == ToolName::AgentDelegate);
    if !chained {
        crate::engine::held_writes::settle(inv).await?;
    }
    flight.held = std::mem::take(&mut inv.held_writes);
    if !at_once {
        flight.commit_requested(ctx).await?;
    }
    let started_at = ctx.services.clock.now();
    let outcome = match checked {
        None => Err(unknown_tool_error(inv, &call.name).into()),
        Some(Err(err)) => Err(err.into()),
        Some(Ok(spec)) => approve_and_execute(ctx, inv, &mut flight, spec, at_once).await?,
    };
    let outcome = count_slips(ctx, inv, &mut flight, outcome).await?;
    let (result, control, effect) = match outcome {
        Ok(executed) => {
            let ToolSuccess {
                content,
                structured,
                resource_refs,
                effect,
            } = executed.success;
            let result = AgentToolResult {
                call_id: call.id.clone(),
                name: flight.display_name.clone(),
                content,
                structured,
                is_error: false,
                error_code: None,
                error_reason: None,
                resource_refs,
            };
            (result, executed.control, effect)
        }
        Err(ToolCallError::Recoverable(err)) => (
            error_result(&call.id, &flight.display_name, &err),
            LoopControl::Continue,
            ToolEffect::None,
        ),
        Err(ToolCallError::Fatal(err)) => {
            if !err.is_cancelled() {
                crate::engine::held_writes::settle(inv).await?;
                flight.fail(ctx, &err).await?;
            }
            return Err(err);
        }
    };
    // A delegation's end waits for the agent's next unit; a workspace write's end goes out
    // with the write's own event, one unit (`apply_effect`).
    let holds_end = (resolved
        .as_ref()
        .is_some_and(|tool| *tool == ToolName::AgentDelegate)
        && !result.is_error
        && control == LoopControl::Continue
        && matches!(effect, ToolEffect::None))
        || matches!(
            effect,
            ToolEffect::FileWritten { .. } | ToolEffect::PatchApplied { .. }
        );
    record_call_end(ctx, inv, flight, &result, started_at, holds_end).await?;
    apply_effect(ctx, inv, effect).await?;
    Ok(DispatchedCall {
        tool: resolved,
        result,
        control,
    })
}

/// The tool a call resolved to (a built-in it was not offered counts, for its denial) and its
/// checks, before anything of it is journaled (they read only the call and the agent's
/// counters): `None` for a name that is no tool at all, else the spec to run or the error.
fn check_call<'s>(
    inv: &InvocationRuntime,
    call: &AgentToolCall,
    spec: Option<&'s AgentToolSpec>,
    argument_bytes: u64,
) -> (Option<ToolId>, Option<Result<&'s AgentToolSpec, ToolError>>) {
    // A built-in the agent was not offered: a delegated agent was never offered a name it
    // does not have, so for it that name is not a tool at all; a top-level agent gets the
    // policy denial instead.
    let denied = ToolName::from_any(&call.name)
        .filter(|_| spec.is_none())
        .filter(|_| inv.invocation.exit_policy != ExitPolicy::TaskReturnRequired);
    let resolved: Option<ToolId> = spec
        .map(|spec| spec.name.clone())
        .or_else(|| denied.map(ToolId::Builtin));
    let limits = inv.profile.definition.limits;
    let checked = match (spec, denied) {
        (None, None) => None,
        (None, Some(tool)) => Some(Err(ToolError::new(
            error_codes::AGENT_TOOL_POLICY_DENIED,
            format!(
                "`{}` is not available to you. Use one of: {}.",
                tool.model_alias(),
                inv.snapshot.model_names().join(", ")
            ),
        ))),
        (Some(spec), _) => Some(
            match arguments_error(
                &spec.model_name,
                &call.arguments,
                argument_bytes,
                limits.max_tool_argument_bytes,
            ) {
                Some(err) => Err(err),
                None => budget_error(inv, spec).map_or(Ok(spec), Err),
            },
        ),
    };
    (resolved, checked)
}

/// A checked call past its approval (none asked when it starts `at_once`), counted against
/// the agent's budgets, journaled `tool_call_started` and executed, with a person's edited
/// arguments when they gave some.
async fn approve_and_execute(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    flight: &mut CallInFlight<'_>,
    spec: &AgentToolSpec,
    at_once: bool,
) -> ApplicationResult<Result<Executed, ToolCallError>> {
    let call = flight.call;
    let edited = if at_once {
        None
    } else {
        let arguments_ref = flight.args_doc.relative_path();
        match approval_gate::gate(ctx, inv, flight.round, spec, call, &arguments_ref).await {
            Err(err) => return Ok(Err(err)),
            Ok(Gate::Denied(err)) => return Ok(Err(err.into())),
            Ok(Gate::Run(edited)) => edited,
        }
    };
    inv.session.calls_total += 1;
    *inv.session
        .calls_per_tool
        .entry(spec.name.clone())
        .or_insert(0) += 1;
    // A journal that refuses the start ends the agent as it is, with no call outcome.
    flight.commit_started(ctx, spec).await?;
    Ok(match edited {
        // The person's arguments run; the stored arguments stay the model's (the edit is in
        // `tool_approval_resolved`).
        Some(arguments) => {
            let edited_call = AgentToolCall {
                arguments,
                ..call.clone()
            };
            execute(ctx, inv, flight.round, spec, &edited_call, &mut flight.held).await
        }
        None => execute(ctx, inv, flight.round, spec, call, &mut flight.held).await,
    })
}

/// Counts the agent's slips in a row: a model slip adds one (more than
/// `limits.maxConsecutiveSlips` fail the agent, journaled, `Err`), anything else resets it.
async fn count_slips(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    flight: &mut CallInFlight<'_>,
    outcome: Result<Executed, ToolCallError>,
) -> ApplicationResult<Result<Executed, ToolCallError>> {
    let limits = inv.profile.definition.limits;
    match outcome {
        Err(ToolCallError::Recoverable(err)) if is_model_slip(err.code.as_str()) => {
            inv.session.consecutive_slips += 1;
            let slips = inv.session.consecutive_slips;
            if slips > limits.max_consecutive_slips {
                let err = ApplicationError::fatal(
                    err.code,
                    format!(
                        "{} (the model slipped {slips} times in a row; limits.maxConsecutiveSlips is {})",
                        err.message, limits.max_consecutive_slips
                    ),
                );
                crate::engine::held_writes::settle(inv).await?;
                flight.fail(ctx, &err).await?;
                return Err(err);
            }
            Ok(Err(ToolCallError::Recoverable(err)))
        }
        other => {
            inv.session.consecutive_slips = 0;
            Ok(other)
        }
    }
}

/// The spec a call's name resolves to among the agent's tools: by canonical id or by the
/// name the model sees.
fn resolve<'a>(tools: &'a [AgentToolSpec], name: &str) -> Option<&'a AgentToolSpec> {
    tools
        .iter()
        .find(|spec| spec.model_name == name || spec.name.canonical() == name)
}

async fn execute(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    round: u32,
    spec: &AgentToolSpec,
    call: &AgentToolCall,
    held: &mut Vec<RunWrite>,
) -> Result<Executed, ToolCallError> {
    let continue_with = |success: ToolSuccess| Executed {
        success,
        control: LoopControl::Continue,
    };
    let tool = match &spec.name {
        ToolId::Builtin(tool) => *tool,
        ToolId::External(_) => {
            return execute_external(ctx, inv, round, spec, call)
                .await
                .map(continue_with);
        }
    };
    match tool {
        ToolName::WorkspaceListFiles
        | ToolName::WorkspaceSearchFiles
        | ToolName::WorkspaceReadFile
        | ToolName::WorkspaceWriteFile
        | ToolName::WorkspaceApplyPatch => {
            let env = WorkspaceToolEnv {
                repo: ctx.services.workspace.as_ref(),
                run_id: &ctx.run_id,
                policy: &inv.policy,
                read_state: &mut inv.session.read_state,
            };
            workspace::execute(tool, &call.arguments, env)
                .await
                .map(continue_with)
        }
        ToolName::WorkspaceCommit => run_commit(ctx, inv, round, call).await.map(continue_with),
        ToolName::WorkspaceFinish => finish(ctx, inv, call).await,
        ToolName::AgentList => {
            let tasks = delegation::RunTaskView { ctx, inv };
            crate::delegation::list::agent_list(
                ctx.services.profiles.as_ref(),
                &inv.profile,
                &tasks,
                call,
            )
            .await
            .map(continue_with)
        }
        ToolName::AgentDelegate => delegate(ctx, inv, round, call, held)
            .await
            .map(continue_with),
        ToolName::AgentAwait => delegation::agent_await(ctx, inv, call)
            .await
            .map(continue_with),
        ToolName::AgentCancelTask => {
            let tasks = delegation::RunTaskView { ctx, inv };
            crate::delegation::cancel::agent_cancel_task(&inv.profile, &tasks, call)
                .await
                .map(continue_with)
        }
        ToolName::TaskReturn => {
            let (success, returned) = delegation::task_return(ctx, inv, round, call).await?;
            Ok(Executed {
                success,
                control: LoopControl::TaskReturned(returned),
            })
        }
        ToolName::AgentHandoff => handoff(ctx, inv, round, call).await,
        ToolName::SkillList | ToolName::SkillSearch | ToolName::SkillRead => {
            let env = crate::skills::SkillToolEnv {
                repo: ctx.services.skills.as_ref(),
                resolved: &inv.skills,
                policy: &inv.profile.definition.skills,
                budget: &mut inv.session.skill_budget,
            };
            crate::skills::execute(tool, &call.arguments, env)
                .await
                .map(continue_with)
        }
    }
}

/// A call of a tool an external source (an MCP server) serves.
async fn execute_external(
    ctx: &RunContext,
    inv: &InvocationRuntime,
    round: u32,
    spec: &AgentToolSpec,
    call: &AgentToolCall,
) -> Result<ToolSuccess, ToolCallError> {
    let file_key = call_file_key(&inv.invocation.id, round, &call.id);
    let env = crate::tools::external::ExternalToolEnv {
        tools: ctx.services.external_tools.as_ref(),
        workspace: ctx.services.workspace.as_ref(),
        run_id: &ctx.run_id,
        visible_roots: &inv.snapshot.visible_roots,
        profile_inline_limit: inv.profile.definition.limits.max_inline_tool_result_bytes,
        cancel: inv.cancel.clone(),
    };
    crate::tools::external::execute(env, spec, &call.arguments, &file_key).await
}

/// `agent.delegate`: a resumed agent's delegation registered before the interruption is
/// answered as it was (the `held` writes go first); otherwise the task is delegated.
async fn delegate(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    round: u32,
    call: &AgentToolCall,
    held: &mut Vec<RunWrite>,
) -> Result<ToolSuccess, ToolCallError> {
    match inv.replayed_call(round, &call.id, |replay, key| {
        replay.registered_task(key).cloned()
    }) {
        Some(task_id) => {
            let unit = std::mem::take(held);
            ctx.events.commit(&ctx.run_id, unit).await?;
            delegation::already_delegated(ctx, &task_id).await
        }
        None => delegation::agent_delegate(ctx, inv, round, call, held).await,
    }
}

/// `agent.handoff`: a resumed agent's handoff accepted before the interruption is answered as
/// it was; otherwise the handoff is made.
async fn handoff(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    round: u32,
    call: &AgentToolCall,
) -> Result<Executed, ToolCallError> {
    let registered = inv.replayed_call(round, &call.id, |replay, key| {
        replay.registered_task(key).cloned()
    });
    let (success, accepted) = match registered {
        Some(task_id) => crate::engine::tasks::handoff::already_accepted(ctx, &task_id).await?,
        None => crate::engine::tasks::handoff::agent_handoff(ctx, inv, call).await?,
    };
    Ok(Executed {
        success,
        control: LoopControl::HandoffAccepted(accepted),
    })
}

async fn finish(
    ctx: &RunContext,
    inv: &InvocationRuntime,
    call: &AgentToolCall,
) -> Result<Executed, ToolCallError> {
    let args = parse_finish_args(&call.arguments)?;
    if inv.invocation.exit_policy == ExitPolicy::TaskReturnRequired {
        return Err(ToolError::new(
            error_codes::AGENT_CHILD_FINISH_DENIED,
            format!(
                "You cannot end the whole job. Hand your result back with `{}`.",
                ToolName::TaskReturn.model_alias()
            ),
        )
        .into());
    }
    if inv.snapshot.presentation == Presentation::Foreground && ctx.commit_count() == 0 {
        return Err(ToolError::new(
            error_codes::AGENT_FOREGROUND_COMMIT_REQUIRED,
            format!(
                "Nothing has been published yet. Write the reply to `{}`, publish it with `{}`, then call `{}` again.",
                inv.snapshot.message_body_path,
                ToolName::WorkspaceCommit.model_alias(),
                ToolName::WorkspaceFinish.model_alias()
            ),
        )
        .into());
    }
    // Finishing never waits for delegated work: what is still running is cancelled.
    inv.scheduler
        .cancel_unfinished_for_parent(
            &inv.invocation.id,
            crate::engine::scheduler::CALLER_FINISHED_REASON,
        )
        .await?;
    let content = "Finish accepted. Your work on this job is complete; make no further tool calls.";
    Ok(Executed {
        success: ToolSuccess::new(
            content,
            json!({"status": "finished", "reason": args.reason}),
        ),
        control: LoopControl::Finish {
            reason: args.reason,
        },
    })
}

/// Journals what a call changed. A workspace change's event goes out in one unit with what the
/// agent holds back (the call's end, `dispatch`), then the file is checkpointed at it.
pub(crate) async fn apply_effect(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    effect: ToolEffect,
) -> ApplicationResult<()> {
    let invocation_id = inv.invocation.id.clone();
    match effect {
        ToolEffect::None => Ok(()),
        ToolEffect::ResultsDelivered { task_ids } => {
            inv.delivered.extend(task_ids);
            Ok(())
        }
        ToolEffect::FileWritten {
            path,
            mode,
            chars,
            words,
            sha256,
        } => {
            let written = payload::WorkspaceFileWritten {
                invocation_id: invocation_id.clone(),
                path: path.to_string(),
                mode: mode.to_owned(),
                chars: chars as u64,
                words: words as u64,
                sha256,
            };
            journal_change(
                ctx,
                inv,
                &written,
                CheckpointReason::ToolWorkspaceWrite,
                path,
            )
            .await
        }
        ToolEffect::PatchApplied {
            path,
            chars,
            words,
            old_sha256,
            sha256,
            replacements,
        } => {
            if inv.owns_run() {
                crate::engine::held_writes::flush(ctx, inv).await?;
                ctx.try_set_status(AgentRunStatus::ApplyingWorkspacePatch)
                    .await?;
            }
            let applied = payload::WorkspacePatchApplied {
                invocation_id: invocation_id.clone(),
                path: path.to_string(),
                chars: chars as u64,
                words: words as u64,
                old_sha256,
                sha256,
                replacements: replacements as u64,
            };
            journal_change(
                ctx,
                inv,
                &applied,
                CheckpointReason::ToolWorkspacePatch,
                path,
            )
            .await?;
            if inv.owns_run() {
                ctx.try_set_status(AgentRunStatus::DispatchingTool).await?;
            }
            Ok(())
        }
    }
}

/// Journals the event of a workspace change (`change`) after what the agent holds back (the
/// call's end), one unit, then checkpoints its file at that event (`reason`).
async fn journal_change<P: payload::EventPayload>(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    change: &P,
    reason: CheckpointReason,
    path: tt_domain::workspace::WorkspacePath,
) -> ApplicationResult<()> {
    crate::engine::held_writes::settle(inv).await?;
    let mut unit = std::mem::take(&mut inv.held_writes);
    unit.push(ctx.events.stamp(
        &ctx.run_id,
        crate::events::EventSink::pending(EventLevel::Info, change)?,
    ));
    let stored = ctx.events.commit(&ctx.run_id, unit).await?;
    let Some(event) = stored.last() else {
        return Err(ApplicationError::fatal(
            error_codes::AGENT_STORAGE_IO,
            "the journal answered a workspace change with no event",
        ));
    };
    checkpoint(ctx, &inv.invocation.id, reason, event.seq, &[path]).await
}
