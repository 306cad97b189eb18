//! Delegation end to end on the userdata adapter: the writers' room scenario, 32 delegated
//! agents at once, and run cancel while 8 of them are inside a model call.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tt_domain::model::AgentModelRequest;
use tt_ports::ModelError;
use tt_runtime::{
    AgentProfileDefinition, AgentRunEvent, AgentRunStatus, AgentRuntime, AgentRuntimeBuilder,
    CommitBridgeChoice, ReadEventsRequest, ScriptedProvider, TaskStatus,
};
use tt_testkit::fakes::{FakeModel, responses};

use crate::support::start_request;

pub(crate) const WRITERS_ROOM: [&str; 5] = [
    include_str!("../../crates/tt-cli/scenarios/writers-room/writer.json"),
    include_str!("../../crates/tt-cli/scenarios/writers-room/continuity-critic.json"),
    include_str!("../../crates/tt-cli/scenarios/writers-room/style-advisor.json"),
    include_str!("../../crates/tt-cli/scenarios/writers-room/final-editor.json"),
    include_str!("../../crates/tt-cli/scenarios/writers-room/fact-checker.json"),
];
pub(crate) const WRITERS_ROOM_SCRIPT: &str =
    include_str!("../../crates/tt-cli/scenarios/writers-room/script.json");

pub(crate) async fn install(runtime: &AgentRuntime, profiles: &[&str]) {
    for text in profiles {
        let definition: AgentProfileDefinition = serde_json::from_str(text).unwrap();
        runtime.save_profile(definition).await.unwrap();
    }
}

pub(crate) async fn all_events(runtime: &AgentRuntime, run_id: &str) -> Vec<AgentRunEvent> {
    let mut events = Vec::new();
    loop {
        let page = runtime
            .read_events(ReadEventsRequest {
                run_id: run_id.to_owned(),
                after_seq: events.last().map(|e: &AgentRunEvent| e.seq),
                limit: Some(500),
                ..Default::default()
            })
            .await
            .unwrap()
            .events;
        if page.is_empty() {
            tt_testkit::events_doc::assert_documented(&events);
            tt_testkit::events_doc::assert_typed(&events);
            return events;
        }
        events.extend(page);
    }
}

/// Installs the writers' room in a runtime on `data_dir`: its four profiles, its global skill,
/// and the preset the style advisor's prompt is assembled from.
pub(crate) async fn install_writers_room(runtime: &AgentRuntime, data_dir: &std::path::Path) {
    install(runtime, &WRITERS_ROOM).await;
    runtime
        .save_skill_file(
            &tt_runtime::SkillScope::Global,
            "scene-craft",
            "SKILL.md",
            include_str!("../../crates/tt-cli/scenarios/writers-room/skill-scene-craft.md"),
        )
        .await
        .unwrap();
    let presets = data_dir.join("presets/writers-room");
    std::fs::create_dir_all(&presets).unwrap();
    std::fs::write(
        presets.join("advisors.json"),
        include_str!("../../crates/tt-cli/scenarios/writers-room/preset-advisors.json"),
    )
    .unwrap();
}

/// Every finished delegated result reached its delegating agent exactly once: by `agent.await`
/// or by injection, never both, never lost.
fn assert_each_result_delivered_once(events: &[AgentRunEvent], expected: usize) {
    let mut deliveries: HashMap<String, usize> = HashMap::new();
    for event in events {
        let ids = match event.event_type.as_str() {
            "agent_await_completed" => &event.payload["deliveredTaskIds"],
            "agent_results_injected" => &event.payload["taskIds"],
            _ => continue,
        };
        for id in ids.as_array().unwrap() {
            *deliveries
                .entry(id.as_str().unwrap().to_owned())
                .or_default() += 1;
        }
    }
    assert_eq!(deliveries.len(), expected, "{deliveries:?}");
    assert!(
        deliveries.values().all(|count| *count == 1),
        "{deliveries:?}"
    );
}

