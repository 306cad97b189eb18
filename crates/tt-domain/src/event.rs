//! The run journal's event envelope, the event-type vocabulary and `eventScope`.
//!
//! Every event is one JSON line `{seq, id, runId, timestamp, level, type, payload}`. Object
//! payloads carry `eventScope {invocationId, relatedInvocationIds?}` so a host can filter a
//! journal per agent.
//!
//! An event on its way into the journal ([`NewRunEvent`], [`RecordedEvent`]) carries its
//! payload serialized already ([`JournalPayload`]): written once from the typed payload, with
//! its `eventScope`, and stored as it is; [`AgentRunEvent`], as read back, has it parsed.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::ids::{EventId, InvocationId, RunId};
use crate::time::Timestamp;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventLevel {
    Debug,
    Info,
    Warn,
    Error,
}

/// A journal record as stored. `seq` is assigned by the journal, strictly increasing from 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentRunEvent {
    pub seq: u64,
    pub id: EventId,
    pub run_id: RunId,
    pub timestamp: Timestamp,
    pub level: EventLevel,
    #[serde(rename = "type")]
    pub event_type: RunEventType,
    #[serde(default)]
    pub payload: Value,
}

impl AgentRunEvent {
    /// The primary invocation this event belongs to, from its `eventScope`.
    pub fn scope_invocation_id(&self) -> Option<&str> {
        self.payload
            .get("eventScope")?
            .get("invocationId")?
            .as_str()
    }

    /// True when the event's scope names `invocation_id` as primary or related.
    pub fn concerns_invocation(&self, invocation_id: &str) -> bool {
        let Some(scope) = self.payload.get("eventScope") else {
            return false;
        };
        scope.get("invocationId").and_then(Value::as_str) == Some(invocation_id)
            || scope
                .get("relatedInvocationIds")
                .and_then(Value::as_array)
                .is_some_and(|ids| ids.iter().any(|id| id.as_str() == Some(invocation_id)))
    }
}

/// An event before the journal assigns its `seq`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRunEvent {
    pub id: EventId,
    pub run_id: RunId,
    pub timestamp: Timestamp,
    pub level: EventLevel,
    pub event_type: RunEventType,
    pub payload: JournalPayload,
}

impl NewRunEvent {
    pub fn with_seq(self, seq: u64) -> RecordedEvent {
        RecordedEvent {
            seq,
            id: self.id,
            run_id: self.run_id,
            timestamp: self.timestamp,
            level: self.level,
            event_type: self.event_type,
            payload: self.payload,
        }
    }
}

/// An event as the journal stored it, with its seq, its payload still as written: what an
/// append answers. Serializes to the same line as the [`AgentRunEvent`] it reads back as.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedEvent {
    pub seq: u64,
    pub id: EventId,
    pub run_id: RunId,
    pub timestamp: Timestamp,
    pub level: EventLevel,
    #[serde(rename = "type")]
    pub event_type: RunEventType,
    pub payload: JournalPayload,
}

impl RecordedEvent {
    /// The event as a reader gets it, its payload parsed.
    pub fn to_event(&self) -> Result<AgentRunEvent, serde_json::Error> {
        Ok(AgentRunEvent {
            seq: self.seq,
            id: self.id.clone(),
            run_id: self.run_id.clone(),
            timestamp: self.timestamp,
            level: self.level,
            event_type: self.event_type.clone(),
            payload: self.payload.to_value()?,
        })
    }

    /// The event as `serde_json::to_string` writes it, with the payload's text copied in as
    /// it is (not checked as JSON again): what a store writes.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        let mut line = crate::text::json_text(&Envelope {
            seq: self.seq,
            id: &self.id,
            run_id: &self.run_id,
            timestamp: &self.timestamp,
            level: self.level,
            event_type: &self.event_type,
        })?;
        line.pop(); // its closing `}`
        line.reserve(self.payload.get().len() + 12);
        line.push_str(",\"payload\":");
        line.push_str(self.payload.get());
        line.push('}');
        Ok(line)
    }

    /// [`to_event`](Self::to_event), taking the event.
    pub fn into_event(self) -> Result<AgentRunEvent, serde_json::Error> {
        let payload = self.payload.to_value()?;
        Ok(AgentRunEvent {
            seq: self.seq,
            id: self.id,
            run_id: self.run_id,
            timestamp: self.timestamp,
            level: self.level,
            event_type: self.event_type,
            payload,
        })
    }
}

