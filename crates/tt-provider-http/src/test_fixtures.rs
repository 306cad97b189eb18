//! Fixtures both HTTP adapters' tests share (with the `test-support` feature): a canonical
//! request with two real tool specs, a sink that records streamed deltas, a streamed call
//! that must fail, and the wire cases every adapter passes alike (cancel, limits, refused
//! settings).

// Test support: a poisoned lock or a call that unexpectedly succeeds is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tt_domain::error_codes;
use tt_domain::ids::{InvocationId, ProfileId, RunId};
use tt_domain::model::{
    AgentModelMessage, AgentModelRequest, AgentModelResponse, ModelDelta, ModelUsage,
    ProviderSession,
};
use tt_domain::tool::{AgentToolSpec, ToolAnnotations, ToolName};
use tt_ports::{ModelDeltaSink, ModelError, ModelProvider};

use crate::http::HttpLimits;
use crate::test_server::{Recorded, Reply, TestServer};

pub fn tool(name: ToolName, description: &str, schema: Value) -> AgentToolSpec {
    AgentToolSpec {
        name: name.into(),
        model_name: name.model_alias().to_owned(),
        title: name.canonical().to_owned(),
        description: description.to_owned(),
        input_schema: schema,
        output_schema: None,
        annotations: ToolAnnotations::default(),
        source: "builtin".to_owned(),
        external: None,
    }
}

