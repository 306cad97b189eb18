//! Delegation: list, delegate, the background scheduler, await, result injection, task.return,
//! the delegated agent's policy and workspace scope, and cancellation.

use serde_json::json;
use tt_domain::brief::StoredBrief;
use tt_domain::invocation::{InvocationKind, InvocationStatus};
use tt_domain::model::{ModelContentPart, ModelRole};
use tt_domain::run::AgentRunStatus;
use tt_domain::task::{TaskContinuation, TaskStatus};
use tt_ports::RunDocument;
use tt_testkit::fakes::responses;

use crate::support::*;

/// A harness on `model` with the writer, critic and stylist installed.
fn installed(model: std::sync::Arc<tt_testkit::fakes::FakeModel>) -> Harness {
    let h = harness(model);
    install(&h);
    h
}

fn install(h: &Harness) {
    h.put_profile(delegator("writer"));
    h.put_profile(reviewer("critic"));
    h.put_profile(reviewer("stylist"));
}

fn user_texts(request: &tt_domain::model::AgentModelRequest) -> Vec<String> {
    request
        .messages
        .iter()
        .filter(|m| m.role == ModelRole::User)
        .map(|m| m.text_content())
        .collect()
}

#[tokio::test]
async fn agent_delegate_await_runs_return_mode_subagent() {
    let model = writer_publishing_after(
        vec![
            turn(vec![delegate(
                "d1",
                "critic",
                "Check the draft for continuity.",
            )]),
            await_turn("a1", "allCompleted"),
        ],
        vec![(
            "critic",
            vec![
                turn(vec![write("n", "scratch/critic-notes.md", "notes")]),
                turn(vec![call(
                    "r",
                    "task_return",
                    json!({
                        "summary": "One break in motivation.",
                        "confidence": "high",
                        "findings": [{"passage": "line 3"}],
                        "artifacts": [{"path": "scratch/./critic-notes.md", "kind": "markdown", "role": "evidence"}],
                    }),
                )]),
            ],
        )],
    );
    let h = installed(model);
    let run = h.run_completed(request(Some("writer"))).await;

    // The task and the delegated invocation.
    let tasks = h.store.tasks(&run.id);
    assert_eq!(tasks.len(), 1);
    let task = &tasks[0];
    assert_eq!(task.status, TaskStatus::Completed);
    assert_eq!(task.continuation, TaskContinuation::ReturnToParent);
    assert_eq!(task.workspace_key, "critic");
    assert_eq!(task.created_by_tool_call_id.as_deref(), Some("d1"));
    assert!(
        matches!(&*task.task, StoredBrief::Task(brief) if brief.objective == "Check the draft for continuity."),
        "the stored brief reads as a task brief: {:?}",
        task.task
    );
    let child = h.invocation_of_kind(&run.id, InvocationKind::Subagent);
    assert_eq!(child.status, InvocationStatus::Completed);
    assert_eq!(
        child.parent_invocation_id.as_ref().map(|id| id.as_str()),
        Some("inv_root")
    );
    assert_eq!(task.child_invocation_id, child.id);
    assert_eq!(
        task.result_ref.as_deref(),
        Some(format!("agent-results/{}.json", child.id).as_str())
    );

    // The result document and the summary file.
    let document = h.document(&run.id, RunDocument::AgentResult(child.id.clone()));
    assert_eq!(document["kind"], "tauritavern.agentTaskResult");
    assert_eq!(document["status"], "completed");
    assert_eq!(document["summaryRef"], "summaries/critic-result.md");
    assert_eq!(
        document["result"]["artifacts"][0]["path"], "scratch/critic-notes.md",
        "paths are normalized"
    );
    assert_eq!(document["runtime"]["taskId"], task.id.as_str());
    let summary = h
        .store
        .file_text(&run.id, "summaries/critic-result.md")
        .unwrap();
    assert_eq!(
        summary,
        format!(
            "# Delegated Task Result\n\nTask: {}\nStatus: completed\n\nOne break in motivation.\n",
            task.id
        )
    );

    // The await result is the capsule, and the same result is never injected again.
    let last = last_request_of(&h, "writer");
    let capsule = tool_result(&last, "a1").3;
    assert!(
        capsule.starts_with("## Delegated Task Results"),
        "{capsule}"
    );
    assert!(
        capsule.contains("### critic - completed") && capsule.contains("One break in motivation.")
    );
    assert!(events_of(&h, &run.id, "agent_results_injected").is_empty());
    assert!(
        user_texts(&last)
            .iter()
            .all(|text| !text.contains("## Delegated Task Results"))
    );

    // The delegated agent ran on its own session with its own tool surface and brief.
    let critic = first_request_of(&h, "critic");
    assert_eq!(
        critic.session.session_id,
        format!("{}:{}", run.id, child.id)
    );
    let names: Vec<_> = critic.tools.iter().map(|t| t.model_name.as_str()).collect();
    assert_eq!(
        names,
        [
            "workspace_list_files",
            "workspace_read_file",
            "workspace_write_file",
            "task_return"
        ]
    );
    assert_eq!(critic.messages.len(), 2);
    assert!(
        critic.messages[1]
            .text_content()
            .starts_with("# Delegated Task")
    );
    assert!(h.has_document(
        &run.id,
        RunDocument::InvocationToolSnapshot(child.id.clone())
    ));

    // Event order of the delegation and the return.
    let types = h.event_types(&run.id);
    let pos = |t: &str| {
        types
            .iter()
            .position(|x| x == t)
            .unwrap_or_else(|| panic!("missing {t}"))
    };
    assert!(pos("agent_task_registered") < pos("agent_delegate_started"));
    assert!(pos("agent_delegate_started") < pos("agent_task_started"));
    assert!(pos("agent_task_completed") < pos("task_return_completed"));
    assert!(pos("task_return_completed") < pos("task_return_recorded"));
    assert!(pos("agent_await_started") < pos("agent_await_completed"));
}

