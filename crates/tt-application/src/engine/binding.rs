//! Model bindings: which provider and model an invocation talks to, from its profile's `model`
//! section (`currentPromptSnapshot`: the run's default provider; `connectionRef` + `modelId`: a
//! named connection; `requiresConfiguration`: cannot run).

use serde_json::json;
use std::sync::Arc;
use tt_domain::event::{EventLevel, EventScope, RunEventType};
use tt_domain::generation::GenerationSettings;
use tt_domain::ids::InvocationId;
use tt_domain::model::ProviderSession;
use tt_domain::profile::{ModelMode, ResolvedProfile};
use tt_ports::ModelProvider;

use crate::engine::context::RunContext;
use crate::error::{ApplicationError, ApplicationResult};

/// The provider and model one invocation uses, and the settings of its requests.
#[derive(Clone)]
pub(crate) struct ModelBinding {
    pub provider: Arc<dyn ModelProvider>,
    /// `None`: the provider's own default model.
    pub model_id: Option<String>,
    /// The connection's settings with the profile's `model.generation` over them (the host's
    /// prompt assembly and the run request go over these, see [`ModelBinding::settings`]).
    pub base_generation: GenerationSettings,
    /// Settings the host's prompt assembly returned for this agent, if any.
    pub assembled_generation: Option<GenerationSettings>,
    /// The run request's settings, the top layer.
    pub run_generation: GenerationSettings,
    /// The profile's `model.maxOutputTokens`, under any layer's `maxOutputTokens`.
    pub profile_max_output_tokens: Option<u32>,
    /// The model's context window: the profile's `model.contextWindowTokens`, else the
    /// connection's, else the known window of the model id; `None`: requests are never
    /// measured against a window.
    pub context_window_tokens: Option<u64>,
    /// What the model's tokens cost, when a price is known (docs/providers.md, "Cost").
    pub price: Option<tt_domain::cost::ModelPrice>,
    /// The connection's deadline of one model call, under the profile's
    /// `run.modelRetry.deadlineSeconds`.
    pub connection_call_deadline: Option<std::time::Duration>,
}

/// What one request carries: the resolved settings without `maxOutputTokens`, and the output
/// limit (the request's own field).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RequestSettings {
    pub generation: GenerationSettings,
    pub max_output_tokens: Option<u32>,
}

impl ModelBinding {
    /// The layers put together: connection < profile < prompt assembly < run request.
    pub(crate) fn settings(&self) -> RequestSettings {
        let mut generation = self.base_generation.clone();
        if let Some(assembled) = &self.assembled_generation {
            generation = generation.overlay(assembled);
        }
        let mut generation = generation.overlay(&self.run_generation);
        let max_output_tokens = generation
            .max_output_tokens
            .take()
            .or(self.profile_max_output_tokens);
        RequestSettings {
            generation,
            max_output_tokens,
        }
    }
}

impl std::fmt::Debug for ModelBinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelBinding")
            .field("provider", &self.provider.name())
            .field("model_id", &self.model_id)
            .field("settings", &self.settings())
            .finish()
    }
}

/// The run's own connection for the conversation's current model (checked at start, so a miss
/// here means its file went away during the run).
async fn resolve_connection(
    ctx: &RunContext,
    name: &str,
) -> ApplicationResult<tt_ports::ResolvedConnection> {
    ctx.services
        .connections
        .resolve(name)
        .await?
        .ok_or_else(|| connection_not_found(name))
}

/// `agent.model_connection_not_found` for a run started on a connection nobody configured.
pub(crate) fn connection_not_found(name: &str) -> ApplicationError {
    ApplicationError::fatal(
        "agent.model_connection_not_found",
        format!("the model connection `{name}` is not configured"),
    )
}

