//! The prompt-assembly handshake through the host API on real storage, and the preset template
//! broker the CLI uses.

use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tt_domain::model::AgentModelRequest;
use tt_ports::ModelError;
use tt_runtime::{
    AgentProfileDefinition, AgentRunStatus, AgentRuntime, AgentRuntimeBuilder, CommitBridgeChoice,
    PromptBrokerChoice, ReadPromptAssemblyRequest, ResolvePromptAssemblyRequest, TaskStatus,
};
use tt_testkit::fakes::{FakeModel, responses};

use crate::support::start_request;

const CRITIC: &str =
    include_str!("../../crates/tt-cli/scenarios/writers-room/continuity-critic.json");
const WRITER: &str = include_str!("../../crates/tt-cli/scenarios/writers-room/writer.json");

fn model() -> Arc<FakeModel> {
    FakeModel::new(|request: &AgentModelRequest| {
        let call = |id: &str, name: &str, args: Value| (id.to_owned(), name.to_owned(), args);
        let calls = match (request.agent_profile_id.as_str(), request.round) {
            ("writer", 1) => vec![call(
                "d",
                "agent_delegate",
                json!({"agentId": "continuity-critic", "task": {"objective": "Check."}}),
            )],
            ("writer", 2) => vec![call("a", "agent_await", json!({"mode": "allCompleted"}))],
            ("writer", 3) => vec![call(
                "w",
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "Done."}),
            )],
            ("writer", 4) => vec![call("c", "workspace_commit", json!({}))],
            ("writer", 5) => vec![call("f", "workspace_finish", json!({}))],
            ("continuity-critic", 1) => {
                vec![call("r", "task_return", json!({"summary": "Checked."}))]
            }
            (agent, round) => return Err(ModelError::Other(format!("{agent} round {round}"))),
        };
        Ok(responses::tool_calls(
            calls
                .iter()
                .map(|(i, n, a)| (i.as_str(), n.as_str(), a.clone()))
                .collect(),
        ))
    })
}

async fn runtime(dir: &tempfile::TempDir, broker: PromptBrokerChoice) -> AgentRuntime {
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(model())
        .commit_bridge(CommitBridgeChoice::Transcript)
        .prompt_broker(broker)
        .build()
        .unwrap();
    let writer: AgentProfileDefinition = serde_json::from_str(WRITER).unwrap();
    runtime.save_profile(writer).await.unwrap();
    let mut critic: AgentProfileDefinition = serde_json::from_str(CRITIC).unwrap();
    critic.preset.mode = tt_domain::profile::PresetMode::Ref;
    critic.preset.preset_ref = Some(tt_domain::profile::PresetRef {
        api_id: "local".into(),
        name: "critics".into(),
    });
    runtime.save_profile(critic).await.unwrap();
    runtime
}