/// A [`RecordedEvent`] without its payload, the fields in the same order.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Envelope<'a> {
    seq: u64,
    id: &'a EventId,
    run_id: &'a RunId,
    timestamp: &'a Timestamp,
    level: EventLevel,
    #[serde(rename = "type")]
    event_type: &'a RunEventType,
}

/// An event's payload as the journal writes it: serialized once, `eventScope` included, when
/// the event is built, and written as it is by every store. [`to_value`](Self::to_value)
/// parses it for a reader that needs the JSON tree.
///
/// The text is written into a buffer each thread reuses and copied out at its size
/// ([`json_text`](crate::text::json_text)), so a payload costs one allocation however it grows
/// while being written.
#[derive(Debug, Clone)]
pub struct JournalPayload(String);

impl JournalPayload {
    /// `payload` serialized with `scope` as its `eventScope`, written after the payload's own
    /// fields (where [`EventScope::add_to`] puts it): the same text as the payload turned into
    /// a `Value`, scoped and serialized. A payload that is not an object has no scope.
    pub fn typed<P: Serialize + ?Sized>(
        payload: &P,
        scope: Option<&EventScope>,
    ) -> Result<Self, serde_json::Error> {
        let Some(scope) = scope else {
            return crate::text::json_text(payload).map(Self);
        };
        crate::text::json_text_written(|text| {
            crate::json_writer::write_json(text, payload)?;
            // An object's text is `{…}`: the scope goes in place of its closing brace.
            if text.starts_with('{') && text.ends_with('}') {
                text.pop();
                if text.len() > 1 {
                    text.push(',');
                }
                text.push_str("\"eventScope\":");
                crate::json_writer::write_json(text, scope)?;
                text.push('}');
            }
            Ok(())
        })
        .map(Self)
    }

    /// `payload` with `scope` as its `eventScope` ([`EventScope::add_to`]), serialized.
    pub fn value(mut payload: Value, scope: Option<&EventScope>) -> Self {
        if let Some(scope) = scope {
            scope.add_to(&mut payload);
        }
        Self::from(&payload)
    }

    /// The payload's JSON text.
    pub fn get(&self) -> &str {
        &self.0
    }

    /// The payload parsed.
    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        serde_json::from_str(&self.0)
    }
}

impl From<&Value> for JournalPayload {
    fn from(payload: &Value) -> Self {
        // A `Value` always serializes (its map keys are strings): the `null` is never taken.
        Self(crate::text::json_text(payload).unwrap_or_else(|_| "null".to_owned()))
    }
}

impl From<Value> for JournalPayload {
    fn from(payload: Value) -> Self {
        Self::from(&payload)
    }
}

/// Two payloads are equal when their texts are.
impl PartialEq for JournalPayload {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

/// Written as the JSON it is (checked as JSON on the way, which the stores skip: they copy
/// the text into their line or row as it is).
impl Serialize for JournalPayload {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let raw: &RawValue =
            serde_json::from_str(&self.0).map_err(<S::Error as serde::ser::Error>::custom)?;
        raw.serialize(serializer)
    }
}

