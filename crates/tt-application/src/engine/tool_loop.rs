//! The tool loop of one invocation: model turn, tool calls in order, drift recovery when the
//! model answers in plain text, and the loop's exit rules (reference §4 "Loop exit mechanics",
//! §9 "Drift recovery").

use tracing::Instrument;
use tt_domain::error_codes;
use tt_domain::event::EventLevel;
use tt_domain::event_payload as payload;
use tt_domain::model::{
    AgentModelMessage, AgentModelRequest, AgentModelResponse, ModelRole, ProviderSession,
};
use tt_domain::run::AgentRunStatus;
use tt_domain::text::{char_count, sha256_hex, word_count};
use tt_domain::tool::{AgentToolCall, InvocationToolSnapshot, ToolName};
use tt_domain::workspace::{CheckpointReason, WorkspacePath, WriteGuard};
use tt_ports::RunDocument;

use crate::engine::context::RunContext;
use crate::engine::context_fit::{FitTrigger, apply_step, check_opening, fit_request};
use crate::engine::dispatch::{LoopControl, RoundCall};
use crate::engine::held_writes;
use crate::engine::invocation::InvocationRuntime;
use crate::engine::records::checkpoint;
use crate::error::{ApplicationError, ApplicationResult};

/// How a loop ended normally.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LoopOutcome {
    /// `workspace.finish` was accepted.
    Finished { reason: Option<String>, round: u32 },
    /// `task.return` recorded the delegated task's result.
    TaskReturned {
        status: tt_domain::task_result::TaskResultStatus,
        round: u32,
    },
    /// `agent.handoff` was accepted: this invocation is `transferred` and the run continues
    /// with `new_invocation_id`, brought in by `task_id`.
    Transferred {
        task_id: tt_domain::ids::TaskId,
        new_invocation_id: tt_domain::ids::InvocationId,
        round: u32,
    },
}

/// Runs the loop until a loop-ending tool succeeds or a fail-fast error occurs, within the
/// profile's `limits.maxInvocationSeconds` (`agent.invocation_deadline_exceeded` after that:
/// the loop is dropped at its current wait, as a cancel would).
pub(crate) async fn run_tool_loop(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    messages: Vec<AgentModelMessage>,
) -> ApplicationResult<LoopOutcome> {
    // One `invocation` span per agent: its model calls and tool calls nest under it.
    let span = tracing::info_span!(
        "invocation",
        run_id = ctx.run_id.as_str(),
        invocation_id = inv.invocation.id.as_str(),
        profile = inv.profile.id().as_str(),
        kind = inv.invocation.kind.as_str(),
    );
    // Boxed: the rounds' state is kilobytes, copied whole each time an unboxed future holding
    // it is moved (into the span's wrapper, then into the caller's state).
    let outcome = Box::pin(bounded_rounds(ctx, inv, messages))
        .instrument(span.clone())
        .await;
    span.in_scope(|| match &outcome {
        Ok(_) => tracing::debug!("invocation loop ended"),
        Err(error) if error.is_cancelled() => tracing::debug!("invocation cancelled"),
        Err(error) => tracing::warn!(%error, "invocation failed"),
    });
    outcome
}

