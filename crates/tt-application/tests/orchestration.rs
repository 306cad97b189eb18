//! Task deadlines and idle limits (issue 13), on paused time: a deadline that passes while the
//! task is inside a model call, an idle limit, and a deadline above the target's bound.

use serde_json::json;
use tt_domain::task::TaskStatus;

use crate::support::*;

#[tokio::test(start_paused = true)]
async fn a_deadline_and_an_idle_limit_stop_tasks_inside_model_calls() {
    let model = writer_publishing_after(
        vec![
            turn(vec![
                call(
                    "too-long",
                    "agent_delegate",
                    json!({"agentId": "critic", "task": {"objective": "Check it."}, "timeoutSeconds": 61}),
                ),
                call(
                    "d1",
                    "agent_delegate",
                    json!({"agentId": "critic", "task": {"objective": "Check it."}, "timeoutSeconds": 30}),
                ),
                delegate("d2", "stylist", "Polish it."),
                delegate("d3", "scout", "Look around."),
            ]),
            turn(vec![call(
                "a",
                "agent_await",
                json!({"mode": "allCompleted", "timeoutMs": 300000}),
            )]),
        ],
        vec![
            (
                "critic",
                vec![
                    turn(vec![write("n", "scratch/critic-notes.md", "first notes")]),
                    task_return("r", "Never reached."),
                ],
            ),
            ("stylist", vec![task_return("r", "Never reached.")]),
            ("scout", vec![task_return("r", "Looked around.")]),
        ],
    );
    // The critic hangs in its second model call, the stylist in its first.
    model.hang_when(|request| {
        matches!(
            (request.agent_profile_id.as_str(), request.round),
            ("critic", 2) | ("stylist", 1)
        )
    });
    let h = harness(model);
    h.put_profile(delegator("writer"));
    h.put_profile({
        let mut p = reviewer("critic");
        p.delegation.max_task_timeout_seconds = Some(60);
        p
    });
    h.put_profile({
        let mut p = reviewer("stylist");
        p.delegation.idle_timeout_seconds = Some(20);
        p
    });
    h.put_profile(reviewer("scout"));

    let run = h.run_completed(request(Some("writer"))).await;
    assert_eq!(h.model.parked_count(), 0, "both model calls were aborted");
    let tasks = h.store.tasks(&run.id);
    let status = |agent: &str| {
        tasks
            .iter()
            .find(|t| t.target_profile_id.as_str() == agent)
            .unwrap()
            .clone()
    };
    let critic = status("critic");
    let stylist = status("stylist");
    assert_eq!(critic.status, TaskStatus::Cancelled);
    assert_eq!(
        critic.error.as_deref(),
        Some("deadline_exceeded: stopped at its time limit of 30 seconds")
    );
    assert_eq!(critic.budget.unwrap().timeout_seconds, Some(30));
    assert_eq!(stylist.status, TaskStatus::Cancelled);
    assert_eq!(
        stylist.error.as_deref(),
        Some("idle_timeout_exceeded: stopped after 20 seconds without progress")
    );
    assert_eq!(status("scout").status, TaskStatus::Completed);

    let cancelled = events_of(&h, &run.id, "agent_task_cancelled");
    assert_eq!(cancelled.len(), 2);
    assert!(cancelled.iter().all(|e| e.payload["by"] == "deadline"));
    // The idle limit (20 s from its start) passes before the deadline (30 s).
    assert_eq!(cancelled[0].payload["taskId"], stylist.id.as_str());
    let events = h.events(&run.id);
    for task in [&critic, &stylist] {
        assert_nothing_after_cancellation(&events, task.child_invocation_id.as_str());
    }

    // What the writer read: the refused deadline, then the wait's report.
    let writer = requests_of(&h, "writer").remove(2);
    let text = |id: &str| tool_result(&writer, id).3;
    assert!(
        text("too-long").contains("at most 60"),
        "{}",
        text("too-long")
    );
    let mut shown = format!("too-long:\n{}\n\na:\n{}", text("too-long"), text("a"));
    for task in &tasks {
        shown = shown.replace(task.id.as_str(), "<task id>");
    }
    tt_testkit::leaks::assert_no_leaks("what the writer read about stopped tasks", &shown);
    insta::assert_snapshot!("deadline_and_idle_limit_as_the_writer_reads_them", shown);
}

#[tokio::test]
async fn a_nested_delegator_sees_its_delegation_tools_and_gets_its_own_results() {
    let model = by_agent(vec![
        (
            "writer",
            delegate_wait_publish(
                "mid",
                "Organise the review.",
                json!({"mode": "allCompleted", "timeoutMs": 300000}),
                "Final scene.",
            ),
        ),
        (
            "mid",
            vec![
                turn(vec![delegate("d2", "critic", "Check continuity.")]),
                turn(vec![call(
                    "w",
                    "agent_await",
                    json!({"mode": "allCompleted", "timeoutMs": 300000}),
                )]),
                task_return("r", "The critic found nothing."),
            ],
        ),
        ("critic", vec![task_return("r", "Nothing found.")]),
    ]);
    let h = harness(model);
    h.put_profile({
        let mut p = delegator("writer");
        p.delegation.max_delegation_depth = 2;
        p
    });
    h.put_profile({
        let mut p = reviewer("mid");
        p.delegation.can_delegate = true;
        p.delegation.allow_nested_delegation = true;
        p.tools.allow.push("agent.delegate".to_owned());
        p.tools.allow.push("agent.await".to_owned());
        p.tools.allow.push("agent.cancel_task".to_owned());
        p
    });
    h.put_profile(reviewer("critic"));
    let run = h.run_completed(request(Some("writer"))).await;
    let tasks = h.store.tasks(&run.id);
    assert_eq!(tasks.len(), 2);
    assert!(tasks.iter().all(|t| t.status == TaskStatus::Completed));
    let mid_task = tasks
        .iter()
        .find(|t| t.target_profile_id.as_str() == "mid")
        .unwrap();
    let critic_task = tasks
        .iter()
        .find(|t| t.target_profile_id.as_str() == "critic")
        .unwrap();
    assert_eq!(
        critic_task.parent_invocation_id,
        mid_task.child_invocation_id
    );
    // The critic's result reached `mid` (its delegator) by its wait, and not the writer.
    let awaited: Vec<_> = events_of(&h, &run.id, "agent_await_completed")
        .into_iter()
        .map(|e| {
            (
                e.payload["parentInvocationId"].as_str().unwrap().to_owned(),
                e.payload["deliveredTaskIds"].clone(),
            )
        })
        .collect();
    assert!(awaited.contains(&(
        mid_task.child_invocation_id.to_string(),
        json!([critic_task.id])
    )));
    assert!(awaited.contains(&("inv_root".to_owned(), json!([mid_task.id]))));

    let mid = first_request_of(&h, "mid");
    let names: Vec<&str> = mid.tools.iter().map(|t| t.model_name.as_str()).collect();
    assert!(names.contains(&"agent_delegate") && names.contains(&"agent_cancel_task"));
    assert!(!names.contains(&"agent_handoff") && !names.contains(&"workspace_finish"));
    let prompt = mid.messages[0].text_content();
    tt_testkit::leaks::assert_no_leaks("a nested delegator's system prompt", &prompt);
    insta::assert_snapshot!("nested_delegator_system_prompt", prompt);
}
