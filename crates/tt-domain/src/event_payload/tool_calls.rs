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
#[serde_with::skip_serializing_none]
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
    pub error_reason: Option<String>,
    pub message: String,
    pub elapsed_ms: Option<u64>,
    pub resource_refs: Option<Vec<String>>,
    pub fatal: Option<bool>,
}
