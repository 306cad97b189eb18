//! The control flow of one model call over HTTP that both adapters share: the client (no proxy
//! for a loopback server), the POST, error replies, a whole reply under the request timeout, and
//! a streamed reply as server-sent events (or whole, when the server ignores `stream: true`)
//! under the idle timeout and the size limit. A [`WireFormat`] supplies the provider's decoding.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use tt_domain::model::{AgentModelRequest, AgentModelResponse, ModelContentPart, ModelDelta};
use tt_ports::{Clock, ModelDeltaSink, ModelError, ModelTimeLimit};

use crate::http::{
    BodyBudget, HttpLimits, guarded, guarded_by, next_chunk, read_body, read_error_body,
    request_span, status_error, timed_out, transport_error,
};
use crate::sse::SseDecoder;

/// Collects the data of a streamed reply's server-sent events into one response, forwarding
/// partial output to the sink as it goes.
pub trait StreamAccumulator: Default + Send {
    /// Takes one event's data.
    fn push(&mut self, data: &str, sink: &dyn ModelDeltaSink) -> Result<(), ModelError>;
    /// True once the provider's final event arrived.
    fn is_done(&self) -> bool;
    /// The complete response (an error when the stream ended too early).
    fn finish(self) -> Result<AgentModelResponse, ModelError>;
}

/// A provider's wire format: what the shared exchange cannot know.
pub trait WireFormat: Send + Sync {
    type Accumulator: StreamAccumulator;
    /// The format's name in events' `providerFormat` (`openai_chat_completions`).
    const PROVIDER_FORMAT: &'static str;
    /// The encoded request body (`stream` asks for server-sent events).
    fn request_body(
        &self,
        request: &AgentModelRequest,
        stream: bool,
    ) -> Result<Vec<u8>, ModelError>;
    /// Decodes a whole (non-streamed) reply body.
    fn decode_body(body: &[u8]) -> Result<AgentModelResponse, ModelError>;
    /// The partial output a provider-specific part of a reply that arrived whole stands for
    /// (default: none).
    fn forward_native(value: &Value, sink: &dyn ModelDeltaSink) {
        let _ = (value, sink);
    }
}

/// Forwards a reply that arrived whole, so a streaming caller still sees its pieces.
fn forward_whole<W: WireFormat>(response: &AgentModelResponse, sink: &dyn ModelDeltaSink) {
    for part in &response.message.parts {
        match part {
            ModelContentPart::Text { text } => sink.delta(ModelDelta::Text { text: text.clone() }),
            ModelContentPart::Reasoning {
                text: Some(text), ..
            } => sink.delta(ModelDelta::Reasoning { text: text.clone() }),
            ModelContentPart::Native { value, .. } => W::forward_native(value, sink),
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

/// A request body encoded as JSON, for [`WireFormat::request_body`].
pub fn encode_body(body: &Value) -> Result<Vec<u8>, ModelError> {
    serde_json::to_vec(body)
        .map_err(|err| ModelError::Other(format!("cannot encode the request: {err}")))
}

/// `base_url` without trailing slashes, followed by `path`, when `base_url` is an http(s) URL
/// with a host.
pub fn endpoint_url(base_url: &str, path: &str) -> Option<String> {
    let base = base_url.trim_end_matches('/');
    reqwest::Url::parse(base)
        .ok()
        .filter(|url| matches!(url.scheme(), "http" | "https") && url.has_host())
        .map(|_| format!("{base}{path}"))
}

/// The headers of every request: the JSON content type, the provider's fixed headers, its
/// credential and the connection's extra headers. The credential and the extra headers (which
/// often carry credentials too) are marked sensitive, so `Debug` output never shows them. `Err`
/// names the header whose name or value is invalid.
pub fn request_headers(
    fixed: &[(&'static str, &'static str)],
    credential: Option<(&'static str, String)>,
    extra: &[(String, String)],
) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    for (name, value) in fixed {
        headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    if let Some((name, value)) = credential {
        let mut value = HeaderValue::from_str(&value).map_err(|_| name.to_owned())?;
        value.set_sensitive(true);
        headers.insert(HeaderName::from_static(name), value);
    }
    for (name, value) in extra {
        let header_name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| name.clone())?;
        let mut header_value = HeaderValue::from_str(value).map_err(|_| name.clone())?;
        header_value.set_sensitive(true);
        headers.insert(header_name, header_value);
    }
    Ok(headers)
}

/// Why a connection's [`HttpEndpoint`] could not be built; each adapter turns it into its own
/// error type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointError {
    /// The base URL is not an http(s) URL with a host.
    InvalidBaseUrl(String),
    /// The named header has an invalid name or value.
    InvalidHeader(String),
    /// The HTTP client could not be built.
    Client(String),
}

/// What a connection needs to build its [`HttpEndpoint`].
#[derive(Clone)]
pub struct EndpointConfig {
    /// The URL requests are posted to.
    pub url: String,
    /// Every header of every request (content type, credentials, extra headers).
    pub headers: HeaderMap,
    pub limits: HttpLimits,
    /// Bounds a whole call; `None` leaves only the idle timeout.
    pub request_timeout: Option<Duration>,
    /// Reads `Retry-After` dates against this clock.
    pub clock: Option<Arc<dyn Clock>>,
}

impl std::fmt::Debug for EndpointConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Credentials in `headers` are marked sensitive and print as such.
        f.debug_struct("EndpointConfig")
            .field("url", &self.url)
            .field("headers", &self.headers)
            .field("limits", &self.limits)
            .field("request_timeout", &self.request_timeout)
            .field("clock", &self.clock.as_ref().map(|_| "custom"))
            .finish()
    }
}