/// `workspace.write_file` and `workspace.finish`, as the adapters' tests expect them on the
/// wire.
pub fn tools() -> Vec<AgentToolSpec> {
    vec![
        tool(
            ToolName::WorkspaceWriteFile,
            "Write a file.",
            json!({"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]}),
        ),
        tool(
            ToolName::WorkspaceFinish,
            "Finish the run.",
            json!({"type": "object", "properties": {}}),
        ),
    ]
}

/// Round `round` of the root writer of `run_a`, offering [`tools`].
pub fn request(round: u32, messages: Vec<AgentModelMessage>) -> AgentModelRequest {
    AgentModelRequest {
        tools: tools().into(),
        ..AgentModelRequest::new(
            ProviderSession::new(&RunId::from_raw("run_a"), &InvocationId::root()),
            ProfileId::parse("writer").unwrap(),
            round,
            messages,
        )
    }
}

/// Streams round 1 with `messages` through `provider` and returns its error and how many
/// seconds (of tokio's clock, paused in the limit tests) the call took.
pub async fn stream_failure(
    provider: &dyn ModelProvider,
    messages: Vec<AgentModelMessage>,
) -> (ModelError, u64) {
    let started = tokio::time::Instant::now();
    let deltas = Some(Arc::new(Deltas::default()));
    let error = round_one(provider, messages, deltas, CancellationToken::new())
        .await
        .unwrap_err();
    (error, started.elapsed().as_secs())
}

/// Asserts that streaming round 1 through `provider` fails with a retryable idle timeout after
/// exactly `seconds` (of tokio's paused clock).
pub async fn assert_stream_idles_out(
    provider: &dyn ModelProvider,
    messages: Vec<AgentModelMessage>,
    seconds: u64,
) {
    let (error, took) = stream_failure(provider, messages).await;
    assert!(
        matches!(
            error,
            ModelError::TimedOut {
                limit: tt_ports::ModelTimeLimit::Idle,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.is_retryable());
    assert!(error.to_string().contains("idle timeout"), "{error}");
    assert_eq!(took, seconds);
}

/// Asserts that round 1 through `provider` (streamed or not) against a server that never sends
/// its headers fails with a retryable header timeout after exactly `seconds` of tokio's paused
/// clock, and within the default bound of a hung call (300 s).
pub async fn assert_headers_time_out(provider: &dyn ModelProvider, stream: bool, seconds: u64) {
    let started = tokio::time::Instant::now();
    let deltas = stream.then(|| Arc::new(Deltas::default()));
    let call = round_one(provider, Vec::new(), deltas, CancellationToken::new());
    let error = tokio::time::timeout(Duration::from_secs(300), call)
        .await
        .expect("the call outlasted the default bound of 300 s")
        .unwrap_err();
    assert!(
        matches!(
            error,
            ModelError::TimedOut {
                limit: tt_ports::ModelTimeLimit::Header,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(error.code(), error_codes::MODEL_TIMEOUT);
    assert!(error.is_retryable());
    assert!(error.to_string().contains("(header timeout)"), "{error}");
    assert_eq!(started.elapsed().as_secs(), seconds);
}

/// Cuts `text` in the middle of each of `markers` (each must occur once, in order), so no
/// piece boundary lines up with an SSE line.
pub fn cut(text: &str, markers: &[&str]) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut rest = text;
    for marker in markers {
        let at = rest.find(marker).unwrap() + marker.len() / 2;
        pieces.push(rest[..at].to_owned());
        rest = &rest[at..];
    }
    pieces.push(rest.to_owned());
    pieces
}

/// Asserts that `response` makes exactly one call, `id`: the write of `Night.` to
/// `output/main.md` the adapters' canned first replies ask for.
pub fn assert_writes_night(response: &AgentModelResponse, id: &str) {
    let calls = response.tool_calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].id, id);
    assert_eq!(calls[0].name, "workspace_write_file");
    assert_eq!(
        calls[0].arguments,
        json!({"path": "output/main.md", "content": "Night."})
    );
}

/// Completes `request` through `provider` against `server`: the body the server received.
pub async fn sent(
    provider: &dyn ModelProvider,
    server: &mut TestServer,
    request: &AgentModelRequest,
) -> Value {
    provider
        .complete(request, CancellationToken::new())
        .await
        .unwrap();
    server.next_request().await.body
}

/// Round 1 with `messages` through `provider`: streamed into `deltas` when given, else
/// completed.
pub async fn round_one(
    provider: &dyn ModelProvider,
    messages: Vec<AgentModelMessage>,
    deltas: Option<Arc<Deltas>>,
    cancel: CancellationToken,
) -> Result<AgentModelResponse, ModelError> {
    match deltas {
        Some(deltas) => provider.stream(&request(1, messages), deltas, cancel).await,
        None => provider.complete(&request(1, messages), cancel).await,
    }
}

/// An adapter as its tests set it up: how they build it against a test server, the messages
/// of its first round and that round's exact body on the wire (streamed or not). The wire
/// cases every adapter passes alike are its provided functions.
// Test support: its futures are awaited on the test's own runtime, never required to be `Send`.
#[allow(async_fn_in_trait)]
pub trait AdapterUnderTest {
    /// The adapter's provider.
    type Provider: ModelProvider + 'static;

    /// The provider as the adapter's tests build it against `server`.
    fn provider(server: &TestServer) -> Self::Provider;

    /// The messages of the adapter's first round.
    fn first_messages() -> Vec<AgentModelMessage>;

    /// The exact body of the first round on the wire, streamed or not.
    fn first_body(stream: bool) -> Value;

    /// The provider as [`provider`](Self::provider) builds it, but with no request timeout
    /// and with `limits`: how the limit cases build it.
    fn provider_with_limits(server: &TestServer, limits: HttpLimits) -> Self::Provider;

    /// The first round, not streamed, against a server answering `reply` (JSON, status 200):
    /// the response and the request the server received.
    async fn answer_first_round(reply: &Value) -> (AgentModelResponse, Recorded) {
        let mut server = TestServer::always(Reply::json(200, reply)).await;
        let response = Self::provider(&server)
            .complete(
                &request(1, Self::first_messages()),
                CancellationToken::new(),
            )
            .await
            .unwrap();
        (response, server.next_request().await)
    }

    /// The first round, not streamed, against a server answering `reply`, which must fail:
    /// asserts that the body the server received is the first round's.
    async fn complete_against(reply: Reply) -> ModelError {
        let mut server = TestServer::always(reply).await;
        let provider = Self::provider(&server);
        let error = round_one(
            &provider,
            Self::first_messages(),
            None,
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
        assert_eq!(server.next_request().await.body, Self::first_body(false));
        error
    }

    /// The first round against a server answering `reply`: asserts that it fails as a
    /// transient error saying `message`, retried.
    async fn assert_transient(reply: Reply, message: &str) {
        let error = Self::complete_against(reply).await;
        assert_eq!(
            error,
            ModelError::Transient {
                message: message.to_owned()
            }
        );
        assert!(error.is_retryable());
    }

    /// The first round against a server answering `reply`: asserts that the server refused
    /// it with `status`, saying `message`, not retried.
    async fn assert_rejected(reply: Reply, status: u16, message: &str) {
        let error = Self::complete_against(reply).await;
        assert_eq!(
            error,
            ModelError::Rejected {
                status: Some(status),
                message: message.to_owned()
            }
        );
        assert!(!error.is_retryable());
    }

    /// The first round against a server answering 200 with `body`, JSON cut short: asserts
    /// that it fails as an invalid upstream response, retried.
    async fn assert_truncated_body_invalid(body: &[u8]) {
        let error = Self::complete_against(Reply::Whole {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_vec(),
        })
        .await;
        assert_eq!(error.code(), "model.upstream_invalid_response");
        assert!(error.is_retryable());
    }

    /// Streams the first round into `deltas` against a server answering `reply`, asserting
    /// that the body the server received is the first round's.
    async fn stream_against(
        reply: Reply,
        deltas: Arc<Deltas>,
    ) -> Result<AgentModelResponse, ModelError> {
        let mut server = TestServer::always(reply).await;
        let provider = Self::provider(&server);
        let messages = Self::first_messages();
        let result = round_one(&provider, messages, Some(deltas), CancellationToken::new()).await;
        assert_eq!(server.next_request().await.body, Self::first_body(true));
        result
    }

    /// Streams the first round against a server answering `reply`, asserting that it reports
    /// `usage`: the response, for what else the case checks.
    async fn assert_streamed_usage(reply: Reply, usage: ModelUsage) -> AgentModelResponse {
        let response = Self::stream_against(reply, Arc::new(Deltas::default()))
            .await
            .unwrap();
        assert_eq!(response.usage, Some(usage));
        response
    }

    /// The first round (streamed or not) against a server that never answers, cancelled once
    /// the server has the request: asserts that its body is the first round's, that the call
    /// ends `Cancelled` and that the server sees the client go (the request was really
    /// aborted).
    async fn assert_cancel_aborts(stream: bool) {
        assert_cancelled::<Self>(Reply::Hang, stream, false).await;
    }

    /// [`assert_cancel_aborts`](Self::assert_cancel_aborts) of the streamed first round
    /// against a server answering `reply` (pieces, then silence: [`Reply::then_hang`]),
    /// cancelled once a piece of it has been forwarded.
    async fn assert_cancel_aborts_mid_stream(reply: Reply) {
        assert_cancelled::<Self>(reply, true, true).await;
    }

    /// The first round, not streamed, against a server answering `reply` (JSON, status 200)
    /// longer than `max_response_bytes`: refused as it arrives (`model.response_too_large`).
    async fn assert_reply_over_the_limit_refused(reply: &Value, max_response_bytes: u64) {
        let server = TestServer::always(Reply::json(200, reply)).await;
        let limits = HttpLimits {
            max_response_bytes,
            ..HttpLimits::default()
        };
        let error = Self::provider_with_limits(&server, limits)
            .complete(
                &request(1, Self::first_messages()),
                CancellationToken::new(),
            )
            .await
            .unwrap_err();
        assert_eq!(error.code(), "model.response_too_large");
    }

    /// The first round, streamed, against a server sending `reply` for ever, on a connection
    /// whose replies may be `max_response_bytes` long: asserts that it is cut off at that
    /// size ([`assert_cut_off_at_size_limit`]). The deltas forwarded before the cut.
    async fn assert_endless_stream_cut_off(reply: Reply, max_response_bytes: u64) -> Arc<Deltas> {
        let mut server = TestServer::always(reply).await;
        let limits = HttpLimits {
            max_response_bytes,
            ..HttpLimits::default()
        };
        let deltas = Arc::new(Deltas::default());
        let error = Self::provider_with_limits(&server, limits)
            .stream(
                &request(1, Self::first_messages()),
                deltas.clone(),
                CancellationToken::new(),
            )
            .await
            .unwrap_err();
        assert_cut_off_at_size_limit(&error, &mut server, max_response_bytes).await;
        deltas
    }

    /// The first round, streamed, against a server that sends `first_piece` and then goes
    /// silent, with no request timeout: only the default idle timeout (120 s) bounds the
    /// silence ([`assert_stream_idles_out`]).
    async fn assert_silence_idles_out(first_piece: String) {
        let server = TestServer::always(Reply::sse(vec![first_piece]).then_hang()).await;
        let provider = Self::provider_with_limits(&server, HttpLimits::default());
        assert_stream_idles_out(&provider, Self::first_messages(), 120).await;
    }

    /// Against a server that never sends its headers, with the adapter's defaults (no request
    /// timeout): the header timeout (120 s) bounds the wait, streamed or not (a non-streaming
    /// call used to wait forever).
    async fn assert_default_header_timeout() {
        let server = TestServer::always(Reply::Hang).await;
        let provider = Self::provider_with_limits(&server, HttpLimits::default());
        assert_headers_time_out_either_way(&provider, 120).await;
    }

    /// The header timeout is the connection's (200 s here), and its idle timeout (30 s) does
    /// not cut the wait for the headers short.
    async fn assert_connection_header_timeout() {
        let server = TestServer::always(Reply::Hang).await;
        let limits = HttpLimits {
            header_timeout: Duration::from_secs(200),
            idle_timeout: Duration::from_secs(30),
            ..HttpLimits::default()
        };
        let provider = Self::provider_with_limits(&server, limits);
        assert_headers_time_out_either_way(&provider, 200).await;
    }
}

/// The cases every HTTP adapter passes alike, as tests of `$adapter` (its
/// [`AdapterUnderTest`], named by a path from the crate root) in `mod every_http_adapter`.
#[macro_export]
macro_rules! http_adapter_cases {
    ($adapter:path) => {
        mod every_http_adapter {
            use $adapter as Adapter;
            use $crate::test_fixtures::AdapterUnderTest as _;

            #[tokio::test]
            async fn cancel_aborts_the_in_flight_request() {
                Adapter::assert_cancel_aborts(false).await;
            }

            #[tokio::test]
            async fn cancel_aborts_a_stream_waiting_for_headers() {
                Adapter::assert_cancel_aborts(true).await;
            }

            #[tokio::test(start_paused = true)]
            async fn a_server_that_never_sends_headers_fails_at_the_default_header_timeout() {
                Adapter::assert_default_header_timeout().await;
            }

            #[tokio::test(start_paused = true)]
            async fn the_header_timeout_is_the_connections_and_the_idle_timeout_does_not_cut_it() {
                Adapter::assert_connection_header_timeout().await;
            }
        }
    };
}

/// The first round of adapter `A` (streamed or not) against a server answering `reply`,
/// cancelled once the server has the request (and, with `after_a_piece`, once a streamed
/// piece was forwarded): asserts the body, the `Cancelled` end and the client going away.
async fn assert_cancelled<A: AdapterUnderTest + ?Sized>(
    reply: Reply,
    stream: bool,
    after_a_piece: bool,
) {
    let mut server = TestServer::always(reply).await;
    let provider = A::provider(&server);
    let messages = A::first_messages();
    let deltas = stream.then(|| Arc::new(Deltas::default()));
    let cancel = CancellationToken::new();
    let call = tokio::spawn({
        let (deltas, cancel) = (deltas.clone(), cancel.clone());
        async move { round_one(&provider, messages, deltas, cancel).await }
    });
    assert_eq!(server.next_request().await.body, A::first_body(stream));
    if let (true, Some(deltas)) = (after_a_piece, &deltas) {
        // On the sink, not on a clock.
        deltas.wait_for_any().await;
    }
    cancel.cancel();
    assert_eq!(call.await.unwrap(), Err(ModelError::Cancelled));
    server.client_closed().await;
}

/// Asserts that `error` is the size limit's (`model.response_too_large`, not retried, naming
/// `limit` bytes) and that `server` sees the connection dropped, so it stops sending.
pub async fn assert_cut_off_at_size_limit(error: &ModelError, server: &mut TestServer, limit: u64) {
    assert_eq!(error.code(), "model.response_too_large");
    assert!(!error.is_retryable());
    assert!(
        error
            .to_string()
            .contains(&format!("larger than {limit} bytes")),
        "{error}"
    );
    server.client_closed().await;
}

/// [`assert_headers_time_out`], not streamed and then streamed.
pub async fn assert_headers_time_out_either_way(provider: &dyn ModelProvider, seconds: u64) {
    assert_headers_time_out(provider, false, seconds).await;
    assert_headers_time_out(provider, true, seconds).await;
}

/// Asserts that `provider` refuses `request` before sending it (`model.setting_unsupported`,
/// not retried) with a message containing `expected`; `settings` names the case.
pub async fn assert_setting_refused(
    provider: &dyn ModelProvider,
    request: &AgentModelRequest,
    settings: &Value,
    expected: &str,
) {
    let error = provider
        .complete(request, CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(error.code(), "model.setting_unsupported", "{settings}");
    assert!(!error.is_retryable());
    assert!(
        matches!(&error, ModelError::SettingUnsupported { message } if message.contains(expected)),
        "{settings}: {error}"
    );
}

/// Records streamed deltas and wakes a waiter on each one.
#[derive(Debug, Default)]
pub struct Deltas {
    received: Mutex<Vec<ModelDelta>>,
    arrived: Notify,
}

impl Deltas {
    pub fn take(&self) -> Vec<ModelDelta> {
        std::mem::take(&mut *self.received.lock().unwrap())
    }

    /// Waits until at least one delta has arrived.
    pub async fn wait_for_any(&self) {
        while self.received.lock().unwrap().is_empty() {
            self.arrived.notified().await;
        }
    }
}

impl ModelDeltaSink for Deltas {
    fn delta(&self, delta: ModelDelta) {
        self.received.lock().unwrap().push(delta);
        self.arrived.notify_one();
    }
}
