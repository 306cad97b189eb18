//! The fallback chain of an agent's model (`model.fallbacks`, docs/profiles.md "Fallback
//! models"): a failure retrying does not fix (a retryable failure after `run.modelRetry`'s
//! retries, a call past its deadline, a rate limit, a model the server does not know) moves the agent to the next binding
//! of its profile, with the same history, and the round's call is made again there. Each switch
//! is journaled (`agent_model_fallback_switched`); the journal is what a resumed or branched
//! agent reads to go on with the binding in force.

use tt_domain::error_codes;
use tt_domain::event::EventLevel;
use tt_domain::event_payload::{AgentModelFallbackSwitched, BindingRef};
use tt_ports::{ModelError, ModelTimeLimit};

use crate::engine::binding::{ModelBinding, resolve_fallback_binding};
use crate::engine::context::RunContext;
use crate::engine::invocation::InvocationRuntime;
use crate::error::{ApplicationError, ApplicationResult};

/// Why an agent moves to its next binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reason {
    /// A retryable failure (transient, timed out, unreadable) after the retries.
    RetriesExhausted,
    /// The call, its retries and waits included, outlasted its deadline
    /// (`model.call_deadline_exceeded`).
    CallDeadline,
    /// The server does not know the model.
    ModelNotFound,
    /// Rate limited after the retries, or asked to wait longer than
    /// `model.fallbackOnRateLimitAfterSeconds`.
    RateLimited,
}

impl Reason {
    fn as_str(self) -> &'static str {
        match self {
            Self::RetriesExhausted => "retries_exhausted",
            Self::CallDeadline => "call_deadline_exceeded",
            Self::ModelNotFound => "model_not_found",
            Self::RateLimited => "rate_limited",
        }
    }
}

/// The failure kinds a fallback chain covers.
fn reason(error: &ModelError) -> Option<Reason> {
    match error {
        ModelError::RateLimited { .. } => Some(Reason::RateLimited),
        ModelError::TimedOut {
            limit: ModelTimeLimit::CallDeadline,
            ..
        } => Some(Reason::CallDeadline),
        ModelError::Rejected { status, message } if is_model_not_found(*status, message) => {
            Some(Reason::ModelNotFound)
        }
        error if error.is_retryable() => Some(Reason::RetriesExhausted),
        _ => None,
    }
}

/// A refusal that says the model does not exist: HTTP 404 (OpenAI `model_not_found`,
/// Anthropic `not_found_error`, Ollama's "model not found"), or a message saying so.
fn is_model_not_found(status: Option<u16>, message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    status == Some(404)
        || message.contains("model_not_found")
        || (message.contains("model") && message.contains("not found"))
}

/// Why the agent's profile moves it on after `error`, when its profile has fallbacks at all
/// (the chain may be spent: [`switch`] then fails with `model.fallbacks_exhausted`).
pub(crate) fn covers(inv: &InvocationRuntime, error: &ModelError) -> Option<Reason> {
    if inv.profile.definition.model.fallbacks.is_empty() {
        return None;
    }
    reason(error)
}

/// Whether a rate limit moves the agent on at once instead of being retried: it asks to wait
/// longer than `model.fallbackOnRateLimitAfterSeconds` and a fallback is left.
pub(crate) fn skips_retries(inv: &InvocationRuntime, error: &ModelError) -> bool {
    let model = &inv.profile.definition.model;
    let left = usize::try_from(inv.model.fallback_index).is_ok_and(|at| at < model.fallbacks.len());
    match (error, model.fallback_on_rate_limit_after_seconds) {
        (
            ModelError::RateLimited {
                retry_after_ms: Some(wait),
                ..
            },
            Some(bound),
        ) => left && *wait > bound.saturating_mul(1000),
        _ => false,
    }
}

