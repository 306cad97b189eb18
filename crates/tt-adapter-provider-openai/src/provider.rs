//! `OpenAiProvider`: the `ModelProvider` over `POST {baseUrl}/chat/completions`, whole
//! (`complete`) or streamed as server-sent events (`stream`), cancellable at every wait.

use std::sync::Arc;

use async_trait::async_trait;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use tt_domain::model::{AgentModelRequest, AgentModelResponse, ModelContentPart, ModelDelta};
use tt_ports::{ModelDeltaSink, ModelError, ModelProvider};

use crate::config::{OpenAiConfig, OpenAiError};
use crate::request::{BodyOptions, request_body};
use crate::response::decode_body;
use crate::stream::ChunkAccumulator;
use tt_provider_http::http::{
    BodyBudget, guarded, guarded_idle, next_chunk, read_body, read_error_body, status_error,
    transport_error,
};
use tt_provider_http::sse::SseDecoder;

/// The provider name, as shown in events.
pub const OPENAI_PROVIDER_NAME: &str = "openai";

/// An OpenAI-compatible Chat Completions client (OpenAI, llama.cpp's `llama-server`, vLLM,
/// Ollama, …).
#[derive(Debug)]
pub struct OpenAiProvider {
    config: OpenAiConfig,
    client: reqwest::Client,
    headers: HeaderMap,
    endpoint: String,
}

impl OpenAiProvider {
    pub fn new(config: OpenAiConfig) -> Result<Self, OpenAiError> {
        let base = config.base_url.trim_end_matches('/');
        let url = reqwest::Url::parse(base)
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
        let mut builder = reqwest::Client::builder().connect_timeout(config.limits.connect_timeout);
        if is_loopback(&url) {
            // A local server is never reached through a proxy from the environment.
            builder = builder.no_proxy();
        }
        let client = builder
            .build()
            .map_err(|err| OpenAiError::Client(err.to_string()))?;
        Ok(Self {
            config,
            client,
            headers,
            endpoint,
        })
    }

    /// Whether the runtime should call `stream` rather than `complete` for this connection.
    pub fn prefers_streaming(&self) -> bool {
        self.config.stream
    }

    /// The URL requests are posted to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
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

    async fn send(&self, body: Vec<u8>) -> Result<reqwest::Response, ModelError> {
        self.client
            .post(&self.endpoint)
            .headers(self.headers.clone())
            .body(body)
            .send()
            .await
            .map_err(|err| transport_error(&err))
    }

    /// Reads (the start of) an error response and classifies it.
    async fn fail(
        &self,
        mut response: reqwest::Response,
        cancel: &CancellationToken,
    ) -> ModelError {
        let status = response.status();
        let headers = response.headers().clone();
        // An unreadable error body still has a status worth classifying.
        let body = read_error_body(&mut response, cancel, &self.config.limits).await;
        status_error(status, &headers, &body, self.config.clock.as_ref())
    }

    /// The wait for each piece of a streamed reply: the idle timeout, or the request timeout
    /// when that is shorter.
    fn piece_timeout(&self) -> std::time::Duration {
        let idle = self.config.limits.idle_timeout;
        self.config
            .request_timeout
            .map_or(idle, |limit| limit.min(idle))
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
        let span =
            tt_provider_http::http::request_span(self.name(), &self.endpoint, &request, false);
        async move {
            let body = self.body(&request, false)?;
            // The server sends nothing until the whole answer is ready (slow local models take
            // minutes): only the request timeout bounds that wait. The body then comes in pieces
            // within the idle timeout and the size limit.
            let exchange = async {
                let mut response = self.send(body).await?;
                if !response.status().is_success() {
                    return Err(self.fail(response, &cancel).await);
                }
                decode_body(&read_body(&mut response, &cancel, &self.config.limits).await?)
            };
            guarded(exchange, &cancel, self.config.request_timeout).await
        }
        .instrument(span)
        .await
    }

    async fn stream(
        &self,
        request: AgentModelRequest,
        sink: Arc<dyn ModelDeltaSink>,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        let span =
            tt_provider_http::http::request_span(self.name(), &self.endpoint, &request, true);
        async move {
            let body = self.body(&request, true)?;
            let piece = self.piece_timeout();
            let mut response = guarded_idle(self.send(body), &cancel, piece).await?;
            if !response.status().is_success() {
                return Err(self.fail(response, &cancel).await);
            }
            let limits = tt_provider_http::http::HttpLimits {
                idle_timeout: piece,
                ..self.config.limits
            };
            if is_json(response.headers()) {
                // The server ignored `stream: true` and answered in one piece.
                let body = read_body(&mut response, &cancel, &limits).await?;
                let whole = decode_body(&body)?;
                forward_whole(&whole, sink.as_ref());
                return Ok(whole);
            }
            let mut decoder = SseDecoder::default();
            let mut accumulator = ChunkAccumulator::default();
            let mut budget = BodyBudget::new(limits.max_response_bytes);
            while !accumulator.is_done() {
                match next_chunk(&mut response, &cancel, piece).await? {
                    Some(bytes) => {
                        budget.take(bytes.len())?;
                        for event in decoder.feed(&bytes) {
                            accumulator.push(&event.data, sink.as_ref())?;
                            if accumulator.is_done() {
                                break;
                            }
                        }
                    }
                    None => {
                        if let Some(event) = decoder.finish() {
                            accumulator.push(&event.data, sink.as_ref())?;
                        }
                        break;
                    }
                }
            }
            drop(response);
            accumulator.finish()
        }
        .instrument(span)
        .await
    }
}

fn is_loopback(url: &reqwest::Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().starts_with("application/json"))
}

/// Forwards a response that arrived whole, so a streaming caller still sees its pieces.
fn forward_whole(response: &AgentModelResponse, sink: &dyn ModelDeltaSink) {
    for part in &response.message.parts {
        match part {
            ModelContentPart::Text { text } => sink.delta(ModelDelta::Text { text: text.clone() }),
            ModelContentPart::Reasoning {
                text: Some(text), ..
            } => sink.delta(ModelDelta::Reasoning { text: text.clone() }),
            ModelContentPart::ToolCall { call } => {
                sink.delta(ModelDelta::ToolCallStarted {
                    id: call.id.clone(),
                    name: call.name.clone(),
                });
                sink.delta(ModelDelta::ToolCallArguments {
                    id: call.id.clone(),
                    fragment: call.arguments.to_string(),
                });
            }
            _ => {}
        }
    }
}