macro_rules! event_types {
    ($($variant:ident => $name:literal,)*) => {
        /// An event's type: every type the runtime writes, and [`Unknown`](Self::Unknown) for
        /// a name this build does not know (a journal written by a newer runtime or another
        /// writer), kept by name so such a journal still loads and is written back unchanged.
        ///
        /// Serialized as its name. Readers match on the variants; `==` against a name (`&str`)
        /// stays available for hosts and tests that compare by name.
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum RunEventType {
            $($variant,)*
            /// A type this build does not know, by name. Never holds a known name:
            /// [`RunEventType::from_name`] gives the known variant for it.
            Unknown(String),
        }

        impl RunEventType {
            /// Every known type.
            pub const ALL: &'static [RunEventType] = &[$(RunEventType::$variant,)*];

            /// The type's name as journaled.
            pub fn as_str(&self) -> &str {
                match self {
                    $(RunEventType::$variant => $name,)*
                    RunEventType::Unknown(name) => name,
                }
            }

            /// The known type named `name`, `None` for any other name.
            pub fn parse(name: &str) -> Option<Self> {
                match name { $($name => Some(RunEventType::$variant),)* _ => None }
            }
        }
    };
}

event_types! {
    RunCreated => "run_created",
    ProfileResolved => "profile_resolved",
    SkillScopesResolved => "skill_scopes_resolved",
    GenerationIntentRecorded => "generation_intent_recorded",
    StatusChanged => "status_changed",
    WorkspaceInitialized => "workspace_initialized",
    PersistentProjectionInitialized => "persistent_projection_initialized",
    ContextAssembled => "context_assembled",
    AgentModelBindingResolved => "agent_model_binding_resolved",
    ModelSettingsDropped => "model_settings_dropped",
    AgentInactivityWarned => "agent_inactivity_warned",
    AgentModelFallbackSwitched => "agent_model_fallback_switched",
    AgentInvocationCreated => "agent_invocation_created",
    AgentInvocationStarted => "agent_invocation_started",
    AgentInvocationCompleted => "agent_invocation_completed",
    AgentInvocationFailed => "agent_invocation_failed",
    AgentInvocationCancelled => "agent_invocation_cancelled",
    AgentInvocationTransferred => "agent_invocation_transferred",
    AgentInvocationInterrupted => "agent_invocation_interrupted",
    AgentInvocationResumed => "agent_invocation_resumed",
    AgentTaskRegistered => "agent_task_registered",
    AgentTaskQueued => "agent_task_queued",
    AgentTaskStarted => "agent_task_started",
    AgentTaskCompleted => "agent_task_completed",
    AgentTaskFailed => "agent_task_failed",
    AgentTaskCancelled => "agent_task_cancelled",
    AgentTaskInterrupted => "agent_task_interrupted",
    AgentTaskResumed => "agent_task_resumed",
    AgentDelegateStarted => "agent_delegate_started",
    AgentHandoffRequested => "agent_handoff_requested",
    AgentHandoffAccepted => "agent_handoff_accepted",
    AgentAwaitStarted => "agent_await_started",
    AgentAwaitCompleted => "agent_await_completed",
    TaskReturnCompleted => "task_return_completed",
    TaskReturnRecorded => "task_return_recorded",
    TaskReturnGraded => "task_return_graded",
    AgentChildInvocationFailed => "agent_child_invocation_failed",
    AgentResultsInjected => "agent_results_injected",
    PromptAssemblyRequested => "prompt_assembly_requested",
    PromptAssemblyCompleted => "prompt_assembly_completed",
    PromptAssemblyFailed => "prompt_assembly_failed",
    ModelRequestCreated => "model_request_created",
    ModelCallAttemptStarted => "model_call_attempt_started",
    ModelCallAttemptFailed => "model_call_attempt_failed",
    ModelCallRetryScheduled => "model_call_retry_scheduled",
    ModelResponseStored => "model_response_stored",
    ProviderStateUpdated => "provider_state_updated",
    ModelCompleted => "model_completed",
    ModelDelta => "model_delta",
    DirectOutputCaptured => "direct_output_captured",
    DriftRecoveryAttempted => "drift_recovery_attempted",
    ToolCallRequested => "tool_call_requested",
    ToolApprovalRequested => "tool_approval_requested",
    ToolApprovalResolved => "tool_approval_resolved",
    ToolApprovalCancelled => "tool_approval_cancelled",
    SpendLimitReached => "spend_limit_reached",
    SpendLimitAnswered => "spend_limit_answered",
    ToolCallStarted => "tool_call_started",
    ToolResultStored => "tool_result_stored",
    ToolCallCompleted => "tool_call_completed",
    ToolCallFailed => "tool_call_failed",
    WorkspaceFileWritten => "workspace_file_written",
    WorkspacePatchApplied => "workspace_patch_applied",
    CheckpointCreated => "checkpoint_created",
    AgentLoopFinished => "agent_loop_finished",
    ChatCommitStarted => "chat_commit_started",
    ChatCommitRequested => "chat_commit_requested",
    ChatCommitCompleted => "chat_commit_completed",
    ChatCommitFailed => "chat_commit_failed",
    ChatCommitRecorded => "chat_commit_recorded",
    PersistentChangesCommitted => "persistent_changes_committed",
    PersistentChangesCommitFailed => "persistent_changes_commit_failed",
    PersistentStateMetadataUpdateRequested => "persistent_state_metadata_update_requested",
    PersistentStateMetadataUpdated => "persistent_state_metadata_updated",
    PersistentStateMetadataUpdateFailed => "persistent_state_metadata_update_failed",
    RunCompleted => "run_completed",
    RunPartialSuccess => "run_partial_success",
    RunCancelRequested => "run_cancel_requested",
    RunCancelled => "run_cancelled",
    RunFailed => "run_failed",
    RunInterrupted => "run_interrupted",
    RunReopened => "run_reopened",
    RunResumed => "run_resumed",
    RunAbandoned => "run_abandoned",
    UserGuidanceSubmitted => "user_guidance_submitted",
    UserGuidanceApplied => "user_guidance_applied",
    UserGuidanceDiscarded => "user_guidance_discarded",
    ContextTrimmed => "context_trimmed",
    ContextCompacted => "context_compacted",
    ToolOutputSaved => "tool_output_saved",
}

