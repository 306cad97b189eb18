//! Whole (non-streamed) exchanges: a single tool call, parallel calls with a signed thinking
//! block replayed unchanged next to their grouped results, a text-only reply, exact bodies.

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tt_domain::model::{ModelContentPart, ModelUsage};
use tt_ports::ModelProvider;

use crate::support::server::{Reply, TestServer};
use crate::support::{
    Adapter, cached_system, cached_user_text, first_body, first_messages, provider, request,
    tool_result,
};
use tt_provider_http::test_fixtures::{AdapterUnderTest, assert_writes_night};

fn message(content: Value, stop_reason: &str) -> Value {
    json!({
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-test-20250101",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": null,
        "usage": {"input_tokens": 410, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 90, "output_tokens": 52},
    })
}

#[tokio::test]
async fn single_tool_call_round_trip_with_exact_request() {
    let reply = message(
        json!([{"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "workspace_write_file",
                "input": {"path": "output/main.md", "content": "Night."}}]),
        "tool_use",
    );
    let (response, sent) = Adapter::answer_first_round(&reply).await;
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(
        sent.header("anthropic-beta"),
        Some("interleaved-thinking-2025-05-14")
    );
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(sent.body, first_body(false));

    assert_writes_night(&response, "toolu_01A09q90qw90lq917835lq9");
    assert_eq!(response.finish_reason.as_deref(), Some("tool_use"));
    assert_eq!(
        response.response_id.as_deref(),
        Some("msg_01XFDUDYJgAACzvnptvVoYEL")
    );
    assert_eq!(response.model.as_deref(), Some("claude-test-20250101"));
    assert_eq!(
        response.usage,
        Some(ModelUsage {
            cached_input_tokens: 90,
            ..ModelUsage::new(500, 52)
        })
    );
    assert_eq!(response.raw_response, reply);
}

#[tokio::test]
async fn thinking_is_replayed_unchanged_and_parallel_results_share_one_user_message() {
    let thinking = json!({"type": "thinking", "thinking": "Two files; write both at once.",
        "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"});
    let first = message(
        json!([
            thinking,
            {"type": "text", "text": "Writing both."},
            {"type": "tool_use", "id": "toolu_A", "name": "workspace_write_file", "input": {"path": "output/main.md", "content": "A"}},
            {"type": "tool_use", "id": "toolu_B", "name": "workspace_write_file", "input": {"path": "input/x.md", "content": "B"}},
        ]),
        "tool_use",
    );
    let second = message(
        json!([{"type": "tool_use", "id": "toolu_C", "name": "workspace_finish", "input": {}}]),
        "tool_use",
    );
    let mut server =
        TestServer::sequence(vec![Reply::json(200, &first), Reply::json(200, &second)]).await;
    let provider = provider(&server);
    let turn = request(1, first_messages());
    let response = provider
        .complete(&turn.clone(), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        response.message.parts[0],
        ModelContentPart::Native {
            provider: "anthropic".into(),
            value: thinking.clone()
        }
    );
    let ids: Vec<String> = response.tool_calls().into_iter().map(|c| c.id).collect();
    assert_eq!(ids, ["toolu_A", "toolu_B"]);
    server.next_request().await;

    let mut messages = turn.messages.clone();
    messages.push(response.message.clone());
    messages.push(tool_result("toolu_A", "Wrote output/main.md.", false));
    messages.push(tool_result("toolu_B", "input/x.md is not writable.", true));
    let next = provider
        .complete(&request(2, messages), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(next.tool_calls()[0].id, "toolu_C");

    let sent = server.next_request().await;
    assert_eq!(
        sent.body["messages"],
        json!([
            cached_user_text("Write a scene."),
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Two files; write both at once.",
                 "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"},
                {"type": "text", "text": "Writing both."},
                {"type": "tool_use", "id": "toolu_A", "name": "workspace_write_file", "input": {"path": "output/main.md", "content": "A"}},
                {"type": "tool_use", "id": "toolu_B", "name": "workspace_write_file", "input": {"path": "input/x.md", "content": "B"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_A",
                 "content": r#"{"ok":true,"content":"Wrote output/main.md.","structured":null,"errorCode":null,"resourceRefs":[]}"#},
                {"type": "tool_result", "tool_use_id": "toolu_B", "is_error": true,
                 "content": r#"{"ok":false,"content":"input/x.md is not writable.","structured":null,"errorCode":"workspace.path_not_writable","resourceRefs":[]}"#,
                 "cache_control": {"type": "ephemeral"}},
            ]},
        ])
    );
    assert_eq!(sent.body["system"], cached_system("You are a writer."));
}

#[tokio::test]
async fn text_only_reply() {
    let reply = message(
        json!([{"type": "text", "text": "The keeper lit the lamp."}]),
        "end_turn",
    );
    let mut server = TestServer::always(Reply::json(200, &reply)).await;
    let mut turn = request(1, first_messages());
    turn.model_id = Some("claude-bound".into());
    let response = provider(&server)
        .complete(&turn, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        response.message.parts,
        vec![ModelContentPart::Text {
            text: "The keeper lit the lamp.".into()
        }]
    );
    assert_eq!(response.finish_reason.as_deref(), Some("end_turn"));
    let mut expected = first_body(false);
    expected["model"] = json!("claude-bound");
    assert_eq!(server.next_request().await.body, expected);
}