#[tokio::test]
async fn completed_child_results_are_added_to_next_parent_turn_once() {
    let model = writer_publishing_after(
        vec![
            turn(vec![delegate("d1", "critic", "Review.")]),
            turn(vec![write("p", "plan/plan.md", "plan")]),
            turn(vec![write("p2", "plan/plan2.md", "plan")]),
        ],
        vec![("critic", vec![task_return("r", "Looks consistent.")])],
    );
    // Hold the writer's second turn until the critic has finished, so the result is ready
    // right after that round.
    model.hang_when(|request| request.agent_profile_id.as_str() == "writer" && request.round == 2);
    let h = installed(model);
    let run = h.completed_after_a_task(request(Some("writer"))).await;

    let injected = events_of(&h, &run.id, "agent_results_injected");
    assert_eq!(injected.len(), 1);
    assert_eq!(injected[0].payload["taskCount"], 1);
    let requests = requests_of(&h, "writer");
    // Round 3 is the first request after the round in which the result was ready.
    let third = user_texts(&requests[2]);
    let notice = third
        .iter()
        .find(|text| text.contains("## Delegated Task Results"))
        .expect("injected message");
    crate::assert_text_snapshot!("injected_results_message", notice);
    // Every later request carries it exactly once (it stays in the conversation, never repeated).
    let last = user_texts(requests.last().unwrap());
    assert_eq!(
        last.iter()
            .filter(|text| text.contains("## Delegated Task Results"))
            .count(),
        1
    );
}

#[tokio::test]
async fn workspace_finish_cancels_unawaited_delegated_task() {
    let model = writer_publishing_after(
        vec![turn(vec![delegate("d1", "critic", "Slow review.")])],
        vec![("critic", vec![task_return("r", "never")])],
    );
    model.hang_when(|request| request.agent_profile_id.as_str() == "critic");
    let h = installed(model);
    let run = h.run_completed(request(Some("writer"))).await;
    let task = h.first_task_ended(
        &run.id,
        TaskStatus::Cancelled,
        "cancelled because the agent that delegated it finished the run",
    );
    let child = &task.child_invocation_id;
    assert_eq!(
        h.store
            .invocations(&run.id)
            .iter()
            .find(|inv| &inv.id == child)
            .unwrap()
            .status,
        InvocationStatus::Cancelled
    );
    assert!(
        events_of(&h, &run.id, "agent_child_invocation_failed").is_empty(),
        "a cancel is not a failure"
    );
    assert_eq!(h.model.parked_count(), 0);
    // The cancellation happened before the run completed.
    let types = h.event_types(&run.id);
    let cancelled = types
        .iter()
        .position(|t| t == "agent_task_cancelled")
        .unwrap();
    assert!(cancelled < types.iter().position(|t| t == "run_completed").unwrap());
}

