//! Model bindings: which provider and model an invocation talks to, from its profile's `model`
//! section (`currentPromptSnapshot`: the run's default provider; `connectionRef` + `modelId`: a
//! named connection; `requiresConfiguration`: cannot run).

use std::sync::Arc;
use tt_domain::error_codes;
use tt_domain::event::EventLevel;
use tt_domain::event_payload::{AgentModelBindingResolved, ProviderWire};
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
    /// The connection's cap on every answer (`tt-agent run --max-tokens`), which its adapter
    /// applies to every request: the output limit when no layer sets one, and the most any
    /// layer's limit can be.
    pub connection_max_output_tokens: Option<u32>,
    /// The model id the connection's windows are kept under: the binding's, else the
    /// connection's default model.
    pub window_model_id: Option<String>,
    /// The model's context window: the profile's `model.contextWindowTokens`, else the
    /// connection's, else what the server says (asked once per connection and model), else the
    /// known window of the model id; `None`: requests are never measured against a window.
    pub context_window_tokens: Option<u64>,
    /// What the model's tokens cost, when a price is known (docs/providers.md, "Cost").
    pub price: Option<tt_domain::cost::ModelPrice>,
    /// The connection's deadline of one model call, under the profile's
    /// `run.modelRetry.deadlineSeconds`.
    pub connection_call_deadline: Option<std::time::Duration>,
    /// The prompt-cache lifetime the profile asks for (`model.cache.ttl`), when not the
    /// provider's default; providers without such a setting ignore it.
    pub cache_ttl: Option<tt_domain::profile::CacheTtl>,
    /// 0: the profile's own binding; n: the n-th of its `model.fallbacks`
    /// (`engine::fallback`).
    pub fallback_index: u32,
    /// The named connection, when the binding has one (for the fallback switch's event).
    pub connection_ref: Option<String>,
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
        let layered = generation
            .max_output_tokens
            .take()
            .or(self.profile_max_output_tokens);
        // The adapter sends the smaller of the two: the answer reserve is what it sends.
        let max_output_tokens = match (layered, self.connection_max_output_tokens) {
            (Some(limit), Some(cap)) => Some(limit.min(cap)),
            (limit, cap) => limit.or(cap),
        };
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
        error_codes::AGENT_MODEL_CONNECTION_NOT_FOUND,
        format!("the model connection `{name}` is not configured"),
    )
}

/// What `agent_model_binding_resolved` says of the connection an agent is bound to, before
/// the agent's own facts.
pub(crate) struct ConnectionFacts {
    mode: &'static str,
    connection_ref: Option<String>,
    model_id: Option<String>,
    provider: String,
    /// The connection's non-secret description, with `connection_ref`.
    connection: Option<serde_json::Value>,
}

impl ConnectionFacts {
    fn of(
        mode: &'static str,
        connection: Option<(&str, &tt_ports::ResolvedConnection)>,
        model_id: Option<String>,
        provider: &dyn ModelProvider,
    ) -> Self {
        Self {
            mode,
            connection_ref: connection.map(|(name, _)| name.to_owned()),
            model_id,
            provider: provider.name().to_owned(),
            connection: connection.map(|(_, resolved)| resolved.description.clone()),
        }
    }
}

