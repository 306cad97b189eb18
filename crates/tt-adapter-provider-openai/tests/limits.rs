//! Bounded exchanges: a server that streams forever or answers too much is cut off at the size
//! limit (`model.response_too_large`, not retried) without holding the whole body; a server
//! that goes silent is a transient idle timeout (one that never sends its headers: the cases
//! every adapter shares, `tt_provider_http::http_adapter_cases!`). Time is paused, so the
//! waits take no time.

use serde_json::json;
use std::time::Duration;
use tt_adapter_provider_openai::{HttpLimits, OpenAiConfig, OpenAiProvider};

use crate::support::server::{Reply, TestServer};
use crate::support::{Adapter, config, first_messages, request};
use tt_provider_http::test_fixtures::{AdapterUnderTest, sent};

const SMALL: u64 = 64 * 1024;

fn limited(server: &TestServer, change: impl FnOnce(&mut OpenAiConfig)) -> OpenAiProvider {
    let mut config = config(server).with_limits(HttpLimits {
        max_response_bytes: SMALL,
        ..HttpLimits::default()
    });
    change(&mut config);
    OpenAiProvider::new(config).unwrap()
}

fn endless_text() -> Reply {
    let chunk = json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
        "choices": [{"index": 0, "delta": {"content": "and on and on "}, "finish_reason": null}]});
    Reply::Forever {
        headers: vec![("content-type".into(), "text/event-stream".into())],
        piece: format!("data: {chunk}\n\n").into_bytes(),
    }
}

#[tokio::test(start_paused = true)]
async fn a_server_that_streams_forever_is_cut_off_at_the_size_limit() {
    let deltas = Adapter::assert_endless_stream_cut_off(endless_text(), SMALL).await;
    assert!(!deltas.take().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_whole_reply_over_the_limit_is_refused_as_it_arrives() {
    let text = "x".repeat(SMALL as usize + 1);
    let body = json!({"id": "c", "model": "m", "choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": text}}]});
    Adapter::assert_reply_over_the_limit_refused(&body, SMALL).await;
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_goes_silent_is_a_transient_idle_timeout() {
    let chunk = json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
        "choices": [{"index": 0, "delta": {"content": "Once"}, "finish_reason": null}]});
    Adapter::assert_silence_idles_out(format!("data: {chunk}\n\n")).await;
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_trickles_forever_is_cut_off_at_the_request_timeout() {
    // 16 bytes of a comment line every half second: never silent, never done.
    let server = TestServer::always(Reply::Trickle {
        headers: vec![("content-type".into(), "text/event-stream".into())],
        piece: b": keep-alive....\n".to_vec(),
        every: Duration::from_millis(500),
    })
    .await;
    let provider = limited(&server, |config| {
        config.request_timeout = Some(Duration::from_secs(5));
    });
    let (error, took) =
        tt_provider_http::test_fixtures::stream_failure(&provider, first_messages()).await;
    assert!(
        matches!(
            error,
            tt_ports::ModelError::TimedOut {
                limit: tt_ports::ModelTimeLimit::Request,
                limit_ms: 5000,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .contains("did not complete within 5000 ms (request timeout)"),
        "{error}"
    );
    assert_eq!(took, 5);
}

#[tokio::test]
async fn max_tokens_is_the_lowest_of_request_and_connection_or_the_default() {
    let reply = || {
        Reply::json(
            200,
            &json!({"id": "c", "model": "m", "choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": "ok"}}]}),
        )
    };
    // (request limit, connection cap, sent)
    for (asked, cap, max_tokens) in [
        (None, None, 8192),
        (Some(300), None, 300),
        (None, Some(100), 100),
        (Some(300), Some(100), 100),
        (Some(50), Some(100), 50),
    ] {
        let mut server = TestServer::always(reply()).await;
        let mut config = config(&server);
        config.max_tokens = cap;
        let mut request = request(1, first_messages());
        request.max_output_tokens = asked;
        let body = sent(&OpenAiProvider::new(config).unwrap(), &mut server, &request).await;
        assert_eq!(body["max_tokens"], max_tokens);
    }
}
