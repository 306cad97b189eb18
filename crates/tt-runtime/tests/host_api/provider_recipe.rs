//! docs/ARCHITECTURE.md's "How to add a provider", followed with the smallest provider: a type
//! that implements `name` and `complete` only (step 2) and reaches runs as a named connection
//! (step 4), with nothing in the runtime changed for it; the events name it with the trait's
//! defaults (`providerFormat` is its name, `transport` is `in_process`).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tt_runtime::{
    AgentModelMessage, AgentModelRequest, AgentModelResponse, AgentRunStatus, AgentToolCall,
    ModelContentPart, ModelError, ModelProvider, ModelRole, ReadEventsRequest, StartRunRequest,
};

use super::{first_of, hanging_model, run_to_end, transcript_builder};

/// A provider written from the trait alone: write, commit, finish.
struct HouseModel;

#[async_trait]
impl ModelProvider for HouseModel {
    fn name(&self) -> &str {
        "house"
    }

    async fn complete(
        &self,
        request: &AgentModelRequest,
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
    let runtime = transcript_builder(dir.path(), hanging_model())
        .connection("house", Arc::new(HouseModel))
        .build()
        .unwrap();
    let run = run_to_end(
        &runtime,
        StartRunRequest::new("house-chat", "Write a scene.").connection("house"),
    )
    .await;
    assert_eq!(run.status, AgentRunStatus::Completed);
    let events = runtime
        .read_events(ReadEventsRequest {
            run_id: run.id.to_string(),
            ..ReadEventsRequest::default()
        })
        .await
        .unwrap()
        .events;
    let binding = first_of(&events, "agent_model_binding_resolved");
    assert_eq!(binding.payload["provider"], "house");
    assert_eq!(binding.payload["providerFormat"], "house");
    assert_eq!(binding.payload["transport"], "in_process");
    assert_eq!(binding.payload["connectionRef"], "house");
    runtime.shutdown().await.unwrap();
}
