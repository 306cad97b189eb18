//! One model turn: the call with retries of rate-limited and transient failures (per the
//! profile's `run.modelRetry`), cancellable at every wait and bounded as a whole by the call
//! deadline (`run.modelRetry.deadlineSeconds`, else the connection's, else 5 minutes), then
//! the stored response and its events.

use std::time::Duration;
use tracing::Instrument;
use tt_domain::event::EventLevel;
use tt_domain::event_payload as payload;
use tt_domain::model::{AgentModelRequest, AgentModelResponse};
use tt_domain::profile::ModelRetryPolicy;
use tt_domain::text::{char_count, word_count};
use tt_ports::{ModelError, ModelTimeLimit, RunDocument};

use crate::engine::context::RunContext;
use crate::engine::fallback::skips_retries;
use crate::engine::invocation::InvocationRuntime;
use crate::error::{ApplicationError, ApplicationResult};
use crate::events::{EventSink, PendingEvent};

/// The failure of a call that outlasted its deadline, naming the last attempt's error if one
/// failed before the time ran out.
fn call_deadline_error(after: Duration, last: Option<&ModelError>) -> ModelError {
    let limit_ms = u64::try_from(after.as_millis()).unwrap_or(u64::MAX);
    let mut message = format!(
        "the model call did not complete within {limit_ms} ms, attempts included (call deadline)"
    );
    if let Some(last) = last {
        message.push_str(&format!("; the last attempt failed: {last}"));
    }
    ModelError::TimedOut {
        limit: ModelTimeLimit::CallDeadline,
        limit_ms,
        message,
    }
}

/// How long a rate-limited provider asked to wait before the next attempt; 0 when it did not
/// say (or the failure is no rate limit).
fn retry_after_ms(error: &ModelError) -> u64 {
    match error {
        ModelError::RateLimited {
            retry_after_ms: Some(ms),
            ..
        } => *ms,
        _ => 0,
    }
}

/// The time limit that ended an attempt, and its value.
fn time_limit(error: &ModelError) -> Option<(ModelTimeLimit, u64)> {
    match error {
        ModelError::TimedOut {
            limit, limit_ms, ..
        } => Some((*limit, *limit_ms)),
        _ => None,
    }
}

/// Calls the model for `request`, retrying per `policy`, and stores the response, inside a
/// `model_call` span (round, provider, model) under the invocation's span.
pub(crate) async fn run_model_turn(
    ctx: &RunContext,
    inv: &InvocationRuntime,
    request: &AgentModelRequest,
    policy: ModelRetryPolicy,
) -> ApplicationResult<AgentModelResponse> {
    let span = tracing::info_span!(
        "model_call",
        round = request.round,
        provider = inv.model.provider.name(),
        model = request.model_id.as_deref().unwrap_or("default"),
    );
    model_turn(ctx, inv, request, policy).instrument(span).await
}

async fn model_turn(
    ctx: &RunContext,
    inv: &InvocationRuntime,
    request: &AgentModelRequest,
    policy: ModelRetryPolicy,
) -> ApplicationResult<AgentModelResponse> {
    let round = request.round;
    let invocation_id = inv.invocation.id.clone();
    let created = payload::ModelRequestCreated {
        round,
        invocation_id: invocation_id.clone(),
        request: payload::ModelRequestSummary {
            provider: inv.model.provider.name().to_owned(),
            model: request.model_id.clone(),
            message_count: request.messages.len() as u64,
            tool_count: request.tools.len() as u64,
            session_id: request.session.session_id.clone(),
            wire: Some(tt_ports::provider_wire(inv.model.provider.as_ref())),
        },
    };
    let deadline_after = policy.call_deadline(inv.model.connection_call_deadline);
    let mut attempts = Attempts {
        round,
        invocation_id,
        policy,
        deadline_after,
        deadline: tokio::time::Instant::now() + deadline_after,
        attempt: 1,
        // Journaled with the first attempt's `model_call_attempt_started`, in one append.
        created: Some(EventSink::pending(EventLevel::Info, &created)?),
    };
    let mut response = attempts.call(ctx, inv, request).await?;
    store_response(ctx, inv, request, &mut response).await?;
    tracing::debug!(
        attempts = attempts.attempt,
        tool_calls = response.message.tool_calls().count(),
        input_tokens = response.usage.as_ref().map(|u| u.input_tokens),
        output_tokens = response.usage.as_ref().map(|u| u.output_tokens),
        "model call completed"
    );
    Ok(response)
}

