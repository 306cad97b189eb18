//! Orchestration on the userdata adapter (issue 13): stopping one delegated task, by the agent
//! that delegated it (`agent_cancel_task`) or by the host (`cancel_task`), while the others
//! complete and every result is delivered exactly once.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tt_domain::model::{AgentModelRequest, ModelContentPart};
use tt_ports::ModelError;
use tt_runtime::{
    AgentProfileDefinition, AgentRunEvent, AgentRunStatus, AgentRuntimeBuilder, CommitBridgeChoice,
    TaskStatus,
};
use tt_testkit::fakes::{FakeModel, responses};

use crate::delegation::{WRITERS_ROOM, all_events};
use crate::support::start_request;

const N: usize = 8;

/// One tool call a scripted agent makes: call id, tool name, arguments.
type Call = (String, String, Value);
/// The part whose agent is stopped; it writes one file and then hangs in its next model call.
const STOPPED_PART: usize = 3;

/// Every tool result the model has been sent so far, by call id.
fn tool_results(request: &AgentModelRequest) -> HashMap<String, (String, Value, bool)> {
    let mut results = HashMap::new();
    for message in &request.messages {
        for part in &message.parts {
            if let ModelContentPart::ToolResult { result } = part {
                results.insert(
                    result.call_id.clone(),
                    (
                        result.content.clone(),
                        result.structured.clone(),
                        result.is_error,
                    ),
                );
            }
        }
    }
    results
}

fn is_stopped_part(request: &AgentModelRequest) -> bool {
    request.agent_profile_id.as_str() == "helper"
        && request.messages.iter().any(|message| {
            message.parts.iter().any(|part| {
                matches!(part, ModelContentPart::Text { text } if text.contains(&format!("Part {STOPPED_PART}.")))
            })
        })
}

/// A lead that delegates `N` parts, then runs `middle` (its rounds from 2 on), then publishes
/// and finishes. The helper of [`STOPPED_PART`] writes a file, then hangs in its next call.
fn model(middle: fn(u32, &AgentModelRequest) -> Option<Vec<Call>>) -> Arc<FakeModel> {
    let model = FakeModel::new(move |request: &AgentModelRequest| {
        let call = |id: &str, name: &str, args: Value| (id.to_owned(), name.to_owned(), args);
        let calls: Vec<(String, String, Value)> = match (
            request.agent_profile_id.as_str(),
            request.round,
        ) {
            ("lead", 1) => (0..N)
                .map(|i| {
                    call(
                        &format!("d{i}"),
                        "agent_delegate",
                        json!({"agentId": "helper", "task": {"objective": format!("Part {i}.")}}),
                    )
                })
                .collect(),
            ("lead", round) => match middle(round, request) {
                Some(calls) => calls,
                None => {
                    let done = tool_results(request).contains_key("c");
                    let wrote = tool_results(request).contains_key("m");
                    if done {
                        vec![call("f", "workspace_finish", json!({}))]
                    } else if wrote {
                        vec![call("c", "workspace_commit", json!({}))]
                    } else {
                        vec![call(
                            "m",
                            "workspace_write_file",
                            json!({"path": "output/main.md", "content": "Seven parts done."}),
                        )]
                    }
                }
            },
            ("helper", 1) if is_stopped_part(request) => vec![call(
                "n",
                "workspace_write_file",
                json!({"path": "scratch/part-3-draft.md", "content": "half a draft\n"}),
            )],
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
    });
    model.hang_when(|request| request.round == 2 && is_stopped_part(request));
    model
}

fn profiles() -> [AgentProfileDefinition; 2] {
    let mut lead: AgentProfileDefinition = serde_json::from_str(WRITERS_ROOM[0]).unwrap();
    lead.id = tt_domain::ids::ProfileId::parse("lead").unwrap();
    lead.delegation.max_concurrent_invocations = N as u32;
    lead.delegation.max_invocations_per_run = N as u32;
    lead.tools.max_calls_per_run = N as u32 + 12;
    if !lead.tools.allow.iter().any(|t| t == "agent.cancel_task") {
        lead.tools.allow.push("agent.cancel_task".to_owned());
    }
    [lead, crate::delegation::helper_profile()]
}

/// Each finished result reached the lead exactly once (by await or injection).
fn deliveries(events: &[AgentRunEvent]) -> HashMap<String, usize> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for event in events {
        let ids = match event.event_type.as_str() {
            "agent_await_completed" => &event.payload["deliveredTaskIds"],
            "agent_results_injected" => &event.payload["taskIds"],
            _ => continue,
        };
        for id in ids.as_array().unwrap() {
            *counts.entry(id.as_str().unwrap().to_owned()).or_default() += 1;
        }
    }
    counts
}

/// Nothing is journaled for the stopped agent after its `agent_invocation_cancelled`.
fn assert_silent_after_cancel(events: &[AgentRunEvent], invocation: &str) {
    let at = events
        .iter()
        .position(|e| {
            e.event_type == "agent_invocation_cancelled" && e.payload["invocationId"] == invocation
        })
        .expect("the stopped agent's invocation is cancelled");
    let late: Vec<&str> = events[at + 1..]
        .iter()
        .filter(|e| e.scope_invocation_id() == Some(invocation))
        .map(|e| e.event_type.as_str())
        .collect();
    assert!(late.is_empty(), "written after the cancel: {late:?}");
    let task_cancelled = events
        .iter()
        .position(|e| e.event_type == "agent_task_cancelled")
        .unwrap();
    assert!(task_cancelled < at);
}

