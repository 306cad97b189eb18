//! Host-facing request and response types (camelCase JSON), and the host error.

use serde::{Deserialize, Serialize};
use tt_application::{ApplicationError, TimelineProjection};
use tt_domain::event::AgentRunEvent;

pub use tt_application::{DelegationEdge, TimelineInvocation};

/// An error a host can show: a contract code and a readable message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "camelCase")]
#[error("{code}: {message}")]
pub struct HostError {
    pub code: String,
    pub message: String,
}

impl HostError {
    /// An error with a contract code (`agent.…`) and a readable message.
    pub fn new(code: tt_domain::error_codes::Code, message: impl Into<String>) -> Self {
        Self {
            code: code.to_string(),
            message: message.into(),
        }
    }
}

impl From<ApplicationError> for HostError {
    fn from(value: ApplicationError) -> Self {
        Self {
            code: value.code().to_string(),
            message: value.detail(),
        }
    }
}

impl From<crate::bridges::ResolveCommitError> for HostError {
    fn from(value: crate::bridges::ResolveCommitError) -> Self {
        Self {
            code: value.code.to_string(),
            message: value.message,
        }
    }
}

pub type HostResult<T> = Result<T, HostError>;

/// `read_events` request. `beforeSeq` wins over `afterSeq`; `limit` is clamped to 1..=500.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadEventsRequest {
    pub run_id: String,
    pub after_seq: Option<u64>,
    pub before_seq: Option<u64>,
    pub limit: Option<usize>,
    pub invocation_id: Option<String>,
    #[serde(default)]
    pub include_timeline_projection: bool,
}

#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadEventsResponse {
    pub events: Vec<AgentRunEvent>,
    pub timeline_projection: Option<TimelineProjection>,
    /// Seqs the journal skips within this page (a damaged journal: seqs are gapless when it is
    /// whole), at most [`MAX_LISTED_MISSING_SEQS`]; checked for reads of every agent only (a
    /// read filtered to one agent skips the others' seqs by design). Empty when whole.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_seqs: Vec<u64>,
    /// The run's end the journal refused (a full or read-only disk), from the run record: the
    /// journal holds no end for this run, this says how it ended. Absent otherwise.
    pub unrecorded_end: Option<tt_domain::run::UnrecordedEnd>,
}

/// The most missing seqs one [`ReadEventsResponse`] lists.
pub const MAX_LISTED_MISSING_SEQS: usize = 100;

/// The seqs missing between `after` and each event of `events` (in seq order).
pub(crate) fn missing_seqs(after: Option<u64>, events: &[AgentRunEvent]) -> Vec<u64> {
    let mut missing = Vec::new();
    let mut expected = after.unwrap_or(0) + 1;
    for event in events {
        while expected < event.seq && missing.len() < MAX_LISTED_MISSING_SEQS {
            missing.push(expected);
            expected += 1;
        }
        expected = event.seq + 1;
    }
    missing
}

/// `resolve_chat_commit` request: exactly one of `messageId` or `error`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolveChatCommitRequest {
    pub run_id: String,
    pub commit_id: String,
    pub message_id: Option<String>,
    pub error: Option<String>,
}

/// `resolve_agent_persistent_state_metadata_update` request: no `error` acknowledges the
/// update, a non-empty `error` fails it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolvePersistentStateMetadataUpdateRequest {
    pub run_id: String,
    pub update_id: String,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListRunsRequest {
    #[serde(default)]
    pub offset: usize,
    #[serde(default = "default_list_limit")]
    pub limit: usize,
}

impl Default for ListRunsRequest {
    fn default() -> Self {
        Self {
            offset: 0,
            limit: default_list_limit(),
        }
    }
}

fn default_list_limit() -> usize {
    50
}

/// Where a named connection comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ConnectionSource {
    /// Registered in code with `AgentRuntimeBuilder::connection`.
    Registered,
    /// A connection file `<data dir>/connections/<name>.json`.
    File,
}

/// A named model connection a run (`StartRunRequest::connection`) or a profile
/// (`model.connectionRef`) may name; `list_connections`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionSummary {
    pub name: String,
    pub source: ConnectionSource,
    /// Non-secret: kind, base URL, model, the API key's variable name, streaming.
    pub description: serde_json::Value,
    /// Why a connection file cannot be used (unreadable, not JSON, an unknown kind).
    pub problem: Option<String>,
}

/// A workspace file as the host reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceFileDto {
    pub path: String,
    pub text: String,
    pub sha256: String,
}

/// `read_prompt_assembly_request` request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadPromptAssemblyRequest {
    pub run_id: String,
    pub assembly_id: String,
}

/// `resolve_prompt_assembly` request: a `promptSnapshot` or an `error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolvePromptAssemblyRequest {
    pub run_id: String,
    pub assembly_id: String,
    pub prompt_snapshot: Option<serde_json::Value>,
    pub frozen_run_input_snapshot: Option<serde_json::Value>,
    pub generation_intent: Option<serde_json::Value>,
    pub assembly: Option<serde_json::Value>,
    /// The preset's settings for this prompt: `{"generation": {"temperature": 0.7, …}}`.
    pub settings: Option<tt_ports::AssembledSettings>,
    pub error: Option<String>,
}
