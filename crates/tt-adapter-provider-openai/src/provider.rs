//! `OpenAiProvider`: the `ModelProvider` over `POST {baseUrl}/chat/completions`, whole
//! (`complete`) or streamed as server-sent events (`stream`), cancellable at every wait.

use tt_domain::model::{AgentModelRequest, AgentModelResponse};
use tt_ports::ModelError;

use crate::config::{OpenAiConfig, OpenAiError};
use crate::request::{BodyOptions, request_body};
use crate::response::decode_body;
use crate::stream::ChunkAccumulator;
use tt_provider_http::exchange::{HttpEndpoint, WireFormat, endpoint_url, request_headers};

/// The provider name, as shown in events.
pub const OPENAI_PROVIDER_NAME: &str = "openai";

/// An OpenAI-compatible Chat Completions client (OpenAI, llama.cpp's `llama-server`, vLLM,
/// Ollama, …).
#[derive(Debug)]
pub struct OpenAiProvider {
    config: OpenAiConfig,
    http: HttpEndpoint,
}

impl OpenAiProvider {
    pub fn new(config: OpenAiConfig) -> Result<Self, OpenAiError> {
        let endpoint = endpoint_url(&config.base_url, "/chat/completions")
            .ok_or_else(|| OpenAiError::InvalidBaseUrl(config.base_url.clone()))?;
        let credential = config
            .api_key
            .as_ref()
            .map(|key| ("authorization", format!("Bearer {key}")));
        let headers = request_headers(&[], credential, &config.extra_headers)
            .map_err(OpenAiError::InvalidHeader)?;
        let http = HttpEndpoint::new(config.endpoint_config(endpoint, headers))
            .map_err(OpenAiError::Client)?;
        Ok(Self { config, http })
    }

    /// Whether the runtime should call `stream` rather than `complete` for this connection.
    pub fn prefers_streaming(&self) -> bool {
        self.config.stream
    }

    /// The URL requests are posted to.
    pub fn endpoint(&self) -> &str {
        self.http.url()
    }

    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    pub(crate) fn http(&self) -> &HttpEndpoint {
        &self.http
    }

    fn body(&self, request: &AgentModelRequest, stream: bool) -> Result<Vec<u8>, ModelError> {
        let model = self.config.model_for(request)?;
        let body = request_body(
            request,
            BodyOptions {
                model,
                stream,
                max_tokens: [request.max_output_tokens, self.config.max_tokens]
                    .into_iter()
                    .flatten()
                    .min()
                    .unwrap_or(crate::config::DEFAULT_MAX_TOKENS),
                token_limit_field: self.config.token_limit_field,
                replay_reasoning_content: self.config.replay_reasoning_content,
                dialect: self.config.dialect,
                unsupported_settings: self.config.unsupported_settings,
            },
        )?;
        serde_json::to_vec(&body)
            .map_err(|err| ModelError::Other(format!("cannot encode the request: {err}")))
    }
}

impl OpenAiProvider {
    /// What of `settings` this connection leaves out (`ModelProvider::check_settings`).
    fn unsupported_settings(
        &self,
        settings: &tt_domain::generation::GenerationSettings,
        _max_output_tokens: Option<u32>,
    ) -> Result<Vec<tt_ports::DroppedSetting>, ModelError> {
        crate::settings::check(
            settings,
            self.config.dialect,
            self.config.unsupported_settings,
        )
    }
}

impl WireFormat for OpenAiProvider {
    type Accumulator = ChunkAccumulator;
    const PROVIDER_FORMAT: &'static str = "openai_chat_completions";

    fn request_body(
        &self,
        request: &AgentModelRequest,
        stream: bool,
    ) -> Result<Vec<u8>, ModelError> {
        self.body(request, stream)
    }

    fn decode_body(body: &[u8]) -> Result<AgentModelResponse, ModelError> {
        decode_body(body)
    }
}

tt_provider_http::http_model_provider!(OpenAiProvider, OPENAI_PROVIDER_NAME);