#[tokio::test]
async fn delegated_agent_cannot_use_tools_it_was_not_offered() {
    let model = by_agent(vec![
        (
            "writer",
            delegate_wait_publish(
                "critic",
                "Try to finish the job.",
                json!({}),
                "Final scene.",
            ),
        ),
        (
            "critic",
            // Four tries in a row: three slips go back to it, the fourth fails its task.
            vec![turn(
                ["x1", "x2", "x3", "x4"]
                    .map(|id| call(id, "workspace_finish", json!({})))
                    .to_vec(),
            )],
        ),
    ]);
    let h = installed(model);
    let run = h.run_to_end(request(Some("writer"))).await;
    // Only the delegated task fails; the run goes on.
    assert_eq!(run.status, AgentRunStatus::Completed);
    h.failed_task(&run.id, "model.unknown_tool_call");
    let failed = events_of(&h, &run.id, "agent_child_invocation_failed");
    assert_eq!(failed.len(), 1);
    let capsule = tool_result(&last_request_of(&h, "writer"), "a").3;
    assert!(capsule.contains("### critic - failed"));
}

#[tokio::test]
async fn child_workspace_policy_scopes_manifest_roots_without_mapping() {
    let model = writer_publishing_after(
        vec![
            turn(vec![write("d", "output/main.md", "Draft.")]),
            turn(vec![delegate("d1", "critic", "Read output/main.md.")]),
            turn(vec![call("a", "agent_await", json!({}))]),
        ],
        vec![(
            "critic",
            vec![
                // Same logical path as the writer's.
                turn(vec![call(
                    "r",
                    "workspace_read_file",
                    json!({"path": "output/main.md"}),
                )]),
                // Visible but not writable for this agent.
                turn(vec![write("w", "output/main.md", "hijack")]),
                // Not visible at all.
                turn(vec![call(
                    "l",
                    "workspace_list_files",
                    json!({"path": "plan"}),
                )]),
                turn(vec![call(
                    "t",
                    "task_return",
                    json!({"summary": "s", "artifacts": [{"path": "plan/x.md", "kind": "markdown", "role": "draft"}]}),
                )]),
                task_return("t2", "Read it; no changes."),
            ],
        )],
    );
    let h = installed(model);
    let run = h.run_completed(request(Some("writer"))).await;
    let critic = last_request_of(&h, "critic");
    let results = tool_results(&critic);
    assert!(
        !results[0].1,
        "reading the writer's file works: {:?}",
        results[0]
    );
    assert_eq!(results[1].2.as_deref(), Some("workspace.path_not_writable"));
    assert_eq!(results[2].2.as_deref(), Some("workspace.path_not_visible"));
    assert_eq!(results[3].2.as_deref(), Some("workspace.path_not_visible"));
    assert!(results[3].3.contains("task_return"), "{}", results[3].3);
    assert_eq!(
        h.store.file_text(&run.id, "output/main.md").as_deref(),
        Some("Final scene.")
    );
}

#[tokio::test]
async fn delegated_task_without_return_fails_at_max_rounds() {
    let model = writer_delegating_to_critic(
        "Loop forever.",
        (0..6)
            .map(|i| {
                turn(vec![call(
                    &format!("l{i}"),
                    "workspace_list_files",
                    json!({}),
                )])
            })
            .collect(),
    );
    let h = installed(model);
    let run = h.run_completed(request(Some("writer"))).await;
    h.first_task_ended(
        &run.id,
        TaskStatus::Failed,
        "agent.max_tool_rounds_exceeded: task.return was not called within 6 rounds",
    );
}

