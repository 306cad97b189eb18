//! docs/ARCHITECTURE.md's "How to add a provider", followed with the smallest provider: a type
//! that implements `name` and `complete` only (step 2) and reaches runs as a named connection
//! (step 4), with nothing in the runtime changed for it; the events name it with the trait's
//! defaults (`providerFormat` is its name, `transport` is `in_process`).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tt_runtime::{
    AgentModelMessage, AgentModelRequest, AgentModelResponse, AgentRunStatus, AgentRuntimeBuilder,
    AgentToolCall, CommitBridgeChoice, ModelContentPart, ModelError, ModelProvider, ModelRole,
    ReadEventsRequest, StartRunRequest,
};

use super::hanging_model;

/// A provider written from the trait alone: write, commit, finish.
struct HouseModel;

#[async_trait]
impl ModelProvider for HouseModel {
    fn name(&self) -> &str {
        "house"
    }

    async fn complete(
        &self,
        request: AgentModelRequest,
        _cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        let (name, arguments) = match request.round {
            1 => (
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "Night fell.\n"}),
            ),
            2 => ("workspace_commit", json!({})),
            _ => ("workspace_finish", json!({})),
        };
        let call = AgentToolCall {
            id: format!("house_{}", request.round),
            name: name.to_owned(),
            arguments,
            provider_metadata: serde_json::Value::Null,
        };
        Ok(AgentModelResponse {
            message: AgentModelMessage {
                role: ModelRole::Assistant,
                parts: vec![ModelContentPart::ToolCall { call }],
                provider_metadata: serde_json::Value::Null,
            },
            response_id: None,
            model: Some("house-1".to_owned()),
            finish_reason: Some("tool_calls".to_owned()),
            usage: None,
            raw_response: serde_json::Value::Null,
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_of_two_methods_runs_a_whole_run_as_a_named_connection() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(hanging_model())
        .connection("house", Arc::new(HouseModel))
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap();
    let run = runtime
        .start_run(StartRunRequest::new("house-chat", "Write a scene.").connection("house"))
        .await
        .unwrap();
    let done = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(done.status, AgentRunStatus::Completed);
    let events = runtime
        .read_events(ReadEventsRequest {
            run_id: run.id.to_string(),
            ..ReadEventsRequest::default()
        })
        .await
        .unwrap()
        .events;
    let binding = events
        .iter()
        .find(|event| event.event_type == "agent_model_binding_resolved")
        .unwrap();
    assert_eq!(binding.payload["provider"], "house");
    assert_eq!(binding.payload["providerFormat"], "house");
    assert_eq!(binding.payload["transport"], "in_process");
    assert_eq!(binding.payload["connectionRef"], "house");
    runtime.shutdown().await.unwrap();
}
