//! Fixtures shared by the provider tests: the test server, a canonical request with two real
//! tool specs, and a sink that records streamed deltas.

pub(crate) use tt_provider_http::test_fixtures::{AdapterUnderTest, Deltas, request};
pub(crate) use tt_provider_http::test_server as server;

use serde_json::{Value, json};
use std::time::Duration;
use tt_adapter_provider_anthropic::{AnthropicConfig, AnthropicProvider, HttpLimits};
use tt_domain::model::{AgentModelMessage, ModelRole};
use tt_domain::tool::AgentToolResult;

use self::server::TestServer;

/// The wire form of `tools()`.
pub(crate) fn wire_tools() -> Value {
    json!([
        {"name": "workspace_write_file", "description": "Write a file.",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]}},
        {"name": "workspace_finish", "description": "Finish the run.",
            "input_schema": {"type": "object", "properties": {}}, "cache_control": {"type": "ephemeral"}},
    ])
}

/// `text` as the system prompt goes out with prompt caching on: one text block, marked.
pub(crate) fn cached_system(text: &str) -> Value {
    json!([{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}])
}

/// A user turn of one text block, marked as a cache breakpoint.
pub(crate) fn cached_user_text(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]})
}

/// The exact body of `request(1, first_messages())` with `config(..)`.
pub(crate) fn first_body(stream: bool) -> Value {
    json!({
        "model": "claude-test",
        "max_tokens": 2048,
        "system": cached_system("You are a writer."),
        "messages": [cached_user_text("Write a scene.")],
        "tools": wire_tools(),
        "tool_choice": {"type": "auto"},
        "stream": stream,
    })
}

pub(crate) fn first_messages() -> Vec<AgentModelMessage> {
    vec![
        AgentModelMessage::text(ModelRole::System, "You are a writer."),
        AgentModelMessage::text(ModelRole::User, "Write a scene."),
    ]
}

pub(crate) fn tool_result(call_id: &str, content: &str, is_error: bool) -> AgentModelMessage {
    AgentModelMessage::tool_result(AgentToolResult {
        call_id: call_id.into(),
        name: "workspace.write_file".into(),
        content: content.into(),
        structured: Value::Null,
        is_error,
        error_code: is_error.then(|| "workspace.path_not_writable".to_owned()),
        error_reason: None,
        resource_refs: vec![],
    })
}

pub(crate) fn config(server: &TestServer) -> AnthropicConfig {
    AnthropicConfig::new(server.url(""))
        .with_default_model("claude-test")
        .with_api_key("sk-ant-test")
        .with_header("anthropic-beta", "interleaved-thinking-2025-05-14")
        .with_max_tokens(2048)
        .with_request_timeout(Duration::from_secs(60))
}

pub(crate) fn provider(server: &TestServer) -> AnthropicProvider {
    AnthropicProvider::new(config(server)).unwrap()
}

/// This adapter, for the wire cases every HTTP adapter passes alike.
pub(crate) struct Adapter;

impl AdapterUnderTest for Adapter {
    type Provider = AnthropicProvider;

    fn provider(server: &TestServer) -> AnthropicProvider {
        provider(server)
    }

    fn first_messages() -> Vec<AgentModelMessage> {
        first_messages()
    }

    fn first_body(stream: bool) -> Value {
        first_body(stream)
    }

    fn provider_with_limits(server: &TestServer, limits: HttpLimits) -> AnthropicProvider {
        let mut config = config(server).with_limits(limits);
        config.request_timeout = None;
        AnthropicProvider::new(config).unwrap()
    }
}