/// Waits for the next `prompt_assembly_requested` event and returns its assembly id.
async fn next_assembly(runtime: &AgentRuntime, run_id: &str) -> String {
    let mut stream = runtime.subscribe(run_id, 0, None);
    while let Some(event) = stream.next().await.unwrap() {
        if event.event_type == "prompt_assembly_requested" {
            return event.payload["assemblyId"].as_str().unwrap().to_owned();
        }
    }
    panic!("no prompt assembly was requested");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handshake_through_the_host_api() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(&dir, PromptBrokerChoice::HostApi).await;
    let mut start = start_request();
    start.profile_id = Some("writer".into());
    let run = runtime.start_run(start).await.unwrap();
    let assembly_id = tokio::time::timeout(
        Duration::from_secs(60),
        next_assembly(&runtime, run.id.as_str()),
    )
    .await
    .unwrap();

    // Reading: wrong run and unknown ids are clear errors; the right one gives the full request.
    let err = runtime
        .read_prompt_assembly_request(ReadPromptAssemblyRequest {
            run_id: "run_other".into(),
            assembly_id: assembly_id.clone(),
        })
        .unwrap_err();
    assert_eq!(err.code, "agent.prompt_assembly_run_mismatch");
    let err = runtime
        .read_prompt_assembly_request(ReadPromptAssemblyRequest {
            run_id: run.id.to_string(),
            assembly_id: "prompt_assembly_x".into(),
        })
        .unwrap_err();
    assert_eq!(err.code, "agent.prompt_assembly_not_pending");
    let request = runtime
        .read_prompt_assembly_request(ReadPromptAssemblyRequest {
            run_id: run.id.to_string(),
            assembly_id: assembly_id.clone(),
        })
        .unwrap();
    assert_eq!(
        request.preset_ref,
        json!({"apiId": "local", "name": "critics"})
    );

    // The host assembles: its own framing around the two required components.
    let snapshot = json!({
        "messages": [
            {"role": "system", "content": format!("House style.\n\n{}", request.agent_system_prompt)},
            {"role": "user", "content": request.agent_task_prompt},
        ],
        "contextPolicy": request.agent_context_policy,
    });
    runtime
        .resolve_prompt_assembly(ResolvePromptAssemblyRequest {
            run_id: run.id.to_string(),
            assembly_id: assembly_id.clone(),
            prompt_snapshot: Some(snapshot),
            frozen_run_input_snapshot: None,
            generation_intent: Some(json!({"mode": "review"})),
            assembly: Some(json!({"preset": "critics v2"})),
            settings: None,
            error: None,
        })
        .unwrap();
    // Once resolved it is no longer pending.
    let err = runtime
        .read_prompt_assembly_request(ReadPromptAssemblyRequest {
            run_id: run.id.to_string(),
            assembly_id,
        })
        .unwrap_err();
    assert_eq!(err.code, "agent.prompt_assembly_not_pending");

    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);
    let projection = runtime.timeline_projection(run.id.as_str()).await.unwrap();
    assert_eq!(projection.delegation_edges[0].status, TaskStatus::Completed);
    let child = projection.delegation_edges[0].target_invocation_id.as_str();
    let run_dir = dir
        .path()
        .join("chats")
        .join(run.workspace_id.as_str())
        .join("runs")
        .join(run.id.as_str());
    assert!(run_dir.join("records.jsonl").is_file());
    runtime
        .read_record(
            run.id.as_str(),
            &format!("input/invocations/{child}/prompt_snapshot.json"),
        )
        .await
        .unwrap();
    let assembly: Value = runtime
        .read_record(
            run.id.as_str(),
            &format!("input/invocations/{child}/prompt_assembly.json"),
        )
        .await
        .unwrap();
    assert_eq!(assembly["assembly"]["preset"], "critics v2");
    assert_eq!(assembly["generationIntent"]["mode"], "review");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_error_fails_the_task_and_cancel_aborts_a_pending_assembly() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(&dir, PromptBrokerChoice::HostApi).await;
    let mut start = start_request();
    start.profile_id = Some("writer".into());
    let run = runtime.start_run(start.clone()).await.unwrap();
    let assembly_id = tokio::time::timeout(
        Duration::from_secs(60),
        next_assembly(&runtime, run.id.as_str()),
    )
    .await
    .unwrap();
    runtime
        .resolve_prompt_assembly(ResolvePromptAssemblyRequest {
            run_id: run.id.to_string(),
            assembly_id,
            prompt_snapshot: None,
            frozen_run_input_snapshot: None,
            generation_intent: None,
            assembly: None,
            settings: None,
            error: Some("the preset was deleted".into()),
        })
        .unwrap();
    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    // Only the task failed; the writer finished its run.
    assert_eq!(run.status, AgentRunStatus::Completed);
    let projection = runtime.timeline_projection(run.id.as_str()).await.unwrap();
    assert_eq!(projection.delegation_edges[0].status, TaskStatus::Failed);

    // Cancel while a request is pending: the run ends cancelled and the request is withdrawn.
    let run = runtime.start_run(start).await.unwrap();
    let assembly_id = tokio::time::timeout(
        Duration::from_secs(60),
        next_assembly(&runtime, run.id.as_str()),
    )
    .await
    .unwrap();
    runtime.cancel_run(run.id.as_str()).await.unwrap();
    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Cancelled);
    let err = runtime
        .read_prompt_assembly_request(ReadPromptAssemblyRequest {
            run_id: run.id.to_string(),
            assembly_id,
        })
        .unwrap_err();
    assert_eq!(err.code, "agent.prompt_assembly_not_pending");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preset_templates_assemble_without_a_host() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(&dir, PromptBrokerChoice::Templates).await;
    std::fs::create_dir_all(dir.path().join("presets/local")).unwrap();
    std::fs::write(
        dir.path().join("presets/local/critics.json"),
        json!({"schemaVersion": 1, "messages": [
            {"role": "system", "content": "{{agentSystemPrompt}}\n\nBe brief."},
            {"insert": "history"},
            {"role": "user", "content": "{{agentTask}}"}
        ]})
        .to_string(),
    )
    .unwrap();
    let mut start = start_request();
    start.profile_id = Some("writer".into());
    let run = runtime.start_run(start).await.unwrap();
    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);
    let projection = runtime.timeline_projection(run.id.as_str()).await.unwrap();
    assert_eq!(projection.delegation_edges[0].status, TaskStatus::Completed);
}
