//! Prompt-assembly brokers a host can choose from: answer through the host API
//! (`read_prompt_assembly_request` / `resolve_prompt_assembly`), or assemble from the preset
//! templates the store keeps, by default files under the data dir (what the CLI uses when no
//! host is attached).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::oneshot;
use tt_domain::error_codes;
use tt_ports::{
    HostBridgeError, PendingPromptAssembly, PresetKey, PresetTemplateRepository,
    PromptAssemblyAnswer, PromptAssemblyBroker, PromptAssemblyRequest,
};

use crate::dto::HostError;

struct Pending {
    request: PromptAssemblyRequest,
    reply: oneshot::Sender<Result<PromptAssemblyAnswer, HostBridgeError>>,
}

type PendingMap = Arc<Mutex<HashMap<String, Pending>>>;

/// Holds each request until the host resolves it by `assemblyId` (or the run is cancelled).
#[derive(Default)]
pub(crate) struct HostApiPromptBroker {
    pending: PendingMap,
}

impl std::fmt::Debug for HostApiPromptBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostApiPromptBroker")
            .finish_non_exhaustive()
    }
}

fn lock(pending: &PendingMap) -> std::sync::MutexGuard<'_, HashMap<String, Pending>> {
    pending.lock().unwrap_or_else(PoisonError::into_inner)
}

fn not_pending(assembly_id: &str) -> HostError {
    HostError {
        code: error_codes::AGENT_PROMPT_ASSEMBLY_NOT_PENDING.to_string(),
        message: format!("prompt assembly {assembly_id} is not pending"),
    }
}

fn run_mismatch(assembly_id: &str) -> HostError {
    HostError {
        code: error_codes::AGENT_PROMPT_ASSEMBLY_RUN_MISMATCH.to_string(),
        message: format!("prompt assembly {assembly_id} belongs to another run"),
    }
}

impl HostApiPromptBroker {
    /// Every assembly of `run_id` still waiting for the host, by id.
    pub(crate) fn pending_for_run(&self, run_id: &str) -> Vec<PromptAssemblyRequest> {
        let pending = lock(&self.pending);
        let mut requests: Vec<PromptAssemblyRequest> = pending
            .values()
            .filter(|entry| entry.request.scope.run_id == run_id)
            .map(|entry| entry.request.clone())
            .collect();
        requests.sort_by(|a, b| a.assembly_id.cmp(&b.assembly_id));
        requests
    }

    /// The full request of a pending assembly.
    pub(crate) fn read_request(
        &self,
        run_id: &str,
        assembly_id: &str,
    ) -> Result<PromptAssemblyRequest, HostError> {
        let pending = lock(&self.pending);
        let entry = pending
            .get(assembly_id)
            .ok_or_else(|| not_pending(assembly_id))?;
        if entry.request.scope.run_id != run_id {
            return Err(run_mismatch(assembly_id));
        }
        Ok(entry.request.clone())
    }

    /// Completes a pending assembly with a prompt snapshot or an error.
    pub(crate) fn resolve(
        &self,
        run_id: &str,
        assembly_id: &str,
        prompt_snapshot: Option<Value>,
        host_input: HostAssemblyInput,
        error: Option<String>,
    ) -> Result<(), HostError> {
        let answer = match (
            error.filter(|e| !e.trim().is_empty()),
            prompt_snapshot.filter(|s| !s.is_null()),
        ) {
            (Some(error), _) => Err(HostBridgeError::Rejected(error)),
            (None, Some(snapshot)) => Ok(PromptAssemblyAnswer {
                prompt_snapshot: snapshot,
                assembly: host_input.assembly.unwrap_or(Value::Null),
                frozen_run_input_snapshot: host_input.frozen_run_input_snapshot,
                generation_intent: host_input.generation_intent,
                settings: host_input.settings,
            }),
            (None, None) => {
                return Err(HostError {
                    code: error_codes::AGENT_PROMPT_ASSEMBLY_SNAPSHOT_REQUIRED.to_string(),
                    message: "give a promptSnapshot or an error".to_owned(),
                });
            }
        };
        let entry = {
            let mut pending = lock(&self.pending);
            match pending.get(assembly_id) {
                None => return Err(not_pending(assembly_id)),
                Some(entry) if entry.request.scope.run_id != run_id => {
                    return Err(run_mismatch(assembly_id));
                }
                Some(_) => pending.remove(assembly_id),
            }
        };
        if let Some(entry) = entry {
            entry.reply.send(answer).map_err(|_| HostError {
                code: error_codes::AGENT_PROMPT_ASSEMBLY_CHANNEL_CLOSED.to_string(),
                message: format!("prompt assembly {assembly_id} is no longer awaited"),
            })?;
        }
        Ok(())
    }
}

/// What a host may send with its prompt snapshot, kept in `prompt_assembly.json`.
#[derive(Debug, Default)]
pub(crate) struct HostAssemblyInput {
    pub assembly: Option<Value>,
    pub frozen_run_input_snapshot: Option<Value>,
    pub generation_intent: Option<Value>,
    pub settings: Option<tt_ports::AssembledSettings>,
}

struct Withdraw {
    pending: PendingMap,
    assembly_id: String,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        lock(&self.pending).remove(&self.assembly_id);
    }
}