/// Task ids are the handle the agent passes back; the leak scan and snapshots see a stand-in.
fn redact(text: &str, task_ids: &[String]) -> String {
    task_ids.iter().fold(text.to_owned(), |text, id| {
        text.replace(id.as_str(), "<task id>")
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_stops_one_of_eight_tasks_inside_a_model_call_while_the_lead_awaits() {
    let dir = tempfile::tempdir().unwrap();
    let model = model(|round, _| match round {
        2 => Some(vec![(
            "a".to_owned(),
            "agent_await".to_owned(),
            json!({"mode": "allCompleted", "timeoutMs": 300000}),
        )]),
        _ => None,
    });
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(model.clone())
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap();
    for profile in profiles() {
        runtime.save_profile(profile).await.unwrap();
    }
    let mut request = start_request();
    request.profile_id = Some("lead".into());
    let run = runtime.start_run(request).await.unwrap();
    tokio::time::timeout(Duration::from_secs(60), model.wait_for_parked(1))
        .await
        .expect("the part-3 agent is inside its model call");
    // ... and the lead is waiting for all eight.
    let mut live = runtime.subscribe(run.id.as_str(), 0, None);
    tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(event) = live.next().await.unwrap() {
            if event.event_type == "agent_await_started" {
                return;
            }
        }
        panic!("the run ended before the lead waited");
    })
    .await
    .expect("the lead waits");

    let projection = runtime.timeline_projection(run.id.as_str()).await.unwrap();
    let task_ids: Vec<String> = projection
        .delegation_edges
        .iter()
        .map(|edge| edge.task_id.to_string())
        .collect();
    let requests = model.requests();
    let stopped_invocation = requests
        .iter()
        .find(|r| is_stopped_part(r))
        .map(|r| r.session.invocation_id.to_string())
        .unwrap();
    let stopped = projection
        .delegation_edges
        .iter()
        .find(|edge| edge.target_invocation_id.as_str() == stopped_invocation)
        .unwrap()
        .task_id
        .to_string();
    let cancelled = runtime
        .cancel_task(run.id.as_str(), &stopped)
        .await
        .unwrap();
    assert_eq!(cancelled.status, TaskStatus::Cancelled);
    assert_eq!(model.parked_count(), 0, "its model call was aborted");
    // Stopping it again, or an unknown task, is a coded refusal.
    let again = runtime
        .cancel_task(run.id.as_str(), &stopped)
        .await
        .unwrap_err();
    assert_eq!(again.code, "agent.task_already_finished");
    let unknown = runtime
        .cancel_task(run.id.as_str(), "task_nope")
        .await
        .unwrap_err();
    assert_eq!(unknown.code, "agent.task_not_found");

    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    if run.status != AgentRunStatus::Completed {
        for e in all_events(&runtime, run.id.as_str())
            .await
            .iter()
            .rev()
            .take(12)
        {
            eprintln!("{} {}", e.event_type, e.payload);
        }
    }
    assert_eq!(run.status, AgentRunStatus::Completed);
    let events = all_events(&runtime, run.id.as_str()).await;
    let delivered = deliveries(&events);
    assert_eq!(delivered.len(), N, "{delivered:?}");
    assert!(delivered.values().all(|count| *count == 1), "{delivered:?}");
    assert_silent_after_cancel(&events, &stopped_invocation);
    let event = events
        .iter()
        .find(|e| e.event_type == "agent_task_cancelled")
        .unwrap();
    assert_eq!(event.payload["taskId"], stopped.as_str());
    assert_eq!(event.payload["by"], "host");
    assert_eq!(event.payload["reason"], "stopped by the user");

    let projection = runtime.timeline_projection(run.id.as_str()).await.unwrap();
    let statuses: Vec<TaskStatus> = projection
        .delegation_edges
        .iter()
        .map(|edge| edge.status)
        .collect();
    assert_eq!(
        statuses
            .iter()
            .filter(|s| **s == TaskStatus::Completed)
            .count(),
        N - 1
    );
    // The wait that was in progress reported the stopped task, with what it had written.
    let lead = model
        .requests()
        .into_iter()
        .filter(|r| r.agent_profile_id.as_str() == "lead")
        .find(|r| r.round == 3)
        .unwrap();
    let (capsule, _, is_error) = tool_results(&lead).remove("a").unwrap();
    assert!(!is_error);
    let section = capsule
        .split("\n### ")
        .find(|part| part.starts_with("helper - cancelled"))
        .expect("the stopped task's section");
    let section = redact(section, &task_ids);
    tt_testkit::leaks::assert_no_leaks("the stopped task's capsule", &section);
    insta::assert_snapshot!("stopped_task_capsule_section", section);
    let draft = runtime
        .read_workspace_file(run.id.as_str(), "scratch/part-3-draft.md")
        .await
        .unwrap();
    assert_eq!(draft.text, "half a draft\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lead_stops_one_of_eight_tasks_and_the_others_deliver_once() {
    let dir = tempfile::tempdir().unwrap();
    let model = model(|round, request| {
        let results = tool_results(request);
        let stopped = results
            .get(&format!("d{STOPPED_PART}"))
            .and_then(|(_, structured, _)| structured["taskId"].as_str())
            .unwrap_or("missing")
            .to_owned();
        let call = |id: &str, name: &str, args: Value| (id.to_owned(), name.to_owned(), args);
        match round {
            2 => Some(vec![call(
                "x1",
                "agent_cancel_task",
                json!({"taskId": stopped, "reason": "Another part already covers this."}),
            )]),
            // Stopping it again, an unknown id and a bad argument are each refused, recoverably.
            3 => Some(vec![
                call("x2", "agent_cancel_task", json!({"taskId": stopped})),
                call("x3", "agent_cancel_task", json!({"taskId": "task_unknown"})),
                call("x4", "agent_cancel_task", json!({"task": stopped})),
            ]),
            4 => Some(vec![call(
                "a",
                "agent_await",
                json!({"mode": "allCompleted", "timeoutMs": 300000}),
            )]),
            _ => None,
        }
    });
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(model.clone())
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap();
    for profile in profiles() {
        runtime.save_profile(profile).await.unwrap();
    }
    let mut request = start_request();
    request.profile_id = Some("lead".into());
    let run = runtime.start_run(request).await.unwrap();
    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    if run.status != AgentRunStatus::Completed {
        for e in all_events(&runtime, run.id.as_str())
            .await
            .iter()
            .rev()
            .take(12)
        {
            eprintln!("{} {}", e.event_type, e.payload);
        }
    }
    assert_eq!(run.status, AgentRunStatus::Completed);
    assert_eq!(model.parked_count(), 0);

    let events = all_events(&runtime, run.id.as_str()).await;
    let delivered = deliveries(&events);
    assert_eq!(delivered.len(), N, "{delivered:?}");
    assert!(delivered.values().all(|count| *count == 1), "{delivered:?}");
    let projection = runtime.timeline_projection(run.id.as_str()).await.unwrap();
    let task_ids: Vec<String> = projection
        .delegation_edges
        .iter()
        .map(|edge| edge.task_id.to_string())
        .collect();
    let cancelled: Vec<_> = projection
        .delegation_edges
        .iter()
        .filter(|edge| edge.status == TaskStatus::Cancelled)
        .collect();
    assert_eq!(cancelled.len(), 1);
    assert_eq!(
        projection
            .delegation_edges
            .iter()
            .filter(|edge| edge.status == TaskStatus::Completed)
            .count(),
        N - 1
    );
    assert_silent_after_cancel(&events, cancelled[0].target_invocation_id.as_str());
    let event = events
        .iter()
        .find(|e| e.event_type == "agent_task_cancelled")
        .unwrap();
    assert_eq!(event.payload["by"], "inv_root");
    assert_eq!(event.payload["reason"], "Another part already covers this.");

    // What the lead read: the confirmation, then three recoverable refusals.
    let lead = model
        .requests()
        .into_iter()
        .filter(|r| r.agent_profile_id.as_str() == "lead")
        .find(|r| r.round == 5)
        .unwrap();
    let results = tool_results(&lead);
    let mut shown = Vec::new();
    for id in ["x1", "x2", "x3", "x4"] {
        let (content, structured, is_error) = results[id].clone();
        let content = redact(&content, &task_ids);
        tt_testkit::leaks::assert_no_leaks("an agent_cancel_task result", &content);
        assert_eq!(is_error, id != "x1", "{id}: {content}");
        shown.push(format!(
            "{id} ({}):\n{content}",
            structured["error"]["code"].as_str().unwrap_or("ok")
        ));
    }
    insta::assert_snapshot!(
        "cancel_task_results_as_the_lead_reads_them",
        shown.join("\n\n")
    );
}

/// 32 tasks through 4 slots: the lead delegates 33 (the last refused by the per-run limit),
/// sees where each waits, then waits for all; the helpers are held in their first model call
/// until the lead is waiting, so the line is exactly 4 running and 28 waiting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_tasks_through_four_slots_start_in_fifo_order() {
    const TASKS: usize = 32;
    const SLOTS: u32 = 4;
    let model = FakeModel::new(|request: &AgentModelRequest| {
        let call = |id: &str, name: &str, args: Value| (id.to_owned(), name.to_owned(), args);
        let done = |id: &str| tool_results(request).contains_key(id);
        let calls: Vec<Call> = match (request.agent_profile_id.as_str(), request.round) {
            ("lead", 1) => (0..=TASKS)
                .map(|i| {
                    call(
                        &format!("d{i}"),
                        "agent_delegate",
                        json!({"agentId": "helper", "task": {"objective": format!("Part {i}.")}}),
                    )
                })
                .collect(),
            ("lead", 2) => vec![
                call("l", "agent_list", json!({"purpose": "delegate"})),
                call("s", "agent_await", json!({"mode": "statusOnly"})),
            ],
            ("lead", 3) => vec![call(
                "a",
                "agent_await",
                json!({"mode": "allCompleted", "timeoutMs": 300000}),
            )],
            ("lead", _) if done("c") => vec![call("f", "workspace_finish", json!({}))],
            ("lead", _) if done("m") => vec![call("c", "workspace_commit", json!({}))],
            ("lead", _) => vec![call(
                "m",
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "All parts done."}),
            )],
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
    });
    model.hang_when(|request| request.agent_profile_id.as_str() == "helper");
    let dir = tempfile::tempdir().unwrap();
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(model.clone())
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap();
    let [mut lead, helper] = profiles();
    lead.delegation.max_concurrent_invocations = SLOTS;
    lead.delegation.max_invocations_per_run = TASKS as u32;
    lead.tools.max_calls_per_run = TASKS as u32 + 12;
    runtime.save_profile(lead).await.unwrap();
    runtime.save_profile(helper).await.unwrap();
    let mut request = start_request();
    request.profile_id = Some("lead".into());
    let run = runtime.start_run(request).await.unwrap();

    // Release the helpers once the lead waits for all of them.
    let mut live = runtime.subscribe(run.id.as_str(), 0, None);
    tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(event) = live.next().await.unwrap() {
            if event.event_type == "agent_await_started" && event.payload["mode"] == "allCompleted"
            {
                return;
            }
        }
        panic!("the run ended before the lead waited");
    })
    .await
    .expect("the lead waits for all");
    // The four that started may still be on their way to their first model call (preparing
    // an invocation takes a few awaits) when the lead already waits.
    tokio::time::timeout(Duration::from_secs(60), async {
        while model.parked_count() < SLOTS as usize {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await
    .expect("four helpers reach their first model call");
    assert_eq!(
        model.parked_count(),
        SLOTS as usize,
        "only four ever started"
    );
    model.stop_hanging();
    model.release_parked();

    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);
    let events = all_events(&runtime, run.id.as_str()).await;
    let delivered = deliveries(&events);
    assert_eq!(delivered.len(), TASKS, "{delivered:?}");
    assert!(delivered.values().all(|count| *count == 1), "{delivered:?}");

    // FIFO: the first four start at once (in any order among them), the other 28 in the
    // order they were delegated.
    let registered: Vec<String> = events
        .iter()
        .filter(|e| e.event_type == "agent_task_registered")
        .map(|e| e.payload["taskId"].as_str().unwrap().to_owned())
        .collect();
    let started: Vec<String> = events
        .iter()
        .filter(|e| e.event_type == "agent_task_started")
        .map(|e| e.payload["taskId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(registered.len(), TASKS);
    assert_eq!(started.len(), TASKS);
    let mut first: Vec<&String> = started[..SLOTS as usize].iter().collect();
    first.sort_by_key(|id| registered.iter().position(|r| r == *id));
    assert_eq!(
        first,
        registered[..SLOTS as usize].iter().collect::<Vec<_>>()
    );
    assert_eq!(started[SLOTS as usize..], registered[SLOTS as usize..]);
    let queued: Vec<u64> = events
        .iter()
        .filter(|e| e.event_type == "agent_task_queued")
        .map(|e| e.payload["queuePosition"].as_u64().unwrap())
        .collect();
    assert_eq!(queued, (1..=28).collect::<Vec<u64>>());

    // What the lead saw: where each task waits, when delegating, listing and checking.
    let lead = model
        .requests()
        .into_iter()
        .filter(|r| r.agent_profile_id.as_str() == "lead")
        .find(|r| r.round == 3)
        .unwrap();
    let results = tool_results(&lead);
    for i in 0..TASKS {
        let (_, structured, is_error) = &results[&format!("d{i}")];
        assert!(!is_error);
        let expected = (i >= SLOTS as usize).then(|| i as u64 - u64::from(SLOTS) + 1);
        assert_eq!(structured["queuePosition"].as_u64(), expected, "d{i}");
    }
    let (refused, structured, is_error) = &results[&format!("d{TASKS}")];
    assert!(is_error);
    assert_eq!(
        structured["error"]["code"],
        "agent.delegation_budget_exhausted"
    );
    assert!(refused.starts_with("agent.max_invocations_per_run_exhausted"));
    let (status, structured, _) = &results["s"];
    let positions: Vec<Option<u64>> = structured["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|task| task["queuePosition"].as_u64())
        .collect();
    let mut expected = vec![None; SLOTS as usize];
    expected.extend((1..=28).map(Some));
    assert_eq!(positions, expected);
    assert_eq!(status.matches("in your waiting line").count(), 28);
    let (listing, structured, _) = &results["l"];
    assert_eq!(structured["tasks"]["running"], 4);
    assert_eq!(structured["tasks"]["waiting"].as_array().unwrap().len(), 28);
    let shown = format!(
        "agent_delegate (number 1 waiting):\n{}\n\nagent_list:\n{}",
        results["d4"].0, listing
    );
    let shown = redact(&shown, &registered);
    tt_testkit::leaks::assert_no_leaks("what a lead with waiting tasks reads", &shown);
    insta::assert_snapshot!("waiting_line_as_the_lead_reads_it", shown);
    let notes = runtime
        .read_workspace_file(run.id.as_str(), "scratch/notes.md")
        .await
        .unwrap();
    assert_eq!(notes.text.matches("part\n").count(), TASKS);
}

/// Depth-3 nesting: the lead delegates `a` (and a sibling `s`), `a` delegates `b`, `b`
/// delegates `c`, which is inside its model call when the host stops `b`. `c` is cancelled
/// before `b`, nothing else is, and every other result reaches its direct delegator once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_the_middle_of_three_nested_tasks_stops_its_sub_tree_only() {
    let model = FakeModel::new(|request: &AgentModelRequest| {
        let call = |id: &str, name: &str, args: Value| (id.to_owned(), name.to_owned(), args);
        let hand_on = |to: &str| {
            vec![call(
                "d",
                "agent_delegate",
                json!({"agentId": to, "task": {"objective": format!("Part {to}.")}}),
            )]
        };
        let wait = || {
            vec![call(
                "w",
                "agent_await",
                json!({"mode": "allCompleted", "timeoutMs": 300000}),
            )]
        };
        let done = |id: &str| tool_results(request).contains_key(id);
        let calls: Vec<Call> = match (request.agent_profile_id.as_str(), request.round) {
            ("lead", 1) => vec![
                call(
                    "da",
                    "agent_delegate",
                    json!({"agentId": "a", "task": {"objective": "Part a."}}),
                ),
                call(
                    "ds",
                    "agent_delegate",
                    json!({"agentId": "s", "task": {"objective": "Part s."}}),
                ),
            ],
            ("lead", 2) => wait(),
            ("lead", _) if done("c") => vec![call("f", "workspace_finish", json!({}))],
            ("lead", _) if done("m") => vec![call("c", "workspace_commit", json!({}))],
            ("lead", _) => vec![call(
                "m",
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "Done."}),
            )],
            ("a", 1) => hand_on("b"),
            ("b", 1) => hand_on("c"),
            ("a" | "b", 2) => wait(),
            ("a" | "b", 3) | ("s", 2) => {
                vec![call("r", "task_return", json!({"summary": "Done."}))]
            }
            ("s", 1) => vec![call(
                "n",
                "workspace_write_file",
                json!({"path": "scratch/s.md", "content": "s"}),
            )],
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
    });
    model.hang_when(|request| request.agent_profile_id.as_str() == "c");
    let dir = tempfile::tempdir().unwrap();
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(model.clone())
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap();
    let [mut lead, helper] = profiles();
    lead.delegation.max_delegation_depth = 3;
    runtime.save_profile(lead).await.unwrap();
    for id in ["a", "b", "c", "s"] {
        let mut profile = helper.clone();
        profile.id = tt_domain::ids::ProfileId::parse(id).unwrap();
        if id != "s" {
            profile.delegation.can_delegate = true;
            profile.delegation.allow_nested_delegation = true;
            for tool in ["agent.delegate", "agent.await"] {
                profile.tools.allow.push(tool.to_owned());
            }
        }
        runtime.save_profile(profile).await.unwrap();
    }
    let mut request = start_request();
    request.profile_id = Some("lead".into());
    let run = runtime.start_run(request).await.unwrap();
    tokio::time::timeout(Duration::from_secs(60), model.wait_for_parked(1))
        .await
        .expect("c is inside its model call");
    let projection = runtime.timeline_projection(run.id.as_str()).await.unwrap();
    let edge = |agent: &str| {
        projection
            .delegation_edges
            .iter()
            .find(|edge| edge.target_profile_id.as_str() == agent)
            .unwrap()
            .clone()
    };
    let (a, b, c, s) = (edge("a"), edge("b"), edge("c"), edge("s"));
    // The tree: lead -> a -> b -> c, lead -> s.
    assert_eq!(a.source_invocation_id.as_str(), "inv_root");
    assert_eq!(s.source_invocation_id.as_str(), "inv_root");
    assert_eq!(b.source_invocation_id, a.target_invocation_id);
    assert_eq!(c.source_invocation_id, b.target_invocation_id);
    runtime
        .cancel_task(run.id.as_str(), b.task_id.as_str())
        .await
        .unwrap();
    assert_eq!(model.parked_count(), 0);

    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);
    let projection = runtime.timeline_projection(run.id.as_str()).await.unwrap();
    let status = |agent: &str| {
        projection
            .delegation_edges
            .iter()
            .find(|edge| edge.target_profile_id.as_str() == agent)
            .unwrap()
            .status
    };
    assert_eq!(status("a"), TaskStatus::Completed);
    assert_eq!(status("s"), TaskStatus::Completed);
    assert_eq!(status("b"), TaskStatus::Cancelled);
    assert_eq!(status("c"), TaskStatus::Cancelled);

    let events = all_events(&runtime, run.id.as_str()).await;
    let cancelled: Vec<&str> = events
        .iter()
        .filter(|e| e.event_type == "agent_task_cancelled")
        .map(|e| e.payload["taskId"].as_str().unwrap())
        .collect();
    assert_eq!(cancelled, [c.task_id.as_str(), b.task_id.as_str()]);
    for edge in [&b, &c] {
        assert_silent_after_cancel(&events, edge.target_invocation_id.as_str());
    }
    // Each result reached its direct delegator once; c's delegator was stopped first.
    let mut delivered: HashMap<(String, String), usize> = HashMap::new();
    for event in &events {
        let (to, ids) = match event.event_type.as_str() {
            "agent_await_completed" => (
                &event.payload["parentInvocationId"],
                &event.payload["deliveredTaskIds"],
            ),
            "agent_results_injected" => (&event.payload["invocationId"], &event.payload["taskIds"]),
            _ => continue,
        };
        for id in ids.as_array().unwrap() {
            *delivered
                .entry((
                    to.as_str().unwrap().to_owned(),
                    id.as_str().unwrap().to_owned(),
                ))
                .or_default() += 1;
        }
    }
    let expected: HashMap<(String, String), usize> = [
        ("inv_root".to_owned(), a.task_id.to_string()),
        ("inv_root".to_owned(), s.task_id.to_string()),
        (a.target_invocation_id.to_string(), b.task_id.to_string()),
    ]
    .into_iter()
    .map(|key| (key, 1))
    .collect();
    assert_eq!(delivered, expected);
}

/// A token budget given at delegation stops one task after its second model call, while its
/// sibling completes and so does the run; the usage ledger rolls the tree up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_budget_stops_a_task_mid_run_while_the_run_completes() {
    let model = FakeModel::new(|request: &AgentModelRequest| {
        let call = |id: &str, name: &str, args: Value| (id.to_owned(), name.to_owned(), args);
        let done = |id: &str| tool_results(request).contains_key(id);
        let calls: Vec<Call> = match (request.agent_profile_id.as_str(), request.round) {
            ("lead", 1) => vec![
                call(
                    "big",
                    "agent_delegate",
                    json!({"agentId": "helper", "task": {"objective": "Part a."}, "budget": {"maxTokens": 5000}}),
                ),
                call(
                    "da",
                    "agent_delegate",
                    json!({"agentId": "helper", "task": {"objective": "Part a."}, "budget": {"maxTokens": 150}}),
                ),
                call(
                    "db",
                    "agent_delegate",
                    json!({"agentId": "helper", "task": {"objective": "Part b."}}),
                ),
                // In the same turn: a result that arrived between turns would be handed to
                // the lead before its wait, and the wait would report it as already seen.
                call(
                    "a",
                    "agent_await",
                    json!({"mode": "allCompleted", "timeoutMs": 300000}),
                ),
            ],
            ("lead", _) if done("c") => vec![call("f", "workspace_finish", json!({}))],
            ("lead", _) if done("m") => vec![call("c", "workspace_commit", json!({}))],
            ("lead", _) => vec![call(
                "m",
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "Done."}),
            )],
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
        let mut response = responses::tool_calls(
            calls
                .iter()
                .map(|(id, name, args)| (id.as_str(), name.as_str(), args.clone()))
                .collect(),
        );
        // Every answer costs 100 tokens: the budget of 150 allows one, not two.
        response.usage = Some(tt_domain::model::ModelUsage::new(80, 20));
        Ok(response)
    });
    let dir = tempfile::tempdir().unwrap();
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(model.clone())
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap();
    let [lead, mut helper] = profiles();
    helper.delegation.max_task_tokens = Some(1000);
    runtime.save_profile(lead).await.unwrap();
    runtime.save_profile(helper).await.unwrap();
    let mut request = start_request();
    request.profile_id = Some("lead".into());
    let run = runtime.start_run(request).await.unwrap();
    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);

    let projection = runtime.timeline_projection(run.id.as_str()).await.unwrap();
    assert_eq!(projection.delegation_edges.len(), 2);
    // In delegation order, although both tasks may be created in the same millisecond with
    // random ids: the projection follows their registration numbers.
    let registered: Vec<String> = all_events(&runtime, run.id.as_str())
        .await
        .into_iter()
        .filter(|e| e.event_type == "agent_task_registered")
        .map(|e| e.payload["taskId"].as_str().unwrap().to_owned())
        .collect();
    let listed: Vec<String> = projection
        .delegation_edges
        .iter()
        .map(|edge| edge.task_id.to_string())
        .collect();
    assert_eq!(listed, registered);
    let stopped = &projection.delegation_edges[0];
    assert_eq!(stopped.status, TaskStatus::Failed);
    assert_eq!(
        stopped.error.as_deref(),
        Some("agent.task_budget_exhausted: it used 200 model tokens, over its budget of 150")
    );
    assert_eq!(projection.delegation_edges[1].status, TaskStatus::Completed);
    // It stopped after its first tool round: one note, from each task.
    let notes = runtime
        .read_workspace_file(run.id.as_str(), "scratch/notes.md")
        .await
        .unwrap();
    assert_eq!(notes.text, "part\npart\n");

    // What the lead read: the refused budget, then the stopped task in the wait's report.
    let lead = model
        .requests()
        .into_iter()
        .filter(|r| r.agent_profile_id.as_str() == "lead")
        .find(|r| r.round == 2)
        .unwrap();
    let results = tool_results(&lead);
    let task_ids: Vec<String> = projection
        .delegation_edges
        .iter()
        .map(|edge| edge.task_id.to_string())
        .collect();
    let shown = redact(
        &format!("big:\n{}\n\na:\n{}", results["big"].0, results["a"].0),
        &task_ids,
    );
    tt_testkit::leaks::assert_no_leaks("what the lead read about a budget", &shown);
    insta::assert_snapshot!("task_budget_as_the_lead_reads_it", shown);

    // The ledger: the lead's sub-tree holds everything; each task its own.
    let usage = runtime.usage(run.id.as_str()).await.unwrap();
    let of = |id: &str| {
        usage
            .by_invocation
            .iter()
            .find(|u| u.invocation_id == id)
            .unwrap()
            .clone()
    };
    let root = of("inv_root");
    assert_eq!(root.subtree.model_calls, usage.model_calls);
    assert_eq!(
        root.subtree.input_tokens + root.subtree.output_tokens,
        usage.input_tokens + usage.output_tokens
    );
    let stopped_usage = of(stopped.target_invocation_id.as_str());
    assert_eq!(stopped_usage.model_calls, 2);
    assert_eq!(stopped_usage.tool_calls, 1);
    assert_eq!(
        stopped_usage.parent_invocation_id.as_deref(),
        Some("inv_root")
    );
    assert_eq!(stopped_usage.subtree.model_calls, 2);
}

