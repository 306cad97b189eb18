//! An agent kept going or stopped by its profile's safety nets: the inactivity watchdog's
//! warning and the switch to a fallback model binding.

use serde::{Deserialize, Serialize};

use crate::ids::{InvocationId, ProfileId};

/// `agent_inactivity_warned`: the agent showed no activity for its watchdog's warning limit
/// (`limits.watchdog.warnAfterSeconds`).
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInactivityWarned {
    pub invocation_id: InvocationId,
    pub profile_id: ProfileId,
    /// Seconds without activity when warned (the warning limit).
    pub idle_seconds: u64,
    /// Seconds from now after which the agent is stopped if it stays inactive; absent when the
    /// watchdog only warns.
    pub stop_after_seconds: Option<u64>,
}

/// One side of a binding switch: the connection and model an agent talks to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BindingRef {
    /// The named connection; absent for the run's own model (`currentPromptSnapshot`) on the
    /// runtime's default provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_ref: Option<String>,
    pub model_id: Option<String>,
    /// The provider's name.
    pub provider: String,
}

/// `agent_model_fallback_switched`: the agent's model failed in a way its profile's fallback
/// chain covers (`model.fallbacks`), and it goes on with the next binding and the same
/// history.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentModelFallbackSwitched {
    pub invocation_id: InvocationId,
    pub profile_id: ProfileId,
    /// The round whose model call failed and is made again on the new binding.
    pub round: u32,
    /// The position in `model.fallbacks` of the binding now in force (1 = the first fallback).
    pub fallback_index: u32,
    pub from: BindingRef,
    pub to: BindingRef,
    /// What made the agent switch: `retries_exhausted`, `model_not_found` or `rate_limited`.
    pub reason: String,
    /// The error code of the failure (`model.transient`, `model.request_rejected`, …).
    pub code: String,
    /// The failure's message.
    pub message: String,
    /// The new binding's context window, when known.
    pub context_window_tokens: Option<u64>,
    /// The new binding's price, when known.
    pub price: Option<crate::cost::ModelPrice>,
}
