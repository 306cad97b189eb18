//! The model provider port: one completion over the canonical IR, cancellable.

use async_trait::async_trait;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tt_domain::model::{AgentModelRequest, AgentModelResponse, ModelDelta};

use crate::error::ModelError;

/// Receives partial output while a streamed call is in flight. Must not block.
pub trait ModelDeltaSink: Send + Sync {
    fn delta(&self, delta: ModelDelta);
}

#[async_trait]
pub trait ModelProvider: Send + Sync {
    /// A short name for events and errors (`scripted`, `openai`, …).
    fn name(&self) -> &str;

    /// Runs one model call. Must return `ModelError::Cancelled` promptly once `cancel` fires,
    /// aborting any in-flight request. The request is borrowed: the runtime keeps the agent's
    /// history, and a retry sends the same request again, so a provider copies only what it
    /// must keep.
    async fn complete(
        &self,
        request: &AgentModelRequest,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError>;

    /// Like `complete`, forwarding partial output to `sink` as it arrives. The returned response
    /// is the complete one (tool-call fragments reassembled exactly). Providers that cannot
    /// stream keep this default, which forwards nothing.
    async fn stream(
        &self,
        request: &AgentModelRequest,
        sink: Arc<dyn ModelDeltaSink>,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        let _ = sink;
        self.complete(request, cancel).await
    }

    /// Releases provider-side state of a session (`runId:invocationId`). Best effort.
    async fn close_session(&self, _session_id: &str) {}

    /// The request format on the wire (`openai_chat_completions`, `anthropic_messages`, …), for
    /// events (`providerFormat`). Defaults to [`name`](Self::name).
    fn provider_format(&self) -> &str {
        self.name()
    }

    /// How requests travel (`http`, or `in_process` for a provider that calls nothing), for
    /// events (`transport`).
    fn transport(&self) -> &str {
        "in_process"
    }

    /// Asks the server what window it serves `model_id` (or the connection's default model)
    /// with: llama.cpp's `/props`, an OpenAI-compatible `/v1/models` entry, Ollama's model
    /// info (docs/providers.md, "The window"). Never sends a model request. `Ok(None)`: the
    /// server does not say (no such endpoint, no such field); `Err`: it could not be asked
    /// (unreachable, timed out), so a later binding may ask again. A caller treats both as an
    /// unknown window: a probe never fails a run. The runtime caches the answer per connection
    /// and model, so the engine may ask once per binding.
    async fn context_window(
        &self,
        _model_id: Option<&str>,
        _cancel: CancellationToken,
    ) -> Result<Option<ServerContextWindow>, ModelError> {
        Ok(None)
    }

    /// Remembers the window a refusal of this provider stated for `model_id` (or the
    /// connection's default model): the runtime's cache of windows per connection and model
    /// keeps it, so the next agent bound to the model starts from it. A provider without such a
    /// cache ignores it (the default).
    async fn remember_context_window(&self, _model_id: Option<&str>, _window: ServerContextWindow) {
    }

    /// Checks `settings` (a request's layered generation settings, `max_output_tokens` its
    /// output limit) against what the provider takes, before the agent's first request. A
    /// connection that refuses settings it does not take (the default) answers
    /// `Err(ModelError::SettingUnsupported)`; one that drops them answers the settings it will
    /// leave out of every request, each with why. Providers that take everything keep this
    /// default.
    fn check_settings(
        &self,
        _settings: &tt_domain::generation::GenerationSettings,
        _max_output_tokens: Option<u32>,
    ) -> Result<Vec<DroppedSetting>, ModelError> {
        Ok(Vec::new())
    }
}

/// A model's context window as its server states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerContextWindow {
    /// Tokens one request may hold (llama.cpp: one slot's share).
    pub tokens: u64,
    /// Where it was read, for events and hosts (`/props`, `/v1/models`, `/api/show`, …).
    pub source: String,
}

/// What a connection does with a generation setting its provider does not take
/// (docs/providers.md, "Generation settings").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnsupportedSettings {
    /// The agent fails before its first request, with `model.setting_unsupported`.
    #[default]
    Refuse,
    /// The setting is left out of every request; the runtime journals a warning when the agent
    /// starts (`model_settings_dropped`). LiteLLM's `drop_params`.
    Drop,
}

/// A generation setting a connection leaves out of its requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DroppedSetting {
    /// The setting's name (`seed`, `topK`, …).
    pub setting: String,
    /// Why the provider does not take it.
    pub reason: String,
}

/// The provider fields every model event carries (the contract's names): `chatCompletionSource`
/// (the provider), `customApiFormat` (none: each adapter speaks one format), `providerFormat`,
/// `transport`, and `nativeContinuation` with `previousResponseId` (always `false` / `null`:
/// both supported formats resend the conversation on every request instead of continuing a
/// stored response).
pub fn provider_wire(provider: &dyn ModelProvider) -> tt_domain::event_payload::ProviderWire {
    tt_domain::event_payload::ProviderWire {
        chat_completion_source: provider.name().to_owned(),
        custom_api_format: None,
        provider_format: provider.provider_format().to_owned(),
        transport: provider.transport().to_owned(),
        native_continuation: false,
        previous_response_id: None,
    }
}

/// [`provider_wire`] as a JSON object.
pub fn provider_fields(provider: &dyn ModelProvider) -> serde_json::Value {
    let mut fields = serde_json::Map::new();
    add_provider_fields(&mut fields, provider);
    serde_json::Value::Object(fields)
}

