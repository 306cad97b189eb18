//! `OpenAiProvider`: the `ModelProvider` over `POST {baseUrl}/chat/completions`, whole
//! (`complete`) or streamed as server-sent events (`stream`), cancellable at every wait.

use tt_domain::model::{AgentModelRequest, AgentModelResponse};
use tt_ports::ModelError;

use crate::config::{OpenAiConfig, OpenAiError};
use crate::request::{BodyOptions, request_body};
use crate::response::decode_body;
use crate::stream::ChunkAccumulator;
use tt_provider_http::exchange::{HttpEndpoint, WireFormat, encode_body};

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
        let credential = config
            .api_key
            .as_ref()
            .map(|key| ("authorization", format!("Bearer {key}")));
        let http = config.http_endpoint("/chat/completions", &[], credential)?;
        Ok(Self { config, http })
    }

    tt_provider_http::provider_accessors!(OpenAiConfig);

    pub(crate) fn http(&self) -> &HttpEndpoint {
        &self.http
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
        encode_body(&body)
    }

    fn decode_body(body: &[u8]) -> Result<AgentModelResponse, ModelError> {
        decode_body(body)
    }
}

tt_provider_http::http_model_provider!(OpenAiProvider, OPENAI_PROVIDER_NAME);