#[tokio::test]
async fn delegation_policy_and_budget_errors_are_recoverable() {
    let h = harness(writer_publishing_after(
        vec![turn(vec![
            call(
                "bad-args",
                "agent_delegate",
                json!({"agentId": "critic", "task": {"title": "no objective"}}),
            ),
            call(
                "bad-id",
                "agent_delegate",
                json!({"agentId": "Not An Id", "task": {"objective": "x"}}),
            ),
            delegate("ghost", "ghost", "x"),
            delegate("self", "writer", "x"),
            delegate("locked", "locked", "x"),
            delegate("unconfigured", "unconfigured", "x"),
            call(
                "budget",
                "agent_delegate",
                json!({"agentId": "critic", "task": {"objective": "x"}, "budget": {"maxRounds": 99}}),
            ),
            delegate("ok1", "critic", "x"),
            delegate("ok2", "critic", "x"),
            delegate("ok3", "stylist", "x"),
            delegate("too-many", "stylist", "x"),
            call("list-handoff", "agent_list", json!({"purpose": "handoff"})),
        ])],
        vec![],
    ));
    install(&h);
    h.put_profile({
        let mut p = reviewer("locked");
        p.delegation.allowed_callers = vec!["someone-else".into()];
        p
    });
    h.put_profile({
        let mut p = reviewer("unconfigured");
        p.model.mode = tt_domain::profile::ModelMode::RequiresConfiguration;
        p
    });
    h.model
        .hang_when(|request| request.agent_profile_id.as_str() != "writer");
    let run = h.run_completed(request(Some("writer"))).await;
    let results = tool_results(&requests_of(&h, "writer")[1]);
    let codes: Vec<_> = results
        .iter()
        .map(|r| (r.0.as_str(), r.2.clone().unwrap_or_default()))
        .collect();
    assert_eq!(
        codes,
        [
            ("bad-args", "tool.invalid_arguments".to_owned()),
            ("bad-id", "tool.invalid_arguments".to_owned()),
            ("ghost", "agent.target_profile_not_found".to_owned()),
            ("self", "agent.delegation_policy_denied".to_owned()),
            ("locked", "agent.delegation_policy_denied".to_owned()),
            ("unconfigured", "agent.delegation_policy_denied".to_owned()),
            ("budget", "tool.invalid_arguments".to_owned()),
            ("ok1", String::new()),
            ("ok2", String::new()),
            ("ok3", String::new()),
            // Past the concurrent limit the task waits for a slot instead of failing.
            ("too-many", String::new()),
            ("list-handoff", "agent.delegation_policy_denied".to_owned()),
        ]
    );
    let message = |id: &str| results.iter().find(|r| r.0 == id).unwrap().3.clone();
    assert!(message("self").starts_with("agent.target_not_callable"));
    assert!(message("locked").starts_with("agent.target_caller_denied"));
    assert!(message("unconfigured").starts_with("agent.profile_model_requires_configuration"));
    assert!(
        message("too-many").contains("number 1 in your waiting line"),
        "{}",
        message("too-many")
    );
    assert!(message("list-handoff").starts_with("agent.profile_cannot_handoff"));
    // The journal carries each denial's reason as a field, so hosts never parse messages.
    let reasons: Vec<(String, Option<String>)> = events_of(&h, &run.id, "tool_call_failed")
        .iter()
        .filter(|event| event.payload["errorCode"] != "tool.invalid_arguments")
        .map(|event| {
            (
                event.payload["callId"].as_str().unwrap().to_owned(),
                event.payload["errorReason"].as_str().map(str::to_owned),
            )
        })
        .collect();
    let reason = |id: &str| reasons.iter().find(|r| r.0 == id).unwrap().1.clone();
    assert_eq!(reason("self").as_deref(), Some("agent.target_not_callable"));
    assert_eq!(
        reason("locked").as_deref(),
        Some("agent.target_caller_denied")
    );
    assert_eq!(
        reason("unconfigured").as_deref(),
        Some("agent.profile_model_requires_configuration")
    );
    assert_eq!(
        reason("list-handoff").as_deref(),
        Some("agent.profile_cannot_handoff")
    );
    assert_eq!(reason("ghost"), None);
    // Workspace keys: agent id, then numbered repeats.
    let tasks = h.store.tasks(&run.id);
    let keys: Vec<_> = tasks.iter().map(|t| t.workspace_key.as_str()).collect();
    assert_eq!(keys, ["critic", "critic-002", "stylist", "stylist-002"]);
    // finish cancelled the three hanging tasks and the waiting one.
    assert!(tasks.iter().all(|t| t.status == TaskStatus::Cancelled));
}

#[tokio::test]
async fn agent_list_returns_callable_profiles_allowed_by_delegation_policy() {
    let h = harness(writer_publishing_after(
        vec![turn(vec![
            call("all", "agent_list", json!({})),
            call(
                "query",
                "agent_list",
                json!({"purpose": "delegate", "query": "STYL"}),
            ),
            call("limit", "agent_list", json!({"limit": 1})),
            call("bad", "agent_list", json!({"limit": 0})),
        ])],
        vec![],
    ));
    install(&h);
    h.put_profile({
        let mut p = reviewer("hidden");
        p.delegation.allowed_callers = vec!["other".into()];
        p
    });
    h.run_completed(request(Some("writer"))).await;
    let results = tool_results(&h.model.requests()[1]);
    insta::assert_snapshot!("agent_list_content", results[0].3);
    assert!(
        results[0]
            .3
            .contains("- critic (delegate): Reviews drafts (critic).")
    );
    assert!(!results[0].3.contains("hidden") && !results[0].3.contains("writer ("));
    assert!(results[1].3.contains("stylist") && !results[1].3.contains("critic"));
    assert_eq!(
        results[2].3.matches("\n- ").count() + usize::from(results[2].3.starts_with("- ")),
        1
    );
    assert_eq!(results[3].2.as_deref(), Some("tool.invalid_arguments"));
}

