//! Compaction (docs/providers.md, "Context window and compaction"): when trimming leaves a
//! request over its budget, one model call summarizes everything after the agent's opening and
//! one message replaces it. The summary sits right after the opening, outside it, so the next
//! compaction summarizes it again with what followed: an agent's history holds one summary at
//! most, however often it is compacted. The latest turn stays whole when it fits beside the
//! opening and a summary, and is summarized too when it does not.
//!
//! The opening (system prompt, tools and request) is all that is never summarized. In a
//! conversation the request comes after earlier messages, which are summarized like the rest:
//! the request then stays whole, ahead of the summary, and joins the opening. Whether the
//! opening fits is checked before the agent's first request ([`check_opening`]), so a run never
//! fails for it midway.

use std::sync::Arc;
use tt_domain::context_window::{self as window, ProtectedSpans, WindowBudget, request_tokens};
use tt_domain::event::EventLevel;
use tt_domain::event_payload as payload;
use tt_domain::model::{AgentModelMessage, AgentModelRequest, ModelRole, ProviderSession};
use tt_domain::profile::CompactionPolicy;
use tt_ports::ModelError;

use super::steps::{apply_step, overflow};
use crate::engine::context::RunContext;
use crate::engine::invocation::InvocationRuntime;
use crate::error::{ApplicationError, ApplicationResult};
use crate::replay::ContextStep;

/// The most tokens a summary may take (and the room kept for it): an eighth of the input
/// budget, within 128 to 1,024.
pub(super) fn summary_tokens(budget: &WindowBudget) -> u64 {
    (budget.input_budget_tokens / 8).clamp(128, 1024)
}

/// The least room a summary may have: below it, compaction gives up (`model.context_overflow`).
const MIN_SUMMARY_TOKENS: u64 = 64;

/// Fails with `model.context_window_too_small` when the agent's opening (its first
/// `inv.window.opening` messages and its tools) does not fit its model's known window with the
/// answer's reserve and room for a summary; the message says what window would fit.
pub(crate) fn check_opening(
    inv: &InvocationRuntime,
    messages: &[AgentModelMessage],
    max_output_tokens: Option<u32>,
) -> ApplicationResult<()> {
    let Some(window_tokens) = inv
        .window
        .learned_window
        .or(inv.model.context_window_tokens)
    else {
        return Ok(());
    };
    let calibration = inv.window.calibration;
    let tools = window::tools_tokens(&inv.request_tools());
    let opening: Vec<AgentModelMessage> = inv.window.protected(messages).cloned().collect();
    let needed = calibration.apply(request_tokens(&opening, tools));
    let fits = |window_tokens: u64| {
        let budget = WindowBudget::new(window_tokens, max_output_tokens);
        let summary = summary_tokens(&budget);
        (
            needed + summary <= budget.input_budget_tokens,
            budget,
            summary,
        )
    };
    let (fit, budget, summary) = fits(window_tokens);
    if fit {
        return Ok(());
    }
    // The least window that fits: grow it by what was missing until nothing is.
    let mut least = needed + summary + budget.output_reserve_tokens;
    for _ in 0..32 {
        let (fit, budget, summary) = fits(least);
        if fit {
            break;
        }
        least = least.max(needed + summary + budget.output_reserve_tokens) + 1;
    }
    Err(ApplicationError::fatal(
        tt_domain::error_codes::MODEL_CONTEXT_WINDOW_TOO_SMALL,
        format!(
            "the system prompt, the tools and the request need about {needed} tokens ({tools} of them the tools), but the model's window of {window_tokens} tokens leaves {} for them after {} kept for the answer and {summary} for a summary of the work; a window of at least {least} tokens would fit (or a shorter prompt, fewer tools, a smaller output limit)",
            budget.input_budget_tokens.saturating_sub(summary),
            budget.output_reserve_tokens,
        ),
    ))
}

