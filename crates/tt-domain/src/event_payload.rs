//! Typed event payloads: one struct per event type, with the fields docs/events.md lists, and
//! [`RunEventPayload`], the `#[non_exhaustive]` enum a host decodes a journal event into.
//!
//! The JSON wire shape is the contract's: each struct serializes to exactly the payload the
//! runtime journals (`eventScope` aside, which is added at emit time and ignored when
//! decoding). Fields that some emissions leave out are `Option`s skipped when `None`; fields
//! that are written as `null` are plain `Option`s. The scenario harnesses decode every event
//! they journal and check that it serializes back to the same payload
//! (`tt_testkit::events_doc::assert_typed`), so a struct cannot drift from what is written.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::{AgentRunEvent, RunEventType};
use crate::ids::{CheckpointId, InvocationId, ProfileId, RunId, TaskId};
use crate::invocation::{ExitPolicy, InvocationKind, InvocationStatus};
use crate::model::ModelUsage;
use crate::profile::{PresetMode, PresetRef};
use crate::run::{AgentRunStatus, ConversationKind};
use crate::task::{TaskContinuation, TaskStatus};

/// A typed payload of one event type.
pub trait EventPayload: Serialize + for<'de> Deserialize<'de> {
    /// The event type this payload belongs to.
    const TYPE: RunEventType;
}

macro_rules! payloads {
    ($($variant:ident,)*) => {
        /// A journal event's payload, decoded by its type. New variants are added without a
        /// major version: match with a wildcard arm.
        #[non_exhaustive]
        #[derive(Debug, Clone, PartialEq)]
        pub enum RunEventPayload {
            $($variant($variant),)*
        }

        $(impl EventPayload for $variant {
            const TYPE: RunEventType = RunEventType::$variant;
        })*

        impl RunEventPayload {
            /// Decodes `payload` as the payload of `event_type`.
            pub fn decode(
                event_type: RunEventType,
                payload: &Value,
            ) -> Result<Self, serde_json::Error> {
                match event_type {
                    $(RunEventType::$variant => {
                        $variant::deserialize(payload).map(RunEventPayload::$variant)
                    })*
                }
            }

            /// The event type of this payload.
            pub fn event_type(&self) -> RunEventType {
                match self {
                    $(RunEventPayload::$variant(_) => RunEventType::$variant,)*
                }
            }

            /// The payload as journaled (without `eventScope`).
            pub fn to_value(&self) -> Result<Value, serde_json::Error> {
                match self {
                    $(RunEventPayload::$variant(payload) => serde_json::to_value(payload),)*
                }
            }
        }
    };
}

payloads! {
    RunCreated,
    ProfileResolved,
    SkillScopesResolved,
    GenerationIntentRecorded,
    StatusChanged,
    WorkspaceInitialized,
    PersistentProjectionInitialized,
    ContextAssembled,
    AgentModelBindingResolved,
    AgentInvocationCreated,
    AgentInvocationStarted,
    AgentInvocationCompleted,
    AgentInvocationFailed,
    AgentInvocationCancelled,
    AgentInvocationTransferred,
    AgentInvocationInterrupted,
    AgentInvocationResumed,
    AgentTaskRegistered,
    AgentTaskQueued,
    AgentTaskStarted,
    AgentTaskCompleted,
    AgentTaskFailed,
    AgentTaskCancelled,
    AgentTaskInterrupted,
    AgentTaskResumed,
    AgentDelegateStarted,
    AgentHandoffRequested,
    AgentHandoffAccepted,
    AgentAwaitStarted,
    AgentAwaitCompleted,
    TaskReturnCompleted,
    TaskReturnRecorded,
    AgentChildInvocationFailed,
    AgentResultsInjected,
    PromptAssemblyRequested,
    PromptAssemblyCompleted,
    PromptAssemblyFailed,
    ModelRequestCreated,
    ModelCallAttemptStarted,
    ModelCallAttemptFailed,
    ModelCallRetryScheduled,
    ModelResponseStored,
    ProviderStateUpdated,
    ModelCompleted,
    ModelDelta,
    DirectOutputCaptured,
    DriftRecoveryAttempted,
    ToolCallRequested,
    ToolCallStarted,
    ToolResultStored,
    ToolCallCompleted,
    ToolCallFailed,
    WorkspaceFileWritten,
    WorkspacePatchApplied,
    CheckpointCreated,
    AgentLoopFinished,
    ChatCommitStarted,
    ChatCommitRequested,
    ChatCommitCompleted,
    ChatCommitFailed,
    ChatCommitRecorded,
    PersistentChangesCommitted,
    PersistentChangesCommitFailed,
    PersistentStateMetadataUpdateRequested,
    PersistentStateMetadataUpdated,
    PersistentStateMetadataUpdateFailed,
    RunCompleted,
    RunPartialSuccess,
    RunCancelRequested,
    RunCancelled,
    RunFailed,
    RunInterrupted,
    RunResumed,
    UserGuidanceSubmitted,
    UserGuidanceApplied,
    UserGuidanceDiscarded,
    ContextTrimmed,
    ContextCompacted,
    ToolOutputSaved,
}

