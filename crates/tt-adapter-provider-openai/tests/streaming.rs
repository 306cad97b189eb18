//! Streamed exchanges (`stream: true`): fragments split across network pieces, inside SSE lines
//! and inside the arguments JSON, reassembled exactly; deltas forwarded in order; cancel.

use serde_json::{Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tt_domain::model::{ModelDelta, ModelUsage};
use tt_ports::{ModelError, ModelProvider};

use crate::support::server::{Reply, TestServer};
use crate::support::{Adapter, Deltas, first_body, first_messages, provider, request};
use tt_provider_http::test_fixtures::{AdapterUnderTest, cut};

fn chunk(delta: Value, finish_reason: Value) -> Value {
    json!({
        "id": "chatcmpl-s1", "object": "chat.completion.chunk", "created": 1_700_000_000,
        "model": "local-model-q4",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
    })
}

fn sse_text(chunks: &[Value]) -> String {
    let mut text: String = chunks
        .iter()
        .map(|chunk| format!("data: {chunk}\n\n"))
        .collect();
    text.push_str("data: [DONE]\n\n");
    text
}

fn streamed_tool_calls() -> Vec<Value> {
    let call = |index: u64, id: Option<&str>, name: Option<&str>, arguments: &str| {
        let mut fragment = json!({"index": index, "function": {"arguments": arguments}});
        if let Some(id) = id {
            fragment["id"] = json!(id);
            fragment["type"] = json!("function");
        }
        if let Some(name) = name {
            fragment["function"]["name"] = json!(name);
        }
        chunk(json!({"tool_calls": [fragment]}), Value::Null)
    };
    vec![
        chunk(
            json!({"role": "assistant", "content": null, "reasoning_content": "Two files"}),
            Value::Null,
        ),
        chunk(json!({"reasoning_content": ", in parallel."}), Value::Null),
        chunk(json!({"content": "Writing "}), Value::Null),
        chunk(json!({"content": "both."}), Value::Null),
        call(0, Some("call_x1"), Some("workspace_write_file"), ""),
        call(0, None, None, "{\"path\":\"out"),
        call(
            1,
            Some("call_x2"),
            Some("workspace_write_file"),
            "{\"path\"",
        ),
        call(0, None, None, "put/main.md\",\"content\":\"Night "),
        call(1, None, None, ":\"scratch/b.md\",\"content\":\"é\"}"),
        call(0, None, None, "fell.\"}"),
        chunk(json!({}), json!("tool_calls")),
        json!({"id": "chatcmpl-s1", "object": "chat.completion.chunk", "model": "local-model-q4", "choices": [],
               "usage": {"prompt_tokens": 120, "completion_tokens": 33, "total_tokens": 153}}),
    ]
}

#[tokio::test]
async fn streamed_tool_call_fragments_are_reassembled_exactly() {
    let text = sse_text(&streamed_tool_calls());
    let pieces = cut(
        &text,
        &["\"out\"", "put/main.md", "scratch/b.md", "fell.", "[DONE]"],
    );
    assert!(pieces.len() >= 6);
    let mut server = TestServer::always(Reply::sse(pieces)).await;
    let deltas = Arc::new(Deltas::default());
    let response = provider(&server)
        .stream(
            &request(1, first_messages()),
            deltas.clone(),
            CancellationToken::new(),
        )
        .await
        .unwrap();

    let sent = server.next_request().await;
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.body, first_body(true));

    let calls = response.tool_calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].id, "call_x1");
    assert_eq!(
        calls[0].arguments,
        json!({"path": "output/main.md", "content": "Night fell."})
    );
    assert_eq!(calls[1].id, "call_x2");
    assert_eq!(
        calls[1].arguments,
        json!({"path": "scratch/b.md", "content": "é"})
    );
    assert_eq!(response.text(), "Writing both.");
    assert_eq!(response.reasoning_text(), "Two files, in parallel.");
    assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(response.response_id.as_deref(), Some("chatcmpl-s1"));
    assert_eq!(response.usage, Some(ModelUsage::new(120, 33)));
    assert_eq!(response.raw_response["streamed"], json!(true));

    let args = |id: &str, fragment: &str| ModelDelta::ToolCallArguments {
        id: id.into(),
        fragment: fragment.into(),
    };
    assert_eq!(
        deltas.take(),
        vec![
            ModelDelta::Reasoning {
                text: "Two files".into()
            },
            ModelDelta::Reasoning {
                text: ", in parallel.".into()
            },
            ModelDelta::Text {
                text: "Writing ".into()
            },
            ModelDelta::Text {
                text: "both.".into()
            },
            ModelDelta::ToolCallStarted {
                id: "call_x1".into(),
                name: "workspace_write_file".into()
            },
            args("call_x1", "{\"path\":\"out"),
            ModelDelta::ToolCallStarted {
                id: "call_x2".into(),
                name: "workspace_write_file".into()
            },
            args("call_x2", "{\"path\""),
            args("call_x1", "put/main.md\",\"content\":\"Night "),
            args("call_x2", ":\"scratch/b.md\",\"content\":\"é\"}"),
            args("call_x1", "fell.\"}"),
        ]
    );
}

