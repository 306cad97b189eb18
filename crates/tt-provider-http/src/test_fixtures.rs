//! Fixtures both HTTP adapters' tests share (with the `test-support` feature): a canonical
//! request with two real tool specs, and a sink that records streamed deltas.

// Test support: a lock poisoned by a panicking test is that test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use std::sync::Mutex;
use tokio::sync::Notify;
use tt_domain::ids::{InvocationId, ProfileId, RunId};
use tt_domain::model::{AgentModelMessage, AgentModelRequest, ModelDelta, ProviderSession};
use tt_domain::tool::{AgentToolSpec, ToolAnnotations, ToolName};
use tt_ports::ModelDeltaSink;

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

/// `workspace.write_file` and `workspace.finish`, as the adapters' tests expect them on the
/// wire.
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

/// Round `round` of the root writer of `run_a`, offering [`tools`].
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

/// Records streamed deltas and wakes a waiter on each one.
#[derive(Debug, Default)]
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