/// The attempts at one model call, under its deadline.
struct Attempts {
    round: u32,
    invocation_id: tt_domain::ids::InvocationId,
    policy: ModelRetryPolicy,
    deadline_after: Duration,
    deadline: tokio::time::Instant,
    /// The attempt being made, from 1.
    attempt: u32,
    /// `model_request_created`, until it is journaled.
    created: Option<PendingEvent>,
}

impl Attempts {
    /// Attempts the call until one answers, retrying what the policy retries in time.
    async fn call(
        &mut self,
        ctx: &RunContext,
        inv: &InvocationRuntime,
        request: &AgentModelRequest,
    ) -> ApplicationResult<AgentModelResponse> {
        let run_id = &ctx.run_id;
        loop {
            if inv.cancel.is_cancelled() {
                if let Some(created) = self.created.take() {
                    ctx.events.record_all(run_id, vec![created]).await?;
                }
                return Err(ApplicationError::cancelled());
            }
            let error = match self.attempt(ctx, inv, request).await? {
                Ok(response) => return Ok(response),
                Err(ModelError::Cancelled) => return Err(ApplicationError::cancelled()),
                Err(error) => error,
            };
            let interval_ms = self.retry_after_failure(ctx, inv, error).await?;
            tokio::select! {
                biased;
                () = inv.cancel.cancelled() => return Err(ApplicationError::cancelled()),
                () = tokio::time::sleep(Duration::from_millis(interval_ms)) => {}
            }
            self.attempt += 1;
        }
    }

    /// One attempt, journaled as started, cancellable and cut at the call's deadline.
    async fn attempt(
        &mut self,
        ctx: &RunContext,
        inv: &InvocationRuntime,
        request: &AgentModelRequest,
    ) -> ApplicationResult<Result<AgentModelResponse, ModelError>> {
        let started = payload::ModelCallAttemptStarted {
            round: self.round,
            invocation_id: self.invocation_id.clone(),
            attempt: self.attempt,
            max_retries: self.policy.max_retries,
        };
        let started = EventSink::pending(EventLevel::Info, &started)?;
        let events = match self.created.take() {
            Some(created) => vec![created, started],
            None => vec![started],
        };
        ctx.events.record_all(&ctx.run_id, events).await?;
        let call_cancel = inv.cancel.child_token();
        let (deadline, deadline_after) = (self.deadline, self.deadline_after);
        let invocation_id = &self.invocation_id;
        let outcome = tokio::select! {
            biased;
            () = inv.cancel.cancelled() => Err(ModelError::Cancelled),
            () = tokio::time::sleep_until(deadline) => Err(call_deadline_error(deadline_after, None)),
            result = crate::engine::streaming::stream_with_deltas(ctx, &inv.model.provider, invocation_id, request, call_cancel.clone()) => result?,
        };
        call_cancel.cancel();
        Ok(outcome)
    }

