//! The context window: trimmed, compacted, long outputs saved.

use serde::{Deserialize, Serialize};

use crate::ids::InvocationId;
use crate::model::ModelUsage;

/// `context_trimmed`: turns the agent moved past (settled slips and plain-text answers with their
/// reminders) left its history, and older tool results, arguments and saved plain-text answers
/// were replaced by stubs, so its next request fits the model's window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextTrimmed {
    pub invocation_id: InvocationId,
    /// The round whose request is trimmed.
    pub round: u32,
    /// Indices (in the history before the trim) of the messages replaced by stubs, oldest first.
    pub stubbed_messages: Vec<u64>,
    /// Indices (in the history before the trim) of the messages that left it, ascending;
    /// applied after the stubs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed_messages: Vec<u64>,
    pub estimated_tokens_before: u64,
    pub estimated_tokens_after: u64,
    pub window_tokens: u64,
    pub input_budget_tokens: u64,
    /// `provider_refused` when the provider refused the request as too large, else `estimate`.
    pub trigger: String,
}

/// `context_compacted`: the oldest turns of an agent's history were replaced by one summary
/// message, written by one model call.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextCompacted {
    pub invocation_id: InvocationId,
    pub round: u32,
    /// The first replaced message's index in the history.
    pub first_message: u64,
    /// How many messages the summary replaced.
    pub replaced_messages: u64,
    /// The index of the agent's request when it was among them (a conversation's earlier
    /// messages come before it): it stays whole, right before the summary.
    pub kept_message: Option<u64>,
    /// The summary the agent reads in their place.
    pub summary: String,
    pub estimated_tokens_before: u64,
    pub estimated_tokens_after: u64,
    pub window_tokens: u64,
    /// The summarizing call's usage.
    #[serialize_always]
    pub usage: Option<ModelUsage>,
    pub cost_usd: Option<f64>,
}

/// `tool_output_saved`: a tool's output too long for the agent's history was saved whole to a
/// workspace file, which the shortened result names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolOutputSaved {
    pub invocation_id: InvocationId,
    pub round: u32,
    pub call_id: String,
    pub tool: String,
    pub path: String,
    pub chars: u64,
    pub sha256: String,
}
