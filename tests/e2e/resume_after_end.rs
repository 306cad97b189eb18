//! A run that failed or was cancelled stays resumable until the host abandons it
//! (docs/resume.md, "Resuming a failed or cancelled run"): a resume that fails again can be
//! resumed again, a cancelled fan-out continues its stopped tasks and delivers each result
//! once, and only `abandon_run` makes the end final.

use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tt_domain::model::{AgentModelRequest, ModelContentPart};
use tt_ports::ModelError;
use tt_runtime::{
    AgentRunEvent, AgentRunStatus, AgentRuntime, AgentRuntimeBuilder, CommitBridgeChoice,
    InvocationStatus, TaskStatus,
};
use tt_testkit::fakes::{FakeModel, responses};

use crate::delegation::{WRITERS_ROOM, all_events, helper_profile};
use crate::support::start_request;

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

fn done(request: &AgentModelRequest, id: &str) -> bool {
    results(request).iter().any(|call| call == id)
}

fn call(id: &str, name: &str, args: Value) -> tt_domain::model::AgentModelResponse {
    responses::tool_calls(vec![(id, name, args)])
}

/// `check_run` finds nothing wrong with the run, nor does the timeline's `damage`.
async fn assert_no_damage(runtime: &AgentRuntime, run_id: &str) {
    let damage = runtime.check_run(run_id).await.unwrap();
    assert!(damage.findings.is_empty(), "{damage:?}");
    let graph = runtime.timeline_projection(run_id).await.unwrap();
    assert!(graph.damage.is_empty(), "{:?}", graph.damage);
}

async fn runtime(dir: &std::path::Path, model: Arc<FakeModel>) -> AgentRuntime {
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir)
        .provider(model)
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap();
    let mut lead: tt_runtime::AgentProfileDefinition =
        serde_json::from_str(WRITERS_ROOM[0]).unwrap();
    lead.id = tt_domain::ids::ProfileId::parse("lead").unwrap();
    runtime.save_profile(lead).await.unwrap();
    runtime.save_profile(helper_profile()).await.unwrap();
    runtime
}

async fn start(runtime: &AgentRuntime) -> String {
    let mut request = start_request();
    request.profile_id = Some("lead".into());
    runtime.start_run(request).await.unwrap().id.to_string()
}

fn types(events: &[AgentRunEvent]) -> Vec<&str> {
    events.iter().map(|e| e.event_type.as_str()).collect()
}

fn gapless(events: &[AgentRunEvent]) {
    for (index, event) in events.iter().enumerate() {
        assert_eq!(event.seq, index as u64 + 1, "{}", event.event_type);
    }
}

