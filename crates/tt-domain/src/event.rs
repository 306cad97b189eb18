//! The run journal's event envelope, the event-type vocabulary and `eventScope`.
//!
//! Every event is one JSON line `{seq, id, runId, timestamp, level, type, payload}`. Object
//! payloads carry `eventScope {invocationId, relatedInvocationIds?}` so a host can filter a
//! journal per agent.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ids::{EventId, ROOT_INVOCATION_ID, RunId};
use crate::time::Timestamp;
use crate::{DomainError, DomainResult};

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
    pub payload: Value,
}

impl NewRunEvent {
    pub fn with_seq(self, seq: u64) -> AgentRunEvent {
        AgentRunEvent {
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

const SCOPE_FIELDS: [&str; 5] = [
    "invocationId",
    "parentInvocationId",
    "sourceInvocationId",
    "childInvocationId",
    "newInvocationId",
];

/// Adds the canonical `eventScope` to an object payload (reference §7).
///
/// An explicit `eventScope.invocationId` wins; otherwise the primary id is chosen by event type,
/// then by the first of the five invocation fields present, then `inv_root` for run-level events
/// (`run_*`, `status_changed`, and the run's profile, workspace and persist events).
/// A non-object `eventScope` is `agent.event_scope_invalid`.
pub fn with_event_scope(event_type: &RunEventType, payload: Value) -> DomainResult<Value> {
    let Value::Object(mut map) = payload else {
        return Ok(payload);
    };
    // One pass over the payload's (few) entries finds the ids, borrowed; only the ones kept
    // are copied. Six hashed lookups per event cost more than comparing the keys.
    let mut scope = None;
    let mut fields: [Option<&str>; 5] = [None; 5];
    for (key, value) in &map {
        if key == "eventScope" {
            scope = Some(value);
        } else if let Some(slot) = SCOPE_FIELDS
            .iter()
            .position(|name| name == key)
            .and_then(|at| fields.get_mut(at))
        {
            *slot = value.as_str();
        }
    }
    let explicit = match scope {
        None => None,
        Some(Value::Object(scope)) => scope.get("invocationId").and_then(Value::as_str),
        Some(_) => {
            return Err(DomainError::new(
                "agent.event_scope_invalid",
                format!(
                    "{} payload has a non-object eventScope",
                    event_type.as_str()
                ),
            ));
        }
    };
    let field = |name: &str| {
        SCOPE_FIELDS
            .iter()
            .position(|candidate| *candidate == name)
            .and_then(|at| fields.get(at).copied().flatten())
    };
    let by_type = match event_type {
        RunEventType::AgentDelegateStarted => field("parentInvocationId"),
        RunEventType::AgentHandoffRequested | RunEventType::AgentHandoffAccepted => {
            field("sourceInvocationId")
        }
        RunEventType::TaskReturnCompleted => field("childInvocationId"),
        RunEventType::AgentTaskRegistered
        | RunEventType::AgentTaskQueued
        | RunEventType::AgentTaskStarted
        | RunEventType::AgentTaskCompleted
        | RunEventType::AgentTaskFailed
        | RunEventType::AgentTaskCancelled
        | RunEventType::AgentTaskInterrupted
        | RunEventType::AgentTaskResumed => field("parentInvocationId"),
        _ => None,
    };
    let is_run_level = event_type.is_run_lifecycle()
        || matches!(
            event_type,
            RunEventType::StatusChanged
                | RunEventType::ProfileResolved
                | RunEventType::WorkspaceInitialized
                | RunEventType::PersistentProjectionInitialized
                | RunEventType::PersistentChangesCommitted
                | RunEventType::PersistentChangesCommitFailed
                | RunEventType::PersistentStateMetadataUpdateRequested
                | RunEventType::PersistentStateMetadataUpdated
                | RunEventType::PersistentStateMetadataUpdateFailed
        );
    let primary = explicit
        .or(by_type)
        .or_else(|| fields.iter().find_map(|id| *id))
        .or_else(|| is_run_level.then_some(ROOT_INVOCATION_ID));
    let Some(primary) = primary else {
        return Ok(Value::Object(map));
    };
    let mut related: Vec<&str> = Vec::new();
    for id in fields.iter().flatten() {
        if *id != primary && !related.contains(id) {
            related.push(*id);
        }
    }
    let primary = primary.to_owned();
    let related: Vec<Value> = related
        .into_iter()
        .map(|id| Value::String(id.to_owned()))
        .collect();
    let mut scope = Map::new();
    scope.insert("invocationId".into(), Value::String(primary));
    if !related.is_empty() {
        scope.insert("relatedInvocationIds".into(), Value::Array(related));
    }
    map.insert("eventScope".into(), Value::Object(scope));
    Ok(Value::Object(map))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn task_events_are_scoped_to_the_delegating_agent() {
        let payload = with_event_scope(
            &RunEventType::AgentTaskCompleted,
            json!({"taskId":"task_1","parentInvocationId":"inv_root","childInvocationId":"inv_c"}),
        )
        .unwrap();
        assert_eq!(
            payload["eventScope"],
            json!({"invocationId":"inv_root","relatedInvocationIds":["inv_c"]})
        );
    }

    #[test]
    fn task_return_is_scoped_to_the_returning_agent() {
        let payload = with_event_scope(
            &RunEventType::TaskReturnCompleted,
            json!({"parentInvocationId":"inv_root","childInvocationId":"inv_c"}),
        )
        .unwrap();
        assert_eq!(payload["eventScope"]["invocationId"], "inv_c");
        assert_eq!(
            payload["eventScope"]["relatedInvocationIds"],
            json!(["inv_root"])
        );
    }

    #[test]
    fn run_events_default_to_root_and_explicit_scope_wins() {
        let payload = with_event_scope(
            &RunEventType::StatusChanged,
            json!({"status":"calling_model"}),
        )
        .unwrap();
        assert_eq!(payload["eventScope"], json!({"invocationId":"inv_root"}));
        let payload = with_event_scope(
            &RunEventType::ToolCallStarted,
            json!({"invocationId":"inv_a","eventScope":{"invocationId":"inv_b"}}),
        )
        .unwrap();
        assert_eq!(payload["eventScope"]["invocationId"], "inv_b");
        assert_eq!(
            payload["eventScope"]["relatedInvocationIds"],
            json!(["inv_a"])
        );
    }

    #[test]
    fn unscoped_and_invalid_payloads() {
        assert_eq!(
            with_event_scope(&RunEventType::RunCompleted, Value::Null).unwrap(),
            Value::Null
        );
        let plain = with_event_scope(
            &RunEventType::CheckpointCreated,
            json!({"checkpointId":"cp_000001"}),
        )
        .unwrap();
        assert!(plain.get("eventScope").is_none());
        let err =
            with_event_scope(&RunEventType::ToolCallStarted, json!({"eventScope": 3})).unwrap_err();
        assert_eq!(err.code, "agent.event_scope_invalid");
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