/// The model `profile` talks to in this run, what its `agent_model_binding_resolved` says of
/// the connection, and the connection's facts; nothing is journaled or remembered (a return
/// gate's grader is bound this way: its calls are journaled as gradings, not as an agent's).
pub(crate) async fn bind_model(
    ctx: &RunContext,
    profile: &ResolvedProfile,
    assembled_generation: Option<GenerationSettings>,
) -> ApplicationResult<(ModelBinding, ConnectionFacts, tt_ports::ConnectionModelInfo)> {
    let model = &profile.definition.model;
    // A branch may change the model of chosen profiles (docs/branching.md).
    let (change, run_generation) = ctx
        .read_run(|run| {
            let change = run
                .profile_models
                .get(profile.id())
                .cloned()
                .unwrap_or_default();
            let generation = run.generation.overlay(&change.generation);
            (change, generation)
        })
        .await;
    let bind = |provider,
                model_id: Option<String>,
                connection: GenerationSettings,
                info: &tt_ports::ConnectionModelInfo| ModelBinding {
        // The server's and the model id's windows come later (`learn_window`).
        context_window_tokens: model.context_window_tokens.or(info.context_window_tokens),
        price: info.price(model_id.as_deref()),
        connection_call_deadline: info.call_deadline,
        cache_ttl: model.cache.ttl().requested(),
        fallback_index: 0,
        connection_ref: None,
        base_generation: connection.overlay(&model.generation),
        assembled_generation: assembled_generation.clone(),
        run_generation: run_generation.clone(),
        profile_max_output_tokens: model.max_output_tokens,
        connection_max_output_tokens: info.max_output_tokens,
        window_model_id: model_id.clone().or_else(|| info.default_model.clone()),
        provider,
        model_id,
    };
    let mode = if change.connection_ref.is_some() {
        ModelMode::ConnectionRef
    } else {
        model.mode
    };
    let (binding, facts, info) = match mode {
        ModelMode::RequiresConfiguration => {
            return Err(ApplicationError::fatal(
                error_codes::AGENT_PROFILE_MODEL_REQUIRES_CONFIGURATION,
                format!(
                    "profile `{}` needs a model to be configured before it can run",
                    profile.id()
                ),
            ));
        }
        ModelMode::CurrentPromptSnapshot => {
            let (provider, facts, connection, info) = current_connection(ctx).await?;
            (bind(provider, None, connection, &info), facts, info)
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
                    error_codes::AGENT_MODEL_CONNECTION_NOT_FOUND,
                    format!("profile `{}` names the model connection `{name}`, which is not configured", profile.id()),
                )
            })?;
            let facts = ConnectionFacts::of(
                "connectionRef",
                Some((name, &resolved)),
                model_id.clone(),
                resolved.provider.as_ref(),
            );
            (
                bind(
                    resolved.provider,
                    model_id.clone(),
                    resolved.generation,
                    &resolved.model_info,
                ),
                facts,
                resolved.model_info,
            )
        }
    };
    Ok((binding, facts, info))
}

/// The run's own connection (the conversation's model): the host's default provider, or the
/// named connection the run started on.
async fn current_connection(
    ctx: &RunContext,
) -> ApplicationResult<(
    Arc<dyn tt_ports::ModelProvider>,
    ConnectionFacts,
    GenerationSettings,
    tt_ports::ConnectionModelInfo,
)> {
    const MODE: &str = "currentPromptSnapshot";
    Ok(match &ctx.connection_ref {
        None => {
            let provider = Arc::clone(&ctx.services.model);
            let facts = ConnectionFacts::of(MODE, None, None, provider.as_ref());
            (
                provider,
                facts,
                GenerationSettings::default(),
                ctx.services.model_info.clone(),
            )
        }
        Some(name) => {
            let resolved = resolve_connection(ctx, name).await?;
            let facts = ConnectionFacts::of(
                MODE,
                Some((name, &resolved)),
                None,
                resolved.provider.as_ref(),
            );
            (
                resolved.provider,
                facts,
                resolved.generation,
                resolved.model_info,
            )
        }
    })
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
    let (binding, facts, info) = bind_model(ctx, profile, assembled_generation).await?;
    let mut binding = binding;
    let window = learn_window(ctx, &binding, model.context_window_tokens, &info).await;
    binding.context_window_tokens = window.as_ref().map(|w| w.tokens);
    journal_binding(ctx, invocation_id, profile, &mut binding, facts, window).await?;
    Ok(binding)
}

/// Journals `agent_model_binding_resolved` for a binding resolved on the connection `facts`
/// describe, remembers its provider session, and checks its settings.
async fn journal_binding(
    ctx: &RunContext,
    invocation_id: &InvocationId,
    profile: &ResolvedProfile,
    binding: &mut ModelBinding,
    facts: ConnectionFacts,
    window: Option<Window>,
) -> ApplicationResult<()> {
    binding.connection_ref.clone_from(&facts.connection_ref);
    let payload = binding_resolved(invocation_id, profile, binding, facts, window);
    ctx.events
        .record(&ctx.run_id, EventLevel::Info, &payload)
        .await?;
    ctx.remember_session(
        ProviderSession::new(&ctx.run_id, invocation_id).session_id,
        Arc::clone(&binding.provider),
    );
    check_settings(ctx, invocation_id, profile, binding, payload.connection_ref).await
}

