//! Prompt assembly by the host.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::{InvocationId, ProfileId};

/// `prompt_assembly_requested`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptAssemblyRequested {
    pub assembly_id: String,
    pub invocation_id: InvocationId,
    pub profile_id: ProfileId,
    pub scope: Value,
    pub request_kind: String,
    pub request_schema_version: u32,
    pub request_fingerprint: Value,
}

/// `prompt_assembly_completed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptAssemblyCompleted {
    pub assembly_id: String,
    pub invocation_id: InvocationId,
    pub profile_id: ProfileId,
    pub prompt_snapshot_path: String,
    pub prompt_assembly_path: String,
}

/// `prompt_assembly_failed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptAssemblyFailed {
    pub assembly_id: String,
    pub invocation_id: InvocationId,
    pub profile_id: ProfileId,
    pub message: String,
}
