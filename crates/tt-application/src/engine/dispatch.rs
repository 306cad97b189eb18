//! The dispatcher: one model tool call from name resolution to stored result.
//!
//! Order: `tool_call_requested` + raw arguments stored; name resolved against the invocation's
//! frozen snapshot (unknown name: `model.unknown_tool_call`; known but not offered:
//! `agent.tool_policy_denied`); arguments checked (a JSON object within
//! `limits.maxToolArgumentBytes`, else `model.invalid_tool_call`); per-invocation budgets;
//! `tool_call_started`; execution; result stored; `tool_call_completed` / `tool_call_failed`;
//! then the follow-up events and checkpoints of the tool's effect. The checks live in
//! `call_checks`. A delegation's records go to the store with the agent's neighbouring
//! writes (`held_writes`).
//!
//! Model slips (an unknown tool, bad arguments, an unusable path) go back to the model as
//! recoverable errors; only more than `limits.maxConsecutiveSlips` of them in a row fail the
//! agent. The reference fails at the first one; small models slip often, so this runtime
//! deliberately gives them a bounded chance to correct themselves.

use serde_json::{Value, json};
use tracing::Instrument;
use tt_domain::error_codes::is_model_slip;
use tt_domain::event::EventLevel;
use tt_domain::event_payload as payload;
use tt_domain::ids::InvocationId;
use tt_domain::invocation::ExitPolicy;
use tt_domain::run::{AgentRunStatus, Presentation};
use tt_domain::tool::{AgentToolCall, AgentToolResult, AgentToolSpec, ToolName};
use tt_domain::tool_model::ToolId;
use tt_domain::workspace::CheckpointReason;
use tt_ports::{RunDocument, RunWrite};

use crate::engine::approval_gate::{self, Gate};
use crate::engine::call_checks::{
    argument_bytes, arguments_error, budget_error, error_result, unknown_tool_error,
};
use crate::engine::commit::run_commit;
use crate::engine::context::RunContext;
use crate::engine::invocation::InvocationRuntime;
use crate::engine::records::{call_file_key, checkpoint};
use crate::engine::tasks::tools as delegation;
use crate::error::{ApplicationError, ApplicationResult, ToolCallError, ToolError};
use crate::events::EventSink;
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

/// Runs one call inside a `tool_call` span (round, tool name, call id) under the invocation's
/// span. `Err` is fail-fast for this invocation.
pub(crate) async fn dispatch_call(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    round: u32,
    call: &AgentToolCall,
) -> ApplicationResult<DispatchedCall> {
    let tools = std::sync::Arc::clone(&inv.snapshot.tools);
    let tool = resolve(&tools, &call.name).map_or(call.name.as_str(), |spec| spec.name.canonical());
    let span = tracing::info_span!("tool_call", round, tool, call_id = call.id.as_str());
    dispatch(ctx, inv, round, call).instrument(span).await
}