/// One model server endpoint: the client and the shared control flow of `complete` and
/// `stream`.
#[derive(Debug)]
pub struct HttpEndpoint {
    client: reqwest::Client,
    config: EndpointConfig,
}

impl HttpEndpoint {
    /// Builds the client: the connect timeout from the limits, and no proxy from the
    /// environment for a loopback server. The error is the client builder's, as text.
    pub fn new(config: EndpointConfig) -> Result<Self, String> {
        let mut builder = reqwest::Client::builder().connect_timeout(config.limits.connect_timeout);
        if reqwest::Url::parse(&config.url).is_ok_and(|url| is_loopback(&url)) {
            // A local server is never reached through a proxy from the environment.
            builder = builder.no_proxy();
        }
        let client = builder.build().map_err(|err| err.to_string())?;
        Ok(Self { client, config })
    }

    /// The URL requests are posted to.
    pub fn url(&self) -> &str {
        &self.config.url
    }

    pub(crate) fn client(&self) -> &reqwest::Client {
        &self.client
    }

    pub(crate) fn headers(&self) -> &HeaderMap {
        &self.config.headers
    }

    pub(crate) fn limits(&self) -> HttpLimits {
        self.config.limits
    }

    /// Posts the request and decodes the whole reply, in an `http_request` span. The server
    /// sends nothing until the whole answer is ready (slow local models take minutes): the
    /// header timeout bounds that wait, the request timeout the whole exchange. The body then
    /// comes in pieces within the idle timeout and the size limit.
    pub async fn complete<W: WireFormat>(
        &self,
        wire: &W,
        provider: &str,
        request: &AgentModelRequest,
        cancel: &CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        let body = wire.request_body(request, false)?;
        let span = request_span(provider, self.url(), request, false);
        self.complete_body::<W>(body, cancel).instrument(span).await
    }

    async fn complete_body<W: WireFormat>(
        &self,
        body: Vec<u8>,
        cancel: &CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        let exchange = async {
            let mut response = self.send_for_headers(body, cancel).await?;
            if !response.status().is_success() {
                return Err(self.fail(response, cancel).await);
            }
            W::decode_body(&read_body(&mut response, cancel, &self.config.limits).await?)
        };
        guarded(exchange, cancel, self.config.request_timeout).await
    }

    /// Posts the request, in an `http_request` span, and reads the reply as server-sent events, each piece within the idle
    /// timeout, forwarding partial output to `sink`.
    pub async fn stream<W: WireFormat>(
        &self,
        wire: &W,
        provider: &str,
        request: &AgentModelRequest,
        sink: &dyn ModelDeltaSink,
        cancel: &CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        let body = wire.request_body(request, true)?;
        let span = request_span(provider, self.url(), request, true);
        let whole = self.stream_body::<W>(body, sink, cancel);
        // The request timeout bounds the whole streamed answer too, not only the silence
        // between its pieces: a server trickling a few bytes at a time is cut off.
        let bounded = async {
            match self.config.request_timeout {
                Some(limit) => tokio::time::timeout(limit, whole)
                    .await
                    .unwrap_or_else(|_| {
                        Err(timed_out(
                            ModelTimeLimit::Request,
                            limit,
                            "the streamed answer did not complete within",
                        ))
                    }),
                None => whole.await,
            }
        };
        bounded.instrument(span).await
    }

    async fn stream_body<W: WireFormat>(
        &self,
        body: Vec<u8>,
        sink: &dyn ModelDeltaSink,
        cancel: &CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        let piece = self.piece_timeout();
        let mut response = self.send_for_headers(body, cancel).await?;
        if !response.status().is_success() {
            return Err(self.fail(response, cancel).await);
        }
        let limits = HttpLimits {
            idle_timeout: piece,
            ..self.config.limits
        };
        if is_json(response.headers()) {
            // The server ignored `stream: true` and answered in one piece.
            let body = read_body(&mut response, cancel, &limits).await?;
            let whole = W::decode_body(&body)?;
            forward_whole::<W>(&whole, sink);
            return Ok(whole);
        }
        let mut decoder = SseDecoder::default();
        let mut accumulator = W::Accumulator::default();
        let mut budget = BodyBudget::new(limits.max_response_bytes);
        while !accumulator.is_done() {
            match next_chunk(&mut response, cancel, piece).await? {
                Some(bytes) => {
                    budget.take(bytes.len())?;
                    for event in decoder.feed(&bytes) {
                        accumulator.push(&event.data, sink)?;
                        if accumulator.is_done() {
                            break;
                        }
                    }
                }
                None => {
                    if let Some(event) = decoder.finish() {
                        accumulator.push(&event.data, sink)?;
                    }
                    break;
                }
            }
        }
        drop(response);
        accumulator.finish()
    }

    /// Sends the request and waits for the response's status and headers, at most the header
    /// timeout (the request timeout around the whole exchange fires first when it is shorter).
    async fn send_for_headers(
        &self,
        body: Vec<u8>,
        cancel: &CancellationToken,
    ) -> Result<reqwest::Response, ModelError> {
        guarded_by(
            self.send(body),
            cancel,
            ModelTimeLimit::Header,
            self.config.limits.header_timeout,
            "no response headers from the provider within",
        )
        .await
    }

    async fn send(&self, body: Vec<u8>) -> Result<reqwest::Response, ModelError> {
        self.client
            .post(&self.config.url)
            .headers(self.config.headers.clone())
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
    fn piece_timeout(&self) -> Duration {
        let idle = self.config.limits.idle_timeout;
        self.config
            .request_timeout
            .map_or(idle, |limit| limit.min(idle))
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