fn assert_gapless(events: &[AgentRunEvent]) {
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_room_runs_end_to_end_on_userdata() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(Arc::new(
            ScriptedProvider::from_json_str(WRITERS_ROOM_SCRIPT).unwrap(),
        ))
        .commit_bridge(CommitBridgeChoice::Transcript)
        .prompt_broker(tt_runtime::PromptBrokerChoice::Templates)
        .build()
        .unwrap();
    install_writers_room(&runtime, dir.path()).await;
    let mut request = start_request();
    request.profile_id = Some("writer".into());
    let run = runtime.start_run(request).await.unwrap();
    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);

    let projection = runtime.timeline_projection(run.id.as_str()).await.unwrap();
    // The writer, two reviewers, the fact checker the critic delegated to, and the final
    // editor the writer handed off to.
    assert_eq!(projection.invocations.len(), 5);
    assert_eq!(projection.delegation_edges.len(), 4);
    let critic = projection
        .delegation_edges
        .iter()
        .find(|edge| edge.target_profile_id.as_str() == "continuity-critic")
        .unwrap();
    let checker = projection
        .delegation_edges
        .iter()
        .find(|edge| edge.target_profile_id.as_str() == "fact-checker")
        .unwrap();
    assert_eq!(checker.source_invocation_id, critic.target_invocation_id);
    assert!(
        projection
            .delegation_edges
            .iter()
            .all(|edge| edge.status == TaskStatus::Completed)
    );
    assert_eq!(projection.foreground_invocation_ids.len(), 2);

    let events = all_events(&runtime, run.id.as_str()).await;
    assert_gapless(&events);
    assert_each_result_delivered_once(&events, 3);
    // The writer read its skill; the advisor's prompt came from its preset.
    assert!(
        events
            .iter()
            .any(|e| e.event_type == "tool_call_completed" && e.payload["name"] == "skill.read")
    );
    assert!(
        events
            .iter()
            .any(|e| e.event_type == "prompt_assembly_completed")
    );

    let run_dir = dir
        .path()
        .join("chats")
        .join(run.workspace_id.as_str())
        .join("runs")
        .join(run.id.as_str());
    for edge in projection
        .delegation_edges
        .iter()
        .filter(|edge| edge.continuation == tt_runtime::TaskContinuation::ReturnToParent)
    {
        let child = edge.target_invocation_id.as_str();
        for reference in [
            format!("agent-results/{child}.json"),
            format!("input/invocations/{child}/tool_snapshot.json"),
            format!("model-responses/{child}/round-001.json"),
        ] {
            runtime
                .read_record(run.id.as_str(), &reference)
                .await
                .unwrap_or_else(|err| panic!("{reference}: {err}"));
        }
    }
    let summary =
        std::fs::read_to_string(run_dir.join("summaries/continuity-critic-result.md")).unwrap();
    assert!(summary.starts_with("# Delegated Task Result\n"));
    let published = runtime.transcript(run.workspace_id.as_str()).await.unwrap();
    assert!(
        published[0]
            .content
            .starts_with("# The Keeper of the Storm Light")
    );
    assert!(
        published[0]
            .content
            .contains("afraid of the dark all her life")
    );

    // Per-agent journal views through the invocation filter.
    let critic = projection
        .invocations
        .iter()
        .find(|inv| inv.profile_id.as_str() == "continuity-critic")
        .unwrap();
    let critic_events = runtime
        .read_events(ReadEventsRequest {
            run_id: run.id.to_string(),
            invocation_id: Some(critic.invocation_id.to_string()),
            limit: Some(500),
            ..Default::default()
        })
        .await
        .unwrap()
        .events;
    assert!(
        critic_events
            .iter()
            .any(|e| e.event_type == "task_return_completed")
    );
    assert!(
        critic_events
            .iter()
            .all(|e| e.concerns_invocation(critic.invocation_id.as_str()))
    );
}

/// A writer that delegates `n` tasks at once, then waits for all, then publishes.
fn fanout_model(n: usize) -> Arc<FakeModel> {
    FakeModel::new(move |request: &AgentModelRequest| {
        let call = |id: &str, name: &str, args: Value| (id.to_owned(), name.to_owned(), args);
        let calls: Vec<(String, String, Value)> = match (
            request.agent_profile_id.as_str(),
            request.round,
        ) {
            ("lead", 1) => (0..n)
                .map(|i| {
                    call(
                        &format!("d{i}"),
                        "agent_delegate",
                        json!({"agentId": "helper", "task": {"objective": format!("Part {i}")}}),
                    )
                })
                .collect(),
            ("lead", 2) => vec![call(
                "w",
                "workspace_write_file",
                json!({"path": "plan/progress.md", "content": "waiting"}),
            )],
            ("lead", 3) => vec![call(
                "a",
                "agent_await",
                json!({"mode": "allCompleted", "timeoutMs": 300000}),
            )],
            ("lead", 4) => vec![call(
                "m",
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "All parts done."}),
            )],
            ("lead", 5) => vec![call("c", "workspace_commit", json!({}))],
            ("lead", 6) => vec![call("f", "workspace_finish", json!({}))],
            ("helper", 1) => vec![call(
                "n",
                "workspace_write_file",
                json!({"path": "scratch/notes.md", "content": "part\n", "mode": "append"}),
            )],
            ("helper", 2) => vec![call("r", "task_return", json!({"summary": "Part done."}))],
            (agent, round) => {
                return Err(ModelError::Unavailable {
                    code: tt_domain::error_codes::MODEL_SCRIPT_EXHAUSTED,
                    message: format!("{agent} round {round}"),
                });
            }
        };
        Ok(responses::tool_calls(
            calls
                .iter()
                .map(|(id, name, args)| (id.as_str(), name.as_str(), args.clone()))
                .collect(),
        ))
    })
}