#[tokio::test]
async fn a_streamed_text_reply_split_byte_by_byte() {
    let text = sse_text(&[
        chunk(json!({"role": "assistant", "content": ""}), Value::Null),
        chunk(json!({"content": "Hello, "}), Value::Null),
        chunk(json!({"content": "keeper."}), json!("stop")),
    ]);
    let pieces: Vec<String> = text.chars().map(String::from).collect();
    let deltas = Arc::new(Deltas::default());
    let response = Adapter::stream_against(Reply::sse(pieces), deltas.clone())
        .await
        .unwrap();
    assert_eq!(response.text(), "Hello, keeper.");
    assert_eq!(response.finish_reason.as_deref(), Some("stop"));
    assert_eq!(response.usage, None);
    assert_eq!(deltas.take().len(), 2);
}

#[tokio::test]
async fn a_server_that_ignores_stream_true_still_works() {
    let body = json!({
        "id": "c", "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Whole."}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 2},
    });
    let deltas = Arc::new(Deltas::default());
    let response = Adapter::stream_against(Reply::json(200, &body), deltas.clone())
        .await
        .unwrap();
    assert_eq!(response.text(), "Whole.");
    assert_eq!(
        deltas.take(),
        vec![ModelDelta::Text {
            text: "Whole.".into()
        }]
    );
}

#[tokio::test]
async fn a_streamed_call_without_an_id_is_an_invalid_tool_call() {
    let text = sse_text(&[
        chunk(
            json!({"tool_calls": [{"index": 0, "type": "function", "function": {"name": "workspace_finish", "arguments": "{}"}}]}),
            Value::Null,
        ),
        chunk(json!({}), json!("tool_calls")),
    ]);
    let error = Adapter::stream_against(Reply::sse(vec![text]), Arc::new(Deltas::default()))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "model.invalid_tool_call");
    assert!(!error.is_retryable());
}

#[tokio::test]
async fn a_malformed_chunk_is_an_upstream_invalid_response() {
    let error = Adapter::stream_against(
        Reply::sse(vec![
            "data: {\"choices\": [{\"index\": 0, \"delta\": {\"content\": \"a\"}}]}\n\n".into(),
            "data: {\"choices\": [ oops\n\n".into(),
        ]),
        Arc::new(Deltas::default()),
    )
    .await
    .unwrap_err();
    assert_eq!(error.code(), "model.upstream_invalid_response");
    assert!(error.is_retryable());
}

#[tokio::test]
async fn a_stream_cut_off_midway_is_transient() {
    let text = sse_text(&[chunk(json!({"content": "Half"}), Value::Null)]);
    let half = text.split("data: [DONE]").next().unwrap().to_owned();
    let error = Adapter::stream_against(Reply::sse(vec![half]), Arc::new(Deltas::default()))
        .await
        .unwrap_err();
    assert!(matches!(error, ModelError::Transient { .. }), "{error:?}");
}

#[tokio::test]
async fn an_error_event_mid_stream_is_transient() {
    let error = Adapter::stream_against(
        Reply::sse(vec![
            "data: {\"error\": {\"message\": \"model crashed\", \"code\": 500}}\n\n".into(),
        ]),
        Arc::new(Deltas::default()),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&error, ModelError::Transient { message } if message.contains("model crashed")),
        "{error:?}"
    );
}

#[tokio::test]
async fn cancel_mid_stream_closes_the_connection() {
    let text = sse_text(&[chunk(json!({"content": "Once upon"}), Value::Null)]);
    let first = text.split("data: [DONE]").next().unwrap().to_owned();
    Adapter::assert_cancel_aborts_mid_stream(Reply::sse(vec![first]).then_hang()).await;
}