/// Resolves the binding, journals `agent_model_binding_resolved`, and remembers the provider
/// session so it is closed when the run ends.
pub(crate) async fn resolve_model_binding(
    ctx: &RunContext,
    invocation_id: &InvocationId,
    profile: &ResolvedProfile,
    assembled_generation: Option<GenerationSettings>,
) -> ApplicationResult<ModelBinding> {
    let model = &profile.definition.model;
    let run = ctx.run_snapshot().await;
    // A branch may change the model of chosen profiles (docs/branching.md).
    let change = run
        .profile_models
        .get(profile.id())
        .cloned()
        .unwrap_or_default();
    let run_generation = run.generation.overlay(&change.generation);
    let bind = |provider,
                model_id: Option<String>,
                connection: GenerationSettings,
                info: &tt_ports::ConnectionModelInfo| ModelBinding {
        context_window_tokens: model
            .context_window_tokens
            .or_else(|| info.context_window(model_id.as_deref())),
        price: info.price(model_id.as_deref()),
        connection_call_deadline: info.call_deadline,
        provider,
        model_id,
        base_generation: connection.overlay(&model.generation),
        assembled_generation: assembled_generation.clone(),
        run_generation: run_generation.clone(),
        profile_max_output_tokens: model.max_output_tokens,
    };
    let mode = if change.connection_ref.is_some() {
        ModelMode::ConnectionRef
    } else {
        model.mode
    };
    let (binding, payload) = match mode {
        ModelMode::RequiresConfiguration => {
            return Err(ApplicationError::fatal(
                "agent.profile_model_requires_configuration",
                format!(
                    "profile `{}` needs a model to be configured before it can run",
                    profile.id()
                ),
            ));
        }
        ModelMode::CurrentPromptSnapshot => {
            let (provider, payload, connection, info) = match &ctx.connection_ref {
                None => {
                    let provider = Arc::clone(&ctx.services.model);
                    let payload = json!({"mode": "currentPromptSnapshot", "provider": provider.name(), "modelId": null});
                    (
                        provider,
                        payload,
                        GenerationSettings::default(),
                        ctx.services.model_info.clone(),
                    )
                }
                Some(name) => {
                    let resolved = resolve_connection(ctx, name).await?;
                    let payload = json!({
                        "mode": "currentPromptSnapshot", "connectionRef": name, "modelId": null,
                        "provider": resolved.provider.name(), "connection": resolved.description,
                    });
                    (
                        resolved.provider,
                        payload,
                        resolved.generation,
                        resolved.model_info,
                    )
                }
            };
            let payload = with_provider_fields(payload, provider.as_ref());
            (bind(provider, None, connection, &info), payload)
        }
        ModelMode::ConnectionRef => {
            let (name, model_id) = match &change.connection_ref {
                Some(name) => (name.as_str(), None),
                None => (
                    model.connection_ref.as_deref().unwrap_or_default(),
                    model.model_id.clone(),
                ),
            };
            let resolved = ctx.services.connections.resolve(name).await?.ok_or_else(|| {
                ApplicationError::fatal(
                    "agent.model_connection_not_found",
                    format!("profile `{}` names the model connection `{name}`, which is not configured", profile.id()),
                )
            })?;
            let payload = with_provider_fields(
                json!({
                    "mode": "connectionRef", "connectionRef": name, "modelId": model_id,
                    "provider": resolved.provider.name(), "connection": resolved.description,
                }),
                resolved.provider.as_ref(),
            );
            (
                bind(
                    resolved.provider,
                    model_id.clone(),
                    resolved.generation,
                    &resolved.model_info,
                ),
                payload,
            )
        }
    };
    let mut payload = payload;
    payload["invocationId"] = json!(invocation_id);
    payload["profileId"] = json!(profile.id());
    // Only when something is set, so runs on server defaults journal what they did before.
    let settings = binding.settings();
    if !settings.generation.is_empty() || settings.max_output_tokens.is_some() {
        let mut generation = json!(settings.generation);
        if let Some(tokens) = settings.max_output_tokens {
            generation["maxOutputTokens"] = json!(tokens);
        }
        payload["generation"] = generation;
    }
    // Likewise the window and price, when known.
    if let Some(tokens) = binding.context_window_tokens {
        payload["contextWindowTokens"] = json!(tokens);
    }
    if let Some(price) = binding.price {
        payload["price"] = json!(price);
    }
    ctx.events
        .emit(
            &ctx.run_id,
            EventLevel::Info,
            RunEventType::AgentModelBindingResolved,
            payload,
            Some(&EventScope::agent(invocation_id)),
        )
        .await?;
    ctx.remember_session(
        ProviderSession::new(&ctx.run_id, invocation_id).session_id,
        Arc::clone(&binding.provider),
    );
    Ok(binding)
}

/// `object` with the provider fields of [`tt_ports::provider_fields`] added.
pub(crate) fn with_provider_fields(
    mut object: serde_json::Value,
    provider: &dyn tt_ports::ModelProvider,
) -> serde_json::Value {
    if let (Some(target), serde_json::Value::Object(fields)) =
        (object.as_object_mut(), tt_ports::provider_fields(provider))
    {
        target.extend(fields);
    }
    object
}
