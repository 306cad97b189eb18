//! The prompt-assembly broker: for an invocation whose profile uses `preset.mode = "ref"` (the
//! root agent, a delegated agent or a handoff target), the host assembles the prompt from its
//! preset, the agent system prompt, the task prompt (the brief, or the user's request for the
//! root) and the run's frozen conversation.
//!
//! Two steps, like commits: `request_assembly` registers the request (from then on the host may
//! answer it); the runtime journals the light `prompt_assembly_requested` event and awaits the
//! answer, racing run cancel (dropping the answer withdraws the request).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tt_domain::generation::GenerationSettings;

use crate::error::HostBridgeError;

/// Who the prompt is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptAssemblyScope {
    pub run_id: String,
    pub invocation_id: String,
    /// `root`, `subagent` or `handoff`.
    pub invocation_kind: String,
    pub parent_invocation_id: Option<String>,
    /// The task that brought the agent in; `null` for the root agent.
    pub task_id: Option<String>,
    /// `taskReturnRequired` or `runFinishAllowed`.
    pub exit_policy: String,
}

/// Content hashes a host can use to cache assemblies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptAssemblyFingerprint {
    pub preset_sha256: String,
    pub frozen_run_input_snapshot_sha256: String,
    pub agent_task_prompt_sha256: String,
}

/// Everything a host needs to assemble one invocation's prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptAssemblyRequest {
    pub schema_version: u32,
    /// `tauritavern.agentPromptAssemblyRequest`.
    pub kind: String,
    pub assembly_id: String,
    pub scope: PromptAssemblyScope,
    pub profile_id: String,
    pub generation_type: Value,
    /// The run's conversation as frozen at run start (`input/prompt_snapshot.json`).
    pub frozen_run_input_snapshot: Value,
    /// The profile's model binding (`model` section) the prompt is assembled for; the host
    /// applies it to its preset settings.
    pub settings: Value,
    pub model_id: Option<String>,
    /// `{apiId, name}` of the target profile's preset.
    pub preset_ref: Value,
    /// The target profile's `context` section; the answer's `contextPolicy` must equal it.
    pub agent_context_policy: Value,
    pub agent_system_prompt: String,
    pub agent_task_prompt: String,
    /// Components the assembled prompt must contain: `agentSystemPrompt`, `agentTask`.
    pub required_agent_prompt_components: Vec<String>,
    /// A structured-output schema the host should attach; this runtime asks for none (`null`).
    pub json_schema: Option<Value>,
    pub fingerprint: PromptAssemblyFingerprint,
}

/// The host's answer: the assembled prompt snapshot and optional metadata about the assembly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptAssemblyAnswer {
    /// `{messages: [{role, content}], contextPolicy}`.
    pub prompt_snapshot: Value,
    #[serde(default)]
    pub assembly: Value,
    /// The conversation the host actually assembled from, when it differs from the request's
    /// frozen snapshot (kept in `prompt_assembly.json`).
    pub frozen_run_input_snapshot: Option<Value>,
    /// The host's generation intent for this prompt (kept in `prompt_assembly.json`).
    pub generation_intent: Option<Value>,
    /// The preset's settings for this prompt (kept in `prompt_assembly.json`): its
    /// `generation` goes over the profile's and under the run request's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<AssembledSettings>,
}

/// The `settings` of an assembly answer. Other keys a host sends are ignored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssembledSettings {
    #[serde(default, skip_serializing_if = "GenerationSettings::is_empty")]
    pub generation: GenerationSettings,
}

/// The host's eventual answer to one registered request. Dropping it withdraws the request.
pub type PendingPromptAssembly = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<PromptAssemblyAnswer, HostBridgeError>> + Send>,
>;

#[async_trait]
pub trait PromptAssemblyBroker: Send + Sync {
    /// Registers the request. From the moment this returns, the host may answer it.
    async fn request_assembly(
        &self,
        request: PromptAssemblyRequest,
    ) -> Result<PendingPromptAssembly, HostBridgeError>;
}