/// `limits.maxTotalTokens`: the lead publishes, sees the job's budget in `agent_list`, then
/// keeps going until the run's agents together cross it; the run ends as a partial success and
/// keeps what was published.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crossing_the_run_token_budget_ends_the_run_and_keeps_what_was_published() {
    let model = FakeModel::new(|request: &AgentModelRequest| {
        let call = |id: &str, name: &str, args: Value| (id.to_owned(), name.to_owned(), args);
        let calls: Vec<Call> = match request.round {
            1 => vec![call(
                "m",
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "First draft."}),
            )],
            2 => vec![call("c", "workspace_commit", json!({}))],
            3 => vec![call("l", "agent_list", json!({}))],
            round => vec![call(
                &format!("w{round}"),
                "workspace_write_file",
                json!({"path": "scratch/more.md", "content": "more\n", "mode": "append"}),
            )],
        };
        let mut response = responses::tool_calls(
            calls
                .iter()
                .map(|(id, name, args)| (id.as_str(), name.as_str(), args.clone()))
                .collect(),
        );
        response.usage = Some(tt_domain::model::ModelUsage::new(80, 20));
        Ok(response)
    });
    let dir = tempfile::tempdir().unwrap();
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(model.clone())
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap();
    let [mut lead, helper] = profiles();
    lead.limits.max_total_tokens = Some(500);
    runtime.save_profile(lead).await.unwrap();
    runtime.save_profile(helper).await.unwrap();
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
    // Six answers of 100 tokens: the sixth crossed 500, and no seventh was asked.
    assert_eq!(model.call_count(), 6);
    let published = runtime.transcript(run.workspace_id.as_str()).await.unwrap();
    assert_eq!(published.len(), 1);
    assert_eq!(published[0].content, "First draft.");
    let lead = model.requests().into_iter().find(|r| r.round == 4).unwrap();
    let (listing, structured, _) = tool_results(&lead).remove("l").unwrap();
    assert_eq!(structured["budget"]["runTokensLeft"], 200);
    let note = listing.split("\n\n").last().unwrap();
    tt_testkit::leaks::assert_no_leaks("the job's budget in agent_list", note);
    assert_eq!(
        note,
        "Token budget of the whole job: 200 of 500 model tokens left, shared by every agent on it."
    );
}

