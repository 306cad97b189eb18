//! `AnthropicProvider`: the `ModelProvider` over `POST {baseUrl}/v1/messages`, whole
//! (`complete`) or streamed as server-sent events (`stream`), cancellable at every wait.

use std::sync::Arc;

use async_trait::async_trait;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use tokio_util::sync::CancellationToken;
use tt_domain::model::{AgentModelRequest, AgentModelResponse, ModelContentPart, ModelDelta};
use tt_ports::{ModelDeltaSink, ModelError, ModelProvider};

use crate::config::{ANTHROPIC_VERSION, AnthropicConfig, AnthropicError};
use crate::request::{BodyOptions, request_body};
use crate::response::decode_body;
use crate::stream::EventAccumulator;
use tt_provider_http::http::{guarded, status_error, transport_error};
use tt_provider_http::sse::SseDecoder;

/// The provider name, as shown in events.
pub const ANTHROPIC_PROVIDER_NAME: &str = "anthropic";

/// An Anthropic Messages API client.
#[derive(Debug)]
pub struct AnthropicProvider {
    config: AnthropicConfig,
    client: reqwest::Client,
    headers: HeaderMap,
    endpoint: String,
}

impl AnthropicProvider {
    pub fn new(config: AnthropicConfig) -> Result<Self, AnthropicError> {
        let base = config.base_url.trim_end_matches('/');
        let url = reqwest::Url::parse(base)
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https") && url.has_host())
            .ok_or_else(|| AnthropicError::InvalidBaseUrl(config.base_url.clone()))?;
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
        let endpoint = format!("{base}/v1/messages");
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        if let Some(key) = &config.api_key {
            let mut value = HeaderValue::from_str(key)
                .map_err(|_| AnthropicError::InvalidHeader("x-api-key".to_owned()))?;
            value.set_sensitive(true);
            headers.insert(HeaderName::from_static("x-api-key"), value);
        }
        for (name, value) in &config.extra_headers {
            let invalid = || AnthropicError::InvalidHeader(name.clone());
            let header_name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid())?;
            let mut header_value = HeaderValue::from_str(value).map_err(|_| invalid())?;
            // Extra headers often carry credentials too; keep them out of `Debug` output.
            header_value.set_sensitive(true);
            headers.insert(header_name, header_value);
        }
        let mut builder = reqwest::Client::builder();
        if is_loopback(&url) {
            // A local server is never reached through a proxy from the environment.
            builder = builder.no_proxy();
        }
        let client = builder
            .build()
            .map_err(|err| AnthropicError::Client(err.to_string()))?;
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

    pub fn config(&self) -> &AnthropicConfig {
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
                max_tokens: self.config.max_tokens,
                thinking_budget_tokens: self.config.thinking_budget_tokens,
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

    /// Reads an error response and classifies it.
    async fn fail(&self, response: reqwest::Response) -> ModelError {
        let status = response.status();
        let headers = response.headers().clone();
        // An unreadable error body still has a status worth classifying.
        let body = response.bytes().await.unwrap_or_default();
        status_error(status, &headers, &body, self.config.clock.as_ref())
    }

    async fn read_all(response: reqwest::Response) -> Result<Vec<u8>, ModelError> {
        response
            .bytes()
            .await
            .map(|bytes| bytes.to_vec())
            .map_err(|err| transport_error(&err))
    }
}

#[async_trait]
impl ModelProvider for AnthropicProvider {
    fn name(&self) -> &str {
        ANTHROPIC_PROVIDER_NAME
    }

    async fn complete(
        &self,
        request: AgentModelRequest,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        let body = self.body(&request, false)?;
        let exchange = async {
            let response = self.send(body).await?;
            if !response.status().is_success() {
                return Err(self.fail(response).await);
            }
            decode_body(&Self::read_all(response).await?)
        };
        guarded(exchange, &cancel, self.config.request_timeout).await
    }

    async fn stream(
        &self,
        request: AgentModelRequest,
        sink: Arc<dyn ModelDeltaSink>,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        let body = self.body(&request, true)?;
        let timeout = self.config.request_timeout;
        let mut response = guarded(self.send(body), &cancel, timeout).await?;
        if !response.status().is_success() {
            return guarded(async { Err(self.fail(response).await) }, &cancel, timeout).await;
        }
        if is_json(response.headers()) {
            // The server ignored `stream: true` and answered in one piece.
            let body = guarded(Self::read_all(response), &cancel, timeout).await?;
            let whole = decode_body(&body)?;
            forward_whole(&whole, sink.as_ref());
            return Ok(whole);
        }
        let mut decoder = SseDecoder::default();
        let mut accumulator = EventAccumulator::default();
        while !accumulator.is_done() {
            let next = async { response.chunk().await.map_err(|err| transport_error(&err)) };
            match guarded(next, &cancel, timeout).await? {
                Some(bytes) => {
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
            ModelContentPart::Native { value, .. } => {
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
