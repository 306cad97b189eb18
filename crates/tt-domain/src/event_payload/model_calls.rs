//! Model calls: requests, attempts, retries, stored responses, deltas.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::InvocationId;
use crate::model::ModelUsage;

/// `model_request_created`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelRequestCreated {
    pub round: u32,
    pub invocation_id: InvocationId,
    pub request: ModelRequestSummary,
}

/// `model_request_created`'s `request`: what was sent, by size, and to which provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelRequestSummary {
    pub provider: String,
    pub model: Option<String>,
    pub message_count: u64,
    pub tool_count: u64,
    pub session_id: String,
    /// Always written by this runtime; absent from a journal that did not write them.
    #[serde(flatten)]
    pub wire: Option<ProviderWire>,
}

/// The provider fields every model event carries after its own (the contract's names):
/// `chatCompletionSource` (the provider), `customApiFormat`, `providerFormat`, `transport`,
/// `nativeContinuation` and `previousResponseId`. `tt_ports::provider_wire` fills them in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderWire {
    pub chat_completion_source: String,
    pub custom_api_format: Option<String>,
    pub provider_format: String,
    pub transport: String,
    pub native_continuation: bool,
    pub previous_response_id: Option<String>,
}

/// `model_call_attempt_started`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCallAttemptStarted {
    pub round: u32,
    pub invocation_id: InvocationId,
    pub attempt: u32,
    pub max_retries: u32,
}

/// `model_call_attempt_failed`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCallAttemptFailed {
    pub round: u32,
    pub invocation_id: InvocationId,
    pub attempt: u32,
    pub max_retries: u32,
    pub retryable: bool,
    pub will_retry: bool,
    pub code: String,
    pub message: String,
    /// The time limit that ended the attempt (`requestTimeout`, `idleTimeout`,
    /// `callDeadline`), when one did.
    pub limit: Option<String>,
    /// That limit's value.
    pub limit_ms: Option<u64>,
}

/// `model_call_retry_scheduled`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCallRetryScheduled {
    pub round: u32,
    pub invocation_id: InvocationId,
    pub next_attempt: u32,
    pub interval_ms: u64,
}

/// `model_response_stored`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelResponseStored {
    pub round: u32,
    pub invocation_id: InvocationId,
    pub path: String,
    pub response_id: Option<String>,
    pub model: Option<String>,
}

/// `provider_state_updated`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderStateUpdated {
    pub round: u32,
    pub invocation_id: InvocationId,
    pub provider_state: ProviderState,
}

/// `provider_state_updated`'s `providerState`: where the provider session stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderState {
    pub session_id: String,
    pub provider: String,
    /// How many messages of the conversation the provider has been sent.
    pub message_cursor: u64,
    pub last_response_id: Option<String>,
    /// Always written by this runtime; absent from a journal that did not write them.
    #[serde(flatten)]
    pub wire: Option<ProviderWire>,
}

/// `model_completed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCompleted {
    pub round: u32,
    pub invocation_id: InvocationId,
    pub model_response_path: String,
    pub tool_call_count: u64,
    pub text_chars: u64,
    pub text_words: u64,
    pub has_assistant_text: bool,
    pub assistant_text_chars: u64,
    pub assistant_text_words: u64,
    pub has_reasoning: bool,
    pub reasoning_chars: u64,
    pub reasoning_words: u64,
    pub usage: Option<ModelUsage>,
    /// What the call cost in US dollars, when the model's price is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    pub finish_reason: Option<String>,
    /// Absent when the response has nothing to narrate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub narration: Option<Narration>,
}

/// `model_completed`'s `narration`: what a live view may show of the agent's assistant text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Narration {
    /// Where the text comes from (`assistantText`).
    pub source: String,
    /// The start of the text.
    pub text: String,
    pub total_chars: u64,
    pub total_words: u64,
    /// Whether `text` is shorter than the whole.
    pub truncated: bool,
}

/// `model_delta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelDelta {
    pub round: u32,
    pub invocation_id: InvocationId,
    pub part: u64,
    pub text: String,
    pub reasoning: String,
    pub tool_calls: Value,
    pub argument_chars: u64,
    pub omitted_bytes: u64,
}

/// `direct_output_captured`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DirectOutputCaptured {
    pub invocation_id: InvocationId,
    pub round: u32,
    pub path: String,
    pub chars: u64,
    pub words: u64,
    pub sha256: String,
    pub model_response_path: String,
}

/// `drift_recovery_attempted`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DriftRecoveryAttempted {
    pub attempt: u32,
    pub max_attempts: u32,
    pub max_rounds: u32,
    pub limit_reason: String,
    pub round: u32,
    pub invocation_id: InvocationId,
    pub committed_count: u64,
    pub reason_code: String,
}