/// A deadline on the userdata store, in real time: the helper writes a note, then its second
/// model call blocks far longer than its 2-second deadline (ample for the first call and the
/// note, even on a busy machine). The deadline fires inside that call; the task ends cancelled
/// with `deadline_exceeded`, the lead's wait reports it with the note it had written, and the
/// run completes. (The in-memory variant runs on paused time, which the store's threads do not
/// follow; here the only bound is a generous 60 s.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_fires_during_a_model_call_on_the_userdata_store() {
    let model = FakeModel::new(|request: &AgentModelRequest| {
        let call = |id: &str, name: &str, args: Value| (id.to_owned(), name.to_owned(), args);
        let done = |id: &str| tool_results(request).contains_key(id);
        let calls: Vec<Call> = match (request.agent_profile_id.as_str(), request.round) {
            ("lead", 1) => vec![call(
                "d",
                "agent_delegate",
                json!({"agentId": "helper", "task": {"objective": "Part d."}, "timeoutSeconds": 2}),
            )],
            ("lead", 2) => vec![call(
                "a",
                "agent_await",
                json!({"mode": "allCompleted", "timeoutMs": 300000}),
            )],
            ("lead", _) if done("c") => vec![call("f", "workspace_finish", json!({}))],
            ("lead", _) if done("m") => vec![call("c", "workspace_commit", json!({}))],
            ("lead", _) => vec![call(
                "m",
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "Done without part d."}),
            )],
            ("helper", 1) => vec![call(
                "n",
                "workspace_write_file",
                json!({"path": "scratch/part-d.md", "content": "a start\n"}),
            )],
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
    });
    // Blocks until aborted: far longer than the deadline.
    model.hang_when(|request| request.agent_profile_id.as_str() == "helper" && request.round == 2);
    let dir = tempfile::tempdir().unwrap();
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(model.clone())
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap();
    let [lead, helper] = profiles();
    runtime.save_profile(lead).await.unwrap();
    runtime.save_profile(helper).await.unwrap();
    let mut request = start_request();
    request.profile_id = Some("lead".into());
    let run = runtime.start_run(request).await.unwrap();
    let run = tokio::time::timeout(
        Duration::from_secs(60),
        runtime.wait_for_run(run.id.as_str()),
    )
    .await
    .expect("the deadline ends the task and the run goes on")
    .unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);
    assert_eq!(
        model.parked_count(),
        0,
        "the blocked model call was aborted"
    );

    let projection = runtime.timeline_projection(run.id.as_str()).await.unwrap();
    let [task] = projection.delegation_edges.as_slice() else {
        panic!("one task: {:?}", projection.delegation_edges);
    };
    assert_eq!(task.status, TaskStatus::Cancelled);
    assert_eq!(
        task.error.as_deref(),
        Some("deadline_exceeded: stopped at its time limit of 2 seconds")
    );
    let events = all_events(&runtime, run.id.as_str()).await;
    let cancelled = events
        .iter()
        .find(|e| e.event_type == "agent_task_cancelled")
        .unwrap();
    assert_eq!(cancelled.payload["by"], "deadline");
    // It was inside its second model call when the deadline fired.
    let helper_calls = model
        .requests()
        .iter()
        .filter(|r| r.agent_profile_id.as_str() == "helper")
        .count();
    assert_eq!(helper_calls, 2);
    assert_silent_after_cancel(&events, task.target_invocation_id.as_str());
    assert_eq!(deliveries(&events)[task.task_id.as_str()], 1);

    // What the lead's wait reported: the reason, and the note written before the deadline.
    let lead = model
        .requests()
        .into_iter()
        .find(|r| r.agent_profile_id.as_str() == "lead" && r.round == 3)
        .unwrap();
    let (report, _, is_error) = tool_results(&lead).remove("a").unwrap();
    assert!(!is_error);
    let report = redact(&report, &[task.task_id.to_string()]);
    tt_testkit::leaks::assert_no_leaks("a deadline as the lead reads it", &report);
    assert!(
        report.contains("deadline_exceeded: stopped at its time limit of 2 seconds"),
        "{report}"
    );
    assert!(report.contains("scratch/part-d.md"), "{report}");
    let published = runtime.transcript(run.workspace_id.as_str()).await.unwrap();
    assert_eq!(published[0].content, "Done without part d.");

    // The ledger's wall time: the helper ran until its deadline (2 s after it was delegated,
    // so a generous second at least after it started), and the lead, which waited for it, ran
    // longer; the lead's branch adds both up as agent time.
    let usage = runtime.usage(run.id.as_str()).await.unwrap();
    let of = |id: &str| {
        usage
            .by_invocation
            .iter()
            .find(|u| u.invocation_id == id)
            .unwrap()
            .clone()
    };
    let (root, helper) = (of("inv_root"), of(task.target_invocation_id.as_str()));
    assert!(helper.wall_time_ms >= 1_000, "{helper:?}");
    assert!(root.wall_time_ms >= helper.wall_time_ms, "{root:?}");
    assert_eq!(root.subtree.wall_time_ms, root.wall_time_ms);
    assert_eq!(
        root.subtree.agent_time_ms,
        root.wall_time_ms + helper.wall_time_ms
    );
    assert_eq!(helper.subtree.wall_time_ms, helper.wall_time_ms);
}