fn lead_profile(n: u32) -> AgentProfileDefinition {
    let mut profile: AgentProfileDefinition = serde_json::from_str(WRITERS_ROOM[0]).unwrap();
    profile.id = tt_domain::ids::ProfileId::parse("lead").unwrap();
    profile.delegation.max_concurrent_invocations = n;
    profile.delegation.max_invocations_per_run = n;
    profile.tools.max_calls_per_run = n + 10;
    profile
}

/// The continuity critic without its own delegation: a plain worker.
pub(crate) fn helper_profile() -> AgentProfileDefinition {
    let mut profile: AgentProfileDefinition = serde_json::from_str(WRITERS_ROOM[1]).unwrap();
    profile.id = tt_domain::ids::ProfileId::parse("helper").unwrap();
    profile.delegation.can_delegate = false;
    profile.delegation.allow_nested_delegation = false;
    profile
        .tools
        .allow
        .retain(|tool| !tool.starts_with("agent."));
    profile
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_delegated_agents_at_once_each_result_delivered_once() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(fanout_model(32))
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap();
    runtime.save_profile(lead_profile(32)).await.unwrap();
    runtime.save_profile(helper_profile()).await.unwrap();
    let mut request = start_request();
    request.profile_id = Some("lead".into());
    let run = runtime.start_run(request).await.unwrap();
    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);

    let events = all_events(&runtime, run.id.as_str()).await;
    assert_gapless(&events);
    assert_each_result_delivered_once(&events, 32);
    let projection = runtime.timeline_projection(run.id.as_str()).await.unwrap();
    assert_eq!(projection.delegation_edges.len(), 32);
    assert!(
        projection
            .delegation_edges
            .iter()
            .all(|edge| edge.status == TaskStatus::Completed)
    );
    // 32 appends to one file, none lost.
    let notes = runtime
        .read_workspace_file(run.id.as_str(), "scratch/notes.md")
        .await
        .unwrap();
    assert_eq!(notes.text.matches("part\n").count(), 32);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_cancel_with_eight_agents_inside_model_calls_on_userdata() {
    let dir = tempfile::tempdir().unwrap();
    let model = fanout_model(8);
    model.hang_when(|request| request.agent_profile_id.as_str() == "helper");
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(model.clone())
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap();
    runtime.save_profile(lead_profile(8)).await.unwrap();
    runtime.save_profile(helper_profile()).await.unwrap();
    let mut request = start_request();
    request.profile_id = Some("lead".into());
    let run = runtime.start_run(request).await.unwrap();
    tokio::time::timeout(Duration::from_secs(60), model.wait_for_parked(8))
        .await
        .expect("8 parked calls");
    runtime.cancel_run(run.id.as_str()).await.unwrap();
    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Cancelled);
    assert_eq!(model.parked_count(), 0);

    let projection = runtime.timeline_projection(run.id.as_str()).await.unwrap();
    assert_eq!(projection.delegation_edges.len(), 8);
    assert!(
        projection
            .delegation_edges
            .iter()
            .all(|edge| edge.status == TaskStatus::Cancelled)
    );
    assert!(
        projection
            .invocations
            .iter()
            .all(|inv| inv.status.as_str() == "cancelled")
    );
    let events = all_events(&runtime, run.id.as_str()).await;
    assert_gapless(&events);
    for edge in &projection.delegation_edges {
        let child = edge.target_invocation_id.as_str();
        let cancelled_at = events
            .iter()
            .position(|e| {
                e.event_type == "agent_invocation_cancelled" && e.payload["invocationId"] == child
            })
            .unwrap();
        assert!(
            events[cancelled_at + 1..]
                .iter()
                .all(|e| e.scope_invocation_id() != Some(child))
        );
    }
    assert_eq!(events.last().unwrap().event_type, "run_cancelled");
    // The delegated agents never got to write anything.
    let scratch = dir
        .path()
        .join("chats")
        .join(run.workspace_id.as_str())
        .join("runs")
        .join(run.id.as_str())
        .join("scratch");
    assert_eq!(std::fs::read_dir(scratch).unwrap().count(), 0);
}