/// Moves the agent to its next binding after `error` in `round`, journaling the switch; when
/// none is left it fails with `model.fallbacks_exhausted`.
pub(crate) async fn switch(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    round: u32,
    error: &ModelError,
) -> ApplicationResult<()> {
    let Some(reason) = covers(inv, error) else {
        return Err(ApplicationError::Model(error.clone()));
    };
    let next = inv.model.fallback_index + 1;
    let Some(binding) = resolve_fallback_binding(
        ctx,
        &inv.invocation.id,
        &inv.profile,
        &inv.model,
        (next, true),
    )
    .await?
    else {
        return Err(ApplicationError::fatal(
            tt_domain::error_codes::MODEL_FALLBACKS_EXHAUSTED,
            format!(
                "the agent's model and all {} fallback models of its profile failed; the last: {error}",
                inv.profile.definition.model.fallbacks.len()
            ),
        ));
    };
    let switched = AgentModelFallbackSwitched {
        invocation_id: inv.invocation.id.clone(),
        profile_id: inv.profile.id().clone(),
        round,
        fallback_index: next,
        from: binding_ref(&inv.model),
        to: binding_ref(&binding),
        reason: reason.as_str().to_owned(),
        code: error.code().to_string(),
        message: error.to_string(),
        context_window_tokens: binding.context_window_tokens,
        price: binding.price,
    };
    ctx.events
        .record(&ctx.run_id, EventLevel::Warn, &switched)
        .await?;
    tracing::warn!(
        fallback = next,
        reason = reason.as_str(),
        "the agent moved to a fallback model"
    );
    inv.model = binding;
    Ok(())
}

/// A resumed or branched agent: the binding its journal's last switch left in force, without
/// journaling it again (unless a branch changed the profile's model: the change wins).
pub(crate) async fn restore(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
) -> ApplicationResult<()> {
    let Some(index) = inv
        .replay
        .as_ref()
        .and_then(crate::replay::Replay::fallback_in_force)
    else {
        return Ok(());
    };
    // A branch that gave the profile another model (docs/branching.md) starts it there.
    let changed = ctx
        .run_snapshot()
        .await
        .profile_models
        .contains_key(inv.profile.id());
    if index == inv.model.fallback_index || changed {
        return Ok(());
    }
    let resolved = resolve_fallback_binding(
        ctx,
        &inv.invocation.id,
        &inv.profile,
        &inv.model,
        (index, false),
    )
    .await?;
    match resolved {
        Some(binding) => {
            inv.model = binding;
            Ok(())
        }
        None => Err(ApplicationError::fatal(
            error_codes::AGENT_RESUME_PROFILE_CHANGED,
            format!(
                "the agent had moved to fallback model {index} of profile `{}`, which no longer names it",
                inv.profile.id()
            ),
        )),
    }
}

fn binding_ref(binding: &ModelBinding) -> BindingRef {
    BindingRef {
        connection_ref: binding.connection_ref.clone(),
        model_id: binding.model_id.clone(),
        provider: binding.provider.name().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_covers_what_retrying_does_not_fix() {
        let rejected = |status, message: &str| ModelError::Rejected {
            status,
            message: message.into(),
        };
        for (error, expected) in [
            (
                ModelError::RateLimited {
                    message: "slow down".into(),
                    retry_after_ms: None,
                },
                Some(Reason::RateLimited),
            ),
            (
                ModelError::Transient {
                    message: "502".into(),
                },
                Some(Reason::RetriesExhausted),
            ),
            (
                rejected(Some(404), "not_found_error"),
                Some(Reason::ModelNotFound),
            ),
            (
                rejected(
                    Some(400),
                    "The model `gpt-9` does not exist or model not found",
                ),
                Some(Reason::ModelNotFound),
            ),
            (rejected(Some(400), "messages: field required"), None),
            (rejected(Some(401), "invalid x-api-key"), None),
            (ModelError::Cancelled, None),
        ] {
            assert_eq!(reason(&error), expected, "{error}");
        }
    }
}