#[tokio::test(start_paused = true)]
async fn await_selection_errors_and_timeout() {
    let model = writer_publishing_after(
        vec![
            turn(vec![call("none", "agent_await", json!({}))]),
            turn(vec![delegate("d1", "critic", "Slow.")]),
            turn(vec![
                call(
                    "foreign",
                    "agent_await",
                    json!({"taskIds": ["task_not_mine"]}),
                ),
                call("dup", "agent_await", json!({"taskIds": ["a", "a"]})),
                call("long", "agent_await", json!({"timeoutMs": 300001})),
                call("status", "agent_await", json!({"mode": "statusOnly"})),
                call("wait", "agent_await", json!({"timeoutMs": 1000})),
            ]),
        ],
        vec![("critic", vec![task_return("r", "late")])],
    );
    model.hang_when(|request| request.agent_profile_id.as_str() == "critic");
    let h = installed(model);
    let run = h.run_completed(request(Some("writer"))).await;
    let results = tool_results(&last_request_of(&h, "writer"));
    let by_id = |id: &str| results.iter().find(|r| r.0 == id).unwrap().clone();
    assert_eq!(by_id("none").2.as_deref(), Some("agent.no_child_tasks"));
    assert_eq!(
        by_id("foreign").2.as_deref(),
        Some("agent.await_task_not_found")
    );
    assert_eq!(by_id("dup").2.as_deref(), Some("tool.invalid_arguments"));
    assert_eq!(by_id("long").2.as_deref(), Some("tool.invalid_arguments"));
    let status = by_id("status");
    // The worker may not have started yet: statusOnly reports whatever is current.
    assert!(
        !status.1
            && (status.3.contains("### critic - running")
                || status.3.contains("### critic - queued")),
        "{}",
        status.3
    );
    let waited = by_id("wait");
    assert!(!waited.1, "a timeout is not an error");
    crate::assert_text_snapshot!("await_timeout_capsule", waited.3);
    let completed = events_of(&h, &run.id, "agent_await_completed");
    let timed_out: Vec<_> = completed
        .iter()
        .filter(|e| e.payload["timedOut"] == true)
        .collect();
    assert_eq!(timed_out.len(), 1);
    assert_eq!(timed_out[0].level, tt_domain::event::EventLevel::Warn);
}

#[tokio::test]
async fn run_cancel_cancels_children_inside_model_calls() {
    let mut writer = delegator("writer");
    writer.delegation.max_concurrent_invocations = 8;
    let delegations: Vec<_> = (0..8)
        .map(|i| delegate(&format!("d{i}"), "critic", &format!("Part {i}.")))
        .collect();
    let model = by_agent(vec![
        (
            "writer",
            vec![turn(delegations), await_turn("a", "allCompleted")],
        ),
        ("critic", vec![task_return("r", "never")]),
    ]);
    model.hang_when(|request| request.agent_profile_id.as_str() == "critic");
    let h = harness(model);
    h.put_profile(writer);
    h.put_profile(reviewer("critic"));
    let run = h.start_parked(request(Some("writer")), 8).await;
    let run = h.cancel_to_end(&run.id).await;
    assert_eq!(h.model.parked_count(), 0);
    let tasks = h.store.tasks(&run.id);
    assert_eq!(tasks.len(), 8);
    assert!(
        tasks.iter().all(|t| t.status == TaskStatus::Cancelled),
        "{tasks:?}"
    );
    assert!(
        h.store
            .invocations(&run.id)
            .iter()
            .all(|inv| inv.status == InvocationStatus::Cancelled)
    );
    // Nothing is written for a cancelled agent after its cancellation.
    let events = h.events(&run.id);
    for task in &tasks {
        assert_nothing_after_cancellation(&events, task.child_invocation_id.as_str());
    }
    assert_eq!(events.last().unwrap().event_type, "run_cancelled");
}

#[tokio::test]
async fn child_failure_never_fails_the_parent_run() {
    let model = by_agent(vec![
        (
            "writer",
            delegate_wait_publish("critic", "Crash.", json!({}), "Final scene."),
        ),
        // No script for the critic: its model call fails.
    ]);
    let h = installed(model);
    let run = h.run_completed(request(Some("writer"))).await;
    let task = h.failed_task(&run.id, "model.script_exhausted");
    let failed = &events_of(&h, &run.id, "agent_child_invocation_failed")[0];
    assert_eq!(failed.payload["taskId"], task.id.as_str());
}

