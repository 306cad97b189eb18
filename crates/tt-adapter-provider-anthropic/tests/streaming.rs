//! Streamed exchanges (`stream: true`): content blocks rebuilt from their deltas across pieces
//! split inside SSE lines and inside the input JSON, the signed thinking block replayed on the
//! next turn, deltas forwarded in order, mid-stream errors and cancel.

use serde_json::{Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tt_domain::model::{ModelContentPart, ModelDelta, ModelUsage};
use tt_ports::{ModelError, ModelProvider};

use crate::support::server::{Reply, TestServer};
use crate::support::{Adapter, Deltas, first_body, first_messages, provider, request, tool_result};
use tt_provider_http::test_fixtures::{AdapterUnderTest, cut};

fn sse_text(events: &[Value]) -> String {
    events
        .iter()
        .map(|event| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap()
            )
        })
        .collect()
}

fn delta(index: u64, delta: Value) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": delta})
}

fn stop(index: u64) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

fn streamed_events() -> Vec<Value> {
    vec![
        json!({"type": "message_start", "message": {"id": "msg_s1", "type": "message", "role": "assistant",
            "model": "claude-test-20250101", "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 472, "cache_read_input_tokens": 28, "output_tokens": 2}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        delta(
            0,
            json!({"type": "thinking_delta", "thinking": "Both files "}),
        ),
        delta(0, json!({"type": "thinking_delta", "thinking": "now."})),
        delta(
            0,
            json!({"type": "signature_delta", "signature": "EqQBCgIYAhIMsig"}),
        ),
        stop(0),
        json!({"type": "ping"}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
        delta(1, json!({"type": "text_delta", "text": "Writing "})),
        delta(1, json!({"type": "text_delta", "text": "both."})),
        stop(1),
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_s1", "name": "workspace_write_file", "input": {}}}),
        delta(2, json!({"type": "input_json_delta", "partial_json": ""})),
        delta(
            2,
            json!({"type": "input_json_delta", "partial_json": "{\"path\": \"out"}),
        ),
        delta(
            2,
            json!({"type": "input_json_delta", "partial_json": "put/main.md\", \"content\": \"Night "}),
        ),
        delta(
            2,
            json!({"type": "input_json_delta", "partial_json": "fell.\"}"}),
        ),
        stop(2),
        json!({"type": "content_block_start", "index": 3, "content_block": {"type": "tool_use", "id": "toolu_s2", "name": "workspace_finish", "input": {}}}),
        stop(3),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 89}}),
        json!({"type": "message_stop"}),
    ]
}

