//! Fixtures both HTTP adapters' tests share (with the `test-support` feature): a canonical
//! request with two real tool specs, a sink that records streamed deltas, and a streamed call
//! that must fail.

// Test support: a poisoned lock or a call that unexpectedly succeeds is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tt_domain::error_codes;
use tt_domain::ids::{InvocationId, ProfileId, RunId};
use tt_domain::model::{AgentModelMessage, AgentModelRequest, ModelDelta, ProviderSession};
use tt_domain::tool::{AgentToolSpec, ToolAnnotations, ToolName};
use tt_ports::{ModelDeltaSink, ModelError, ModelProvider};

pub fn tool(name: ToolName, description: &str, schema: Value) -> AgentToolSpec {
    AgentToolSpec {
        name: name.into(),
        model_name: name.model_alias().to_owned(),
        title: name.canonical().to_owned(),
        description: description.to_owned(),
        input_schema: schema,
        output_schema: None,
        annotations: ToolAnnotations::default(),
        source: "builtin".to_owned(),
        external: None,
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
        tools: tools().into(),
        tool_choice: "auto".to_owned(),
        max_output_tokens: None,
        generation: Default::default(),
        cache_ttl: None,
    }
}

/// Streams round 1 with `messages` through `provider` and returns its error and how many
/// seconds (of tokio's clock, paused in the limit tests) the call took.
pub async fn stream_failure(
    provider: &dyn ModelProvider,
    messages: Vec<AgentModelMessage>,
) -> (ModelError, u64) {
    let started = tokio::time::Instant::now();
    let error = provider
        .stream(
            request(1, messages),
            Arc::new(Deltas::default()),
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    (error, started.elapsed().as_secs())
}

/// Asserts that streaming round 1 through `provider` fails with a retryable idle timeout after
/// exactly `seconds` (of tokio's paused clock).
pub async fn assert_stream_idles_out(
    provider: &dyn ModelProvider,
    messages: Vec<AgentModelMessage>,
    seconds: u64,
) {
    let (error, took) = stream_failure(provider, messages).await;
    assert!(
        matches!(
            error,
            ModelError::TimedOut {
                limit: tt_ports::ModelTimeLimit::Idle,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.is_retryable());
    assert!(error.to_string().contains("idle timeout"), "{error}");
    assert_eq!(took, seconds);
}

/// Asserts that round 1 through `provider` (streamed or not) against a server that never sends
/// its headers fails with a retryable header timeout after exactly `seconds` of tokio's paused
/// clock, and within the default bound of a hung call (300 s).
pub async fn assert_headers_time_out(provider: &dyn ModelProvider, stream: bool, seconds: u64) {
    let started = tokio::time::Instant::now();
    let call = async {
        if stream {
            provider
                .stream(
                    request(1, Vec::new()),
                    Arc::new(Deltas::default()),
                    CancellationToken::new(),
                )
                .await
        } else {
            provider
                .complete(request(1, Vec::new()), CancellationToken::new())
                .await
        }
    };
    let error = tokio::time::timeout(std::time::Duration::from_secs(300), call)
        .await
        .expect("the call outlasted the default bound of 300 s")
        .unwrap_err();
    assert!(
        matches!(
            error,
            ModelError::TimedOut {
                limit: tt_ports::ModelTimeLimit::Header,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(error.code(), error_codes::MODEL_TIMEOUT);
    assert!(error.is_retryable());
    assert!(error.to_string().contains("(header timeout)"), "{error}");
    assert_eq!(started.elapsed().as_secs(), seconds);
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