/// The loop under the profile's `limits.maxInvocationSeconds`, when it sets one, and under
/// its inactivity watchdog (`limits.watchdog`, else the run's; `engine::watchdog`).
async fn bounded_rounds(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    messages: Vec<AgentModelMessage>,
) -> ApplicationResult<LoopOutcome> {
    let limits = &inv.profile.definition.limits;
    let seconds = limits.max_invocation_seconds;
    let watchdog = crate::engine::watchdog::limits_for(limits.watchdog, &inv.scheduler);
    if seconds.is_none() && watchdog.is_none() {
        return run_rounds(ctx, inv, messages).await;
    }
    let scheduler = std::sync::Arc::clone(&inv.scheduler);
    let (invocation_id, profile_id) = (inv.invocation.id.clone(), inv.profile.id().clone());
    let watched = async {
        match watchdog {
            Some(limits) => {
                crate::engine::watchdog::watch(ctx, &scheduler, &invocation_id, &profile_id, limits)
                    .await
            }
            None => std::future::pending().await,
        }
    };
    let deadline = async {
        match seconds {
            Some(seconds) => tokio::time::sleep(std::time::Duration::from_secs(seconds)).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        result = run_rounds(ctx, inv, messages) => result,
        stopped = watched => Err(stopped),
        () = deadline => {
            let seconds = seconds.unwrap_or_default();
            Err(ApplicationError::fatal(
                error_codes::AGENT_INVOCATION_DEADLINE_EXCEEDED,
                format!("the agent did not finish its work within {seconds} s (limits.maxInvocationSeconds)"),
            ))
        }
    }
}

/// The loop's state across its rounds: the history sent to the model, the provider session its
/// calls share, and how many plain-text answers it has had to recover from so far.
struct Rounds {
    messages: Vec<AgentModelMessage>,
    session: ProviderSession,
    max_rounds: u32,
    drift_attempts: u32,
}

/// A tool call that ended the loop: the tool, and how the loop ended.
type Ending = (ToolName, LoopOutcome);

async fn run_rounds(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    messages: Vec<AgentModelMessage>,
) -> ApplicationResult<LoopOutcome> {
    let mut rounds = Rounds {
        messages,
        session: ProviderSession::new(&ctx.run_id, &inv.invocation.id),
        max_rounds: inv.snapshot.budgets.max_rounds,
        drift_attempts: 0,
    };
    inv.window.start(&rounds.messages);
    // A resumed or branched agent goes on with the binding its journal left in force.
    crate::engine::fallback::restore(ctx, inv).await?;
    for round in 1..=rounds.max_rounds {
        if let Some(outcome) = rounds.round(ctx, inv, round).await? {
            return Ok(outcome);
        }
    }
    let ending = ending_tools(inv).join(" or ");
    let max_rounds = rounds.max_rounds;
    Err(ApplicationError::fatal(
        error_codes::AGENT_MAX_TOOL_ROUNDS_EXCEEDED,
        format!("{ending} was not called within {max_rounds} rounds"),
    ))
}

impl Rounds {
    /// One round: the model turn (stored or live), then drift recovery when it made no tool
    /// call, else its tool calls in order and the delegated results that join the next turn.
    /// `Some` when the loop ends here.
    async fn round(
        &mut self,
        ctx: &RunContext,
        inv: &mut InvocationRuntime,
        round: u32,
    ) -> ApplicationResult<Option<LoopOutcome>> {
        if inv.cancel.is_cancelled() {
            return Err(ApplicationError::cancelled());
        }
        // A resumed agent takes its stored response instead of calling the model again.
        let stored = inv
            .replay
            .as_mut()
            .and_then(|replay| replay.take_response(round));
        let replaying = stored.is_some();
        let mut response = match stored {
            Some(response) => self.replayed_turn(ctx, inv, round, response).await?,
            None => {
                before_live_call(ctx, inv, round, &mut self.messages).await?;
                call_model(ctx, inv, round, &mut self.messages, &self.session).await?
            }
        };
        inv.window.observe_usage(response.usage.as_ref());
        // A model answer is progress, for the idle limit of a delegated task.
        inv.scheduler.mark_progress(&inv.invocation.id);
        // A delegated task past its budget ends here (`agent.task_budget_exhausted`).
        crate::engine::model_turn::charge_usage(inv, response.usage.as_ref())?;
        let calls = crate::engine::fork_mode::calls_of(inv, round, &mut response);
        if calls.is_empty() {
            self.recover_drift(ctx, inv, round, &response, replaying)
                .await?;
            return Ok(None);
        }
        if let Some(answered) =
            crate::engine::oversized_reply::refuse_if_oversized(inv, &response, calls.len())?
        {
            tracing::warn!(
                calls = calls.len(),
                "a reply with more tool calls than the agent may make was refused"
            );
            self.messages.extend(answered);
            return Ok(None);
        }
        let messages = &mut self.messages;
        let sizes = crate::engine::fork_mode::push_reply(inv, &calls, messages, response.message);
        if inv.owns_run() && !replaying {
            ctx.try_set_status(AgentRunStatus::DispatchingTool).await?;
        }
        let ended = self
            .tool_calls(ctx, inv, round, &calls, &sizes, replaying)
            .await?;
        // What the reply's last delegation held back is written before anything that follows.
        held_writes::flush(ctx, inv).await?;
        if ended.is_none() && (inv.owns_run() || inv.snapshot.offers(ToolName::AgentDelegate)) {
            self.inject_task_results(ctx, inv, round).await?;
        }
        let Some((_, outcome)) = ended else {
            return Ok(None);
        };
        let finished = payload::AgentLoopFinished {
            invocation_id: inv.invocation.id.clone(),
            commit_count: ctx.commit_count() as u64,
            round,
        };
        ctx.events
            .record(&ctx.run_id, EventLevel::Info, &finished)
            .await?;
        Ok(Some(outcome))
    }

    /// The stored response of `round` for a resumed agent, with the history brought to where
    /// it stood then: the guidance read before the turn, then the window steps of the round.
    async fn replayed_turn(
        &mut self,
        ctx: &RunContext,
        inv: &mut InvocationRuntime,
        round: u32,
        response: AgentModelResponse,
    ) -> ApplicationResult<AgentModelResponse> {
        let messages = &mut self.messages;
        // The guidance the agent read before this turn is part of its history.
        if let Some(texts) = inv
            .replay
            .as_mut()
            .and_then(|replay| replay.take_guidance(round))
        {
            let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
            messages.push(AgentModelMessage::text(
                ModelRole::User,
                crate::guidance::render_guidance_message(&texts),
            ));
        }
        // Then the history was trimmed or compacted as it was then.
        replay_context_steps(inv, round, messages);
        inv.window.note_sent(
            inv.model.context_window_tokens,
            messages,
            &inv.request_tools(),
        );
        if !inv
            .replay
            .as_ref()
            .is_some_and(|replay| replay.round_journaled(round))
        {
            // Stored, but the process died before journaling it.
            crate::engine::model_turn::journal_stored_response(
                ctx,
                inv,
                round,
                &self.session.session_id,
                messages.len(),
                &response,
            )
            .await?;
        }
        Ok(response)
    }

    /// Drift recovery after a plain-text answer: the text is saved, the reminder joins the
    /// history, and a live round records the attempt. On the last round it is fatal
    /// (`model.tool_call_required`).
    async fn recover_drift(
        &mut self,
        ctx: &RunContext,
        inv: &mut InvocationRuntime,
        round: u32,
        response: &AgentModelResponse,
        replaying: bool,
    ) -> ApplicationResult<()> {
        let max_rounds = self.max_rounds;
        if round >= max_rounds {
            let ending = ending_tools(inv).join("|");
            return Err(ApplicationError::fatal(
                error_codes::MODEL_TOOL_CALL_REQUIRED,
                format!("model must use Agent tools and complete through <{ending}>"),
            ));
        }
        self.drift_attempts += 1;
        let drift_attempts = self.drift_attempts;
        let captured = capture_direct_output(ctx, inv, round, &response.text(), replaying).await?;
        // A replayed reminder says what it said then.
        let commits = inv
            .replay
            .as_ref()
            .filter(|_| replaying)
            .and_then(|replay| replay.commits_at_round(round))
            .unwrap_or_else(|| ctx.commit_count());
        self.messages.push(response.message.clone());
        self.messages.push(AgentModelMessage::text(
            ModelRole::User,
            drift_nudge(
                &inv.snapshot,
                drift_attempts,
                captured.as_ref().map(|captured| captured.path.as_str()),
                commits,
            ),
        ));
        if replaying {
            return Ok(());
        }
        let attempted = payload::DriftRecoveryAttempted {
            attempt: drift_attempts,
            max_attempts: max_rounds.saturating_sub(1),
            max_rounds,
            limit_reason: "max_rounds".to_owned(),
            round,
            invocation_id: inv.invocation.id.clone(),
            committed_count: ctx.commit_count() as u64,
            reason_code: error_codes::MODEL_TOOL_CALL_REQUIRED.to_string(),
        };
        ctx.events
            .record(&ctx.run_id, EventLevel::Warn, &attempted)
            .await?;
        Ok(())
    }

    /// The reply's tool calls in order, each result joining the history. A call after one that
    /// ended the loop is fatal (`agent.tool_after_finish`). `Some` when a call ended the loop.
    async fn tool_calls(
        &mut self,
        ctx: &RunContext,
        inv: &mut InvocationRuntime,
        round: u32,
        calls: &[AgentToolCall],
        sizes: &[u64],
        replaying: bool,
    ) -> ApplicationResult<Option<Ending>> {
        let mut ended: Option<Ending> = None;
        for (call, &argument_bytes) in calls.iter().zip(sizes) {
            if let Some((ending_tool, _)) = &ended {
                return Err(call_after_ending(ctx, inv, round, call, *ending_tool).await?);
            }
            if inv.cancel.is_cancelled() {
                held_writes::flush(ctx, inv).await?;
                return Err(ApplicationError::cancelled());
            }
            if inv.replay.is_some() {
                // A resumed agent's calls may write before they run (`before_live_call`).
                held_writes::flush(ctx, inv).await?;
            }
            let at = RoundCall {
                round,
                call,
                argument_bytes,
            };
            let dispatched =
                crate::engine::dispatch_replay::stored_or_dispatched(ctx, inv, at).await?;
            if crate::engine::context_fit::saves_output(inv, &dispatched.result) {
                held_writes::flush(ctx, inv).await?;
            }
            let kept = crate::engine::context_fit::history_result(
                ctx,
                inv,
                round,
                dispatched.result,
                replaying,
            )
            .await?;
            self.messages.push(AgentModelMessage::tool_result(kept));
            ended = loop_ending(ctx, inv, round, dispatched.control).await?;
        }
        Ok(ended)
    }

    /// Finished delegated results this agent has not seen yet join its next turn, once. A
    /// resumed agent gets again what was injected after a replayed turn (without journaling it
    /// twice), and anything newer only if its next turn is live.
    async fn inject_task_results(
        &mut self,
        ctx: &RunContext,
        inv: &mut InvocationRuntime,
        round: u32,
    ) -> ApplicationResult<()> {
        let replayed = inv
            .replay
            .as_mut()
            .and_then(|replay| replay.take_injection(round));
        if let Some((tasks, commits)) = replayed
            && let Some(text) =
                crate::engine::tasks::results::replay_injection(ctx, inv, &tasks, commits).await?
        {
            self.messages
                .push(AgentModelMessage::text(ModelRole::User, text));
        }
        let next_turn_replayed = inv
            .replay
            .as_ref()
            .is_some_and(|replay| replay.replays_next_turn(round));
        let injected = if next_turn_replayed {
            None
        } else {
            crate::engine::tasks::results::take_injection(ctx, inv).await?
        };
        if let Some(text) = injected {
            self.messages
                .push(AgentModelMessage::text(ModelRole::User, text));
        }
        Ok(())
    }
}

/// The fatal error for `call`, made after `ending_tool` ended the loop in the same response,
/// with the call's failure journaled.
async fn call_after_ending(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    round: u32,
    call: &AgentToolCall,
    ending_tool: ToolName,
) -> ApplicationResult<ApplicationError> {
    let err = ApplicationError::fatal(
        error_codes::AGENT_TOOL_AFTER_FINISH,
        format!(
            "`{}` was called after {} in the same response",
            call.name,
            ending_tool.model_alias()
        ),
    );
    crate::engine::call_journal::emit_fatal_call_failure(
        ctx,
        std::mem::take(&mut inv.held_writes),
        round,
        &inv.invocation.id,
        &call.id,
        &call.name,
        &err,
    )
    .await?;
    Ok(err)
}

/// How a call's `control` ends the loop, if it does: a handoff makes this invocation
/// `transferred` at once, a task return is recorded.
async fn loop_ending(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    round: u32,
    control: LoopControl,
) -> ApplicationResult<Option<Ending>> {
    Ok(match control {
        LoopControl::Continue => None,
        LoopControl::Finish { reason } => Some((
            ToolName::WorkspaceFinish,
            LoopOutcome::Finished { reason, round },
        )),
        LoopControl::TaskReturned(returned) => {
            let recorded = payload::TaskReturnRecorded {
                invocation_id: inv.invocation.id.clone(),
                status: returned.status.task_status(),
                result_ref: returned.result_ref.clone(),
                summary_chars: returned.summary_chars as u64,
                summary_words: returned.summary_words as u64,
            };
            ctx.events
                .record(&ctx.run_id, EventLevel::Info, &recorded)
                .await?;
            Some((
                ToolName::TaskReturn,
                LoopOutcome::TaskReturned {
                    status: returned.status,
                    round,
                },
            ))
        }
        LoopControl::HandoffAccepted(accepted) => {
            // The caller's part ends at once: it makes no further call or side effect.
            ctx.set_invocation_status(
                &mut inv.invocation,
                tt_domain::invocation::InvocationStatus::Transferred,
            )
            .await?;
            Some((
                ToolName::AgentHandoff,
                LoopOutcome::Transferred {
                    task_id: accepted.task_id,
                    new_invocation_id: accepted.new_invocation_id,
                    round,
                },
            ))
        }
    })
}

/// The live model call of `round`: the request fitted into the window, then the model turn.
/// A request the provider refused as too large is fitted again once with what the refusal
/// said; a failure the profile's fallback chain covers moves the agent to its next binding
/// (`engine::fallback`) and the round's call is made there, fitted to the new window.
async fn call_model(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    round: u32,
    messages: &mut Vec<AgentModelMessage>,
    session: &ProviderSession,
) -> ApplicationResult<tt_domain::model::AgentModelResponse> {
    let retry = inv.profile.definition.run.model_retry;
    // Steps journaled before a crash at this round stand; the fit goes on from them.
    replay_context_steps(inv, round, messages);
    let mut trigger = FitTrigger::Estimate;
    let mut settings = inv.model.settings();
    if round == 1 {
        // An opening too large for the window fails now, not midway.
        check_opening(inv, messages, settings.max_output_tokens)?;
    }
    loop {
        let max_output_tokens = fit_request(
            ctx,
            inv,
            round,
            messages,
            trigger,
            settings.max_output_tokens,
        )
        .await?;
        // The history is lent to the request and taken back; providers borrow the request, so
        // no attempt copies it.
        let request = AgentModelRequest {
            session: session.clone(),
            agent_profile_id: inv.profile.id().clone(),
            model_id: inv.model.model_id.clone(),
            round,
            messages: std::mem::take(messages),
            tools: inv.request_tools(),
            tool_choice: "auto".to_owned(),
            max_output_tokens,
            generation: settings.generation.clone(),
            cache_ttl: inv.model.cache_ttl,
        };
        let turn = crate::engine::model_turn::run_model_turn(ctx, inv, &request, retry).await;
        *messages = request.messages;
        match turn {
            // Refused as too large: fit again with what the refusal said, once.
            Err(ApplicationError::Model(error @ tt_ports::ModelError::ContextOverflow { .. }))
                if trigger == FitTrigger::Estimate =>
            {
                note_refusal(inv, messages, &error).await;
                trigger = FitTrigger::ProviderRefused;
            }
            Err(ApplicationError::Model(error))
                if crate::engine::fallback::covers(inv, &error).is_some() =>
            {
                crate::engine::fallback::switch(ctx, inv, round, &error).await?;
                settings = inv.model.settings();
                trigger = FitTrigger::Estimate;
            }
            turn => return turn,
        }
    }
}

/// What comes before a live model call of `round`: a run parked at its spend limit waits here
/// for a person (`spend_gate`); then the foreground agent's run is `calling_model`, and the
/// guidance the user sent meanwhile reaches it before this request.
async fn before_live_call(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    round: u32,
    messages: &mut Vec<AgentModelMessage>,
) -> ApplicationResult<()> {
    crate::engine::spend_gate::pass(ctx, inv).await?;
    if inv.owns_run() {
        ctx.try_set_status(AgentRunStatus::CallingModel).await?;
        ctx.guidance
            .apply(
                &ctx.events,
                &ctx.run_id,
                &inv.invocation.id,
                round,
                messages,
            )
            .await?;
    }
    Ok(())
}

/// Applies the context-window steps journaled before `round` (a resumed agent).
fn replay_context_steps(
    inv: &mut InvocationRuntime,
    round: u32,
    messages: &mut Vec<AgentModelMessage>,
) {
    let steps = inv
        .replay
        .as_mut()
        .map(|replay| replay.take_context_steps(round))
        .unwrap_or_default();
    for step in &steps {
        apply_step(messages, &mut inv.window, step);
    }
}

/// Canonical names of the tools that can end this invocation's loop.
fn ending_tools(inv: &InvocationRuntime) -> Vec<&'static str> {
    [
        ToolName::WorkspaceFinish,
        ToolName::AgentHandoff,
        ToolName::TaskReturn,
    ]
    .into_iter()
    .filter(|tool| inv.snapshot.offers(*tool))
    .map(ToolName::canonical)
    .collect()
}