/// The payload of `agent_model_binding_resolved`: the connection, then what the binding sets
/// beyond it: its settings only when something is set (so runs on server defaults journal what
/// they did before), and likewise its window and price, when known.
fn binding_resolved(
    invocation_id: &InvocationId,
    profile: &ResolvedProfile,
    binding: &ModelBinding,
    facts: ConnectionFacts,
    window: Option<Window>,
) -> AgentModelBindingResolved {
    let ProviderWire {
        chat_completion_source,
        custom_api_format,
        provider_format,
        transport,
        native_continuation,
        previous_response_id,
    } = tt_ports::provider_wire(binding.provider.as_ref());
    let settings = binding.settings();
    let generation = (!settings.generation.is_empty() || settings.max_output_tokens.is_some())
        .then(|| {
            let mut generation = settings.generation;
            generation.max_output_tokens = settings.max_output_tokens;
            Box::new(generation)
        });
    let (context_window_tokens, context_window_source, context_window_endpoint) = match window {
        Some(window) => (
            Some(window.tokens),
            Some(window.source.to_owned()),
            window.endpoint,
        ),
        None => (None, None, None),
    };
    AgentModelBindingResolved {
        mode: facts.mode.to_owned(),
        connection_ref: facts.connection_ref,
        model_id: facts.model_id,
        provider: facts.provider,
        connection: facts.connection,
        chat_completion_source,
        custom_api_format,
        provider_format,
        transport,
        native_continuation,
        previous_response_id,
        invocation_id: invocation_id.clone(),
        profile_id: profile.id().clone(),
        generation,
        context_window_tokens,
        context_window_source,
        context_window_endpoint,
        price: binding.price,
        cache_ttl: binding.cache_ttl.map(|ttl| ttl.as_str().to_owned()),
    }
}

/// The window of a binding and where it comes from.
struct Window {
    tokens: u64,
    /// `profile`, `connection`, `server` or `modelId`.
    source: &'static str,
    /// What the server answered, with `server`.
    endpoint: Option<String>,
}

/// The binding's window, first found: the profile's, the connection's (both declared: they
/// always win and the server is not asked), the server's (`ModelProvider::context_window`, cached
/// by the runtime per connection and model), the known window of the model id. A server that
/// cannot say, or cannot be asked, leaves the window to the next source: a probe never fails the
/// agent.
async fn learn_window(
    ctx: &RunContext,
    binding: &ModelBinding,
    profile_window: Option<u64>,
    info: &tt_ports::ConnectionModelInfo,
) -> Option<Window> {
    let declared = |tokens, source| Window {
        tokens,
        source,
        endpoint: None,
    };
    if let Some(tokens) = profile_window {
        return Some(declared(tokens, "profile"));
    }
    if let Some(tokens) = info.context_window_tokens {
        return Some(declared(tokens, "connection"));
    }
    let model_id = binding.window_model_id.as_deref();
    match binding
        .provider
        .context_window(model_id, ctx.cancel.clone())
        .await
    {
        Ok(Some(window)) => {
            return Some(Window {
                tokens: window.tokens,
                source: "server",
                endpoint: Some(window.source),
            });
        }
        Ok(None) => {}
        Err(error) => {
            tracing::debug!(%error, "the model server could not be asked for its window");
        }
    }
    info.context_window(model_id)
        .map(|tokens| declared(tokens, "modelId"))
}

