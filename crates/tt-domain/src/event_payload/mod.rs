//! Typed event payloads: one struct per event type, with the fields docs/events.md lists, and
//! [`RunEventPayload`], the `#[non_exhaustive]` enum a host decodes a journal event into.
//!
//! The JSON wire shape is the contract's: each struct serializes to exactly the payload the
//! runtime journals (`eventScope` aside, which is added at emit time and ignored when
//! decoding). Fields that some emissions leave out are `Option`s skipped when `None`; fields
//! that are written as `null` are plain `Option`s. The scenario harnesses decode every event
//! they journal and check that it serializes back to the same payload
//! (`tt_testkit::events_doc::assert_typed`), so a struct cannot drift from what is written.
//!
//! The structs live in one file per family of events (the sections of docs/events.md); this
//! file holds the enum, the decoding and the list of every type.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::{AgentRunEvent, RunEventType};
mod agents;
mod approvals;
mod commits;
mod context_window;
mod delegation;
mod guidance;
mod handoff;
mod model_calls;
mod prompt_assembly;
mod run;
mod tool_calls;
mod workspace;

pub use agents::*;
pub use approvals::*;
pub use commits::*;
pub use context_window::*;
pub use delegation::*;
pub use guidance::*;
pub use handoff::*;
pub use model_calls::*;
pub use prompt_assembly::*;
pub use run::*;
pub use tool_calls::*;
pub use workspace::*;

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
            /// Decodes `payload` as the payload of `event_type`; an
            /// [`Unknown`](RunEventType::Unknown) type has no payload struct and is an error.
            pub fn decode(
                event_type: &RunEventType,
                payload: &Value,
            ) -> Result<Self, serde_json::Error> {
                match event_type {
                    $(RunEventType::$variant => {
                        $variant::deserialize(payload).map(RunEventPayload::$variant)
                    })*
                    RunEventType::Unknown(name) => Err(serde::de::Error::custom(format_args!(
                        "no payload type for the unknown event type `{name}`"
                    ))),
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
    ToolApprovalRequested,
    ToolApprovalResolved,
    ToolApprovalCancelled,
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
    RunAbandoned,
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
        if !self.event_type.is_known() {
            return None;
        }
        Some(RunEventPayload::decode(&self.event_type, &self.payload))
    }
}
