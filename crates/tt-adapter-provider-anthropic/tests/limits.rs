//! Bounded exchanges with the Anthropic adapter: a server that streams forever or answers too much is cut off at the size
//! limit (`model.response_too_large`, not retried) without holding the whole body; a server
//! that goes silent is a transient idle timeout, one that never sends its headers a transient
//! header timeout. Time is paused, so the waits take no time.

use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tt_adapter_provider_anthropic::{AnthropicConfig, AnthropicProvider, HttpLimits};
use tt_ports::ModelProvider;

use crate::support::server::{Reply, TestServer};
use crate::support::{Deltas, config, first_messages, request};
use tt_provider_http::test_fixtures::{
    assert_cut_off_at_size_limit, assert_headers_time_out_either_way, assert_stream_idles_out,
};

const SMALL: u64 = 64 * 1024;

fn limited(server: &TestServer, change: impl FnOnce(&mut AnthropicConfig)) -> AnthropicProvider {
    let mut config = config(server).with_limits(HttpLimits {
        max_response_bytes: SMALL,
        ..HttpLimits::default()
    });
    change(&mut config);
    AnthropicProvider::new(config).unwrap()
}

fn endless_text() -> Reply {
    // Keep-alive pings forever: the server never finishes its message.
    Reply::Forever {
        headers: vec![("content-type".into(), "text/event-stream".into())],
        piece: b"event: ping\ndata: {\"type\": \"ping\"}\n\n".to_vec(),
    }
}

#[tokio::test(start_paused = true)]
async fn a_server_that_streams_forever_is_cut_off_at_the_size_limit() {
    let mut server = TestServer::always(endless_text()).await;
    let provider = limited(&server, |_| {});
    let error = provider
        .stream(
            request(1, first_messages()),
            Arc::new(Deltas::default()),
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert_cut_off_at_size_limit(&error, &mut server, SMALL).await;
}

#[tokio::test(start_paused = true)]
async fn a_whole_reply_over_the_limit_is_refused_as_it_arrives() {
    let text = "x".repeat(SMALL as usize + 1);
    let body = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "c",
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1}});
    let server = TestServer::always(Reply::json(200, &body)).await;
    let error = limited(&server, |_| {})
        .complete(request(1, first_messages()), CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(error.code(), "model.response_too_large");
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_goes_silent_is_a_transient_idle_timeout() {
    let start = json!({"type": "message_start", "message": {"id": "m", "model": "c", "usage": {"input_tokens": 3, "output_tokens": 1}}});
    let reply = Reply::sse(vec![format!("event: message_start\ndata: {start}\n\n")]).then_hang();
    let server = TestServer::always(reply).await;
    // No request timeout: only the default idle timeout (120 s) bounds the silence.
    let provider = limited(&server, |config| config.request_timeout = None);
    assert_stream_idles_out(&provider, first_messages(), 120).await;
}

#[tokio::test(start_paused = true)]
async fn a_server_that_never_sends_headers_fails_at_the_default_header_timeout() {
    let server = TestServer::always(Reply::Hang).await;
    // The adapter's defaults: no request timeout; the header timeout (120 s) bounds the wait,
    // streamed or not (a non-streaming call used to wait forever).
    let mut settings = config(&server);
    settings.request_timeout = None;
    let provider = AnthropicProvider::new(settings).unwrap();
    assert_headers_time_out_either_way(&provider, 120).await;
}

#[tokio::test(start_paused = true)]
async fn the_header_timeout_is_the_connections_and_the_idle_timeout_does_not_cut_it() {
    let server = TestServer::always(Reply::Hang).await;
    let provider = limited(&server, |config| {
        config.request_timeout = None;
        config.limits.header_timeout = Duration::from_secs(200);
        config.limits.idle_timeout = Duration::from_secs(30);
    });
    assert_headers_time_out_either_way(&provider, 200).await;
}

#[tokio::test]
async fn the_request_limit_lowers_max_tokens_but_never_to_the_thinking_budget() {
    let reply = || {
        Reply::json(
            200,
            &json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "c",
                "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 1, "output_tokens": 1}}),
        )
    };
    // (request limit, thinking budget, sent); the connection's max_tokens is 2048.
    for (asked, thinking, sent) in [
        (None, None, 2048),
        (Some(300), None, 300),
        (Some(4000), None, 2048),
        (Some(1000), Some(1024), 2048),
        (Some(1500), Some(1024), 1500),
    ] {
        let mut server = TestServer::always(reply()).await;
        let mut config = config(&server);
        config.thinking_budget_tokens = thinking;
        let mut request = request(1, first_messages());
        request.max_output_tokens = asked;
        AnthropicProvider::new(config)
            .unwrap()
            .complete(request, CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(server.next_request().await.body["max_tokens"], sent);
    }
}