/// Where a plain-text answer was saved.
#[derive(Debug, Clone)]
struct CapturedOutput {
    path: WorkspacePath,
}

/// Saves plain-text model output to `<root of the message body path>/direct_output.md` so it is
/// never lost, with `direct_output_captured` and a checkpoint.
async fn capture_direct_output(
    ctx: &RunContext,
    inv: &InvocationRuntime,
    round: u32,
    text: &str,
    replaying: bool,
) -> ApplicationResult<Option<CapturedOutput>> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    let root = inv.snapshot.message_body_path.first_segment().to_owned();
    let path = WorkspacePath::parse(&format!("{root}/direct_output.md"))?;
    if replaying {
        // Saved before the interruption.
        return Ok(Some(CapturedOutput { path }));
    }
    ctx.services
        .workspace
        .write(&ctx.run_id, &path, text, &WriteGuard::None)
        .await?;
    let model_response_path = RunDocument::ModelResponse {
        invocation_id: inv.invocation.id.clone(),
        round,
    }
    .relative_path();
    let captured = payload::DirectOutputCaptured {
        invocation_id: inv.invocation.id.clone(),
        round,
        path: path.to_string(),
        chars: char_count(text) as u64,
        words: word_count(text) as u64,
        sha256: sha256_hex(text.as_bytes()),
        model_response_path,
    };
    let event = ctx
        .events
        .record(&ctx.run_id, EventLevel::Info, &captured)
        .await?;
    checkpoint(
        ctx,
        &inv.invocation.id,
        CheckpointReason::DirectOutputCapture,
        event.seq,
        std::slice::from_ref(&path),
    )
    .await?;
    Ok(Some(CapturedOutput { path }))
}