    /// After a failed attempt: journaled, then the wait before the next one, or the call's
    /// failure when it is not retried (not retryable, no retries left, or no time for one).
    async fn retry_after_failure(
        &self,
        ctx: &RunContext,
        inv: &InvocationRuntime,
        error: ModelError,
    ) -> ApplicationResult<u64> {
        let (round, attempt, run_id) = (self.round, self.attempt, &ctx.run_id);
        let (max_retries, deadline) = (self.policy.max_retries, self.deadline);
        let invocation_id = &self.invocation_id;
        let interval_ms = self.policy.interval_ms.max(retry_after_ms(&error));
        let retryable = error.is_retryable();
        // A retry whose wait alone would outlast the call's deadline is not tried.
        let in_time = tokio::time::Instant::now() + Duration::from_millis(interval_ms) < deadline;
        let will_retry =
            retryable && attempt <= max_retries && in_time && !skips_retries(inv, &error);
        tracing::warn!(attempt, retryable, will_retry, code = %error.code(), %error, "model call attempt failed");
        let failed = payload::ModelCallAttemptFailed {
            round,
            invocation_id: invocation_id.clone(),
            attempt,
            max_retries,
            retryable,
            will_retry,
            code: error.code().to_string(),
            message: error.to_string(),
            limit: time_limit(&error).map(|(limit, _)| limit.as_str().to_owned()),
            limit_ms: time_limit(&error).map(|(_, ms)| ms),
        };
        ctx.events.record(run_id, EventLevel::Warn, &failed).await?;
        if !will_retry {
            if retryable && attempt <= max_retries && !in_time {
                // Retries were left, but not the time for them.
                return Err(ApplicationError::Model(call_deadline_error(
                    self.deadline_after,
                    Some(&error),
                )));
            }
            return Err(ApplicationError::Model(error));
        }
        let scheduled = payload::ModelCallRetryScheduled {
            round,
            invocation_id: invocation_id.clone(),
            next_attempt: attempt + 1,
            interval_ms,
        };
        ctx.events
            .record(run_id, EventLevel::Info, &scheduled)
            .await?;
        Ok(interval_ms)
    }
}

/// Stores the answer of `request`'s call (`RunDocument::ModelResponse`) and journals it.
async fn store_response(
    ctx: &RunContext,
    inv: &InvocationRuntime,
    request: &AgentModelRequest,
    response: &mut AgentModelResponse,
) -> ApplicationResult<()> {
    let (round, invocation_id, run_id) = (request.round, &inv.invocation.id, &ctx.run_id);
    // The response is held for the rest of the turn (and stored): keep each long string once.
    response.shed_raw_copies();
    let document = RunDocument::ModelResponse {
        invocation_id: invocation_id.clone(),
        round,
    };
    /// The stored response document, serialized without a `Value` tree of the response, and
    /// with each long string the message holds written once (`model_storage`).
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct ResponseDocument<'a> {
        round: u32,
        invocation_id: &'a tt_domain::ids::InvocationId,
        response: tt_domain::model_storage::StoredModelResponse<'a>,
    }
    let body = tt_ports::SerializedDocument::new(&ResponseDocument {
        round,
        invocation_id,
        response: response.for_storage(),
    })?;
    // The document and the events that name it, one unit: written one right after the other.
    let events = stored_response_events(
        inv,
        round,
        &request.session.session_id,
        request.messages.len(),
        response,
    )?;
    let unit = std::iter::once(tt_ports::RunWrite::Document { document, body })
        .chain(
            events
                .into_iter()
                .map(|event| ctx.events.stamp(run_id, event)),
        )
        .collect();
    ctx.events.commit(run_id, unit).await?;
    count_spend(ctx, inv, response);
    Ok(())
}

/// Journals the events of a stored response ([`stored_response_events`]) on resume, for a
/// response whose document was written before the interruption but whose events were not
/// (docs/resume.md; the file store writes a unit one write at a time).
pub(crate) async fn journal_stored_response(
    ctx: &RunContext,
    inv: &InvocationRuntime,
    round: u32,
    session_id: &str,
    message_cursor: usize,
    response: &AgentModelResponse,
) -> ApplicationResult<()> {
    let events = stored_response_events(inv, round, session_id, message_cursor, response)?;
    ctx.events.record_all(&ctx.run_id, events).await?;
    count_spend(ctx, inv, response);
    Ok(())
}

/// The run's spend counts what `model_completed` journals (`spend_limit`), once.
fn count_spend(ctx: &RunContext, inv: &InvocationRuntime, response: &AgentModelResponse) {
    if let Some(cost) =
        call_cost(inv, response.usage.as_ref()).and_then(tt_domain::cost::Usd::from_dollars)
    {
        ctx.spend.add(cost);
    }
}