/// `limits.maxTotalTokens` crossed by the tasks while the lead waits for all of them in
/// `agent_await`: the run ends at once as a partial success keeping what was published, without
/// waiting for the task whose model call never answers (the run's end cancels it). Only the
/// spender's answers cost tokens, so the crossing is always its doing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_budget_ends_the_run_while_its_agent_awaits_its_tasks() {
    let model = FakeModel::new(|request: &AgentModelRequest| {
        let call = |id: &str, name: &str, args: Value| (id.to_owned(), name.to_owned(), args);
        let agent = request.agent_profile_id.as_str();
        let calls: Vec<Call> = match (agent, request.round) {
            ("lead", 1) => vec![call(
                "m",
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "First draft."}),
            )],
            ("lead", 2) => vec![call("c", "workspace_commit", json!({}))],
            ("lead", 3) => vec![
                call(
                    "ds",
                    "agent_delegate",
                    json!({"agentId": "sleeper", "task": {"objective": "Part s."}}),
                ),
                call(
                    "dp",
                    "agent_delegate",
                    json!({"agentId": "spender", "task": {"objective": "Part p."}}),
                ),
            ],
            ("lead", 4) => vec![call(
                "a",
                "agent_await",
                json!({"mode": "allCompleted", "timeoutMs": 300000}),
            )],
            ("spender", round) => vec![call(
                &format!("w{round}"),
                "workspace_write_file",
                json!({"path": "scratch/spent.md", "content": "more\n", "mode": "append"}),
            )],
            (agent, round) => {
                return Err(ModelError::Unavailable {
                    code: tt_domain::error_codes::MODEL_SCRIPT_EXHAUSTED,
                    message: format!("{agent} round {round}"),
                });
            }
        };
        let mut response = responses::tool_calls(
            calls
                .iter()
                .map(|(id, name, args)| (id.as_str(), name.as_str(), args.clone()))
                .collect(),
        );
        if agent == "spender" {
            response.usage = Some(tt_domain::model::ModelUsage::new(250, 50));
        }
        Ok(response)
    });
    // The sleeper's model call never answers.
    model.hang_when(|request| request.agent_profile_id.as_str() == "sleeper");
    let dir = tempfile::tempdir().unwrap();
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(model.clone())
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap();
    let [mut lead, helper] = profiles();
    lead.limits.max_total_tokens = Some(500);
    runtime.save_profile(lead).await.unwrap();
    for id in ["sleeper", "spender"] {
        let mut profile = helper.clone();
        profile.id = tt_domain::ids::ProfileId::parse(id).unwrap();
        runtime.save_profile(profile).await.unwrap();
    }
    let mut request = start_request();
    request.profile_id = Some("lead".into());
    let run = runtime.start_run(request).await.unwrap();
    let run = tokio::time::timeout(
        Duration::from_secs(60),
        runtime.wait_for_run(run.id.as_str()),
    )
    .await
    .expect("the run ends without waiting for the sleeper")
    .unwrap();
    assert_eq!(run.status, AgentRunStatus::PartialSuccess);
    assert_eq!(model.parked_count(), 0, "the sleeper's call was aborted");
    let events = all_events(&runtime, run.id.as_str()).await;
    let ended = events
        .iter()
        .find(|e| e.event_type == "run_partial_success")
        .unwrap();
    assert_eq!(ended.payload["code"], "agent.run_budget_exhausted");
    // The lead's wait never completed: the run ended inside it.
    assert!(
        events
            .iter()
            .any(|e| e.event_type == "agent_await_started" && e.payload["mode"] == "allCompleted")
    );
    assert!(
        !events
            .iter()
            .any(|e| e.event_type == "agent_await_completed")
    );
    // No fifth lead request: the lead was not asked again after the budget was crossed.
    let lead_calls = model
        .requests()
        .iter()
        .filter(|r| r.agent_profile_id.as_str() == "lead")
        .count();
    assert_eq!(lead_calls, 4);
    // Two answers of 300 tokens: the second crossed 500 and ended the spender.
    let projection = runtime.timeline_projection(run.id.as_str()).await.unwrap();
    let edge = |agent: &str| {
        projection
            .delegation_edges
            .iter()
            .find(|edge| edge.target_profile_id.as_str() == agent)
            .unwrap()
            .clone()
    };
    // The spender fails on its own crossing answer, unless the run's end (racing with it)
    // cancels it first.
    let spender = edge("spender");
    match spender.status {
        TaskStatus::Failed => assert!(
            spender
                .error
                .as_deref()
                .unwrap()
                .starts_with("agent.run_budget_exhausted"),
            "{:?}",
            spender.error
        ),
        status => assert_eq!(status, TaskStatus::Cancelled),
    }
    let spent = runtime
        .read_workspace_file(run.id.as_str(), "scratch/spent.md")
        .await
        .unwrap();
    assert_eq!(spent.text, "more\n", "the crossing answer's call never ran");
    let sleeper = edge("sleeper");
    assert_eq!(sleeper.status, TaskStatus::Cancelled);
    assert_silent_after_cancel(&events, sleeper.target_invocation_id.as_str());
    let published = runtime.transcript(run.workspace_id.as_str()).await.unwrap();
    assert_eq!(published.len(), 1);
    assert_eq!(published[0].content, "First draft.");
}