impl AgentRunEvent {
    /// This event's payload, decoded by its type; `None` for a type this build does not know
    /// (a journal written by a newer runtime).
    pub fn typed_payload(&self) -> Option<Result<RunEventPayload, serde_json::Error>> {
        let event_type = RunEventType::parse(&self.event_type)?;
        Some(RunEventPayload::decode(event_type, &self.payload))
    }
}

// ---- run lifecycle --------------------------------------------------------------------------

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

// ---- agents (invocations) -------------------------------------------------------------------

macro_rules! invocation_payloads {
    ($($name:ident => $doc:literal,)*) => {$(
        #[doc = $doc]
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            pub invocation_id: InvocationId,
            pub parent_invocation_id: Option<InvocationId>,
            pub profile_id: ProfileId,
            pub kind: InvocationKind,
            pub status: InvocationStatus,
            pub exit_policy: ExitPolicy,
        }
    )*};
}

invocation_payloads! {
    AgentInvocationStarted => "`agent_invocation_started`.",
    AgentInvocationCompleted => "`agent_invocation_completed`.",
    AgentInvocationFailed => "`agent_invocation_failed`.",
    AgentInvocationCancelled => "`agent_invocation_cancelled`.",
    AgentInvocationTransferred => "`agent_invocation_transferred`.",
    AgentInvocationInterrupted => "`agent_invocation_interrupted`.",
    AgentInvocationResumed => "`agent_invocation_resumed`: an interrupted invocation runs again (`resume_run`).",
}

/// `agent_invocation_created`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInvocationCreated {
    pub invocation_id: InvocationId,
    pub parent_invocation_id: Option<InvocationId>,
    pub profile_id: ProfileId,
    pub kind: InvocationKind,
    pub status: InvocationStatus,
    pub exit_policy: ExitPolicy,
    /// Absent for the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<TaskId>,
}

/// `agent_model_binding_resolved`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentModelBindingResolved {
    pub mode: String,
    /// The named connection: the profile's, or in `currentPromptSnapshot` mode the one the
    /// host chose for the run (absent when the run uses the runtime's default model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_ref: Option<String>,
    pub model_id: Option<String>,
    pub provider: String,
    /// The connection's non-secret description, present with `connectionRef`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<Value>,
    pub chat_completion_source: String,
    pub custom_api_format: Option<String>,
    pub provider_format: String,
    pub transport: String,
    pub native_continuation: bool,
    pub previous_response_id: Option<String>,
    pub invocation_id: InvocationId,
    pub profile_id: ProfileId,
    /// The layered generation settings the requests carry; absent when none is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<crate::generation::GenerationSettings>,
    /// The model's context window, when known (docs/providers.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window_tokens: Option<u64>,
    /// US dollars per million tokens, when a price is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<crate::cost::ModelPrice>,
}

/// `skill_scopes_resolved`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillScopesResolved {
    pub invocation_id: InvocationId,
    pub profile_id: ProfileId,
    pub scopes: Value,
    pub refs: Value,
    pub effective_skills: Value,
}