/// The synthetic reminder sent after a plain-text answer: the `attempt`-th, to an agent with
/// `snapshot`'s tools, whose text was saved at `captured` (if it was), when the run had
/// `commit_count` confirmed commits. (The conversation read model renders it again.)
pub(crate) fn drift_nudge(
    snapshot: &InvocationToolSnapshot,
    attempt: u32,
    captured: Option<&str>,
    commit_count: usize,
) -> String {
    let has = |tool: ToolName| snapshot.offers(tool);
    let alias = |tool: ToolName| tool.model_alias();
    let mut text = format!(
        "{}{attempt}] ",
        tt_domain::context_window::DRIFT_REMINDER_PREFIX
    );
    text.push_str("Plain text is not delivered to anyone; continue only with tool calls. ");
    let instruction = if has(ToolName::TaskReturn) {
        format!(
            "Hand your result back with `{}`.",
            alias(ToolName::TaskReturn)
        )
    } else if has(ToolName::WorkspaceFinish) && commit_count > 0 {
        format!(
            "Your reply is already published: call `{}` now, or revise it, publish again with `{}`, then call `{}`.",
            alias(ToolName::WorkspaceFinish),
            alias(ToolName::WorkspaceCommit),
            alias(ToolName::WorkspaceFinish)
        )
    } else if has(ToolName::WorkspaceFinish) && has(ToolName::WorkspaceCommit) {
        format!(
            "Write the reply to `{}` with `{}`, publish it with `{}`, then call `{}`.",
            snapshot.message_body_path,
            alias(ToolName::WorkspaceWriteFile),
            alias(ToolName::WorkspaceCommit),
            alias(ToolName::WorkspaceFinish)
        )
    } else if has(ToolName::WorkspaceFinish) {
        format!(
            "When your work is done, call `{}`.",
            alias(ToolName::WorkspaceFinish)
        )
    } else if has(ToolName::AgentHandoff) {
        format!(
            "Call `{}` with a full brief so the next agent can continue.",
            alias(ToolName::AgentHandoff)
        )
    } else {
        "Use one of your tools to finish your work.".to_owned()
    };
    text.push_str(&instruction);
    if let Some(captured) = captured {
        let hint = if has(ToolName::WorkspaceCommit) {
            format!(
                " {}{}`; you can publish it with `{}` (path `{}`) or move it into your reply file.",
                tt_domain::context_window::DRIFT_SAVED_TO,
                captured,
                alias(ToolName::WorkspaceCommit),
                captured
            )
        } else {
            format!(
                " {}{captured}`; you can refer to that file.",
                tt_domain::context_window::DRIFT_SAVED_TO
            )
        };
        text.push_str(&hint);
    }
    text
}

/// What a request refused as too large teaches: the agent's window notes the request and the
/// window the refusal stated, which is also kept for the connection and model, like one its
/// server states, so the next agent bound to the model starts from it (docs/providers.md,
/// "The window").
async fn note_refusal(
    inv: &mut InvocationRuntime,
    messages: &[AgentModelMessage],
    error: &tt_ports::ModelError,
) {
    inv.window.note_refused(messages, &inv.request_tools());
    inv.window
        .observe_refusal(error, inv.model.context_window_tokens);
    if let tt_ports::ModelError::ContextOverflow {
        window_tokens: Some(tokens),
        ..
    } = error
    {
        let window = tt_ports::ServerContextWindow {
            tokens: *tokens,
            source: "overflow error".to_owned(),
        };
        inv.model
            .provider
            .remember_context_window(inv.model.window_model_id.as_deref(), window)
            .await;
    }
}
