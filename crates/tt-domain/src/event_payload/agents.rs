//! Agents (invocations): created, started, their ends, model bindings and skill scopes.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::{InvocationId, ProfileId, TaskId};
use crate::invocation::{AgentInvocation, ExitPolicy, InvocationKind, InvocationStatus};

macro_rules! invocation_payloads {
    ($($(#[$meta:meta])* $name:ident { $($(#[$field_meta:meta])* $field:ident: $ty:ty,)* })*) => {$(
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            pub invocation_id: InvocationId,
            pub parent_invocation_id: Option<InvocationId>,
            pub profile_id: ProfileId,
            pub kind: InvocationKind,
            pub status: InvocationStatus,
            pub exit_policy: ExitPolicy,
            $($(#[$field_meta])* pub $field: $ty,)*
        }

        impl $name {
            /// The event of `invocation`, as its record holds it now; its own fields absent.
            pub fn of(invocation: &AgentInvocation) -> Self {
                Self {
                    invocation_id: invocation.id.clone(),
                    parent_invocation_id: invocation.parent_invocation_id.clone(),
                    profile_id: invocation.profile_id.clone(),
                    kind: invocation.kind,
                    status: invocation.status,
                    exit_policy: invocation.exit_policy,
                    $($field: None,)*
                }
            }
        }
    )*};
}

// The events of an agent's status: each names the agent, the one that delegated to it, its
// profile, kind, status and exit policy; `agent_invocation_created` adds its task.
invocation_payloads! {
    /// `agent_invocation_created`.
    AgentInvocationCreated {
        /// Absent for the root.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task_id: Option<TaskId>,
    }
    /// `agent_invocation_started`.
    AgentInvocationStarted {}
    /// `agent_invocation_completed`.
    AgentInvocationCompleted {}
    /// `agent_invocation_failed`.
    AgentInvocationFailed {}
    /// `agent_invocation_cancelled`.
    AgentInvocationCancelled {}
    /// `agent_invocation_transferred`.
    AgentInvocationTransferred {}
    /// `agent_invocation_interrupted`.
    AgentInvocationInterrupted {}
    /// `agent_invocation_resumed`: an interrupted invocation runs again (`resume_run`).
    AgentInvocationResumed {}
}

/// `agent_model_binding_resolved`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentModelBindingResolved {
    pub mode: String,
    /// The named connection: the profile's, or in `currentPromptSnapshot` mode the one the
    /// host chose for the run (absent when the run uses the runtime's default model).
    pub connection_ref: Option<String>,
    #[serialize_always]
    pub model_id: Option<String>,
    pub provider: String,
    /// The connection's non-secret description, present with `connectionRef`.
    pub connection: Option<Value>,
    pub chat_completion_source: String,
    #[serialize_always]
    pub custom_api_format: Option<String>,
    pub provider_format: String,
    pub transport: String,
    pub native_continuation: bool,
    #[serialize_always]
    pub previous_response_id: Option<String>,
    pub invocation_id: InvocationId,
    pub profile_id: ProfileId,
    /// The layered generation settings the requests carry; absent when none is set (boxed:
    /// the largest field, kept off the payload enum's size).
    pub generation: Option<Box<crate::generation::GenerationSettings>>,
    /// The model's context window, when known (docs/providers.md).
    pub context_window_tokens: Option<u64>,
    /// Where the window comes from: `profile`, `connection`, `server` (asked once per
    /// connection and model) or `modelId` (the known window of the model id).
    pub context_window_source: Option<String>,
    /// With `contextWindowSource: "server"`, what the server was asked (`/props`,
    /// `/v1/models`, `/api/show`, `/api/ps`).
    pub context_window_endpoint: Option<String>,
    /// US dollars per million tokens, when a price is known.
    pub price: Option<crate::cost::ModelPrice>,
    /// `1h` when the profile asks for an hour-long prompt cache (`model.cache.ttl`); absent for
    /// the provider's default lifetime.
    pub cache_ttl: Option<String>,
}

/// `model_settings_dropped`: generation settings the agent's connection does not take and
/// leaves out of its requests (a connection that drops them, docs/providers.md).
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelSettingsDropped {
    pub invocation_id: InvocationId,
    pub profile_id: ProfileId,
    /// The provider's name.
    pub provider: String,
    /// The named connection, when the agent uses one.
    pub connection_ref: Option<String>,
    /// Each setting left out, with why.
    pub dropped: Vec<DroppedSetting>,
}

/// A generation setting a connection leaves out of its requests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DroppedSetting {
    /// Its name in the generation settings (`seed`, `topK`, …).
    pub setting: String,
    /// Why the provider does not take it.
    pub reason: String,
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
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextAssembled {
    pub request: Value,
    pub invocation_id: InvocationId,
    /// Absent for the root.
    pub task_id: Option<TaskId>,
    /// Absent for the root.
    pub preset_mode: Option<String>,
    pub tools: Vec<String>,
    pub max_rounds: u32,
    pub context_policy: Value,
    /// Present for the root only.
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