/// `context_assembled`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextAssembled {
    pub request: Value,
    pub invocation_id: InvocationId,
    /// Absent for the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<TaskId>,
    /// Absent for the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset_mode: Option<String>,
    pub tools: Vec<String>,
    pub max_rounds: u32,
    pub context_policy: Value,
    /// Present for the root only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_retry: Option<Value>,
}

/// `agent_loop_finished`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentLoopFinished {
    pub invocation_id: InvocationId,
    pub commit_count: u64,
    pub round: u32,
}

// ---- prompt assembly ------------------------------------------------------------------------

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

// ---- model calls ----------------------------------------------------------------------------

/// `model_request_created`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelRequestCreated {
    pub round: u32,
    pub invocation_id: InvocationId,
    pub request: Value,
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
    pub provider_state: Value,
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
    pub narration: Option<Value>,
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

// ---- tool calls -----------------------------------------------------------------------------

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
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_refs: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fatal: Option<bool>,
}

// ---- workspace ------------------------------------------------------------------------------

/// `workspace_file_written`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceFileWritten {
    pub invocation_id: InvocationId,
    pub path: String,
    pub mode: String,
    pub chars: u64,
    pub words: u64,
    pub sha256: String,
}

/// `workspace_patch_applied`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspacePatchApplied {
    pub invocation_id: InvocationId,
    pub path: String,
    pub chars: u64,
    pub words: u64,
    pub old_sha256: String,
    pub sha256: String,
    pub replacements: u64,
}

/// `checkpoint_created`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointCreated {
    pub invocation_id: InvocationId,
    pub checkpoint_id: CheckpointId,
    pub reason: crate::workspace::CheckpointReason,
    pub event_seq: u64,
    pub files: Value,
}

// ---- commits --------------------------------------------------------------------------------

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

// ---- delegation -----------------------------------------------------------------------------

/// `agent_delegate_started`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentDelegateStarted {
    pub task_id: TaskId,
    pub parent_invocation_id: InvocationId,
    pub child_invocation_id: InvocationId,
    pub target_profile_id: ProfileId,
    pub workspace_key: String,
}

/// `agent_task_registered`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentTaskRegistered {
    pub task_id: TaskId,
    pub parent_invocation_id: InvocationId,
    pub child_invocation_id: InvocationId,
    pub target_profile_id: ProfileId,
    pub workspace_key: String,
    pub continuation: TaskContinuation,
    pub status: TaskStatus,
}

macro_rules! task_status_payloads {
    ($($name:ident => $doc:literal,)*) => {$(
        #[doc = $doc]
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            pub task_id: TaskId,
            pub parent_invocation_id: InvocationId,
            pub child_invocation_id: InvocationId,
            pub target_profile_id: ProfileId,
            pub status: TaskStatus,
            pub result_ref: Option<String>,
            pub error: Option<String>,
        }
    )*};
}

task_status_payloads! {
    AgentTaskStarted => "`agent_task_started`.",
    AgentTaskCompleted => "`agent_task_completed`.",
    AgentTaskFailed => "`agent_task_failed`.",
    AgentTaskInterrupted => "`agent_task_interrupted`.",
    AgentTaskResumed => "`agent_task_resumed`: an interrupted task is queued or running again (`resume_run`).",
}

/// `agent_task_queued`: the task waits for a free slot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentTaskQueued {
    pub task_id: TaskId,
    pub parent_invocation_id: InvocationId,
    pub child_invocation_id: InvocationId,
    pub target_profile_id: ProfileId,
    pub status: TaskStatus,
    pub result_ref: Option<String>,
    pub error: Option<String>,
    /// Its place in the delegating agent's line (1 = next to start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_position: Option<u64>,
}

/// `agent_task_cancelled`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentTaskCancelled {
    pub task_id: TaskId,
    pub parent_invocation_id: InvocationId,
    pub child_invocation_id: InvocationId,
    pub target_profile_id: ProfileId,
    pub status: TaskStatus,
    pub result_ref: Option<String>,
    pub error: Option<String>,
    /// Why it was stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Who stopped it: the cancelling agent's invocation id, `host`, `runtime` or `deadline`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// `agent_child_invocation_failed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentChildInvocationFailed {
    pub task_id: TaskId,
    pub child_invocation_id: InvocationId,
    pub parent_invocation_id: InvocationId,
    pub message: String,
}

