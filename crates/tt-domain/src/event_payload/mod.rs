//! Typed event payloads: one struct per event type, with the fields docs/events.md lists, and
//! [`RunEventPayload`], the `#[non_exhaustive]` enum a host decodes a journal event into.
//!
//! The JSON wire shape is the contract's: each struct serializes to exactly the payload the
//! runtime journals (`eventScope` aside, which each type states through
//! [`EventPayload::scope`], is added when the event is recorded and is ignored when decoding). Fields that some emissions leave out are `Option`s skipped when `None`; fields
//! that are written as `null` are plain `Option`s. The scenario harnesses decode every event
//! they journal and check that it serializes back to the same payload
//! (`tt_testkit::events_doc::assert_typed`), so a struct cannot drift from what is written.
//!
//! The structs live in one file per family of events (the sections of docs/events.md); this
//! file holds the enum, the decoding and the list of every type with its scope.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::{AgentRunEvent, EventScope, JournalPayload, RunEventType};
use crate::ids::InvocationId;
mod agents;
mod approvals;
mod commits;
mod context_window;
mod delegation;
mod guidance;
mod handoff;
mod model_calls;
mod prompt_assembly;
mod resilience;
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
pub use resilience::*;
pub use run::*;
pub use tool_calls::*;
pub use workspace::*;

/// A typed payload of one event type.
pub trait EventPayload: Serialize + for<'de> Deserialize<'de> {
    /// The event type this payload belongs to.
    const TYPE: RunEventType;

    /// The agents this event belongs to, its `eventScope`: `None` for an event that names no
    /// agent (it is recorded with the scope its writer gives, or none).
    fn scope(&self) -> Option<EventScope>;
}

/// Scope of an event of agent `primary` that also concerns `related`.
fn of<'a>(
    primary: &InvocationId,
    related: impl IntoIterator<Item = &'a InvocationId>,
) -> Option<EventScope> {
    Some(EventScope::agent(primary).related(related))
}

/// Scope of an event of agent `invocation_id` alone.
fn agent(invocation_id: &InvocationId) -> Option<EventScope> {
    Some(EventScope::agent(invocation_id))
}

/// Scope of a run-level event: the root agent.
fn run() -> Option<EventScope> {
    Some(EventScope::run())
}

