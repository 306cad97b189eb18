//! Whole (non-streamed) exchanges: a single tool call, parallel calls replayed with their
//! results on the next turn, a text-only reply, and the exact bodies and headers sent.

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tt_domain::model::{AgentModelMessage, ModelContentPart, ModelUsage};
use tt_domain::tool::{AgentToolCall, AgentToolResult};
use tt_ports::ModelProvider;

use crate::support::server::{Reply, TestServer};
use crate::support::{Adapter, first_body, first_messages, provider, request};
use tt_provider_http::test_fixtures::{AdapterUnderTest, assert_writes_night};

fn completion(message: Value, finish_reason: &str) -> Value {
    json!({
        "id": "chatcmpl-42",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "local-model-q4",
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 321, "completion_tokens": 45, "total_tokens": 366},
    })
}

fn result(call_id: &str, name: &str, content: &str, path: &str) -> AgentModelMessage {
    AgentModelMessage::tool_result(AgentToolResult {
        call_id: call_id.into(),
        name: name.into(),
        content: content.into(),
        structured: json!({"path": path}),
        is_error: false,
        error_code: None,
        error_reason: None,
        resource_refs: vec![path.into()],
    })
}

#[tokio::test]
async fn single_tool_call_round_trip_with_exact_request() {
    let reply = completion(
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_9f2", "type": "function", "function": {"name": "workspace_write_file",
                "arguments": "{\"path\":\"output/main.md\",\"content\":\"Night.\"}"}}]}),
        "tool_calls",
    );
    let (response, sent) = Adapter::answer_first_round(&reply).await;
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(sent.header("x-team"), Some("writers"));
    assert_eq!(sent.body, first_body(false));

    assert_writes_night(&response, "call_9f2");
    assert_eq!(response.text(), "");
    assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(response.response_id.as_deref(), Some("chatcmpl-42"));
    assert_eq!(response.model.as_deref(), Some("local-model-q4"));
    assert_eq!(response.usage, Some(ModelUsage::new(321, 45)));
    assert_eq!(response.raw_response, reply);
}

#[tokio::test]
async fn parallel_tool_calls_then_results_replayed_on_the_next_turn() {
    let first = completion(
        json!({"role": "assistant", "content": "Two files.", "reasoning_content": "Plan: write both.", "tool_calls": [
            {"id": "call_A", "type": "function", "function": {"name": "workspace_write_file", "arguments": "{\"path\":\"output/main.md\",\"content\":\"A\"}"}},
            {"id": "call_B", "type": "function", "function": {"name": "workspace_write_file", "arguments": "{\"path\":\"scratch/b.md\",\"content\":\"B\"}"}}]}),
        "tool_calls",
    );
    let second = completion(
        json!({"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_C", "type": "function", "function": {"name": "workspace_finish", "arguments": "{}"}}]}),
        "tool_calls",
    );
    let mut server =
        TestServer::sequence(vec![Reply::json(200, &first), Reply::json(200, &second)]).await;
    let provider = provider(&server);
    let mut turn = request(1, first_messages());
    turn.model_id = Some("bound-model".into());
    let response = provider
        .complete(&turn.clone(), CancellationToken::new())
        .await
        .unwrap();
    let ids: Vec<String> = response.tool_calls().into_iter().map(|c| c.id).collect();
    assert_eq!(ids, ["call_A", "call_B"]);
    assert_eq!(response.reasoning_text(), "Plan: write both.");
    assert!(matches!(
        response.message.parts.first(),
        Some(ModelContentPart::Reasoning { .. })
    ));
    assert_eq!(server.next_request().await.body["model"], "bound-model");

    let mut messages = turn.messages.clone();
    messages.push(response.message.clone());
    messages.push(result(
        "call_A",
        "workspace.write_file",
        "Wrote output/main.md.",
        "output/main.md",
    ));
    messages.push(result(
        "call_B",
        "workspace.write_file",
        "Wrote scratch/b.md.",
        "scratch/b.md",
    ));
    let mut next = request(2, messages);
    next.model_id = Some("bound-model".into());
    let response = provider
        .complete(&next, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(response.tool_calls()[0].id, "call_C");

    let sent = server.next_request().await;
    assert_eq!(
        sent.body["messages"],
        json!([
            {"role": "system", "content": "You are a writer."},
            {"role": "user", "content": "Write a scene."},
            {"role": "assistant", "content": "Two files.", "tool_calls": [
                {"id": "call_A", "type": "function", "function": {"name": "workspace_write_file", "arguments": "{\"path\":\"output/main.md\",\"content\":\"A\"}"}},
                {"id": "call_B", "type": "function", "function": {"name": "workspace_write_file", "arguments": "{\"path\":\"scratch/b.md\",\"content\":\"B\"}"}},
            ]},
            {"role": "tool", "tool_call_id": "call_A", "content": r#"{"ok":true,"content":"Wrote output/main.md.","structured":{"path":"output/main.md"},"errorCode":null,"resourceRefs":["output/main.md"]}"#},
            {"role": "tool", "tool_call_id": "call_B", "content": r#"{"ok":true,"content":"Wrote scratch/b.md.","structured":{"path":"scratch/b.md"},"errorCode":null,"resourceRefs":["scratch/b.md"]}"#},
        ])
    );
    assert_eq!(sent.body["model"], "bound-model");
}

#[tokio::test]
async fn text_only_reply() {
    let reply = completion(
        json!({"role": "assistant", "content": "The lighthouse keeper lit the lamp."}),
        "stop",
    );
    let (response, sent) = Adapter::answer_first_round(&reply).await;
    assert_eq!(response.text(), "The lighthouse keeper lit the lamp.");
    assert!(response.tool_calls().is_empty());
    assert_eq!(response.finish_reason.as_deref(), Some("stop"));
    assert_eq!(
        response.message.parts,
        vec![ModelContentPart::Text {
            text: "The lighthouse keeper lit the lamp.".into()
        }]
    );
    assert_eq!(sent.body, first_body(false));
}

#[tokio::test]
async fn an_assistant_turn_with_only_tool_calls_is_replayed_with_null_content() {
    let reply = completion(json!({"role": "assistant", "content": "ok"}), "stop");
    let mut server = TestServer::always(Reply::json(200, &reply)).await;
    let mut messages = first_messages();
    messages.push(AgentModelMessage::assistant(vec![
        ModelContentPart::ToolCall {
            call: AgentToolCall::new("call_only", "workspace_finish", json!({})),
        },
    ]));
    messages.push(result(
        "call_only",
        "workspace.finish",
        "Finished.",
        "output/main.md",
    ));
    provider(&server)
        .complete(&request(2, messages), CancellationToken::new())
        .await
        .unwrap();
    let sent = server.next_request().await;
    assert_eq!(
        sent.body["messages"][2],
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_only", "type": "function", "function": {"name": "workspace_finish", "arguments": "{}"}}]})
    );
}