/// A task's token budget counts its whole sub-tree: the lead gives `a` 150 tokens; `a`
/// delegates `b`, which delegates `c`, and only `c`'s answers cost tokens (100 each). `c`'s
/// second answer crosses `a`'s budget: `c` and `b` are cancelled (deepest first), then `a`
/// ends with `agent.task_budget_exhausted`, which the lead reads in its wait, while the
/// lead's other task completes and so does the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spending_below_a_task_ends_it_at_its_budget_and_cancels_its_sub_tree() {
    let model = FakeModel::new(|request: &AgentModelRequest| {
        let call = |id: &str, name: &str, args: Value| (id.to_owned(), name.to_owned(), args);
        let hand_on = |to: &str| {
            vec![call(
                "d",
                "agent_delegate",
                json!({"agentId": to, "task": {"objective": format!("Part {to}.")}}),
            )]
        };
        let wait = || {
            vec![call(
                "w",
                "agent_await",
                json!({"mode": "allCompleted", "timeoutMs": 300000}),
            )]
        };
        let done = |id: &str| tool_results(request).contains_key(id);
        let agent = request.agent_profile_id.as_str();
        let calls: Vec<Call> = match (agent, request.round) {
            ("lead", 1) => vec![
                call(
                    "da",
                    "agent_delegate",
                    json!({"agentId": "a", "task": {"objective": "Part a."}, "budget": {"maxTokens": 150}}),
                ),
                call(
                    "ds",
                    "agent_delegate",
                    json!({"agentId": "s", "task": {"objective": "Part s."}}),
                ),
            ],
            ("lead", 2) => wait(),
            ("lead", _) if done("c") => vec![call("f", "workspace_finish", json!({}))],
            ("lead", _) if done("m") => vec![call("c", "workspace_commit", json!({}))],
            ("lead", _) => vec![call(
                "m",
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "Done without part a."}),
            )],
            // The listing comes first: once `b` is delegated, its branch may spend at once.
            ("a", 1) => {
                let mut calls = vec![call("l", "agent_list", json!({"purpose": "delegate"}))];
                calls.extend(hand_on("b"));
                calls
            }
            ("b", 1) => hand_on("c"),
            ("a" | "b", 2) => wait(),
            ("c", round @ (1 | 2)) => vec![call(
                &format!("n{round}"),
                "workspace_write_file",
                json!({"path": "scratch/c.md", "content": "c\n", "mode": "append"}),
            )],
            ("s", 1) => vec![call("r", "task_return", json!({"summary": "Done."}))],
            (agent, round) => {
                return Err(ModelError::Unavailable {
                    code: tt_domain::error_codes::MODEL_SCRIPT_EXHAUSTED,
                    message: format!("{agent} round {round}"),
                });
            }
        };
        let mut response = responses::tool_calls(
            calls
                .iter()
                .map(|(id, name, args)| (id.as_str(), name.as_str(), args.clone()))
                .collect(),
        );
        if agent == "c" {
            response.usage = Some(tt_domain::model::ModelUsage::new(80, 20));
        }
        Ok(response)
    });
    let dir = tempfile::tempdir().unwrap();
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(model.clone())
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap();
    let [mut lead, helper] = profiles();
    lead.delegation.max_delegation_depth = 3;
    runtime.save_profile(lead).await.unwrap();
    for id in ["a", "b", "c", "s"] {
        let mut profile = helper.clone();
        profile.id = tt_domain::ids::ProfileId::parse(id).unwrap();
        if id == "a" || id == "b" {
            profile.delegation.can_delegate = true;
            profile.delegation.allow_nested_delegation = true;
            profile.delegation.max_task_tokens = Some(1000);
            for tool in ["agent.delegate", "agent.await", "agent.list"] {
                profile.tools.allow.push(tool.to_owned());
            }
        }
        runtime.save_profile(profile).await.unwrap();
    }
    let mut request = start_request();
    request.profile_id = Some("lead".into());
    let run = runtime.start_run(request).await.unwrap();
    let run = tokio::time::timeout(
        Duration::from_secs(60),
        runtime.wait_for_run(run.id.as_str()),
    )
    .await
    .expect("the run ends")
    .unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);
    // What `a` was told of its budget, before anything below it spent.
    let a_asks = model
        .requests()
        .into_iter()
        .find(|r| r.agent_profile_id.as_str() == "a" && r.round == 2)
        .unwrap();
    let (listing, structured, _) = tool_results(&a_asks).remove("l").unwrap();
    assert_eq!(structured["budget"]["taskTokensLeft"], 150);
    let note = listing.split("\n\n").last().unwrap();
    tt_testkit::leaks::assert_no_leaks("a task's budget in agent_list", note);
    assert_eq!(
        note,
        "Your token budget for this task: 150 of 150 model tokens left, counting what the tasks you delegate use."
    );

    let projection = runtime.timeline_projection(run.id.as_str()).await.unwrap();
    let edge = |agent: &str| {
        projection
            .delegation_edges
            .iter()
            .find(|edge| edge.target_profile_id.as_str() == agent)
            .unwrap()
            .clone()
    };
    let (a, b, c, s) = (edge("a"), edge("b"), edge("c"), edge("s"));
    assert_eq!(b.source_invocation_id, a.target_invocation_id);
    assert_eq!(c.source_invocation_id, b.target_invocation_id);
    assert_eq!(a.status, TaskStatus::Failed);
    assert_eq!(
        a.error.as_deref(),
        Some(
            "agent.task_budget_exhausted: it used 200 model tokens together with the tasks it delegated, over its budget of 150"
        )
    );
    assert_eq!(b.status, TaskStatus::Cancelled);
    assert_eq!(c.status, TaskStatus::Cancelled);
    assert_eq!(s.status, TaskStatus::Completed);
    // `c` stopped at its crossing answer: two calls, and only the first one's note.
    let c_calls = model
        .requests()
        .iter()
        .filter(|r| r.agent_profile_id.as_str() == "c")
        .count();
    assert_eq!(c_calls, 2);
    let notes = runtime
        .read_workspace_file(run.id.as_str(), "scratch/c.md")
        .await
        .unwrap();
    assert_eq!(notes.text, "c\n");

    // Deepest first: c, then b are cancelled, and only then does a fail.
    let events = all_events(&runtime, run.id.as_str()).await;
    let ended: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| {
            matches!(
                e.event_type.as_str(),
                "agent_task_cancelled" | "agent_task_failed"
            )
        })
        .map(|e| (e.event_type.as_str(), e.payload["taskId"].as_str().unwrap()))
        .collect();
    assert_eq!(
        ended,
        [
            ("agent_task_cancelled", c.task_id.as_str()),
            ("agent_task_cancelled", b.task_id.as_str()),
            ("agent_task_failed", a.task_id.as_str()),
        ]
    );
    for edge in [&b, &c] {
        assert_silent_after_cancel(&events, edge.target_invocation_id.as_str());
    }
    assert_eq!(deliveries(&events)[a.task_id.as_str()], 1);

    // What the lead read about `a` in its wait.
    let lead = model
        .requests()
        .into_iter()
        .find(|r| r.agent_profile_id.as_str() == "lead" && r.round == 3)
        .unwrap();
    let (report, _, _) = tool_results(&lead).remove("w").unwrap();
    let shown = redact(&report, &[a.task_id.to_string(), s.task_id.to_string()]);
    tt_testkit::leaks::assert_no_leaks("a sub-tree budget as the lead reads it", &shown);
    insta::assert_snapshot!("sub_tree_budget_as_the_lead_reads_it", shown);

    // The ledger agrees: a's sub-tree spent the 200 tokens.
    let usage = runtime.usage(run.id.as_str()).await.unwrap();
    let a_usage = usage
        .by_invocation
        .iter()
        .find(|u| u.invocation_id == a.target_invocation_id.as_str())
        .unwrap();
    assert_eq!(a_usage.input_tokens + a_usage.output_tokens, 0);
    assert_eq!(
        a_usage.subtree.input_tokens + a_usage.subtree.output_tokens,
        200
    );
}