macro_rules! payloads {
    ($($variant:ident => |$payload:ident| $scope:expr,)*) => {
        /// A journal event's payload, decoded by its type. New variants are added without a
        /// major version: match with a wildcard arm.
        #[non_exhaustive]
        #[derive(Debug, Clone, PartialEq)]
        pub enum RunEventPayload {
            $($variant($variant),)*
        }

        $(impl EventPayload for $variant {
            const TYPE: RunEventType = RunEventType::$variant;

            fn scope(&self) -> Option<EventScope> {
                let $payload = self;
                $scope
            }
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

            /// The agents the event belongs to ([`EventPayload::scope`]).
            pub fn scope(&self) -> Option<EventScope> {
                match self {
                    $(RunEventPayload::$variant(payload) => payload.scope(),)*
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

// Every payload type with its scope (docs/events.md, "eventScope"): an agent's own events
// belong to it (`invocationId`); task events to the delegating agent (`parentInvocationId`),
// with the delegated one related; handoff events to the agent handing off; the run's own events
// to the root. `p` is the payload.
payloads! {
    RunCreated => |_p| run(),
    ProfileResolved => |_p| run(),
    SkillScopesResolved => |p| agent(&p.invocation_id),
    GenerationIntentRecorded => |_p| None,
    StatusChanged => |_p| run(),
    WorkspaceInitialized => |_p| run(),
    PersistentProjectionInitialized => |_p| run(),
    ContextAssembled => |p| agent(&p.invocation_id),
    AgentModelBindingResolved => |p| agent(&p.invocation_id),
    ModelSettingsDropped => |p| agent(&p.invocation_id),
    AgentInactivityWarned => |p| agent(&p.invocation_id),
    AgentModelFallbackSwitched => |p| agent(&p.invocation_id),
    AgentInvocationCreated => |p| of(&p.invocation_id, &p.parent_invocation_id),
    AgentInvocationStarted => |p| of(&p.invocation_id, &p.parent_invocation_id),
    AgentInvocationCompleted => |p| of(&p.invocation_id, &p.parent_invocation_id),
    AgentInvocationFailed => |p| of(&p.invocation_id, &p.parent_invocation_id),
    AgentInvocationCancelled => |p| of(&p.invocation_id, &p.parent_invocation_id),
    AgentInvocationTransferred => |p| of(&p.invocation_id, &p.parent_invocation_id),
    AgentInvocationInterrupted => |p| of(&p.invocation_id, &p.parent_invocation_id),
    AgentInvocationResumed => |p| of(&p.invocation_id, &p.parent_invocation_id),
    AgentTaskRegistered => |p| of(&p.parent_invocation_id, [&p.child_invocation_id]),
    AgentTaskQueued => |p| of(&p.parent_invocation_id, [&p.child_invocation_id]),
    AgentTaskStarted => |p| of(&p.parent_invocation_id, [&p.child_invocation_id]),
    AgentTaskCompleted => |p| of(&p.parent_invocation_id, [&p.child_invocation_id]),
    AgentTaskFailed => |p| of(&p.parent_invocation_id, [&p.child_invocation_id]),
    AgentTaskCancelled => |p| of(&p.parent_invocation_id, [&p.child_invocation_id]),
    AgentTaskInterrupted => |p| of(&p.parent_invocation_id, [&p.child_invocation_id]),
    AgentTaskResumed => |p| of(&p.parent_invocation_id, [&p.child_invocation_id]),
    AgentDelegateStarted => |p| of(&p.parent_invocation_id, [&p.child_invocation_id]),
    AgentHandoffRequested => |p| agent(&p.source_invocation_id),
    AgentHandoffAccepted => |p| of(&p.source_invocation_id, [&p.new_invocation_id]),
    AgentAwaitStarted => |p| agent(&p.parent_invocation_id),
    AgentAwaitCompleted => |p| agent(&p.parent_invocation_id),
    // The returning agent's story, told to the agent it returns to.
    TaskReturnCompleted => |p| of(&p.child_invocation_id, [&p.parent_invocation_id]),
    TaskReturnRecorded => |p| agent(&p.invocation_id),
    TaskReturnGraded => |p| agent(&p.invocation_id),
    AgentChildInvocationFailed => |p| of(&p.parent_invocation_id, [&p.child_invocation_id]),
    AgentResultsInjected => |p| agent(&p.invocation_id),
    PromptAssemblyRequested => |p| agent(&p.invocation_id),
    PromptAssemblyCompleted => |p| agent(&p.invocation_id),
    PromptAssemblyFailed => |p| agent(&p.invocation_id),
    ModelRequestCreated => |p| agent(&p.invocation_id),
    ModelCallAttemptStarted => |p| agent(&p.invocation_id),
    ModelCallAttemptFailed => |p| agent(&p.invocation_id),
    ModelCallRetryScheduled => |p| agent(&p.invocation_id),
    ModelResponseStored => |p| agent(&p.invocation_id),
    ProviderStateUpdated => |p| agent(&p.invocation_id),
    ModelCompleted => |p| agent(&p.invocation_id),
    ModelDelta => |p| agent(&p.invocation_id),
    DirectOutputCaptured => |p| agent(&p.invocation_id),
    DriftRecoveryAttempted => |p| agent(&p.invocation_id),
    ToolCallRequested => |p| agent(&p.invocation_id),
    ToolApprovalRequested => |p| agent(&p.invocation_id),
    ToolApprovalResolved => |p| agent(&p.invocation_id),
    ToolApprovalCancelled => |p| agent(&p.invocation_id),
    SpendLimitReached => |p| agent(&p.invocation_id),
    SpendLimitAnswered => |_p| None,
    ToolCallStarted => |p| agent(&p.invocation_id),
    ToolResultStored => |p| agent(&p.invocation_id),
    ToolCallCompleted => |p| agent(&p.invocation_id),
    ToolCallFailed => |p| agent(&p.invocation_id),
    WorkspaceFileWritten => |p| agent(&p.invocation_id),
    WorkspacePatchApplied => |p| agent(&p.invocation_id),
    CheckpointCreated => |p| agent(&p.invocation_id),
    AgentLoopFinished => |p| agent(&p.invocation_id),
    ChatCommitStarted => |p| agent(&p.invocation_id),
    ChatCommitRequested => |p| agent(&p.invocation_id),
    ChatCommitCompleted => |p| agent(&p.invocation_id),
    ChatCommitFailed => |p| agent(&p.invocation_id),
    ChatCommitRecorded => |p| agent(&p.invocation_id),
    PersistentChangesCommitted => |_p| run(),
    PersistentChangesCommitFailed => |_p| run(),
    PersistentStateMetadataUpdateRequested => |_p| run(),
    PersistentStateMetadataUpdated => |_p| run(),
    PersistentStateMetadataUpdateFailed => |_p| run(),
    RunCompleted => |_p| run(),
    RunPartialSuccess => |_p| run(),
    RunCancelRequested => |_p| run(),
    RunCancelled => |_p| run(),
    RunFailed => |_p| run(),
    RunInterrupted => |_p| run(),
    RunReopened => |_p| run(),
    RunResumed => |_p| run(),
    RunAbandoned => |_p| run(),
    UserGuidanceSubmitted => |_p| None,
    UserGuidanceApplied => |p| agent(&p.invocation_id),
    UserGuidanceDiscarded => |_p| None,
    ContextTrimmed => |p| agent(&p.invocation_id),
    ContextCompacted => |p| agent(&p.invocation_id),
    ToolOutputSaved => |p| agent(&p.invocation_id),
}

/// A payload on the wire of the host API: `{"type": "<event type>", "payload": {…}}`, the
/// payload as journaled (without `eventScope`); deserializing decodes it by its type again.
impl Serialize for RunEventPayload {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeStruct};
        let payload = self.to_value().map_err(S::Error::custom)?;
        let mut tagged = serializer.serialize_struct("RunEventPayload", 2)?;
        tagged.serialize_field("type", &self.event_type())?;
        tagged.serialize_field("payload", &payload)?;
        tagged.end()
    }
}

impl<'de> Deserialize<'de> for RunEventPayload {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Tagged {
            #[serde(rename = "type")]
            event_type: String,
            payload: Value,
        }
        let tagged = Tagged::deserialize(deserializer)?;
        let event_type = RunEventType::parse(&tagged.event_type).ok_or_else(|| {
            serde::de::Error::custom(format_args!(
                "no payload type for the unknown event type `{}`",
                tagged.event_type
            ))
        })?;
        Self::decode(&event_type, &tagged.payload).map_err(serde::de::Error::custom)
    }
}

/// Serializes `payload` as journaled, with the `eventScope` its type states.
pub fn journaled<P: EventPayload>(payload: &P) -> Result<Value, serde_json::Error> {
    let mut value = serde_json::to_value(payload)?;
    if let Some(scope) = payload.scope() {
        scope.add_to(&mut value);
    }
    Ok(value)
}

/// [`journaled`], serialized: the payload as a store writes it, without a `Value` between.
pub fn journal_payload<P: EventPayload>(payload: &P) -> Result<JournalPayload, serde_json::Error> {
    JournalPayload::typed(payload, payload.scope().as_ref())
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
