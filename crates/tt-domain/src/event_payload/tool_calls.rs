//! Tool calls: requested, started, stored, completed or failed.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::InvocationId;

/// `tool_call_requested`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallRequested {
    pub round: u32,
    pub invocation_id: InvocationId,
    pub call_id: String,
    pub name: String,
    pub arguments_ref: String,
    pub provider_metadata: Option<Value>,
}

/// `tool_call_started`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallStarted {
    pub round: u32,
    pub invocation_id: InvocationId,
    pub call_id: String,
    pub name: String,
}

/// `tool_result_stored`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultStored {
    pub round: u32,
    pub invocation_id: InvocationId,
    pub call_id: String,
    pub path: String,
}

/// `tool_call_completed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallCompleted {
    pub round: u32,
    pub invocation_id: InvocationId,
    pub call_id: String,
    pub name: String,
    pub is_error: bool,
    pub error_code: Option<String>,
    pub message: Option<String>,
    pub elapsed_ms: u64,
    pub resource_refs: Vec<String>,
}

/// `tool_call_failed`: a recoverable failure (with `elapsedMs` and `resourceRefs`) or a fatal
/// one (with `fatal: true`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallFailed {
    pub round: u32,
    pub invocation_id: InvocationId,
    pub call_id: String,
    pub name: String,
    pub is_error: bool,
    pub error_code: String,
    /// The finer reason within `error_code`, when it has one (a policy denial's
    /// `agent.target_not_callable`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_reason: Option<String>,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_refs: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fatal: Option<bool>,
}
