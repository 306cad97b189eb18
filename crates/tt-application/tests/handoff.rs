//! Handoff: the foreground passes to another agent in the same run.

use serde_json::json;
use tt_domain::invocation::{InvocationKind, InvocationStatus};
use tt_domain::run::AgentRunStatus;
use tt_domain::task::{TaskContinuation, TaskStatus};

use crate::support::*;

fn publish_and_finish(prefix: &str) -> Vec<tt_domain::model::AgentModelResponse> {
    vec![
        turn(vec![write(
            &format!("{prefix}w"),
            "output/main.md",
            &format!("Text by {prefix}."),
        )]),
        turn(vec![call(
            &format!("{prefix}c"),
            "workspace_commit",
            json!({}),
        )]),
        turn(vec![call(
            &format!("{prefix}f"),
            "workspace_finish",
            json!({}),
        )]),
    ]
}

#[tokio::test]
async fn agent_handoff_continues_after_prior_commit() {
    let model = by_agent(vec![
        (
            "writer",
            vec![
                turn(vec![write("w", "output/main.md", "Draft.")]),
                turn(vec![call("c", "workspace_commit", json!({}))]),
                turn(vec![handoff("h", "editor", "Polish the published scene.")]),
            ],
        ),
        // The editor finishes on the writer's commit, without committing itself.
        (
            "editor",
            vec![turn(vec![call("f", "workspace_finish", json!({}))])],
        ),
    ]);
    let h = harness(model);
    h.put_profile(handing_off("writer"));
    h.put_profile(handoff_target("editor"));
    let run = h.run_completed(request(Some("writer"))).await;

    let invocations = h.store.invocations(&run.id);
    let root = invocations.iter().find(|inv| inv.id.is_root()).unwrap();
    let editor = invocations
        .iter()
        .find(|inv| inv.kind == InvocationKind::Handoff)
        .unwrap();
    assert_eq!(root.status, InvocationStatus::Transferred);
    assert_eq!(editor.status, InvocationStatus::Completed);
    let task = &h.store.tasks(&run.id)[0];
    assert_eq!(task.continuation, TaskContinuation::TransferControl);
    assert!(task.id.as_str().starts_with("handoff_"));
    assert_eq!(task.status, TaskStatus::Completed);
    assert_eq!(task.child_invocation_id, editor.id);

    // The editor has its own prompt, brief, session and tools; it never sees the writer's turns.
    let request = first_request_of(&h, "editor");
    assert_eq!(
        request.session.session_id,
        format!("{}:{}", run.id, editor.id)
    );
    assert_eq!(request.messages.len(), 2);
    let brief = request.messages[1].text_content();
    assert!(brief.starts_with("# Handoff Brief"), "{brief}");
    insta::assert_snapshot!("handoff_brief_as_sent", brief);
    // The handoff result the writer got.
    let result = tool_results(&last_request_of(&h, "writer"));
    assert!(
        result.iter().all(|r| r.0 != "h"),
        "the writer makes no request after its handoff"
    );

    let projection =
        tt_application::timeline_projection(h.service.services().invocations.as_ref(), &run.id)
            .await
            .unwrap();
    assert_eq!(
        projection.foreground_invocation_ids,
        vec![root.id.clone(), editor.id.clone()]
    );
}

#[tokio::test]
async fn handoff_event_sequence() {
    let model = by_agent(vec![
        (
            "writer",
            vec![turn(vec![handoff(
                "h",
                "editor",
                "Write and publish the scene.",
            )])],
        ),
        ("editor", publish_and_finish("e")),
    ]);
    let h = harness(model);
    h.put_profile(handing_off("writer"));
    h.put_profile(handoff_target("editor"));
    let run = h.run_completed(request(Some("writer"))).await;
    // The events of the handoff, in the order they are journaled.
    let expected = [
        "agent_handoff_requested",
        "agent_invocation_created",
        "agent_task_registered",
        "agent_handoff_accepted",
        "tool_call_completed",
        "agent_invocation_transferred",
        "agent_loop_finished",
        "agent_task_started",
        "agent_invocation_started",
        "context_assembled",
        "agent_invocation_completed",
        "agent_task_completed",
        "run_completed",
    ];
    let events = h.events(&run.id);
    let first_handoff = events
        .iter()
        .position(|e| e.event_type == "agent_handoff_requested")
        .unwrap();
    let sequence: Vec<String> = events[first_handoff..]
        .iter()
        .filter(|e| expected.contains(&e.event_type.as_str()))
        .filter(|e| e.event_type != "tool_call_completed" || e.payload["callId"] == "h")
        .filter(|e| {
            e.event_type != "agent_loop_finished" || e.payload["invocationId"] == "inv_root"
        })
        .map(|e| e.event_type.to_string())
        .collect();
    assert_eq!(sequence, expected);
}