async fn dispatch(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    round: u32,
    call: &AgentToolCall,
) -> ApplicationResult<DispatchedCall> {
    let run_id = ctx.run_id.clone();
    let invocation_id = inv.invocation.id.clone();
    // The snapshot's specs outlive the borrows of `inv` below.
    let tools = std::sync::Arc::clone(&inv.snapshot.tools);
    let spec = resolve(&tools, &call.name);
    let display_name = spec.map_or_else(
        || {
            ToolName::from_any(&call.name)
                .map_or_else(|| call.name.clone(), |tool| tool.canonical().to_owned())
        },
        |spec| spec.name.canonical().to_owned(),
    );
    let file_key = call_file_key(&invocation_id, round, &call.id);
    let args_doc = RunDocument::ToolArgs {
        call_file_key: file_key.clone(),
    };
    let limits = inv.profile.definition.limits;
    let argument_bytes = argument_bytes(&call.arguments);
    let oversized = argument_bytes > limits.max_tool_argument_bytes;
    // Oversized arguments are not stored again: the model response already holds them.
    let omitted;
    let stored_arguments = if oversized {
        omitted = json!({"omitted": true, "bytes": argument_bytes});
        &omitted
    } else {
        &call.arguments
    };
    /// The stored arguments document, serialized without copying the arguments.
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct ArgsDocument<'a> {
        call_id: &'a str,
        name: &'a str,
        invocation_id: &'a InvocationId,
        round: u32,
        arguments: &'a Value,
    }
    // Written with `tool_call_requested`, the event that names it, as one unit (below).
    let args_write = RunWrite::Document {
        document: args_doc.clone(),
        body: tt_ports::SerializedDocument::new(&ArgsDocument {
            call_id: &call.id,
            name: &display_name,
            invocation_id: &invocation_id,
            round,
            arguments: stored_arguments,
        })?,
    };
    let mut args_write = Some(args_write);
    let requested = payload::ToolCallRequested {
        round,
        invocation_id: invocation_id.clone(),
        call_id: call.id.clone(),
        name: display_name.to_string(),
        arguments_ref: args_doc.relative_path(),
        provider_metadata: Some(call.provider_metadata.clone()),
    };

    // A built-in the agent was not offered: a delegated agent was never offered a name it
    // does not have, so for it that name is not a tool at all; a top-level agent gets the
    // policy denial instead.
    let denied = ToolName::from_any(&call.name)
        .filter(|_| spec.is_none())
        .filter(|_| inv.invocation.exit_policy != ExitPolicy::TaskReturnRequired);
    let resolved: Option<ToolId> = spec
        .map(|spec| spec.name.clone())
        .or_else(|| denied.map(ToolId::Builtin));
    // The call's checks, before anything of it is journaled (they read only the call and the
    // agent's counters).
    let checked: Option<Result<&AgentToolSpec, ToolError>> = match (spec, denied) {
        (None, None) => None,
        (None, Some(tool)) => Some(Err(ToolError::new(
            "agent.tool_policy_denied",
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
    // A call that starts at once (its checks pass and no approval is asked) has its arguments,
    // `tool_call_requested` and `tool_call_started` written together, one unit; any other has
    // its arguments and `tool_call_requested` written together now.
    let at_once =
        matches!(checked, Some(Ok(spec)) if approval_gate::passes_at_once(inv, spec, call));
    let mut requested = Some(requested);
    // What the agent held back (the end of its previous delegation) goes out with this call's
    // first commit (`held_writes`).
    let mut held = std::mem::take(&mut inv.held_writes);
    if !at_once && let Some(requested) = requested.take() {
        let requested = ctx
            .events
            .stamp(&run_id, EventSink::pending(EventLevel::Info, &requested)?);
        let unit = held
            .drain(..)
            .chain(args_write.take())
            .chain([requested])
            .collect();
        ctx.events.commit(&run_id, unit).await?;
    }

    let started_at = ctx.services.clock.now();
    let outcome: Result<Executed, ToolCallError> = match checked {
        None => Err(unknown_tool_error(inv, &call.name).into()),
        Some(Err(err)) => Err(err.into()),
        Some(Ok(spec)) => {
            let arguments_ref = args_doc.relative_path();
            let gate = if at_once {
                Ok(Gate::Run(None))
            } else {
                approval_gate::gate(ctx, inv, round, spec, call, &arguments_ref).await
            };
            match gate {
                Err(err) => Err(err),
                Ok(Gate::Denied(err)) => Err(err.into()),
                Ok(Gate::Run(edited)) => {
                    inv.session.calls_total += 1;
                    *inv.session
                        .calls_per_tool
                        .entry(spec.name.clone())
                        .or_insert(0) += 1;
                    let started = payload::ToolCallStarted {
                        round,
                        invocation_id: invocation_id.clone(),
                        call_id: call.id.clone(),
                        name: display_name.to_string(),
                    };
                    match requested.take() {
                        Some(requested) => {
                            let events = [
                                EventSink::pending(EventLevel::Info, &requested)?,
                                EventSink::pending(EventLevel::Info, &started)?,
                            ]
                            .map(|event| ctx.events.stamp(&run_id, event));
                            held.extend(args_write.take().into_iter().chain(events));
                            // A delegation's start goes out with its task (`held_writes`).
                            if spec.name != ToolName::AgentDelegate {
                                ctx.events
                                    .commit(&run_id, std::mem::take(&mut held))
                                    .await?;
                            }
                        }
                        None => {
                            let started = EventSink::pending(EventLevel::Info, &started)?;
                            held.push(ctx.events.stamp(&run_id, started));
                            ctx.events
                                .commit(&run_id, std::mem::take(&mut held))
                                .await?;
                        }
                    }
                    match edited {
                        // The person's arguments run; the stored arguments stay the model's
                        // (the edit is in `tool_approval_resolved`).
                        Some(arguments) => {
                            let edited_call = AgentToolCall {
                                arguments,
                                ..call.clone()
                            };
                            execute(ctx, inv, round, spec, &edited_call, &mut held).await
                        }
                        None => execute(ctx, inv, round, spec, call, &mut held).await,
                    }
                }
            }
        }
    };
    let outcome = match outcome {
        Err(ToolCallError::Recoverable(err)) if is_model_slip(err.code) => {
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
                let held = std::mem::take(&mut held);
                emit_fatal_call_failure(
                    ctx,
                    held,
                    round,
                    &invocation_id,
                    &call.id,
                    &display_name,
                    &err,
                )
                .await?;
                return Err(err);
            }
            Err(ToolCallError::Recoverable(err))
        }
        other => {
            inv.session.consecutive_slips = 0;
            other
        }
    };

    let (result, control, effect) = match outcome {
        Ok(executed) => {
            let ToolSuccess {
                content,
                structured,
                resource_refs,
                effect,
            } = executed.success;
            (
                AgentToolResult {
                    call_id: call.id.clone(),
                    name: display_name.clone(),
                    content,
                    structured,
                    is_error: false,
                    error_code: None,
                    error_reason: None,
                    resource_refs,
                },
                executed.control,
                effect,
            )
        }
        Err(ToolCallError::Recoverable(err)) => (
            error_result(&call.id, &display_name, &err),
            LoopControl::Continue,
            ToolEffect::None,
        ),
        Err(ToolCallError::Fatal(err)) => {
            if !err.is_cancelled() {
                let held = std::mem::take(&mut held);
                emit_fatal_call_failure(
                    ctx,
                    held,
                    round,
                    &invocation_id,
                    &call.id,
                    &display_name,
                    &err,
                )
                .await?;
            }
            return Err(err);
        }
    };

    let result_doc = RunDocument::ToolResult {
        call_file_key: file_key,
    };
    // Written with `tool_result_stored`, the event that names it, and the call's end, as one
    // unit.
    let result_write = RunWrite::Document {
        document: result_doc.clone(),
        body: tt_ports::SerializedDocument::new(&result)?,
    };
    let elapsed_ms = ctx.services.clock.now().millis_since(started_at);
    // Whatever is still held (a delegation refused before its task was written) goes first.
    held.extend(call_result_unit(
        ctx,
        round,
        &invocation_id,
        (result_doc.relative_path(), Some(result_write)),
        &result,
        elapsed_ms,
    )?);
    let holds_end = resolved
        .as_ref()
        .is_some_and(|tool| *tool == ToolName::AgentDelegate)
        && !result.is_error
        && control == LoopControl::Continue
        && matches!(effect, ToolEffect::None);
    if holds_end {
        // The end of a delegation waits for the agent's next commit (`held_writes`).
        inv.held_writes = held;
    } else {
        ctx.events.commit(&run_id, held).await?;
    }
    tracing::debug!(
        is_error = result.is_error,
        error_code = result.error_code.as_deref(),
        elapsed_ms,
        "tool call completed"
    );
    apply_effect(ctx, inv, effect).await?;
    Ok(DispatchedCall {
        tool: resolved,
        result,
        control,
    })
}

/// Journals `tool_result_stored` and then `tool_call_completed`, or `tool_call_failed` for a
/// recoverable error that goes back to the model. The result names its call and tool. The
/// result document is at `result_path`; `result_write`, when given, writes it first, in the
/// same unit as the two events (`EventSink::commit`).
pub(crate) async fn journal_call_result(
    ctx: &RunContext,
    round: u32,
    invocation_id: &InvocationId,
    result_record: (String, Option<RunWrite>),
    result: &AgentToolResult,
    elapsed_ms: u64,
) -> ApplicationResult<()> {
    let unit = call_result_unit(ctx, round, invocation_id, result_record, result, elapsed_ms)?;
    ctx.events.commit(&ctx.run_id, unit).await?;
    Ok(())
}

/// The unit that ends a call: its result document (when given), `tool_result_stored`, and
/// `tool_call_completed` or `tool_call_failed`.
fn call_result_unit(
    ctx: &RunContext,
    round: u32,
    invocation_id: &InvocationId,
    (result_path, result_write): (String, Option<RunWrite>),
    result: &AgentToolResult,
    elapsed_ms: u64,
) -> ApplicationResult<Vec<RunWrite>> {
    let stored = payload::ToolResultStored {
        round,
        invocation_id: invocation_id.clone(),
        call_id: result.call_id.clone(),
        path: result_path,
    };
    // Both events in one unit with the document: written one right after the other.
    let stored = EventSink::pending(EventLevel::Info, &stored)?;
    let outcome = if result.is_error {
        let failed = payload::ToolCallFailed {
            round,
            invocation_id: invocation_id.clone(),
            call_id: result.call_id.clone(),
            name: result.name.clone(),
            is_error: true,
            error_code: result.error_code.clone().unwrap_or_default(),
            error_reason: result.error_reason.clone(),
            message: result.content.clone(),
            elapsed_ms: Some(elapsed_ms),
            resource_refs: Some(result.resource_refs.clone()),
            fatal: None,
        };
        EventSink::pending(EventLevel::Warn, &failed)?
    } else {
        let completed = payload::ToolCallCompleted {
            round,
            invocation_id: invocation_id.clone(),
            call_id: result.call_id.clone(),
            name: result.name.clone(),
            is_error: false,
            error_code: result.error_code.clone(),
            message: None,
            elapsed_ms,
            resource_refs: result.resource_refs.clone(),
        };
        EventSink::pending(EventLevel::Info, &completed)?
    };
    let events = [stored, outcome].map(|event| ctx.events.stamp(&ctx.run_id, event));
    Ok(result_write.into_iter().chain(events).collect())
}

/// Journals the `tool_call_failed` (with `fatal: true`) of a call whose error ends the agent.
pub(crate) async fn emit_fatal_call_failure(
    ctx: &RunContext,
    mut held: Vec<RunWrite>,
    round: u32,
    invocation_id: &InvocationId,
    call_id: &str,
    name: &str,
    err: &ApplicationError,
) -> ApplicationResult<()> {
    let failed = payload::ToolCallFailed {
        round,
        invocation_id: invocation_id.clone(),
        call_id: call_id.to_owned(),
        name: name.to_owned(),
        is_error: true,
        error_code: err.code().to_owned(),
        error_reason: None,
        message: err.to_string(),
        elapsed_ms: None,
        resource_refs: None,
        fatal: Some(true),
    };
    // After what the agent held back (`held_writes`), if anything.
    held.push(
        ctx.events
            .stamp(&ctx.run_id, EventSink::pending(EventLevel::Error, &failed)?),
    );
    ctx.events.commit(&ctx.run_id, held).await?;
    Ok(())
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
            let file_key = call_file_key(&inv.invocation.id, round, &call.id);
            let env = crate::tools::external::ExternalToolEnv {
                tools: ctx.services.external_tools.as_ref(),
                workspace: ctx.services.workspace.as_ref(),
                run_id: &ctx.run_id,
                visible_roots: &inv.snapshot.visible_roots,
                profile_inline_limit: inv.profile.definition.limits.max_inline_tool_result_bytes,
                cancel: inv.cancel.clone(),
            };
            return crate::tools::external::execute(env, spec, &call.arguments, &file_key)
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
        ToolName::AgentDelegate => {
            let file_key = call_file_key(&inv.invocation.id, round, &call.id);
            match inv
                .replay
                .as_ref()
                .and_then(|replay| replay.registered_task(&file_key))
            {
                Some(task_id) => {
                    let unit = std::mem::take(held);
                    ctx.events.commit(&ctx.run_id, unit).await?;
                    delegation::already_delegated(ctx, task_id).await
                }
                None => delegation::agent_delegate(ctx, inv, call, held).await,
            }
            .map(continue_with)
        }
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
            let (success, returned) = delegation::task_return(ctx, inv, call).await?;
            Ok(Executed {
                success,
                control: LoopControl::TaskReturned(returned),
            })
        }
        ToolName::AgentHandoff => {
            let file_key = call_file_key(&inv.invocation.id, round, &call.id);
            let registered = inv
                .replay
                .as_ref()
                .and_then(|replay| replay.registered_task(&file_key))
                .cloned();
            let (success, accepted) = match registered {
                Some(task_id) => {
                    crate::engine::tasks::handoff::already_accepted(ctx, &task_id).await?
                }
                None => crate::engine::tasks::handoff::agent_handoff(ctx, inv, call).await?,
            };
            Ok(Executed {
                success,
                control: LoopControl::HandoffAccepted(accepted),
            })
        }
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

async fn finish(
    ctx: &RunContext,
    inv: &InvocationRuntime,
    call: &AgentToolCall,
) -> Result<Executed, ToolCallError> {
    let args = parse_finish_args(&call.arguments)?;
    if inv.invocation.exit_policy == ExitPolicy::TaskReturnRequired {
        return Err(ToolError::new(
            "agent.child_finish_denied",
            format!(
                "You cannot end the whole job. Hand your result back with `{}`.",
                ToolName::TaskReturn.model_alias()
            ),
        )
        .into());
    }
    if inv.snapshot.presentation == Presentation::Foreground && ctx.commit_count() == 0 {
        return Err(ToolError::new(
            "agent.foreground_commit_required",
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

pub(crate) async fn apply_effect(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    effect: ToolEffect,
) -> ApplicationResult<()> {
    let invocation_id = &inv.invocation.id;
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
            let event = ctx
                .events
                .record(&ctx.run_id, EventLevel::Info, &written)
                .await?;
            checkpoint(
                ctx,
                invocation_id,
                CheckpointReason::ToolWorkspaceWrite,
                event.seq,
                &[path],
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
            let event = ctx
                .events
                .record(&ctx.run_id, EventLevel::Info, &applied)
                .await?;
            checkpoint(
                ctx,
                invocation_id,
                CheckpointReason::ToolWorkspacePatch,
                event.seq,
                &[path],
            )
            .await?;
            if inv.owns_run() {
                ctx.try_set_status(AgentRunStatus::DispatchingTool).await?;
            }
            Ok(())
        }
    }
}
