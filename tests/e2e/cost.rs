//! Cost on the userdata adapter: each priced model call's cost is journaled and summed, and a
//! money budget ends a task (`delegation.maxTaskCostUsd`) or the run
//! (`limits.maxTotalCostUsd`) as its token budget would.

use serde_json::{Value, json};
use std::sync::Arc;
use tt_domain::model::{AgentModelRequest, ModelContentPart, ModelUsage};
use tt_ports::ModelError;
use tt_runtime::{
    AgentRunStatus, AgentRuntime, AgentRuntimeBuilder, CommitBridgeChoice, ConnectionModelInfo,
    ModelPrice, TaskStatus,
};
use tt_testkit::fakes::{FakeModel, responses};

use crate::delegation::{WRITERS_ROOM, all_events};
use crate::support::start_request;

/// $1,000 per million tokens: every answer below (80 in, 20 out) costs $0.10.
fn priced(dir: &std::path::Path, model: Arc<FakeModel>) -> AgentRuntime {
    let price = ModelPrice {
        input: 1000.0,
        output: 1000.0,
        cached_input: None,
        cache_write: None,
    };
    AgentRuntimeBuilder::new()
        .data_dir(dir)
        .provider(model)
        .provider_model_info(ConnectionModelInfo {
            prices: [("*".to_owned(), price)].into_iter().collect(),
            ..ConnectionModelInfo::default()
        })
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap()
}

fn answer(calls: Vec<(String, &str, Value)>) -> tt_domain::model::AgentModelResponse {
    let mut response = responses::tool_calls(
        calls
            .iter()
            .map(|(id, name, args)| (id.as_str(), *name, args.clone()))
            .collect(),
    );
    response.usage = Some(ModelUsage::new(80, 20));
    response
}

fn results(request: &AgentModelRequest) -> Vec<String> {
    request
        .messages
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|part| match part {
            ModelContentPart::ToolResult { result } => Some(result.call_id.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_cost_budget_ends_the_run_and_usage_shows_the_cost() {
    let model = FakeModel::new(|request: &AgentModelRequest| {
        Ok(match request.round {
            1 => answer(vec![(
                "m".into(),
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "First draft."}),
            )]),
            2 => answer(vec![("c".into(), "workspace_commit", json!({}))]),
            round => answer(vec![(
                format!("w{round}"),
                "workspace_write_file",
                json!({"path": "scratch/more.md", "content": "more\n", "mode": "append"}),
            )]),
        })
    });
    let dir = tempfile::tempdir().unwrap();
    let runtime = priced(dir.path(), model.clone());
    let mut lead: tt_runtime::AgentProfileDefinition =
        serde_json::from_str(WRITERS_ROOM[0]).unwrap();
    lead.id = tt_domain::ids::ProfileId::parse("lead").unwrap();
    lead.limits.max_total_cost_usd = tt_domain::cost::Usd::from_dollars(0.5);
    runtime.save_profile(lead).await.unwrap();
    let mut request = start_request();
    request.profile_id = Some("lead".into());
    let run = runtime.start_run(request).await.unwrap();
    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::PartialSuccess);
    let events = all_events(&runtime, run.id.as_str()).await;
    let ended = events
        .iter()
        .find(|e| e.event_type == "run_partial_success")
        .unwrap();
    assert_eq!(ended.payload["code"], "agent.run_budget_exhausted");
    assert_eq!(
        ended.payload["message"],
        "the run cost $0.6000, over its budget of $0.5000 (limits.maxTotalCostUsd)"
    );
    // Six answers of $0.10: the sixth crossed $0.50, and no seventh was asked.
    assert_eq!(model.call_count(), 6);
    let binding = events
        .iter()
        .find(|e| e.event_type == "agent_model_binding_resolved")
        .unwrap();
    assert_eq!(binding.payload["price"]["input"], 1000.0);
    let costs: Vec<f64> = events
        .iter()
        .filter(|e| e.event_type == "model_completed")
        .map(|e| e.payload["costUsd"].as_f64().unwrap())
        .collect();
    assert_eq!(costs, vec![0.1; 6]);
    let usage = runtime.usage(run.id.as_str()).await.unwrap();
    assert_eq!(usage.cost_usd, Some(0.6));
    assert_eq!(usage.unpriced_model_calls, 0);
    assert_eq!(usage.by_invocation[0].subtree.cost_usd, Some(0.6));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_cost_budget_stops_the_task_and_the_lead_goes_on() {
    let model = FakeModel::new(|request: &AgentModelRequest| {
        let done = |id: &str| results(request).iter().any(|call| call == id);
        Ok(match (request.agent_profile_id.as_str(), request.round) {
            ("lead", 1) => answer(vec![
                (
                    "d".into(),
                    "agent_delegate",
                    json!({"agentId": "helper", "task": {"objective": "Part a."}}),
                ),
                (
                    "a".into(),
                    "agent_await",
                    json!({"mode": "allCompleted", "timeoutMs": 300000}),
                ),
            ]),
            ("lead", _) if done("c") => answer(vec![("f".into(), "workspace_finish", json!({}))]),
            ("lead", _) if done("m") => answer(vec![("c".into(), "workspace_commit", json!({}))]),
            ("lead", _) => answer(vec![(
                "m".into(),
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "Done."}),
            )]),
            ("helper", round) if round <= 3 => answer(vec![(
                "n".into(),
                "workspace_write_file",
                json!({"path": "scratch/notes.md", "content": "part\n", "mode": "append"}),
            )]),
            (agent, round) => {
                return Err(ModelError::Unavailable {
                    code: tt_domain::error_codes::MODEL_SCRIPT_EXHAUSTED,
                    message: format!("{agent} round {round}"),
                });
            }
        })
    });
    let dir = tempfile::tempdir().unwrap();
    let runtime = priced(dir.path(), model.clone());
    let mut lead: tt_runtime::AgentProfileDefinition =
        serde_json::from_str(WRITERS_ROOM[0]).unwrap();
    lead.id = tt_domain::ids::ProfileId::parse("lead").unwrap();
    let mut helper = crate::delegation::helper_profile();
    helper.delegation.max_task_cost_usd = tt_domain::cost::Usd::from_dollars(0.15);
    runtime.save_profile(lead).await.unwrap();
    runtime.save_profile(helper).await.unwrap();
    let mut request = start_request();
    request.profile_id = Some("lead".into());
    let run = runtime.start_run(request).await.unwrap();
    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);
    let projection = runtime.timeline_projection(run.id.as_str()).await.unwrap();
    let stopped = &projection.delegation_edges[0];
    assert_eq!(stopped.status, TaskStatus::Failed);
    assert_eq!(
        stopped.error.as_deref(),
        Some("agent.task_budget_exhausted: it used $0.2000, over its budget of $0.1500")
    );
    let usage = runtime.usage(run.id.as_str()).await.unwrap();
    let helper_usage = &usage.by_invocation[1];
    assert_eq!(helper_usage.cost_usd, Some(0.2));
    assert_eq!(usage.by_invocation[0].subtree.cost_usd, usage.cost_usd);
}