/// Checks the settings the agent's requests carry against what its provider takes, before its
/// first request: a connection that refuses a setting fails the agent here
/// (`model.setting_unsupported`); one that drops it journals `model_settings_dropped`.
async fn check_settings(
    ctx: &RunContext,
    invocation_id: &InvocationId,
    profile: &ResolvedProfile,
    binding: &ModelBinding,
    connection_ref: Option<String>,
) -> ApplicationResult<()> {
    let settings = binding.settings();
    let dropped = binding
        .provider
        .check_settings(&settings.generation, settings.max_output_tokens)?;
    if dropped.is_empty() {
        return Ok(());
    }
    let payload = tt_domain::event_payload::ModelSettingsDropped {
        invocation_id: invocation_id.clone(),
        profile_id: profile.id().clone(),
        provider: binding.provider.name().to_owned(),
        connection_ref,
        dropped: dropped
            .into_iter()
            .map(|d| tt_domain::event_payload::DroppedSetting {
                setting: d.setting,
                reason: d.reason,
            })
            .collect(),
    };
    ctx.events
        .record(&ctx.run_id, EventLevel::Warn, &payload)
        .await?;
    Ok(())
}

/// `object` with the provider fields of [`tt_ports::provider_fields`] added.
pub(crate) fn with_provider_fields(
    mut object: serde_json::Value,
    provider: &dyn tt_ports::ModelProvider,
) -> serde_json::Value {
    if let Some(target) = object.as_object_mut() {
        tt_ports::add_provider_fields(target, provider);
    }
    object
}

/// The binding of the `index`-th entry (1-based) of the profile's `model.fallbacks`, in place
/// of `current`: the fallback's connection and model, the profile's settings over the
/// connection's, the prompt assembly's and the run's layers as `current` had them, the
/// window and price of the new model. Its settings are checked as a first binding's are; with
/// `journal`, settings its connection drops are journaled (`model_settings_dropped`), as at a
/// switch, but not when a resumed agent takes the binding up again. Nothing else is journaled
/// (`engine::fallback` journals the switch).
pub(crate) async fn resolve_fallback_binding(
    ctx: &RunContext,
    invocation_id: &InvocationId,
    profile: &ResolvedProfile,
    current: &ModelBinding,
    (index, journal): (u32, bool),
) -> ApplicationResult<Option<ModelBinding>> {
    let model = &profile.definition.model;
    let Some(fallback) = usize::try_from(index)
        .ok()
        .and_then(|index| index.checked_sub(1))
        .and_then(|at| model.fallbacks.get(at))
    else {
        return Ok(None);
    };
    let name = fallback.connection_ref.as_str();
    let resolved = ctx.services.connections.resolve(name).await?.ok_or_else(|| {
        ApplicationError::fatal(
            error_codes::AGENT_MODEL_CONNECTION_NOT_FOUND,
            format!(
                "profile `{}` falls back to the model connection `{name}`, which is not configured",
                profile.id()
            ),
        )
    })?;
    let info = &resolved.model_info;
    let model_id = Some(fallback.model_id.clone());
    let mut binding = ModelBinding {
        provider: resolved.provider,
        context_window_tokens: model.context_window_tokens.or(info.context_window_tokens),
        price: info.price(model_id.as_deref()),
        connection_call_deadline: info.call_deadline,
        base_generation: resolved.generation.overlay(&model.generation),
        assembled_generation: current.assembled_generation.clone(),
        run_generation: current.run_generation.clone(),
        profile_max_output_tokens: model.max_output_tokens,
        connection_max_output_tokens: info.max_output_tokens,
        window_model_id: model_id.clone(),
        model_id,
        cache_ttl: current.cache_ttl,
        fallback_index: index,
        connection_ref: Some(name.to_owned()),
    };
    let window = learn_window(ctx, &binding, model.context_window_tokens, info).await;
    binding.context_window_tokens = window.map(|w| w.tokens);
    ctx.remember_session(
        ProviderSession::new(&ctx.run_id, invocation_id).session_id,
        Arc::clone(&binding.provider),
    );
    if journal {
        check_settings(ctx, invocation_id, profile, &binding, Some(name.to_owned())).await?;
    } else {
        let settings = binding.settings();
        binding
            .provider
            .check_settings(&settings.generation, settings.max_output_tokens)?;
    }
    Ok(Some(binding))
}