/// `agent_await_started`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentAwaitStarted {
    pub parent_invocation_id: InvocationId,
    pub mode: String,
    pub task_ids: Vec<TaskId>,
    pub timeout_ms: u64,
}

/// `agent_await_completed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentAwaitCompleted {
    pub parent_invocation_id: InvocationId,
    pub mode: String,
    pub timed_out: bool,
    pub task_count: u64,
    pub delivered_task_ids: Vec<TaskId>,
}

/// `agent_results_injected`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentResultsInjected {
    pub invocation_id: InvocationId,
    pub task_ids: Vec<TaskId>,
    pub task_count: u64,
}

/// `task_return_recorded`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskReturnRecorded {
    pub invocation_id: InvocationId,
    pub status: TaskStatus,
    pub result_ref: String,
    pub summary_chars: u64,
    pub summary_words: u64,
}

/// `task_return_completed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskReturnCompleted {
    pub task_id: TaskId,
    pub parent_invocation_id: InvocationId,
    pub child_invocation_id: InvocationId,
    pub status: TaskStatus,
    pub result_ref: String,
    pub summary_ref: String,
}

// ---- handoff --------------------------------------------------------------------------------

/// `agent_handoff_requested`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentHandoffRequested {
    pub source_invocation_id: InvocationId,
    /// The agent id as the model asked for it: journaled before it is checked, so it may name
    /// no agent, or not even be a valid id.
    pub target_profile_id: String,
    pub pending_task_policy: String,
}

/// `agent_handoff_accepted`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentHandoffAccepted {
    pub task_id: TaskId,
    pub source_invocation_id: InvocationId,
    pub new_invocation_id: InvocationId,
    pub target_profile_id: ProfileId,
    pub workspace_key: String,
}

// ---- user guidance --------------------------------------------------------------------------

/// `user_guidance_submitted`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserGuidanceSubmitted {
    pub guidance_id: String,
    pub client_guidance_id: Option<String>,
    pub text: String,
    pub chars: u64,
    pub words: u64,
    pub pending_count: u64,
    pub pending_chars: u64,
    pub status: String,
}

/// `user_guidance_applied`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserGuidanceApplied {
    pub guidance_ids: Vec<String>,
    pub client_guidance_ids: Vec<String>,
    pub invocation_id: InvocationId,
    pub round: u32,
    pub count: u64,
    pub chars: u64,
    pub words: u64,
    pub preview: String,
    pub message_index: u64,
    pub request_message_count: u64,
    pub status: String,
}

/// `user_guidance_discarded`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserGuidanceDiscarded {
    pub guidance_ids: Vec<String>,
    pub client_guidance_ids: Vec<String>,
    pub count: u64,
    pub chars: u64,
    pub reason: String,
    pub status: String,
}

// ---- the context window ---------------------------------------------------------------------

/// `context_trimmed`: older tool results and arguments of an agent's history were replaced by
/// stubs so its next request fits the model's window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextTrimmed {
    pub invocation_id: InvocationId,
    /// The round whose request is trimmed.
    pub round: u32,
    /// Indices (in the history) of the messages replaced by stubs, oldest first.
    pub stubbed_messages: Vec<u64>,
    pub estimated_tokens_before: u64,
    pub estimated_tokens_after: u64,
    pub window_tokens: u64,
    pub input_budget_tokens: u64,
    /// `provider_refused` when the provider refused the request as too large, else `estimate`.
    pub trigger: String,
}

/// `context_compacted`: the oldest turns of an agent's history were replaced by one summary
/// message, written by one model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextCompacted {
    pub invocation_id: InvocationId,
    pub round: u32,
    /// The first replaced message's index in the history.
    pub first_message: u64,
    /// How many messages the summary replaced.
    pub replaced_messages: u64,
    /// The summary the agent reads in their place.
    pub summary: String,
    pub estimated_tokens_before: u64,
    pub estimated_tokens_after: u64,
    pub window_tokens: u64,
    /// The summarizing call's usage.
    pub usage: Option<ModelUsage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
