//! `OpenAiProvider`: the `ModelProvider` over `POST {baseUrl}/chat/completions`, whole
//! (`complete`) or streamed as server-sent events (`stream`), cancellable at every wait.

use std::sync::Arc;

use async_trait::async_trait;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use tokio_util::sync::CancellationToken;
use tt_domain::model::{AgentModelRequest, AgentModelResponse};
use tt_ports::{ModelDeltaSink, ModelError, ModelProvider};

use crate::config::{OpenAiConfig, OpenAiError};
use crate::request::{BodyOptions, request_body};
use crate::response::decode_body;
use crate::stream::ChunkAccumulator;
use tt_provider_http::exchange::{EndpointConfig, HttpEndpoint, WireFormat};

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
        let base = config.base_url.trim_end_matches('/');
        reqwest::Url::parse(base)
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https") && url.has_host())
            .ok_or_else(|| OpenAiError::InvalidBaseUrl(config.base_url.clone()))?;
        let endpoint = format!("{base}/chat/completions");
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(key) = &config.api_key {
            let mut value = HeaderValue::from_str(&format!("Bearer {key}"))
                .map_err(|_| OpenAiError::InvalidHeader("authorization".to_owned()))?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        for (name, value) in &config.extra_headers {
            let invalid = || OpenAiError::InvalidHeader(name.clone());
            let header_name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid())?;
            let mut header_value = HeaderValue::from_str(value).map_err(|_| invalid())?;
            // Extra headers often carry credentials too; keep them out of `Debug` output.
            header_value.set_sensitive(true);
            headers.insert(header_name, header_value);
        }
        let http = HttpEndpoint::new(EndpointConfig {
            url: endpoint,
            headers,
            limits: config.limits,
            request_timeout: config.request_timeout,
            clock: config.clock.clone(),
        })
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

    fn body(&self, request: &AgentModelRequest, stream: bool) -> Result<Vec<u8>, ModelError> {
        let model = request
            .model_id
            .as_deref()
            .or(self.config.default_model.as_deref())
            .ok_or_else(|| {
                ModelError::Other(
                    "no model id: the agent's profile names none and the connection has no default model"
                        .to_owned(),
                )
            })?;
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
                replay_reasoning_content: self.config.replay_reasoning_content,
            },
        );
        serde_json::to_vec(&body)
            .map_err(|err| ModelError::Other(format!("cannot encode the request: {err}")))
    }
}

impl WireFormat for OpenAiProvider {
    type Accumulator = ChunkAccumulator;

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

#[async_trait]
impl ModelProvider for OpenAiProvider {
    fn name(&self) -> &str {
        OPENAI_PROVIDER_NAME
    }

    async fn complete(
        &self,
        request: AgentModelRequest,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        self.http
            .complete(self, self.name(), request, &cancel)
            .await
    }

    async fn stream(
        &self,
        request: AgentModelRequest,
        sink: Arc<dyn ModelDeltaSink>,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        self.http
            .stream(self, self.name(), request, sink.as_ref(), &cancel)
            .await
    }
}
