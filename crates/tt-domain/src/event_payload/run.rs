//! The run's lifecycle: created, profile and workspace set up, statuses, its end.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::{InvocationId, ProfileId, RunId, TaskId};
use crate::profile::{PresetMode, PresetRef};
use crate::run::{AgentRunStatus, ConversationKind};

/// `run_created`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunCreated {
    pub workspace_id: String,
    pub stable_chat_id: String,
    pub persist_base_state_id: Option<String>,
    pub presentation: String,
    pub chat_ref: Value,
    pub generation_type: Value,
    /// Set on a branched run: the source run and seq it continues from (docs/branching.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<crate::run::ForkedFrom>,
}

/// `profile_resolved`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProfileResolved {
    pub profile_id: ProfileId,
    pub source: String,
}

/// `kind` of a [`GenerationIntentRecorded`].
pub const GENERATION_INTENT_KIND: &str = "tauritavern.agentGenerationIntent";

/// `generation_intent_recorded`: what the user asked this run to generate, recorded at start:
/// the conversation, the agent and the binding its prompt is built for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerationIntentRecorded {
    /// Always [`GENERATION_INTENT_KIND`].
    pub kind: String,
    pub run_id: RunId,
    pub stable_chat_id: String,
    pub conversation_kind: ConversationKind,
    pub chat_ref: Value,
    pub generation_type: Value,
    pub profile_id: String,
    pub preset_mode: PresetMode,
    pub preset_ref: Option<PresetRef>,
    pub model_id: Option<String>,
    pub user_request: Option<String>,
    /// Messages of the frozen conversation (`input/prompt_snapshot.json`).
    pub input_message_count: u64,
}

/// `status_changed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusChanged {
    pub status: AgentRunStatus,
}

/// `workspace_initialized`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceInitialized {
    pub workspace_id: String,
    pub stable_chat_id: String,
}

/// `persistent_projection_initialized`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PersistentProjectionInitialized {
    pub roots: Value,
    pub base_state_id: Option<String>,
    pub file_count: u64,
}

/// `persistent_changes_committed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PersistentChangesCommitted {
    pub state_id: String,
    pub base_state_id: Option<String>,
    pub change_count: u64,
    pub changes: Value,
}

/// `persistent_changes_commit_failed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PersistentChangesCommitFailed {
    pub message: String,
}

/// `persistent_state_metadata_update_requested`: the request the host resolves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PersistentStateMetadataUpdateRequested {
    pub update_id: String,
    pub run_id: RunId,
    pub workspace_id: String,
    pub stable_chat_id: String,
    pub chat_ref: Value,
    pub generation_type: Value,
    pub profile_id: Option<String>,
    pub message_id: String,
    pub state_id: String,
    pub base_state_id: Option<String>,
    pub change_count: u64,
    pub changes: Value,
}

/// `persistent_state_metadata_updated`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PersistentStateMetadataUpdated {
    pub update_id: String,
    pub message_id: String,
    pub state_id: String,
}

/// `persistent_state_metadata_update_failed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PersistentStateMetadataUpdateFailed {
    pub update_id: String,
    pub message_id: String,
    pub state_id: String,
    pub message: String,
}

/// `run_completed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunCompleted {
    pub status: AgentRunStatus,
    pub commit_count: u64,
}

/// `run_cancel_requested`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunCancelRequested {
    pub previous_status: AgentRunStatus,
}

/// `run_failed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunFailed {
    pub code: String,
    pub message: String,
    pub technical_message: String,
    pub retryable: bool,
    pub user_retryable: bool,
    pub details: Value,
}

/// `run_partial_success`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunPartialSuccess {
    pub code: String,
    pub message: String,
    pub technical_message: String,
    pub retryable: bool,
    pub user_retryable: bool,
    pub details: Value,
    pub preserved_commit_count: u64,
    pub preserved_commits: Value,
}

/// `run_cancelled`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunCancelled {
    pub message: String,
}

/// `run_interrupted`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunInterrupted {
    pub reason: String,
    pub last_seq: u64,
    pub previous_status: AgentRunStatus,
}

/// `run_reopened`: `resume_run` took up a run that had ended `failed` or `cancelled`, so a
/// terminal status is not final while the run may be resumed. What the end stopped was turned
/// back to `interrupted` (listed here, each with its own event before this one); the
/// `run_interrupted` that follows, in the same append, makes the run `interrupted` again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunReopened {
    /// The terminal status the run had: `failed` or `cancelled`.
    pub previous_status: AgentRunStatus,
    /// The last seq of that end (its `run_failed` / `run_cancelled` and what followed).
    pub last_seq: u64,
    /// The tasks turned back from `cancelled` or `failed` (or left `interrupted`) to
    /// `interrupted`, to be taken up again.
    pub reopened_task_ids: Vec<TaskId>,
    /// The agents turned back to `interrupted`: the foreground agent and the delegated agents
    /// of the reopened tasks.
    pub reopened_invocation_ids: Vec<InvocationId>,
}

/// `run_abandoned`: the host gave up an `interrupted`, `failed` or `cancelled` run
/// (`abandon_run`); it is never resumed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunAbandoned {
    /// The run's status, which stays.
    pub status: AgentRunStatus,
}

/// `run_resumed`: an interrupted run continues in this process (`resume_run`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunResumed {
    /// The last seq the interrupted owner wrote (`run_interrupted.lastSeq`): the work resumes
    /// from the state the journal held there.
    pub from_seq: u64,
    /// The invocations that run again, in the order they were created.
    pub invocations: Vec<InvocationId>,
}