#[tokio::test]
async fn task_return_with_failed_status_fails_the_task_but_completes_the_agent() {
    let model = writer_delegating_to_critic(
        "Impossible task.",
        vec![
            turn(vec![call("bad", "task_return", json!({"summary": " "}))]),
            turn(vec![call(
                "bad2",
                "task_return",
                json!({"summary": "x", "status": "maybe"}),
            )]),
            turn(vec![call(
                "r",
                "task_return",
                json!({"summary": "Cannot be done.", "status": "failed", "warnings": ["the draft is missing"]}),
            )]),
        ],
    );
    let h = installed(model);
    let run = h.run_completed(request(Some("writer"))).await;
    let critic_results = tool_results(&last_request_of(&h, "critic"));
    assert_eq!(
        critic_results[0].2.as_deref(),
        Some("tool.invalid_arguments")
    );
    assert_eq!(
        critic_results[1].2.as_deref(),
        Some("tool.invalid_arguments")
    );
    let task = &h.store.tasks(&run.id)[0];
    assert_eq!(task.status, TaskStatus::Failed);
    let child = h
        .store
        .invocations(&run.id)
        .into_iter()
        .find(|i| i.id == task.child_invocation_id)
        .unwrap();
    assert_eq!(child.status, InvocationStatus::Completed);
    let capsule = tool_result(&last_request_of(&h, "writer"), "a").3;
    assert!(
        capsule.contains("### critic - failed") && capsule.contains("Warnings:"),
        "{capsule}"
    );
}

#[tokio::test]
async fn delegated_prompts_and_surfaces_as_models_see_them() {
    let model = writer_publishing_after(
        vec![
            turn(vec![delegate(
                "d1",
                "critic",
                "Check continuity of output/main.md.",
            )]),
            turn(vec![call("a", "agent_await", json!({}))]),
        ],
        vec![("critic", vec![task_return("r", "Fine.")])],
    );
    let h = installed(model);
    h.run_completed(request(Some("writer"))).await;
    let writer = first_request_of(&h, "writer");
    insta::assert_snapshot!(
        "delegating_system_prompt",
        writer.messages[0].text_content()
    );
    let critic = first_request_of(&h, "critic");
    insta::assert_snapshot!("delegated_system_prompt", critic.messages[0].text_content());
    insta::assert_snapshot!("delegated_task_brief", critic.messages[1].text_content());
    let specs = |request: &tt_domain::model::AgentModelRequest| {
        serde_json::to_string_pretty(&request.tools.iter().map(|t| json!({"name": t.model_name, "description": t.description, "inputSchema": t.input_schema})).collect::<Vec<_>>()).unwrap()
    };
    insta::assert_snapshot!("delegating_agent_tool_specs", specs(&writer));
    insta::assert_snapshot!("delegated_agent_tool_specs", specs(&critic));
    // No runtime ids or relationship words anywhere a delegated agent reads.
    for message in &critic.messages {
        for part in &message.parts {
            if let ModelContentPart::Text { text } = part {
                tt_testkit::leaks::assert_no_leaks("a delegated agent's message", text);
            }
        }
    }
    let _ = responses::text("unused");
}

#[tokio::test]
async fn next_completed_waits_for_a_result_not_seen_yet() {
    let model = writer_publishing_after(
        vec![
            turn(vec![
                delegate("d1", "critic", "Fast."),
                delegate("d2", "stylist", "Slow."),
            ]),
            await_turn("a1", "nextCompleted"),
            await_turn("a2", "nextCompleted"),
        ],
        vec![
            ("critic", vec![task_return("r1", "Critic done.")]),
            ("stylist", vec![task_return("r2", "Stylist done.")]),
        ],
    );
    model.hang_when(|request| request.agent_profile_id.as_str() == "stylist");
    let h = installed(model);
    let run = h.service.start_run(request(Some("writer"))).await.unwrap();
    // Release the stylist only once the first wait has reported the critic.
    h.store
        .wait_for_event(&run.id, |e| e.event_type == "agent_await_completed")
        .await;
    let run = h.release_to_completion(&run.id).await;
    let results = tool_results(&last_request_of(&h, "writer"));
    let first = &results.iter().find(|r| r.0 == "a1").unwrap().3;
    assert!(
        first.contains("Critic done.") && first.contains("### stylist - running"),
        "{first}"
    );
    let second = &results.iter().find(|r| r.0 == "a2").unwrap().3;
    assert!(second.contains("Stylist done."), "{second}");
    assert!(
        !second.contains("Critic done."),
        "a seen result is not repeated: {second}"
    );
    crate::assert_text_snapshot!("await_capsule_with_a_result_seen_before", second);
    let waits = events_of(&h, &run.id, "agent_await_completed");
    let delivered: Vec<_> = waits
        .iter()
        .map(|e| e.payload["deliveredTaskIds"].as_array().unwrap().len())
        .collect();
    assert_eq!(delivered, [1, 1]);
}