impl RunEventType {
    /// The type named `name`: the known one, or [`Unknown`](Self::Unknown).
    pub fn from_name(name: &str) -> Self {
        Self::parse(name).unwrap_or_else(|| RunEventType::Unknown(name.to_owned()))
    }

    /// The run's own lifecycle events, the `run_*` types.
    pub fn is_run_lifecycle(&self) -> bool {
        matches!(
            self,
            RunEventType::RunCreated
                | RunEventType::RunCompleted
                | RunEventType::RunPartialSuccess
                | RunEventType::RunCancelRequested
                | RunEventType::RunCancelled
                | RunEventType::RunFailed
                | RunEventType::RunInterrupted
                | RunEventType::RunReopened
                | RunEventType::RunResumed
                | RunEventType::RunAbandoned
        )
    }

    /// False for [`Unknown`](Self::Unknown).
    pub fn is_known(&self) -> bool {
        !matches!(self, RunEventType::Unknown(_))
    }
}

impl std::fmt::Display for RunEventType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for RunEventType {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for RunEventType {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for RunEventType {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl Serialize for RunEventType {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for RunEventType {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Name;
        impl serde::de::Visitor<'_> for Name {
            type Value = RunEventType;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an event type name")
            }

            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<RunEventType, E> {
                Ok(RunEventType::from_name(name))
            }

            fn visit_string<E: serde::de::Error>(self, name: String) -> Result<RunEventType, E> {
                Ok(RunEventType::parse(&name).unwrap_or(RunEventType::Unknown(name)))
            }
        }
        deserializer.deserialize_str(Name)
    }
}

/// Which agents an event belongs to: the `eventScope` of its payload (docs/events.md). Each
/// payload type states its own ([`EventPayload::scope`](crate::event_payload::EventPayload::scope)),
/// and it is added to the payload when the event is recorded.
///
/// Serializes as the `eventScope` object, `relatedInvocationIds` left out when empty.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventScope {
    /// The agent whose view the event belongs to.
    pub invocation_id: InvocationId,
    /// Other agents the event concerns, in order, without `invocation_id` and without repeats.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub related_invocation_ids: Vec<InvocationId>,
}