/// A lead that writes, publishes and finishes; its second answer fails while `down` is set.
fn writer_behind_a_flaky_server(down: Arc<AtomicBool>) -> Arc<FakeModel> {
    FakeModel::new(move |request: &AgentModelRequest| {
        if request.round == 2 && down.load(Ordering::SeqCst) {
            return Err(ModelError::Unavailable {
                code: tt_runtime::error_codes::MODEL_PROVIDER_ERROR,
                message: "connection refused".into(),
            });
        }
        Ok(if done(request, "c") {
            call("f", "workspace_finish", json!({}))
        } else if done(request, "m") {
            call("c", "workspace_commit", json!({}))
        } else {
            call(
                "m",
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "Night fell."}),
            )
        })
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_failed_by_its_model_is_resumed_again_after_a_failed_resume_and_asks_only_what_failed()
 {
    let dir = tempfile::tempdir().unwrap();
    let down = Arc::new(AtomicBool::new(true));
    let model = writer_behind_a_flaky_server(Arc::clone(&down));
    let runtime = runtime(dir.path(), Arc::clone(&model)).await;
    let run_id = start(&runtime).await;
    let ended = runtime.wait_for_run(&run_id).await.unwrap();
    assert_eq!(ended.status, AgentRunStatus::Failed);
    assert_no_damage(&runtime, &run_id).await;

    // The server is still down: the resume fails the same way, and the run stays resumable.
    runtime.resume_run(&run_id).await.unwrap();
    let ended = runtime.wait_for_run(&run_id).await.unwrap();
    assert_eq!(ended.status, AgentRunStatus::Failed);
    // Failed, resumed, failed again: whole (`run_failed` after `run_interrupted` and
    // `run_resumed` is how such a run ends).
    assert_no_damage(&runtime, &run_id).await;

    down.store(false, Ordering::SeqCst);
    runtime.resume_run(&run_id).await.unwrap();
    let ended = runtime.wait_for_run(&run_id).await.unwrap();
    assert_eq!(ended.status, AgentRunStatus::Completed);
    assert_no_damage(&runtime, &run_id).await;
    assert_eq!(
        runtime
            .read_workspace_file(&run_id, "output/main.md")
            .await
            .unwrap()
            .text,
        "Night fell."
    );
    // The first answer was stored and never asked for again; only the failed turn was.
    let rounds: Vec<u32> = model.requests().iter().map(|r| r.round).collect();
    assert_eq!(rounds, [1, 2, 2, 2, 3]);
    // The write ran once.
    let events = all_events(&runtime, &run_id).await;
    gapless(&events);
    assert_eq!(
        events
            .iter()
            .filter(|e| e.event_type == "workspace_file_written")
            .count(),
        1
    );
    let reopened: Vec<&AgentRunEvent> = events
        .iter()
        .filter(|e| e.event_type == "run_interrupted")
        .collect();
    assert_eq!(reopened.len(), 2);
    for event in &reopened {
        assert_eq!(event.payload["reason"], "resumed_after_failure");
        assert_eq!(event.payload["previousStatus"], "failed");
        // Right before it, in the same append: the run says it was reopened from `failed`.
        let said = &events[event.seq as usize - 2];
        assert_eq!(said.event_type, "run_reopened");
        assert_eq!(said.payload["previousStatus"], "failed");
        assert_eq!(said.payload["lastSeq"], event.payload["lastSeq"]);
        assert_eq!(
            said.payload["reopenedInvocationIds"],
            serde_json::json!(["inv_root"])
        );
        // Each reopening follows the end it reopens.
        assert_eq!(
            events[event.payload["lastSeq"].as_u64().unwrap() as usize - 1].event_type,
            "run_failed"
        );
    }
    let kinds = types(&events);
    assert_eq!(kinds.iter().filter(|t| **t == "run_resumed").count(), 2);
    assert_eq!(kinds.last(), Some(&"run_completed"));
    // One stream from seq 0 reads through both failures to the run's real end.
    let mut stream = runtime.subscribe(&run_id, 0, None);
    let mut streamed = Vec::new();
    while let Some(event) = stream.next().await.unwrap() {
        streamed.push(event.seq);
    }
    assert_eq!(streamed.len(), events.len());
}

/// A lead that delegates three notes, awaits them, then writes, publishes and finishes; each
/// helper writes its note and returns.
pub(crate) fn fan_out() -> Arc<FakeModel> {
    FakeModel::new(|request: &AgentModelRequest| {
        Ok(match request.agent_profile_id.as_str() {
            "lead" if request.round == 1 => responses::tool_calls(vec![
                (
                    "d1",
                    "agent_delegate",
                    json!({"agentId": "helper", "task": {"objective": "Note one."}}),
                ),
                (
                    "d2",
                    "agent_delegate",
                    json!({"agentId": "helper", "task": {"objective": "Note two."}}),
                ),
                (
                    "d3",
                    "agent_delegate",
                    json!({"agentId": "helper", "task": {"objective": "Note three."}}),
                ),
                (
                    "a",
                    "agent_await",
                    json!({"mode": "allCompleted", "timeoutMs": 300000}),
                ),
            ]),
            "lead" if done(request, "c") => call("f", "workspace_finish", json!({})),
            "lead" if done(request, "m") => call("c", "workspace_commit", json!({})),
            "lead" => call(
                "m",
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "Three notes."}),
            ),
            _ if done(request, "n") => call(
                "r",
                "task_return",
                json!({"status": "completed", "summary": "Note written."}),
            ),
            _ => call(
                "n",
                "workspace_write_file",
                json!({"path": format!("scratch/{}.md", request.session.invocation_id), "content": "note"}),
            ),
        })
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_fan_out_resumes_its_stopped_tasks_and_delivers_each_result_once() {
    let dir = tempfile::tempdir().unwrap();
    let model = fan_out();
    // Each helper is held at its second answer, after writing its note.
    model.hang_when(|request| request.agent_profile_id.as_str() == "helper" && request.round == 2);
    let runtime = runtime(dir.path(), Arc::clone(&model)).await;
    let run_id = start(&runtime).await;
    model.wait_for_parked(3).await;
    runtime.cancel_run(&run_id).await.unwrap();
    let ended = runtime.wait_for_run(&run_id).await.unwrap();
    assert_eq!(ended.status, AgentRunStatus::Cancelled);
    assert_no_damage(&runtime, &run_id).await;
    let graph = runtime.timeline_projection(&run_id).await.unwrap();
    assert!(
        graph
            .delegation_edges
            .iter()
            .all(|task| task.status == TaskStatus::Cancelled)
    );

    model.stop_hanging();
    runtime.resume_run(&run_id).await.unwrap();
    let ended = runtime.wait_for_run(&run_id).await.unwrap();
    assert_eq!(ended.status, AgentRunStatus::Completed);
    assert_no_damage(&runtime, &run_id).await;
    let graph = runtime.timeline_projection(&run_id).await.unwrap();
    assert_eq!(graph.delegation_edges.len(), 3);
    assert!(
        graph
            .delegation_edges
            .iter()
            .all(|task| task.status == TaskStatus::Completed)
    );
    assert_eq!(graph.invocations.len(), 4);
    assert!(
        graph
            .invocations
            .iter()
            .all(|inv| inv.status == InvocationStatus::Completed),
        "{:?}",
        graph.invocations
    );
    // Each helper wrote its note once and was asked its second answer twice (the cancelled
    // call and the resumed one); the lead's first answer was never asked for again.
    let requests = model.requests();
    let count = |profile: &str, round: u32| {
        requests
            .iter()
            .filter(|r| r.agent_profile_id.as_str() == profile && r.round == round)
            .count()
    };
    assert_eq!(count("helper", 1), 3);
    assert_eq!(count("helper", 2), 6);
    assert_eq!(count("lead", 1), 1);
    let events = all_events(&runtime, &run_id).await;
    gapless(&events);
    assert_eq!(
        events
            .iter()
            .filter(|e| e.event_type == "workspace_file_written"
                && e.payload["path"].as_str().unwrap().starts_with("scratch/"))
            .count(),
        3
    );
    let reopened = events
        .iter()
        .find(|e| e.event_type == "run_interrupted")
        .unwrap();
    assert_eq!(reopened.payload["reason"], "resumed_after_cancel");
    // The run says it was reopened from `cancelled`, and which tasks and agents came back.
    let said = &events[reopened.seq as usize - 2];
    assert_eq!(said.event_type, "run_reopened");
    assert_eq!(said.payload["previousStatus"], "cancelled");
    let task_ids = said.payload["reopenedTaskIds"].as_array().unwrap();
    assert!(!task_ids.is_empty(), "{}", said.payload);
    for id in task_ids {
        assert!(
            events
                .iter()
                .any(|e| e.event_type == "agent_task_interrupted"
                    && e.seq < said.seq
                    && e.payload["taskId"] == *id),
            "{id}"
        );
    }
    // The lead read each result once.
    let lead_last = requests
        .iter()
        .rfind(|r| r.agent_profile_id.as_str() == "lead")
        .unwrap();
    let delivered: Vec<String> = lead_last
        .messages
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|part| match part {
            ModelContentPart::ToolResult { result } if result.call_id == "a" => {
                Some(result.content.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(delivered.len(), 1);
    assert_eq!(
        delivered[0].matches("Note written.").count(),
        3,
        "{}",
        delivered[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_abandoning_makes_an_end_final() {
    let dir = tempfile::tempdir().unwrap();
    let down = Arc::new(AtomicBool::new(true));
    let runtime = runtime(dir.path(), writer_behind_a_flaky_server(Arc::clone(&down))).await;
    let run_id = start(&runtime).await;
    runtime.wait_for_run(&run_id).await.unwrap();

    let abandoned = runtime.abandon_run(&run_id).await.unwrap();
    assert_eq!(abandoned.status, AgentRunStatus::Failed);
    assert!(abandoned.abandoned_at.is_some());
    assert_eq!(runtime.get_run(&run_id).await.unwrap(), abandoned);
    let events = all_events(&runtime, &run_id).await;
    let last = events.last().unwrap();
    assert_eq!(last.event_type, "run_abandoned");
    assert_eq!(last.payload["status"], "failed");
    assert_no_damage(&runtime, &run_id).await;

    down.store(false, Ordering::SeqCst);
    let refused = runtime.resume_run(&run_id).await.unwrap_err();
    assert_eq!(refused.code, "agent.run_not_resumable");
    assert!(refused.message.contains("abandoned"), "{}", refused.message);
    let again = runtime.abandon_run(&run_id).await.unwrap_err();
    assert_eq!(again.code, "agent.run_not_abandonable");
    // Nothing was written by the refusals.
    assert_eq!(all_events(&runtime, &run_id).await.len(), events.len());

    // A completed run is neither resumed nor abandoned.
    let completed = start(&runtime).await;
    assert_eq!(
        runtime.wait_for_run(&completed).await.unwrap().status,
        AgentRunStatus::Completed
    );
    assert_eq!(
        runtime.abandon_run(&completed).await.unwrap_err().code,
        "agent.run_not_abandonable"
    );
    assert_eq!(
        runtime.resume_run(&completed).await.unwrap_err().code,
        "agent.run_not_resumable"
    );
    assert_eq!(
        runtime.abandon_run("run_missing").await.unwrap_err().code,
        "agent.not_found"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_ended_here_is_resumed_by_another_runtime_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let down = Arc::new(AtomicBool::new(true));
    let first = runtime(dir.path(), writer_behind_a_flaky_server(Arc::clone(&down))).await;
    let run_id = start(&first).await;
    assert_eq!(
        first.wait_for_run(&run_id).await.unwrap().status,
        AgentRunStatus::Failed
    );
    // The first runtime is still open, but it let the ended run go: a second one (another
    // window, another process) resumes it without waiting for the first to exit.
    down.store(false, Ordering::SeqCst);
    let second = runtime(dir.path(), writer_behind_a_flaky_server(Arc::clone(&down))).await;
    second.resume_run(&run_id).await.unwrap();
    assert_eq!(
        second.wait_for_run(&run_id).await.unwrap().status,
        AgentRunStatus::Completed
    );
    // And the first, whose copy of the run is stale, is refused while the second holds it, or
    // finds it completed.
    assert_eq!(
        first.abandon_run(&run_id).await.unwrap_err().code,
        "agent.run_not_abandonable"
    );
}