/// The events of a stored response, in order: `model_response_stored`,
/// `provider_state_updated` and `model_completed`.
fn stored_response_events(
    inv: &InvocationRuntime,
    round: u32,
    session_id: &str,
    message_cursor: usize,
    response: &AgentModelResponse,
) -> ApplicationResult<Vec<PendingEvent>> {
    let invocation_id = &inv.invocation.id;
    let path = RunDocument::ModelResponse {
        invocation_id: invocation_id.clone(),
        round,
    }
    .relative_path();
    let stored = payload::ModelResponseStored {
        round,
        invocation_id: invocation_id.clone(),
        path: path.clone(),
        response_id: response.response_id.clone(),
        model: response.model.clone(),
    };
    let provider_state = payload::ProviderStateUpdated {
        round,
        invocation_id: invocation_id.clone(),
        provider_state: payload::ProviderState {
            session_id: session_id.to_owned(),
            provider: inv.model.provider.name().to_owned(),
            message_cursor: message_cursor as u64,
            last_response_id: response.response_id.clone(),
            wire: Some(tt_ports::provider_wire(inv.model.provider.as_ref())),
        },
    };
    let text = response.text();
    let reasoning = response.reasoning_text();
    let tool_calls = response.message.tool_calls().count();
    let text_chars = char_count(&text) as u64;
    let text_words = word_count(&text) as u64;
    let has_text = !text.trim().is_empty();
    // What a host shows as the agent's narration: the start of its assistant text.
    let narration = has_text.then(|| {
        const NARRATION_LIMIT: usize = 2000;
        let (head, truncated) = tt_domain::text::truncate_chars(text.trim(), NARRATION_LIMIT);
        payload::Narration {
            source: "assistantText".to_owned(),
            text: head.to_owned(),
            total_chars: text_chars,
            total_words: text_words,
            truncated,
        }
    });
    let completed = payload::ModelCompleted {
        round,
        invocation_id: invocation_id.clone(),
        model_response_path: path,
        tool_call_count: tool_calls as u64,
        text_chars,
        text_words,
        has_assistant_text: has_text,
        assistant_text_chars: text_chars,
        assistant_text_words: text_words,
        has_reasoning: !reasoning.is_empty(),
        reasoning_chars: char_count(&reasoning) as u64,
        reasoning_words: word_count(&reasoning) as u64,
        usage: response.usage,
        cost_usd: call_cost(inv, response.usage.as_ref()),
        finish_reason: response.finish_reason.clone(),
        narration,
    };
    Ok(vec![
        EventSink::pending(EventLevel::Info, &stored)?,
        EventSink::pending(EventLevel::Info, &provider_state)?,
        EventSink::pending(EventLevel::Info, &completed)?,
    ])
}

/// What a call with `usage` cost on this agent's model, when its price is known.
pub(crate) fn call_cost(
    inv: &InvocationRuntime,
    usage: Option<&tt_domain::model::ModelUsage>,
) -> Option<f64> {
    let (price, usage) = (inv.model.price?, usage?);
    Some(tt_domain::cost::round_usd(price.cost_usd(usage)))
}

/// Charges a model answer's tokens and cost to the run's and tasks' budgets (the scheduler's
/// ledger); past one of them this is the error that ends the agent.
pub(crate) fn charge_usage(
    inv: &InvocationRuntime,
    usage: Option<&tt_domain::model::ModelUsage>,
) -> ApplicationResult<()> {
    let Some(usage) = usage else {
        return Ok(());
    };
    inv.scheduler.charge(
        &inv.invocation.id,
        crate::engine::scheduler::budgets::Spent {
            tokens: usage.input_tokens + usage.output_tokens,
            cost: call_cost(inv, Some(usage))
                .and_then(tt_domain::cost::Usd::from_dollars)
                .unwrap_or_default(),
        },
    )
}