#[tokio::test]
async fn a_chain_of_three_owners() {
    let model = by_agent(vec![
        (
            "writer",
            vec![
                turn(vec![write("w", "output/main.md", "Draft.")]),
                turn(vec![handoff("h1", "editor", "Edit.")]),
            ],
        ),
        (
            "editor",
            vec![
                turn(vec![call("c", "workspace_commit", json!({}))]),
                turn(vec![handoff("h2", "finalizer", "Finish.")]),
            ],
        ),
        ("finalizer", publish_and_finish("z")),
    ]);
    let h = harness(model);
    h.put_profile(handing_off("writer"));
    h.put_profile(handoff_target("editor"));
    h.put_profile(handoff_target("finalizer"));
    let run = h.run_completed(request(Some("writer"))).await;
    // The ledger is shared across the chain: two commits, by two owners.
    assert_eq!(h.bridge.requests().len(), 2);
    let statuses: Vec<_> = h
        .store
        .invocations(&run.id)
        .into_iter()
        .map(|inv| (inv.profile_id.to_string(), inv.status))
        .collect();
    assert!(statuses.contains(&("writer".into(), InvocationStatus::Transferred)));
    assert!(statuses.contains(&("editor".into(), InvocationStatus::Transferred)));
    assert!(statuses.contains(&("finalizer".into(), InvocationStatus::Completed)));
    let tasks = h.store.tasks(&run.id);
    assert!(tasks.iter().all(|t| t.status == TaskStatus::Completed));
    let keys: Vec<_> = tasks.iter().map(|t| t.workspace_key.as_str()).collect();
    assert_eq!(keys, ["editor", "finalizer"]);
}

/// A harness on `model` with the writer handing off, the editor it may hand off to, a critic
/// it may delegate to, and a private editor only someone else may call.
fn policy_harness(model: std::sync::Arc<tt_testkit::fakes::FakeModel>) -> Harness {
    let h = harness(model);
    h.put_profile(handing_off("writer"));
    h.put_profile(handoff_target("editor"));
    h.put_profile(reviewer("critic"));
    h.put_profile({
        let mut p = handoff_target("private-editor");
        p.delegation.allowed_callers = vec!["someone-else".into()];
        p
    });
    h
}

#[tokio::test]
async fn agent_handoff_denies_pending_delegated_tasks_and_policy_violations() {
    let model = by_agent(vec![
        (
            "writer",
            publish_after(
                vec![
                    turn(vec![delegate("d", "critic", "Slow review.")]),
                    turn(vec![
                        handoff("pending", "editor", "x"),
                        handoff("not-target", "critic", "x"),
                        handoff("ghost", "ghost", "x"),
                        handoff("denied", "private-editor", "x"),
                        call(
                            "bad",
                            "agent_handoff",
                            json!({"agentId": "editor", "handoff": {"title": "no objective"}}),
                        ),
                    ]),
                ],
                "x",
            ),
        ),
        ("critic", vec![task_return("r", "never")]),
    ]);
    model.hang_when(|request| request.agent_profile_id.as_str() == "critic");
    let h = policy_harness(model);
    let run = h.run_completed(request(Some("writer"))).await;
    let results = tool_results(&last_request_of(&h, "writer"));
    let code = |id: &str| {
        results
            .iter()
            .find(|r| r.0 == id)
            .unwrap()
            .2
            .clone()
            .unwrap_or_default()
    };
    let message = |id: &str| results.iter().find(|r| r.0 == id).unwrap().3.clone();
    assert_eq!(code("pending"), "agent.handoff_pending_tasks");
    assert!(message("pending").contains("agent_await"));
    // Once the critic is done the other checks apply; here the critic still runs, so every
    // later handoff is refused as pending too.
    assert_eq!(code("not-target"), "agent.handoff_pending_tasks");
    assert_eq!(code("bad"), "tool.invalid_arguments");
    // A refused handoff still logs the request.
    assert_eq!(events_of(&h, &run.id, "agent_handoff_requested").len(), 4);
    assert!(events_of(&h, &run.id, "agent_handoff_accepted").is_empty());
    assert_eq!(
        h.store
            .invocations(&run.id)
            .iter()
            .filter(|i| i.kind == InvocationKind::Handoff)
            .count(),
        0
    );
}