/// Replaces everything after the opening (the latest turn too, when it does not fit beside the
/// opening and a summary) by one summary, per the profile's `context.compaction`.
pub(super) async fn compact(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    round: u32,
    messages: &mut Vec<AgentModelMessage>,
    budget: WindowBudget,
    tools: u64,
) -> ApplicationResult<()> {
    let calibration = inv.window.calibration;
    let before = calibration.apply(request_tokens(messages, tools));
    let opening = inv.window.opening.min(messages.len());
    let spans = ProtectedSpans::of(messages, opening);
    let tokens = |kept: &[AgentModelMessage]| kept.iter().map(window::message_tokens).sum::<u64>();
    let protected: Vec<AgentModelMessage> = inv.window.protected(messages).cloned().collect();
    let protected_tokens = tokens(&protected);
    // The room kept for a summary; less when the provider turned out to count the opening
    // larger than estimated at the start, down to a floor.
    let summary_tokens = summary_tokens(&budget).min(
        budget
            .input_budget_tokens
            .saturating_sub(calibration.apply(tools + protected_tokens)),
    );
    let fits =
        |kept: u64| calibration.apply(tools + kept + summary_tokens) <= budget.input_budget_tokens;
    let end = if spans.tail_start > opening
        && fits(protected_tokens + tokens(&messages[spans.tail_start..]))
    {
        spans.tail_start
    } else {
        messages.len()
    };
    // The request stays (ahead of the summary) when it is among what is replaced.
    let kept = inv
        .window
        .request
        .filter(|index| (opening..end).contains(index));
    if inv.profile.definition.context.compaction == CompactionPolicy::None
        || end <= opening
        || summary_tokens < MIN_SUMMARY_TOKENS
    {
        return Err(overflow(before, &budget));
    }
    let replaced: Vec<AgentModelMessage> = messages[opening..end]
        .iter()
        .enumerate()
        .filter(|(offset, _)| Some(opening + offset) != kept)
        .map(|(_, message)| message.clone())
        .collect();
    let summary = summarize(
        ctx,
        inv,
        round,
        &protected,
        &replaced,
        &budget,
        summary_tokens,
    )
    .await?;
    let step = ContextStep::Summary {
        first: opening,
        count: end - opening,
        summary: summary.text.clone(),
        kept,
    };
    apply_step(messages, &mut inv.window, &step);
    let compacted = payload::ContextCompacted {
        invocation_id: inv.invocation.id.clone(),
        round,
        first_message: opening as u64,
        replaced_messages: (end - opening) as u64,
        kept_message: kept.map(|index| index as u64),
        summary: summary.text,
        estimated_tokens_before: before,
        estimated_tokens_after: calibration.apply(request_tokens(messages, tools)),
        window_tokens: budget.window_tokens,
        cost_usd: crate::engine::model_turn::call_cost(inv, summary.usage.as_ref()),
        usage: summary.usage,
    };
    ctx.events
        .record(&ctx.run_id, EventLevel::Info, &compacted)
        .await?;
    Ok(())
}

/// What the summarizing call answered.
struct Summary {
    text: String,
    usage: Option<tt_domain::model::ModelUsage>,
}

/// One model call, with no tools: the protected messages (`opening`: system prompt and
/// request), then the transcript of `replaced` (cut to what the window holds) and the
/// instruction, for an answer of at most `summary_tokens`. Its usage is charged to the agent.
async fn summarize(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    round: u32,
    opening: &[AgentModelMessage],
    replaced: &[AgentModelMessage],
    budget: &WindowBudget,
    summary_tokens: u64,
) -> ApplicationResult<Summary> {
    let calibration = inv.window.calibration;
    let room = budget
        .input_budget_tokens
        .saturating_sub(calibration.apply(request_tokens(opening, 0) + summary_tokens));
    let max_bytes =
        usize::try_from(calibration.unapply(room) * window::BYTES_PER_TOKEN_TIMES_TEN / 10)
            .unwrap_or(usize::MAX);
    let transcript = window::transcript(replaced, max_bytes);
    let mut request_messages = opening.to_vec();
    request_messages.push(AgentModelMessage::text(
        ModelRole::User,
        format!("{transcript}\n\n{}", window::SUMMARY_INSTRUCTION),
    ));
    let request = AgentModelRequest {
        session: ProviderSession::new(&ctx.run_id, &inv.invocation.id),
        agent_profile_id: inv.profile.id().clone(),
        model_id: inv.model.model_id.clone(),
        round,
        messages: request_messages,
        tools: Arc::from(Vec::new()),
        tool_choice: "auto".to_owned(),
        max_output_tokens: Some(u32::try_from(summary_tokens).unwrap_or(u32::MAX)),
        generation: inv.model.settings().generation,
        cache_ttl: inv.model.cache_ttl,
    };
    let call_cancel = inv.cancel.child_token();
    let response = tokio::select! {
        biased;
        () = inv.cancel.cancelled() => return Err(ApplicationError::cancelled()),
        result = inv.model.provider.complete(&request, call_cancel.clone()) => result,
    };
    call_cancel.cancel();
    let response = match response {
        Ok(response) => response,
        Err(ModelError::Cancelled) => return Err(ApplicationError::cancelled()),
        Err(error) => return Err(ApplicationError::Model(error)),
    };
    // The summary message, header included, takes at most the room kept for it, as the
    // provider counts: a longer answer (a model that ignores its limit) is cut in the middle,
    // so the request after it fits.
    let header = window::message_tokens(&AgentModelMessage::text(
        ModelRole::User,
        window::summary_message_text(""),
    ));
    let room_bytes = calibration.unapply(summary_tokens).saturating_sub(header)
        * window::BYTES_PER_TOKEN_TIMES_TEN
        / 10;
    // Less the marker a cut leaves.
    let room_bytes = usize::try_from(room_bytes.saturating_sub(64)).unwrap_or(usize::MAX);
    let mut text = window::cut_middle(response.text().trim(), room_bytes);
    if text.is_empty() {
        // A model that answers with nothing still leaves the agent its own record.
        text = window::cut_middle(&transcript, room_bytes);
    }
    crate::engine::spend_gate::count(ctx, inv, response.usage.as_ref());
    crate::engine::model_turn::charge_usage(inv, response.usage.as_ref())?;
    Ok(Summary {
        text,
        usage: response.usage,
    })
}