#[async_trait]
impl PromptAssemblyBroker for HostApiPromptBroker {
    async fn request_assembly(
        &self,
        request: PromptAssemblyRequest,
    ) -> Result<PendingPromptAssembly, HostBridgeError> {
        let assembly_id = request.assembly_id.clone();
        let (reply, answer) = oneshot::channel();
        {
            let mut pending = lock(&self.pending);
            if pending.contains_key(&assembly_id) {
                return Err(HostBridgeError::Unavailable(format!(
                    "{}: {assembly_id}",
                    error_codes::AGENT_PROMPT_ASSEMBLY_ID_COLLISION
                )));
            }
            pending.insert(assembly_id.clone(), Pending { request, reply });
        }
        let withdraw = Withdraw {
            pending: Arc::clone(&self.pending),
            assembly_id,
        };
        Ok(Box::pin(async move {
            let _withdraw = withdraw;
            answer.await.unwrap_or_else(|_| {
                Err(HostBridgeError::Unavailable(
                    error_codes::AGENT_PROMPT_ASSEMBLY_CHANNEL_CLOSED.to_string(),
                ))
            })
        }))
    }
}

/// One entry of a preset template: a message with `{{agentSystemPrompt}}` / `{{agentTask}}`
/// placeholders, or the marker `{"insert": "history"}` for the run's frozen conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum TemplateEntry {
    Message { role: String, content: String },
    Insert { insert: String },
}

/// A preset template file: `<data dir>/presets/<apiId>/<name>.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct PresetTemplate {
    pub schema_version: u32,
    pub messages: Vec<TemplateEntry>,
}

impl PresetTemplate {
    /// `value` as a template, or what is wrong with it: not the template's fields, or an
    /// insert other than `history`.
    pub(crate) fn check(value: &Value) -> Result<Self, String> {
        let template = Self::deserialize(value).map_err(|err| err.to_string())?;
        for entry in &template.messages {
            if let TemplateEntry::Insert { insert } = entry
                && insert != "history"
            {
                return Err(format!(
                    "unknown insert `{insert}` (only `history` is known)"
                ));
            }
        }
        Ok(template)
    }
}

/// Assembles prompts from preset templates, at once: those the store keeps
/// (`PresetTemplateRepository`; by default the files `<data dir>/presets/<apiId>/<name>.json`).
pub(crate) struct TemplatePromptBroker {
    templates: Arc<dyn PresetTemplateRepository>,
}

impl std::fmt::Debug for TemplatePromptBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemplatePromptBroker")
            .finish_non_exhaustive()
    }
}

impl TemplatePromptBroker {
    pub(crate) fn new(templates: Arc<dyn PresetTemplateRepository>) -> Self {
        Self { templates }
    }

    /// The api id and name a preset reference names.
    fn template_key(preset_ref: &Value) -> Result<(String, String), String> {
        let segment = |key: &str| {
            preset_ref
                .get(key)
                .and_then(Value::as_str)
                .filter(|value| tt_domain::ids::is_valid_storage_segment(value))
                .map(str::to_owned)
                .ok_or_else(|| format!("preset `{key}` must be letters, digits, `-` or `_`"))
        };
        Ok((segment("apiId")?, segment("name")?))
    }

    async fn assemble(
        &self,
        request: &PromptAssemblyRequest,
    ) -> Result<PromptAssemblyAnswer, String> {
        let (api_id, name) = Self::template_key(&request.preset_ref)?;
        let shown = format!("presets/{api_id}/{name}.json");
        let text = self
            .templates
            .read_preset_template(PresetKey::new(&api_id, &name))
            .await
            .map_err(|err| format!("preset template {shown}: {err}"))?
            .ok_or_else(|| format!("preset template {shown}: not found"))?;
        let template: PresetTemplate =
            serde_json::from_str(&text).map_err(|err| format!("preset template {shown}: {err}"))?;
        let messages = template_messages(&template, request, &shown)?;
        Ok(PromptAssemblyAnswer {
            prompt_snapshot: json!({"messages": messages, "contextPolicy": request.agent_context_policy}),
            assembly: json!({"engine": "template", "preset": request.preset_ref, "template": format!("{name}.json")}),
            frozen_run_input_snapshot: None,
            generation_intent: None,
            settings: None,
        })
    }
}

/// The messages `template` makes of `request`: its messages with the agent's prompt and task
/// filled in, the conversation where it inserts `history`.
fn template_messages(
    template: &PresetTemplate,
    request: &PromptAssemblyRequest,
    shown: &str,
) -> Result<Vec<Value>, String> {
    let mut messages = Vec::new();
    for entry in &template.messages {
        match entry {
            TemplateEntry::Message { role, content } => {
                let content = content
                    .replace("{{agentSystemPrompt}}", &request.agent_system_prompt)
                    .replace("{{agentTask}}", &request.agent_task_prompt);
                // A root agent without a request has no task: its message drops out.
                if !content.trim().is_empty() {
                    messages.push(json!({"role": role, "content": content}));
                }
            }
            TemplateEntry::Insert { insert } if insert == "history" => {
                if let Some(frozen) = request
                    .frozen_run_input_snapshot
                    .get("messages")
                    .and_then(Value::as_array)
                {
                    messages.extend(frozen.iter().cloned());
                }
            }
            TemplateEntry::Insert { insert } => {
                return Err(format!("unknown insert `{insert}` in {shown}"));
            }
        }
    }
    Ok(messages)
}

#[async_trait]
impl PromptAssemblyBroker for TemplatePromptBroker {
    async fn request_assembly(
        &self,
        request: PromptAssemblyRequest,
    ) -> Result<PendingPromptAssembly, HostBridgeError> {
        let answer = self
            .assemble(&request)
            .await
            .map_err(HostBridgeError::Rejected);
        Ok(Box::pin(std::future::ready(answer)))
    }
}