#[tokio::test]
async fn handoff_policy_denials() {
    let model = by_agent(vec![
        (
            "writer",
            publish_after(
                vec![turn(vec![
                    handoff("not-target", "critic", "x"),
                    handoff("ghost", "ghost", "x"),
                    handoff("denied", "private-editor", "x"),
                    // Journaled as asked, before the id is checked.
                    handoff("not-an-id", "Not An Id!", "x"),
                ])],
                "x",
            ),
        ),
        (
            "plain",
            vec![
                turn(vec![handoff("cannot", "editor", "x")]),
                turn(vec![call("f", "workspace_finish", json!({}))]),
            ],
        ),
    ]);
    let h = policy_harness(model);
    h.run_completed(request(Some("writer"))).await;
    let results = tool_results(&last_request_of(&h, "writer"));
    let find = |id: &str| results.iter().find(|r| r.0 == id).unwrap().clone();
    assert_eq!(
        find("not-target").2.as_deref(),
        Some("agent.handoff_policy_denied")
    );
    assert!(find("not-target").3.starts_with("agent.target_not_handoff"));
    assert_eq!(
        find("ghost").2.as_deref(),
        Some("agent.target_profile_not_found")
    );
    assert_eq!(
        find("not-an-id").2.as_deref(),
        Some("tool.invalid_arguments")
    );
    assert_eq!(
        find("denied").2.as_deref(),
        Some("agent.handoff_policy_denied")
    );
    assert!(find("denied").3.starts_with("agent.target_caller_denied"));

    // An agent without the right to hand off is refused by its tool surface.
    let h = harness(h.model.clone());
    h.put_profile(handoff_target("editor"));
    h.put_profile(custom_profile("plain", |p| {
        p.run.presentation = tt_domain::run::Presentation::Background
    }));
    h.run_completed(request(Some("plain"))).await;
    let results = tool_results(&last_request_of(&h, "plain"));
    assert_eq!(results[0].2.as_deref(), Some("agent.tool_policy_denied"));
}

#[tokio::test]
async fn handoff_depth_is_limited_for_the_whole_run() {
    let mut writer = handing_off("writer");
    writer.delegation.max_handoff_depth = 1;
    let mut editor = handoff_target("editor");
    editor.delegation.max_handoff_depth = 1;
    let model = by_agent(vec![
        ("writer", vec![turn(vec![handoff("h1", "editor", "Edit.")])]),
        (
            "editor",
            publish_after(
                vec![turn(vec![handoff("h2", "writer-again", "Back.")])],
                "x",
            ),
        ),
    ]);
    let h = harness(model);
    h.put_profile(writer);
    h.put_profile(editor);
    h.put_profile(handoff_target("writer-again"));
    h.run_completed(request(Some("writer"))).await;
    let results = tool_results(&last_request_of(&h, "editor"));
    assert_eq!(
        results[0].2.as_deref(),
        Some("agent.handoff_depth_exhausted")
    );
    assert!(
        results[0]
            .3
            .starts_with("agent.max_handoff_depth_exhausted")
    );
}

