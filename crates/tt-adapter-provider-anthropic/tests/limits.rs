//! Bounded exchanges with the Anthropic adapter: a server that streams forever or answers too much is cut off at the size
//! limit (`model.response_too_large`, not retried) without holding the whole body; a server
//! that goes silent is a transient idle timeout (one that never sends its headers: the cases
//! every adapter shares, `tt_provider_http::http_adapter_cases!`). Time is paused, so the
//! waits take no time.

use serde_json::json;
use tt_adapter_provider_anthropic::AnthropicProvider;

use crate::support::server::{Reply, TestServer};
use crate::support::{Adapter, config, first_messages, request};
use tt_provider_http::test_fixtures::{AdapterUnderTest, sent};

const SMALL: u64 = 64 * 1024;

fn endless_text() -> Reply {
    // Keep-alive pings forever: the server never finishes its message.
    Reply::Forever {
        headers: vec![("content-type".into(), "text/event-stream".into())],
        piece: b"event: ping\ndata: {\"type\": \"ping\"}\n\n".to_vec(),
    }
}

#[tokio::test(start_paused = true)]
async fn a_server_that_streams_forever_is_cut_off_at_the_size_limit() {
    Adapter::assert_endless_stream_cut_off(endless_text(), SMALL).await;
}

#[tokio::test(start_paused = true)]
async fn a_whole_reply_over_the_limit_is_refused_as_it_arrives() {
    let text = "x".repeat(SMALL as usize + 1);
    let body = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "c",
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1}});
    Adapter::assert_reply_over_the_limit_refused(&body, SMALL).await;
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_goes_silent_is_a_transient_idle_timeout() {
    let start = json!({"type": "message_start", "message": {"id": "m", "model": "c", "usage": {"input_tokens": 3, "output_tokens": 1}}});
    Adapter::assert_silence_idles_out(format!("event: message_start\ndata: {start}\n\n")).await;
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
    for (asked, thinking, max_tokens) in [
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
        let body = sent(
            &AnthropicProvider::new(config).unwrap(),
            &mut server,
            &request,
        )
        .await;
        assert_eq!(body["max_tokens"], max_tokens);
    }
}