#[tokio::test]
async fn delegated_budget_only_lowers_the_target_profile_limits() {
    let model = writer_publishing_after(
        vec![
            turn(vec![call(
                "d1",
                "agent_delegate",
                json!({"agentId": "critic", "task": {"objective": "Two reads."}, "budget": {"maxToolCalls": 1}}),
            )]),
            turn(vec![call("a", "agent_await", json!({}))]),
        ],
        vec![(
            "critic",
            vec![
                turn(vec![call("l1", "workspace_list_files", json!({}))]),
                turn(vec![call("l2", "workspace_list_files", json!({}))]),
                task_return("r", "done"),
            ],
        )],
    );
    let h = installed(model);
    let run = h.run_completed(request(Some("writer"))).await;
    let critic = last_request_of(&h, "critic");
    let results = tool_results(&critic);
    assert!(!results[0].1);
    assert_eq!(results[1].2.as_deref(), Some("agent.tool_budget_exhausted"));
    // Handing the result back is never refused for budget.
    assert_eq!(h.store.tasks(&run.id)[0].status, TaskStatus::Completed);
    // The frozen snapshot records the lowered budget; the writer's own budget is untouched.
    let child = &h.store.tasks(&run.id)[0].child_invocation_id;
    let snapshot = h.document(&run.id, RunDocument::InvocationToolSnapshot(child.clone()));
    assert_eq!(snapshot["budgets"]["maxCallsPerInvocation"], 1);
    assert_eq!(snapshot["exitPolicy"], "task_return_required");
    assert_eq!(snapshot["presentation"], "background");
    let root = h.document(
        &run.id,
        RunDocument::InvocationToolSnapshot(tt_domain::ids::InvocationId::root()),
    );
    assert_eq!(root["budgets"]["maxCallsPerInvocation"], 80);
}

/// A run started without a profile uses the built-in default writer, which (as in the contract)
/// offers the agent and skill tools and may delegate.
#[tokio::test]
async fn default_writer_run_delegates_and_receives_a_result() {
    let model = by_agent(vec![
        (
            "default-writer",
            publish_after(
                vec![
                    turn(vec![call("l1", "agent_list", json!({}))]),
                    turn(vec![delegate("d1", "critic", "Check the draft's pacing.")]),
                    await_turn("a1", "allCompleted"),
                ],
                "Final scene.",
            ),
        ),
        (
            "critic",
            vec![turn(vec![call(
                "r",
                "task_return",
                json!({"summary": "The middle drags.", "confidence": "medium"}),
            )])],
        ),
    ]);
    let h = harness(model);
    h.put_profile(reviewer("critic"));
    let run = h.run_completed(request(None)).await;

    let first = first_request_of(&h, "default-writer");
    let names: Vec<_> = first.tools.iter().map(|t| t.model_name.as_str()).collect();
    assert_eq!(
        names,
        [
            "agent_list",
            "agent_delegate",
            "agent_await",
            "skill_list",
            "skill_search",
            "skill_read",
            "workspace_list_files",
            "workspace_search_files",
            "workspace_read_file",
            "workspace_write_file",
            "workspace_apply_patch",
            "workspace_commit",
            "workspace_finish",
        ]
    );

    let results = tool_results(&last_request_of(&h, "default-writer"));
    let listing = results.iter().find(|r| r.0 == "l1").unwrap();
    assert!(!listing.1 && listing.3.contains("critic"), "{listing:?}");
    let delegated = results.iter().find(|r| r.0 == "d1").unwrap();
    assert!(!delegated.1, "{delegated:?}");
    let capsule = &results.iter().find(|r| r.0 == "a1").unwrap().3;
    assert!(
        capsule.contains("### critic - completed") && capsule.contains("The middle drags."),
        "{capsule}"
    );
    let tasks = h.store.tasks(&run.id);
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].status, TaskStatus::Completed);
}

/// Ids that sort backwards: each new one is smaller than the last.
struct DescendingIds(std::sync::atomic::AtomicU64);

impl tt_ports::IdGenerator for DescendingIds {
    fn next_token(&self) -> String {
        let n = self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        format!("{n:032x}")
    }
}