#[tokio::test]
async fn a_target_that_fails_to_start_fails_its_task_and_the_run() {
    let model = by_agent(vec![(
        "writer",
        vec![
            turn(vec![write("w", "output/main.md", "x")]),
            turn(vec![call("c", "workspace_commit", json!({}))]),
            turn(vec![handoff("h", "broken", "Go.")]),
        ],
    )]);
    let h = harness(model);
    h.put_profile(handing_off("writer"));
    // Valid, but its model connection is not configured here, so it cannot start.
    h.put_profile({
        let mut p = handoff_target("broken");
        p.model.mode = tt_domain::profile::ModelMode::ConnectionRef;
        p.model.connection_ref = Some("absent".into());
        p.model.model_id = Some("m".into());
        p
    });
    let run = h.run_to_end(request(Some("writer"))).await;
    // Something was published before the failure.
    assert_eq!(run.status, AgentRunStatus::PartialSuccess);
    h.failed_task(&run.id, "agent.model_connection_not_found");
    let broken = h.invocation_of_kind(&run.id, InvocationKind::Handoff);
    assert_eq!(broken.status, InvocationStatus::Failed);
    assert_eq!(
        h.first_event(&run.id, "run_partial_success").payload["code"],
        "agent.model_connection_not_found"
    );
}

#[tokio::test]
async fn run_cancel_during_a_handoff_targets_model_call() {
    let model = by_agent(vec![
        ("writer", vec![turn(vec![handoff("h", "editor", "Go.")])]),
        ("editor", publish_and_finish("e")),
    ]);
    model.hang_when(|request| request.agent_profile_id.as_str() == "editor");
    let h = harness(model);
    h.put_profile(handing_off("writer"));
    h.put_profile(handoff_target("editor"));
    let run = h.start_parked(request(Some("writer")), 1).await;
    h.service.cancel_run(&run.id).await.unwrap();
    let run = h.wait(&run.id).await;
    assert_eq!(run.status, AgentRunStatus::Cancelled);
    let editor = h.invocation_of_kind(&run.id, InvocationKind::Handoff);
    assert_eq!(editor.status, InvocationStatus::Cancelled);
    assert_eq!(h.store.tasks(&run.id)[0].status, TaskStatus::Cancelled);
    assert_eq!(
        h.events(&run.id).last().unwrap().event_type,
        "run_cancelled"
    );
    assert_eq!(
        events_of(&h, &run.id, "agent_invocation_cancelled").len(),
        1
    );
}

#[tokio::test]
async fn a_tool_call_after_a_successful_handoff_is_fail_fast() {
    let model = by_agent(vec![(
        "writer",
        vec![turn(vec![
            handoff("h", "editor", "Go."),
            write("late", "output/late.md", "too late"),
        ])],
    )]);
    let h = harness(model);
    h.put_profile(handing_off("writer"));
    h.put_profile(handoff_target("editor"));
    let run = h.run_to_end(request(Some("writer"))).await;
    h.assert_failed_with(&run, "agent.tool_after_finish");
    assert!(h.store.file_text(&run.id, "output/late.md").is_none());
    // The caller had already handed over; the successor never started and failed with the run.
    let invocations = h.store.invocations(&run.id);
    assert_eq!(
        invocations.iter().find(|i| i.id.is_root()).unwrap().status,
        InvocationStatus::Transferred
    );
    assert_eq!(
        invocations
            .iter()
            .find(|i| i.kind == InvocationKind::Handoff)
            .unwrap()
            .status,
        InvocationStatus::Failed
    );
    assert_eq!(h.store.tasks(&run.id)[0].status, TaskStatus::Failed);
    assert!(requests_of(&h, "editor").is_empty());
}

#[tokio::test]
async fn handoff_target_prompts_as_models_see_them() {
    let mut no_finish = handoff_target("relay");
    no_finish
        .tools
        .deny
        .extend(["workspace.finish".to_owned(), "workspace.commit".to_owned()]);
    let snapshot_of = |profile: tt_domain::profile::AgentProfileDefinition| {
        let resolved = tt_domain::profile::resolve_profile(
            profile,
            tt_domain::profile::ProfileSource::built_in(),
        )
        .unwrap();
        tt_application::build_tool_snapshot(
            &resolved,
            &tt_domain::ids::InvocationId::from_raw("inv_x"),
            tt_domain::invocation::ExitPolicy::RunFinishAllowed,
            tt_domain::run::Presentation::Foreground,
            &[],
        )
        .unwrap()
    };
    insta::assert_snapshot!(
        "handoff_target_without_finish_system_prompt",
        tt_application::default_system_prompt(&snapshot_of(no_finish))
    );
    insta::assert_snapshot!(
        "delegating_and_handing_off_system_prompt",
        tt_application::default_system_prompt(&snapshot_of(handing_off("writer")))
    );
}
