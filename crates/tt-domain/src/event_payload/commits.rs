//! Publishing: commits, persistent state and its metadata handshake.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::{CheckpointId, InvocationId, ProfileId, RunId};

/// `chat_commit_started`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatCommitStarted {
    pub commit_id: String,
    pub invocation_id: InvocationId,
    pub call_id: String,
    pub path: String,
    pub mode: String,
    pub reason: Option<String>,
}

/// `chat_commit_requested`: the commit request the host resolves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatCommitRequested {
    pub commit_id: String,
    pub invocation_id: InvocationId,
    pub call_id: String,
    pub run_id: RunId,
    pub workspace_id: String,
    pub stable_chat_id: String,
    pub chat_ref: Value,
    pub generation_type: Value,
    pub profile_id: Option<ProfileId>,
    pub persist_base_state_id: Option<String>,
    pub path: String,
    pub mode: String,
    pub reason: Option<String>,
    pub chars: u64,
    pub words: u64,
    pub sha256: String,
    pub checkpoint_id: CheckpointId,
}

/// `chat_commit_completed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatCommitCompleted {
    pub commit_id: String,
    pub invocation_id: InvocationId,
    pub call_id: String,
    pub path: String,
    pub mode: String,
    pub chars: u64,
    pub words: u64,
    pub sha256: String,
    pub checkpoint_id: CheckpointId,
    pub message_id: String,
    /// The message id as a number, when it is one.
    pub message_index: Option<i64>,
}

/// `chat_commit_failed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatCommitFailed {
    pub commit_id: String,
    pub invocation_id: InvocationId,
    pub call_id: String,
    pub path: String,
    pub mode: String,
    pub message: String,
}

/// `chat_commit_recorded`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatCommitRecorded {
    pub invocation_id: InvocationId,
    pub commit_count: u64,
    pub path: String,
    pub mode: String,
    pub message_id: String,
}
