//! `AnthropicProvider`: the `ModelProvider` over `POST {baseUrl}/v1/messages`, whole
//! (`complete`) or streamed as server-sent events (`stream`), cancellable at every wait.

use tt_domain::model::{AgentModelRequest, AgentModelResponse, ModelDelta};
use tt_ports::{ModelDeltaSink, ModelError};

use crate::config::{ANTHROPIC_VERSION, AnthropicConfig, AnthropicError};
use crate::request::{BodyOptions, request_body};
use crate::response::decode_body;
use crate::settings::thinking_budget;
use crate::stream::EventAccumulator;
use tt_provider_http::exchange::{HttpEndpoint, WireFormat, encode_body};

/// The provider name, as shown in events.
pub const ANTHROPIC_PROVIDER_NAME: &str = "anthropic";

/// An Anthropic Messages API client.
#[derive(Debug)]
pub struct AnthropicProvider {
    config: AnthropicConfig,
    http: HttpEndpoint,
}

impl AnthropicProvider {
    pub fn new(config: AnthropicConfig) -> Result<Self, AnthropicError> {
        let credential = config
            .api_key
            .as_ref()
            .map(|key| ("x-api-key", key.clone()));
        let http = config.http_endpoint(
            "/v1/messages",
            &[("anthropic-version", ANTHROPIC_VERSION)],
            credential,
        )?;
        if config.max_tokens == 0
            || config
                .thinking_budget_tokens
                .is_some_and(|budget| budget >= config.max_tokens)
        {
            return Err(AnthropicError::InvalidTokenLimits(format!(
                "max_tokens {}, thinking budget {:?}",
                config.max_tokens, config.thinking_budget_tokens
            )));
        }
        Ok(Self { config, http })
    }

    tt_provider_http::provider_accessors!(AnthropicConfig);

    /// The connection's `max_tokens`, lowered to the request's own limit when that is lower
    /// and still above the thinking budget (the API refuses a budget at or over `max_tokens`).
    /// What of `settings` this connection leaves out (`ModelProvider::check_settings`), with
    /// the output limit and thinking budget its requests would carry.
    fn unsupported_settings(
        &self,
        settings: &tt_domain::generation::GenerationSettings,
        max_output_tokens: Option<u32>,
    ) -> Result<Vec<tt_ports::DroppedSetting>, ModelError> {
        let thinking = thinking_budget(settings, self.config.thinking_budget_tokens);
        crate::settings::check(
            settings,
            thinking,
            self.output_limit(max_output_tokens, thinking),
            self.config.unsupported_settings,
        )
    }

    /// Anthropic lists no model windows a request could use: the known windows of Claude
    /// model ids apply (docs/providers.md).
    async fn server_context_window(
        &self,
        _model_id: Option<&str>,
        _cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Option<tt_ports::ServerContextWindow>, ModelError> {
        Ok(None)
    }

    fn max_tokens(&self, request: &AgentModelRequest, thinking: Option<u32>) -> u32 {
        self.output_limit(request.max_output_tokens, thinking)
    }

    fn output_limit(&self, requested: Option<u32>, thinking: Option<u32>) -> u32 {
        let cap = self.config.max_tokens;
        match requested {
            Some(limit) if limit < cap && thinking.is_none_or(|budget| budget < limit) => limit,
            _ => cap,
        }
    }
}

impl WireFormat for AnthropicProvider {
    type Accumulator = EventAccumulator;
    const PROVIDER_FORMAT: &'static str = "anthropic_messages";

    fn request_body(
        &self,
        request: &AgentModelRequest,
        stream: bool,
    ) -> Result<Vec<u8>, ModelError> {
        let model = self.config.model_for(request)?;
        let thinking = thinking_budget(&request.generation, self.config.thinking_budget_tokens);
        let body = request_body(
            request,
            BodyOptions {
                model,
                stream,
                max_tokens: self.max_tokens(request, thinking),
                thinking_budget_tokens: thinking,
                prompt_caching: self.config.prompt_caching,
                unsupported_settings: self.config.unsupported_settings,
            },
        )?;
        encode_body(&body)
    }

    fn decode_body(body: &[u8]) -> Result<AgentModelResponse, ModelError> {
        decode_body(body)
    }

    /// A `thinking` block that arrived whole is reasoning output.
    fn forward_native(value: &serde_json::Value, sink: &dyn ModelDeltaSink) {
        if let Some(thinking) = value
            .get("thinking")
            .and_then(serde_json::Value::as_str)
            .filter(|thinking| !thinking.is_empty())
        {
            sink.delta(ModelDelta::Reasoning {
                text: thinking.to_owned(),
            });
        }
    }
}

tt_provider_http::http_model_provider!(AnthropicProvider, ANTHROPIC_PROVIDER_NAME);