#[tokio::test]
async fn streamed_blocks_are_rebuilt_and_thinking_replayed_on_the_next_turn() {
    let text = sse_text(&streamed_events());
    let pieces = cut(
        &text,
        &[
            "thinking_delta",
            "\"out",
            "put/main.md",
            "Night ",
            "message_delta",
        ],
    );
    let after = json!({"id": "msg_2", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1}});
    let mut server = TestServer::sequence(vec![Reply::sse(pieces), Reply::json(200, &after)]).await;
    let provider = provider(&server);
    let deltas = Arc::new(Deltas::default());
    let turn = request(1, first_messages());
    let response = provider
        .stream(&turn.clone(), deltas.clone(), CancellationToken::new())
        .await
        .unwrap();

    let sent = server.next_request().await;
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.body, first_body(true));

    let thinking =
        json!({"type": "thinking", "thinking": "Both files now.", "signature": "EqQBCgIYAhIMsig"});
    assert_eq!(
        response.message.parts[0],
        ModelContentPart::Native {
            provider: "anthropic".into(),
            value: thinking.clone()
        }
    );
    assert_eq!(response.text(), "Writing both.");
    let calls = response.tool_calls();
    assert_eq!(calls[0].id, "toolu_s1");
    assert_eq!(
        calls[0].arguments,
        json!({"path": "output/main.md", "content": "Night fell."})
    );
    assert_eq!(calls[1].id, "toolu_s2");
    assert_eq!(calls[1].arguments, json!({}));
    assert_eq!(response.finish_reason.as_deref(), Some("tool_use"));
    assert_eq!(response.response_id.as_deref(), Some("msg_s1"));
    assert_eq!(
        response.usage,
        Some(ModelUsage {
            cached_input_tokens: 28,
            ..ModelUsage::new(500, 89)
        })
    );
    assert_eq!(response.raw_response["streamed"], json!(true));

    let args = |fragment: &str| ModelDelta::ToolCallArguments {
        id: "toolu_s1".into(),
        fragment: fragment.into(),
    };
    assert_eq!(
        deltas.take(),
        vec![
            ModelDelta::Reasoning {
                text: "Both files ".into()
            },
            ModelDelta::Reasoning {
                text: "now.".into()
            },
            ModelDelta::Text {
                text: "Writing ".into()
            },
            ModelDelta::Text {
                text: "both.".into()
            },
            ModelDelta::ToolCallStarted {
                id: "toolu_s1".into(),
                name: "workspace_write_file".into()
            },
            args("{\"path\": \"out"),
            args("put/main.md\", \"content\": \"Night "),
            args("fell.\"}"),
            ModelDelta::ToolCallStarted {
                id: "toolu_s2".into(),
                name: "workspace_finish".into()
            },
        ]
    );

    // The next turn replays the rebuilt thinking block, signature included, unchanged.
    let mut messages = turn.messages.clone();
    messages.push(response.message.clone());
    messages.push(tool_result("toolu_s1", "Wrote output/main.md.", false));
    messages.push(tool_result("toolu_s2", "Finished.", false));
    provider
        .complete(&request(2, messages), CancellationToken::new())
        .await
        .unwrap();
    let sent = server.next_request().await;
    assert_eq!(
        sent.body["messages"][1],
        json!({"role": "assistant", "content": [
            thinking,
            {"type": "text", "text": "Writing both."},
            {"type": "tool_use", "id": "toolu_s1", "name": "workspace_write_file", "input": {"path": "output/main.md", "content": "Night fell."}},
            {"type": "tool_use", "id": "toolu_s2", "name": "workspace_finish", "input": {}},
        ]})
    );
    assert_eq!(
        sent.body["messages"][2]["content"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[tokio::test]
async fn a_text_stream_split_byte_by_byte() {
    let text = sse_text(&[
        json!({"type": "message_start", "message": {"id": "m", "model": "c", "usage": {"input_tokens": 3, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        delta(0, json!({"type": "text_delta", "text": "Héllo."})),
        stop(0),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 4}}),
        json!({"type": "message_stop"}),
    ]);
    let pieces: Vec<String> = text.chars().map(String::from).collect();
    let response = Adapter::stream_against(Reply::sse(pieces), Arc::new(Deltas::default()))
        .await
        .unwrap();
    assert_eq!(response.text(), "Héllo.");
    assert_eq!(response.usage, Some(ModelUsage::new(3, 4)));
}

#[tokio::test]
async fn an_overloaded_error_event_is_transient() {
    let text = sse_text(&[
        json!({"type": "message_start", "message": {"id": "m", "model": "c", "usage": {"input_tokens": 3, "output_tokens": 1}}}),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ]);
    let error = Adapter::stream_against(Reply::sse(vec![text]), Arc::new(Deltas::default()))
        .await
        .unwrap_err();
    assert_eq!(
        error,
        ModelError::Transient {
            message: "Overloaded".into()
        }
    );
}

#[tokio::test]
async fn a_stream_cut_off_midway_is_transient() {
    let events = streamed_events();
    let text = sse_text(&events[..9]);
    let error = Adapter::stream_against(Reply::sse(vec![text]), Arc::new(Deltas::default()))
        .await
        .unwrap_err();
    assert!(matches!(error, ModelError::Transient { .. }), "{error:?}");
}

#[tokio::test]
async fn unparseable_streamed_input_passes_through_as_its_raw_text() {
    let text = sse_text(&[
        json!({"type": "message_start", "message": {"id": "m", "model": "c", "usage": {"input_tokens": 3, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_x", "name": "workspace_write_file", "input": {}}}),
        delta(
            0,
            json!({"type": "input_json_delta", "partial_json": "{\"path\": "}),
        ),
        stop(0),
        json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 4}}),
        json!({"type": "message_stop"}),
    ]);
    let response = Adapter::stream_against(Reply::sse(vec![text]), Arc::new(Deltas::default()))
        .await
        .unwrap();
    let calls = response.tool_calls();
    assert_eq!(calls[0].arguments, json!("{\"path\": "));
}

#[tokio::test]
async fn cancel_mid_stream_closes_the_connection() {
    let events = streamed_events();
    let text = sse_text(&events[..4]);
    Adapter::assert_cancel_aborts_mid_stream(Reply::sse(vec![text]).then_hang()).await;
}