/// A delegator crossing its own budget while a task it delegated is still at work: that task
/// is cancelled first, then the delegator's task fails with `agent.task_budget_exhausted`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delegator_over_its_own_budget_ends_after_its_sub_tree() {
    let model = FakeModel::new(|request: &AgentModelRequest| {
        let call = |id: &str, name: &str, args: Value| (id.to_owned(), name.to_owned(), args);
        let done = |id: &str| tool_results(request).contains_key(id);
        let agent = request.agent_profile_id.as_str();
        let calls: Vec<Call> = match (agent, request.round) {
            ("lead", 1) => vec![call(
                "da",
                "agent_delegate",
                json!({"agentId": "a", "task": {"objective": "Part a."}, "budget": {"maxTokens": 150}}),
            )],
            ("lead", 2) => vec![call(
                "w",
                "agent_await",
                json!({"mode": "allCompleted", "timeoutMs": 300000}),
            )],
            ("lead", _) if done("c") => vec![call("f", "workspace_finish", json!({}))],
            ("lead", _) if done("m") => vec![call("c", "workspace_commit", json!({}))],
            ("lead", _) => vec![call(
                "m",
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "Done."}),
            )],
            ("a", 1) => vec![call(
                "d",
                "agent_delegate",
                json!({"agentId": "b", "task": {"objective": "Part b."}}),
            )],
            ("a", 2) => vec![call(
                "n",
                "workspace_write_file",
                json!({"path": "scratch/a.md", "content": "a"}),
            )],
            (agent, round) => {
                return Err(ModelError::Unavailable {
                    code: tt_domain::error_codes::MODEL_SCRIPT_EXHAUSTED,
                    message: format!("{agent} round {round}"),
                });
            }
        };
        let mut response = responses::tool_calls(
            calls
                .iter()
                .map(|(id, name, args)| (id.as_str(), name.as_str(), args.clone()))
                .collect(),
        );
        if agent == "a" {
            response.usage = Some(tt_domain::model::ModelUsage::new(80, 20));
        }
        Ok(response)
    });
    // `b` is inside its model call when `a` crosses its budget.
    model.hang_when(|request| request.agent_profile_id.as_str() == "b");
    let dir = tempfile::tempdir().unwrap();
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(model.clone())
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap();
    let [mut lead, helper] = profiles();
    lead.delegation.max_delegation_depth = 2;
    runtime.save_profile(lead).await.unwrap();
    for id in ["a", "b"] {
        let mut profile = helper.clone();
        profile.id = tt_domain::ids::ProfileId::parse(id).unwrap();
        if id == "a" {
            profile.delegation.can_delegate = true;
            profile.delegation.allow_nested_delegation = true;
            profile.delegation.max_task_tokens = Some(1000);
            profile.tools.allow.push("agent.delegate".to_owned());
        }
        runtime.save_profile(profile).await.unwrap();
    }
    let mut request = start_request();
    request.profile_id = Some("lead".into());
    let run = runtime.start_run(request).await.unwrap();
    let run = tokio::time::timeout(
        Duration::from_secs(60),
        runtime.wait_for_run(run.id.as_str()),
    )
    .await
    .expect("the run ends")
    .unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);
    assert_eq!(model.parked_count(), 0, "b's model call was aborted");

    let projection = runtime.timeline_projection(run.id.as_str()).await.unwrap();
    let edge = |agent: &str| {
        projection
            .delegation_edges
            .iter()
            .find(|edge| edge.target_profile_id.as_str() == agent)
            .unwrap()
            .clone()
    };
    let (a, b) = (edge("a"), edge("b"));
    assert_eq!(a.status, TaskStatus::Failed);
    assert_eq!(
        a.error.as_deref(),
        Some("agent.task_budget_exhausted: it used 200 model tokens, over its budget of 150")
    );
    assert_eq!(b.status, TaskStatus::Cancelled);
    let events = all_events(&runtime, run.id.as_str()).await;
    let ended: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| {
            matches!(
                e.event_type.as_str(),
                "agent_task_cancelled" | "agent_task_failed"
            )
        })
        .map(|e| (e.event_type.as_str(), e.payload["taskId"].as_str().unwrap()))
        .collect();
    assert_eq!(
        ended,
        [
            ("agent_task_cancelled", b.task_id.as_str()),
            ("agent_task_failed", a.task_id.as_str()),
        ]
    );
    assert_silent_after_cancel(&events, b.target_invocation_id.as_str());
    // The crossing answer's tool call never ran.
    assert!(
        runtime
            .read_workspace_file(run.id.as_str(), "scratch/a.md")
            .await
            .is_err()
    );
}