impl EventScope {
    /// An event of agent `invocation_id`, concerning no other.
    pub fn agent(invocation_id: &InvocationId) -> Self {
        Self {
            invocation_id: invocation_id.clone(),
            related_invocation_ids: Vec::new(),
        }
    }

    /// A run-level event: it belongs to the root agent.
    pub fn run() -> Self {
        Self::agent(&InvocationId::root())
    }

    /// This scope with `ids` added as related agents, skipping the primary one and repeats.
    pub fn related<'a>(mut self, ids: impl IntoIterator<Item = &'a InvocationId>) -> Self {
        for id in ids {
            if *id != self.invocation_id && !self.related_invocation_ids.contains(id) {
                self.related_invocation_ids.push(id.clone());
            }
        }
        self
    }

    /// Every agent the scope names, the primary one first.
    pub fn ids(&self) -> impl Iterator<Item = &InvocationId> {
        std::iter::once(&self.invocation_id).chain(&self.related_invocation_ids)
    }

    /// Sets this scope as `payload`'s `eventScope`; a payload that is not an object has none.
    pub fn add_to(&self, payload: &mut Value) {
        let Value::Object(map) = payload else {
            return;
        };
        let mut scope = Map::new();
        scope.insert(
            "invocationId".into(),
            Value::String(self.invocation_id.as_str().to_owned()),
        );
        if !self.related_invocation_ids.is_empty() {
            let related = self
                .related_invocation_ids
                .iter()
                .map(|id| Value::String(id.as_str().to_owned()))
                .collect();
            scope.insert("relatedInvocationIds".into(), Value::Array(related));
        }
        map.insert("eventScope".into(), Value::Object(scope));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_scope_names_its_primary_agent_first_and_each_related_one_once() {
        let (root, a, b) = (
            InvocationId::root(),
            InvocationId::from_raw("inv_a"),
            InvocationId::from_raw("inv_b"),
        );
        let scope = EventScope::agent(&a).related([&root, &a, &b, &root]);
        assert_eq!(scope.ids().collect::<Vec<_>>(), [&a, &root, &b]);
        let mut payload = json!({"taskId": "task_1"});
        scope.add_to(&mut payload);
        assert_eq!(
            payload,
            json!({"taskId": "task_1", "eventScope": {
                "invocationId": "inv_a", "relatedInvocationIds": ["inv_root", "inv_b"],
            }})
        );
        let mut payload = json!({"status": "calling_model"});
        EventScope::run().add_to(&mut payload);
        assert_eq!(payload["eventScope"], json!({"invocationId": "inv_root"}));
        let mut null = Value::Null;
        EventScope::run().add_to(&mut null);
        assert_eq!(null, Value::Null);
    }

    #[test]
    fn a_typed_payload_that_is_not_an_object_has_no_scope() {
        #[derive(Serialize)]
        struct Empty {}
        let scope = EventScope::agent(&InvocationId::from_raw("inv_a"));
        let cases = [
            json!(null),
            json!("text {}"),
            json!([{"a": 1}]),
            json!(3),
            json!({}),
        ];
        for payload in cases
            .iter()
            .chain([&serde_json::to_value(Empty {}).unwrap()])
        {
            let typed = JournalPayload::typed(payload, Some(&scope)).unwrap();
            assert_eq!(typed, JournalPayload::value(payload.clone(), Some(&scope)));
        }
        let empty = JournalPayload::typed(&Empty {}, Some(&scope)).unwrap();
        assert_eq!(empty.get(), r#"{"eventScope":{"invocationId":"inv_a"}}"#);
    }

    #[test]
    fn a_typed_payload_is_written_as_its_value_with_the_scope_added() {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Payload {
            task_id: &'static str,
            text: &'static str,
            ratio: f64,
            missing: Option<u32>,
            #[serde(skip_serializing_if = "Option::is_none")]
            skipped: Option<u32>,
            nested: Value,
        }
        let payload = Payload {
            task_id: "task_1",
            text: "a \"quoted\"\nline é",
            ratio: 0.1,
            missing: None,
            skipped: None,
            nested: json!({"z": [1, 2.5, null], "a": {"b": true}}),
        };
        let (root, a) = (InvocationId::root(), InvocationId::from_raw("inv_a"));
        let scopes = [
            None,
            Some(EventScope::agent(&a)),
            Some(EventScope::agent(&a).related([&root])),
        ];
        for scope in &scopes {
            let mut value = serde_json::to_value(&payload).unwrap();
            if let Some(scope) = scope {
                scope.add_to(&mut value);
            }
            let typed = JournalPayload::typed(&payload, scope.as_ref()).unwrap();
            assert_eq!(typed.get(), serde_json::to_string(&value).unwrap());
            assert_eq!(typed.to_value().unwrap(), value);
            assert_eq!(
                JournalPayload::value(serde_json::to_value(&payload).unwrap(), scope.as_ref()),
                typed
            );
        }
        // Not an object: no scope, as `add_to` leaves it.
        let scope = EventScope::run();
        assert_eq!(
            JournalPayload::typed("text", Some(&scope)).unwrap().get(),
            r#""text""#
        );
        assert_eq!(
            JournalPayload::value(Value::Null, Some(&scope)).get(),
            "null"
        );
    }

    #[test]
    fn a_recorded_event_serializes_as_the_event_it_reads_back_as() {
        let event = NewRunEvent {
            id: EventId::from_raw("evt_1"),
            run_id: RunId::from_raw("run_1"),
            timestamp: Timestamp::from_unix_millis(1_764_677_944_123),
            level: EventLevel::Warn,
            event_type: RunEventType::ToolCallStarted,
            payload: JournalPayload::from(json!({"b": 1, "a": "x\n\"y\""})),
        }
        .with_seq(7);
        let read = event.to_event().unwrap();
        assert_eq!(
            serde_json::to_string(&event).unwrap(),
            serde_json::to_string(&read).unwrap()
        );
        assert_eq!(
            event.to_json().unwrap(),
            serde_json::to_string(&read).unwrap()
        );
        assert_eq!(read.payload, json!({"b": 1, "a": "x\n\"y\""}));
        assert_eq!(event.into_event().unwrap(), read);
    }

    #[test]
    fn event_type_names_are_unique_snake_case() {
        let mut seen = std::collections::HashSet::new();
        for event_type in RunEventType::ALL {
            let name = event_type.as_str();
            assert!(seen.insert(name), "duplicate {name}");
            assert!(name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'));
            assert_eq!(RunEventType::parse(name), Some(event_type.clone()));
            assert_eq!(RunEventType::from_name(name), *event_type);
            assert_eq!(event_type.is_run_lifecycle(), name.starts_with("run_"));
        }
    }

    #[test]
    fn an_unknown_event_type_loads_and_is_written_back_by_name() {
        let line = r#"{"seq":1,"id":"evt_1","runId":"run_x","timestamp":"2026-01-01T00:00:00.000Z","level":"info","type":"made_up_later","payload":{"a":1}}"#;
        let event: AgentRunEvent = serde_json::from_str(line).unwrap();
        assert_eq!(
            event.event_type,
            RunEventType::Unknown("made_up_later".to_owned())
        );
        assert!(!event.event_type.is_known());
        assert_eq!(serde_json::to_string(&event).unwrap(), line);
        let known: AgentRunEvent =
            serde_json::from_str(&line.replace("made_up_later", "model_completed")).unwrap();
        assert_eq!(known.event_type, RunEventType::ModelCompleted);
        assert_eq!(known.event_type, "model_completed");
    }
}
