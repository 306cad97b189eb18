//! Fixtures shared by the provider tests: the test server, a canonical request with two real
//! tool specs, and a sink that records streamed deltas.

pub(crate) use tt_provider_http::test_fixtures::{AdapterUnderTest, Deltas, request};
pub(crate) use tt_provider_http::test_server as server;

use serde_json::{Value, json};
use std::time::Duration;
use tt_adapter_provider_openai::{HttpLimits, OpenAiConfig, OpenAiProvider};
use tt_domain::model::{AgentModelMessage, ModelRole};

use self::server::TestServer;

/// The wire form of `tools()`.
pub(crate) fn wire_tools() -> Value {
    json!([
        {"type": "function", "function": {"name": "workspace_write_file", "description": "Write a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]}}},
        {"type": "function", "function": {"name": "workspace_finish", "description": "Finish the run.",
            "parameters": {"type": "object", "properties": {}}}},
    ])
}

/// The exact body of `request(1, first_messages())` with `config(..)`.
pub(crate) fn first_body(stream: bool) -> Value {
    let mut body = json!({
        "model": "local-model",
        "messages": [
            {"role": "system", "content": "You are a writer."},
            {"role": "user", "content": "Write a scene."},
        ],
        "tools": wire_tools(),
        "tool_choice": "auto",
        "parallel_tool_calls": true,
        "max_tokens": 8192,
        "cache_prompt": true,
        "stream": stream,
    });
    if stream {
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

pub(crate) fn first_messages() -> Vec<AgentModelMessage> {
    vec![
        AgentModelMessage::text(ModelRole::System, "You are a writer."),
        AgentModelMessage::text(ModelRole::User, "Write a scene."),
    ]
}

pub(crate) fn config(server: &TestServer) -> OpenAiConfig {
    OpenAiConfig::new(server.url("/v1/"))
        .with_default_model("local-model")
        .with_api_key("sk-test")
        .with_header("x-team", "writers")
        .with_request_timeout(Duration::from_secs(60))
}

pub(crate) fn provider(server: &TestServer) -> OpenAiProvider {
    OpenAiProvider::new(config(server)).unwrap()
}

/// This adapter, for the wire cases every HTTP adapter passes alike.
pub(crate) struct Adapter;

impl AdapterUnderTest for Adapter {
    type Provider = OpenAiProvider;

    fn provider(server: &TestServer) -> OpenAiProvider {
        provider(server)
    }

    fn first_messages() -> Vec<AgentModelMessage> {
        first_messages()
    }

    fn first_body(stream: bool) -> Value {
        first_body(stream)
    }

    fn provider_with_limits(server: &TestServer, limits: HttpLimits) -> OpenAiProvider {
        let mut config = config(server).with_limits(limits);
        config.request_timeout = None;
        OpenAiProvider::new(config).unwrap()
    }
}
