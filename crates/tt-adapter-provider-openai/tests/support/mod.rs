//! Fixtures shared by the provider tests: the test server, a canonical request with two real
//! tool specs, and a sink that records streamed deltas.

pub use tt_provider_http::test_server as server;

use serde_json::{Value, json};
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::Notify;
use tt_adapter_provider_openai::{OpenAiConfig, OpenAiProvider};
use tt_domain::ids::{InvocationId, ProfileId, RunId};
use tt_domain::model::{
    AgentModelMessage, AgentModelRequest, ModelDelta, ModelRole, ProviderSession,
};
use tt_domain::tool::{AgentToolSpec, ToolAnnotations, ToolName};
use tt_ports::ModelDeltaSink;

use self::server::TestServer;

pub fn tool(name: ToolName, description: &str, schema: Value) -> AgentToolSpec {
    AgentToolSpec {
        name,
        model_name: name.model_alias().to_owned(),
        title: name.canonical().to_owned(),
        description: description.to_owned(),
        input_schema: schema,
        output_schema: None,
        annotations: ToolAnnotations::default(),
        source: "builtin".to_owned(),
    }
}

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

/// The wire form of `tools()`.
pub fn wire_tools() -> Value {
    json!([
        {"type": "function", "function": {"name": "workspace_write_file", "description": "Write a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]}}},
        {"type": "function", "function": {"name": "workspace_finish", "description": "Finish the run.",
            "parameters": {"type": "object", "properties": {}}}},
    ])
}

/// The exact body of `request(1, first_messages())` with `config(..)`.
pub fn first_body(stream: bool) -> Value {
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
        "stream": stream,
    });
    if stream {
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

pub fn first_messages() -> Vec<AgentModelMessage> {
    vec![
        AgentModelMessage::text(ModelRole::System, "You are a writer."),
        AgentModelMessage::text(ModelRole::User, "Write a scene."),
    ]
}

pub fn request(round: u32, messages: Vec<AgentModelMessage>) -> AgentModelRequest {
    AgentModelRequest {
        session: ProviderSession::new(&RunId::from_raw("run_a"), &InvocationId::root()),
        agent_profile_id: ProfileId::parse("writer").unwrap(),
        model_id: None,
        round,
        messages,
        tools: tools(),
        tool_choice: "auto".to_owned(),
        max_output_tokens: None,
    }
}

pub fn config(server: &TestServer) -> OpenAiConfig {
    OpenAiConfig::new(server.url("/v1/"))
        .with_default_model("local-model")
        .with_api_key("sk-test")
        .with_header("x-team", "writers")
        .with_request_timeout(Duration::from_secs(60))
}

pub fn provider(server: &TestServer) -> OpenAiProvider {
    OpenAiProvider::new(config(server)).unwrap()
}

/// Records streamed deltas and wakes a waiter on each one.
#[derive(Default)]
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