/// The fields of [`provider_wire`] added to `object` after its own, in the same order (a key
/// it has already keeps its place and takes the new value).
pub fn add_provider_fields(
    object: &mut serde_json::Map<String, serde_json::Value>,
    provider: &dyn ModelProvider,
) {
    // Each field put in as it is: no `Value` map of them to move over (a test compares the
    // keys and values with `ProviderWire` serialized).
    let tt_domain::event_payload::ProviderWire {
        chat_completion_source,
        custom_api_format,
        provider_format,
        transport,
        native_continuation,
        previous_response_id,
    } = provider_wire(provider);
    let fields: [(&str, serde_json::Value); 6] = [
        ("chatCompletionSource", chat_completion_source.into()),
        ("customApiFormat", custom_api_format.into()),
        ("providerFormat", provider_format.into()),
        ("transport", transport.into()),
        ("nativeContinuation", native_continuation.into()),
        ("previousResponseId", previous_response_id.into()),
    ];
    for (key, value) in fields {
        object.insert(key.to_owned(), value);
    }
}

/// Where a profile's `model.connectionRef` leads: a provider and what it is, for events.
#[derive(Clone)]
pub struct ResolvedConnection {
    pub provider: std::sync::Arc<dyn ModelProvider>,
    /// Non-secret description for events and hosts (kind, base URL, default model…).
    pub description: serde_json::Value,
    /// The connection's default generation settings: the lowest layer, under the profile's.
    pub generation: tt_domain::generation::GenerationSettings,
    /// Its default model, window and prices.
    pub model_info: ConnectionModelInfo,
}

/// What a connection says about its models: the default model id, the window (when declared),
/// prices by model id and the deadline of one model call. The run's default provider has one
/// too (`RuntimeServices`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConnectionModelInfo {
    /// The model the connection uses when a profile names none.
    pub default_model: Option<String>,
    /// The window of the connection's models, when declared: it wins over the known default
    /// of a model id (`tt_domain::context_window::known_context_window`); a profile's
    /// `model.contextWindowTokens` wins over it.
    pub context_window_tokens: Option<u64>,
    /// Prices by model id, over the defaults (`tt_domain::cost::price_for`).
    pub prices: tt_domain::cost::PriceTable,
    /// The longest one model call on this connection may take, its attempts and the waits
    /// between them included, when the profile's `run.modelRetry.deadlineSeconds` names none;
    /// `None`: the default (`tt_domain::profile::DEFAULT_MODEL_CALL_DEADLINE_SECONDS`).
    pub call_deadline: Option<std::time::Duration>,
    /// The connection's cap on every answer's tokens (its adapter sends no more): the output
    /// limit, and so the answer reserve, of an agent whose settings set none, and the most any
    /// setting can ask for.
    pub max_output_tokens: Option<u32>,
}

impl ConnectionModelInfo {
    /// The window of `model_id` (or the default model): declared, else known.
    pub fn context_window(&self, model_id: Option<&str>) -> Option<u64> {
        self.context_window_tokens.or_else(|| {
            model_id
                .or(self.default_model.as_deref())
                .and_then(tt_domain::context_window::known_context_window)
        })
    }

    /// The price of `model_id` (or the default model).
    pub fn price(&self, model_id: Option<&str>) -> Option<tt_domain::cost::ModelPrice> {
        tt_domain::cost::price_for(&self.prices, model_id.or(self.default_model.as_deref()))
    }
}

impl std::fmt::Debug for ResolvedConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolvedConnection")
            .field("provider", &self.provider.name())
            .finish_non_exhaustive()
    }
}

/// Resolves named model connections, so each invocation may run on its own provider and model.
#[async_trait]
pub trait ModelConnections: Send + Sync {
    /// `Ok(None)` when no connection has that name.
    async fn resolve(&self, connection_ref: &str)
    -> Result<Option<ResolvedConnection>, ModelError>;
}

/// No named connections: every profile uses the run's default provider.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoConnections;

#[async_trait]
impl ModelConnections for NoConnections {
    async fn resolve(
        &self,
        _connection_ref: &str,
    ) -> Result<Option<ResolvedConnection>, ModelError> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tt_domain::model::{AgentModelRequest, AgentModelResponse};

    /// A provider with its own name, format and transport.
    struct Wired;

    #[async_trait::async_trait]
    impl ModelProvider for Wired {
        fn name(&self) -> &str {
            "wired"
        }

        async fn complete(
            &self,
            _request: &AgentModelRequest,
            _cancel: CancellationToken,
        ) -> Result<AgentModelResponse, ModelError> {
            Err(ModelError::Cancelled)
        }

        fn provider_format(&self) -> &str {
            "wired_chat"
        }

        fn transport(&self) -> &str {
            "pipe"
        }
    }

    #[test]
    fn provider_fields_are_the_wire_serialized_after_the_objects_own() {
        let mut object = serde_json::Map::new();
        object.insert("mode".to_owned(), "x".into());
        object.insert("transport".to_owned(), "old".into());
        add_provider_fields(&mut object, &Wired);
        let mut expected = serde_json::Map::new();
        expected.insert("mode".to_owned(), "x".into());
        expected.insert("transport".to_owned(), serde_json::Value::Null);
        let serde_json::Value::Object(wire) = serde_json::to_value(provider_wire(&Wired)).unwrap()
        else {
            panic!("the wire is an object");
        };
        expected.extend(wire);
        assert_eq!(
            serde_json::to_string(&object).unwrap(),
            serde_json::to_string(&expected).unwrap()
        );
        assert_eq!(object["transport"], "pipe");
        assert_eq!(
            provider_fields(&Wired),
            serde_json::to_value(provider_wire(&Wired)).unwrap()
        );
    }
}