#[tokio::test]
async fn tasks_delegated_in_the_same_millisecond_come_back_in_delegation_order() {
    let model = writer_publishing_after(
        vec![
            turn(vec![
                delegate("d1", "critic", "First."),
                delegate("d2", "critic", "Second."),
                delegate("d3", "critic", "Third."),
            ]),
            await_turn("a1", "allCompleted"),
        ],
        vec![("critic", vec![task_return("r", "Done.")])],
    );
    // A clock that never moves and ids that sort backwards: only the registration number
    // (`creationSeq`) still says which task came first.
    let h = harness_with_system(
        model,
        tt_testkit::fakes::ManualClock::new(),
        std::sync::Arc::new(DescendingIds(std::sync::atomic::AtomicU64::new(1 << 40))),
    );
    install(&h);
    let run = h.run_completed(request(Some("writer"))).await;
    let registered: Vec<String> = events_of(&h, &run.id, "agent_task_registered")
        .iter()
        .map(|e| e.payload["taskId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(registered.len(), 3);
    let mut by_id = registered.clone();
    by_id.sort();
    assert_ne!(
        by_id, registered,
        "the ids must not already sort in delegation order"
    );
    let delivered: Vec<String> =
        events_of(&h, &run.id, "agent_await_completed")[0].payload["deliveredTaskIds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|id| id.as_str().unwrap().to_owned())
            .collect();
    assert_eq!(delivered, registered);
}

/// Twenty tasks through two slots whose agents return at once, so slots free while the lead is
/// still delegating: no task starts before its `agent_task_queued`, and no more than two run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_task_never_starts_before_it_is_journaled_queued_nor_past_the_slots() {
    const TASKS: usize = 20;
    let delegations: Vec<_> = (0..TASKS)
        .map(|i| delegate(&format!("d{i}"), "critic", &format!("Part {i}.")))
        .collect();
    let model = writer_publishing_after(
        vec![turn(delegations), await_turn("a1", "allCompleted")],
        vec![("critic", vec![task_return("r", "Done.")])],
    );
    let h = harness(model);
    h.put_profile(custom_profile("writer", |p| {
        *p = delegator("writer");
        p.delegation.max_concurrent_invocations = 2;
        p.delegation.max_invocations_per_run = TASKS as u32;
        p.tools.max_calls_per_run = TASKS as u32 + 8;
    }));
    h.put_profile(reviewer("critic"));
    let run = h.run_completed(request(Some("writer"))).await;
    let mut queued_at = std::collections::HashMap::new();
    let mut running = 0;
    let mut started = 0;
    for event in h.events(&run.id) {
        let task = event.payload["taskId"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        match event.event_type.as_str() {
            "agent_task_queued" => {
                queued_at.insert(task, event.seq);
            }
            "agent_task_started" => {
                running += 1;
                started += 1;
                assert!(running <= 2, "a third task ran at seq {}", event.seq);
            }
            "agent_task_completed" | "agent_task_failed" | "agent_task_cancelled" => running -= 1,
            _ => {}
        }
    }
    assert_eq!(started, TASKS);
    assert!(!queued_at.is_empty(), "some tasks had to wait");
    for event in events_of(&h, &run.id, "agent_task_started") {
        let task = event.payload["taskId"].as_str().unwrap();
        if let Some(queued) = queued_at.get(task) {
            assert!(*queued < event.seq, "{task} started before it was queued");
        }
    }
}

#[tokio::test]
async fn a_failed_tasks_capsule_reads_as_its_class_without_paths() {
    let writer = delegate_wait_publish(
        "critic",
        "Check continuity.",
        json!({"mode": "allCompleted", "timeoutMs": 60000}),
        "Final scene.",
    );
    // The critic's model refuses with a message that names a physical path and a server.
    let model = tt_testkit::fakes::FakeModel::new(move |request| {
        if request.agent_profile_id.as_str() == "critic" {
            return Err(tt_ports::ModelError::Rejected {
                status: Some(403),
                message: "HTTP 403: cannot open /home/alice/.tt-agent/runs/run_0001/input at http://10.0.0.7/v1".into(),
            });
        }
        Ok(writer[request.round as usize - 1].clone())
    });
    let h = installed(model);
    let run = h.run_completed(request(Some("writer"))).await;
    let task = h.store.tasks(&run.id).remove(0);
    assert_eq!(task.status, TaskStatus::Failed);
    // The record keeps the technical text for hosts.
    assert!(task.error.as_deref().unwrap().contains("/home/alice"));
    let writer_request = requests_of(&h, "writer").remove(2);
    let result = writer_request
        .messages
        .iter()
        .flat_map(|m| m.parts.iter())
        .find_map(|part| match part {
            ModelContentPart::ToolResult { result } if result.call_id == "a" => {
                Some(result.clone())
            }
            _ => None,
        })
        .unwrap();
    // The capsule and its structured views, as the model reads them.
    let shown =
        format!("{}\n{}", result.content, result.structured).replace(task.id.as_str(), "<task id>");
    tt_testkit::leaks::assert_no_leaks("a failed task's capsule", &shown);
    assert!(!shown.contains("10.0.0.7"), "{shown}");
    insta::assert_snapshot!(
        "failed_task_capsule",
        result.content.replace(task.id.as_str(), "<task id>")
    );
}
