//! Dispatcher rules: unknown tools, tools not offered, budgets, calls after finish, round limits.

use serde_json::json;
use tt_domain::event::EventLevel;
use tt_domain::run::AgentRunStatus;

use crate::support::*;

#[tokio::test]
async fn unknown_tool_is_fail_fast_with_tool_call_failed_once_slips_are_exhausted() {
    // `limits.maxConsecutiveSlips` (3) unknown calls are recoverable; the next is fatal.
    let unknown = |id: &str| call(id, "shell_exec", json!({"cmd": "ls"}));
    let h = harness(by_turn(vec![turn(vec![
        unknown("x1"),
        unknown("x2"),
        unknown("x3"),
        unknown("x4"),
    ])]));
    let run = h.run_to_end(request(None)).await;
    assert_eq!(run.status, AgentRunStatus::Failed);
    let failed = events_of(&h, &run.id, "tool_call_failed");
    assert_eq!(failed.len(), 4);
    assert_eq!(failed[0].level, EventLevel::Warn);
    let failed = &failed[3];
    assert_eq!(failed.level, EventLevel::Error);
    assert_eq!(failed.payload["fatal"], true);
    assert_eq!(failed.payload["errorCode"], "model.unknown_tool_call");
    assert_eq!(
        h.first_event(&run.id, "run_failed").payload["code"],
        "model.unknown_tool_call"
    );
}

#[tokio::test]
async fn canonical_names_are_accepted_and_journaled_canonically() {
    let turns = vec![
        turn(vec![call(
            "c1",
            "workspace.write_file",
            json!({"path": "output/main.md", "content": "x"}),
        )]),
        turn(vec![call("c2", "workspace.commit", json!({}))]),
        turn(vec![call("c3", "workspace_finish", json!({}))]),
    ];
    let h = harness(by_turn(turns));
    let run = h.run_completed(request(None)).await;
    let names: Vec<String> = payload_texts(&h, &run.id, "tool_call_requested", "name");
    assert_eq!(
        names,
        [
            "workspace.write_file",
            "workspace.commit",
            "workspace.finish"
        ]
    );
}

#[tokio::test]
async fn tool_not_offered_is_recoverable_policy_denial() {
    let mut turns = vec![turn(vec![call(
        "p",
        "workspace_apply_patch",
        json!({"path": "output/main.md", "old_string": "a", "new_string": "b"}),
    )])];
    turns.extend(happy_turns());
    let h = harness(by_turn(turns));
    h.put_profile(custom_profile("no-patch", |p| {
        p.tools.deny.push("workspace.apply_patch".into())
    }));
    h.run_completed(request(Some("no-patch"))).await;
    let requests = h.model.requests();
    assert_eq!(requests[0].tools.len(), 6);
    let results = tool_results(&requests[1]);
    assert_eq!(results[0].2.as_deref(), Some("agent.tool_policy_denied"));
}

#[tokio::test]
async fn per_tool_and_per_invocation_budgets_are_recoverable() {
    let turns = vec![
        turn(vec![
            call("l1", "workspace_list_files", json!({})),
            call("l2", "workspace_list_files", json!({})),
        ]),
        turn(vec![
            write("w", "output/main.md", "x"),
            call("c", "workspace_commit", json!({})),
        ]),
        turn(vec![call("f", "workspace_finish", json!({}))]),
    ];
    let h = harness(by_turn(turns.clone()));
    h.put_profile(custom_profile("frugal", |p| {
        p.tools
            .max_calls_per_tool
            .insert("workspace.list_files".into(), 1);
    }));
    h.run_completed(request(Some("frugal"))).await;
    let results = tool_results(&h.model.requests()[1]);
    assert!(!results[0].1);
    assert_eq!(results[1].2.as_deref(), Some("agent.tool_budget_exhausted"));

    // maxCallsPerRun counts this invocation's calls: the 4th call is refused.
    let h = harness(by_turn(turns));
    h.put_profile(custom_profile("tiny", |p| p.tools.max_calls_per_run = 3));
    let run = h.run_to_end(request(Some("tiny"))).await;
    let requests = h.model.requests();
    let results = tool_results(&requests[2]);
    assert_eq!(results[3].2.as_deref(), Some("agent.tool_budget_exhausted"));
    // Finishing is never refused for budget, but nothing was published, so it is refused for
    // that; the run fails when the model has nothing more to say.
    let results = tool_results(&h.model.requests()[3]);
    assert_eq!(
        results[4].2.as_deref(),
        Some("agent.foreground_commit_required")
    );
    assert_eq!(run.status, AgentRunStatus::Failed);
}

#[tokio::test]
async fn tool_call_after_finish_in_the_same_response_is_fail_fast() {
    let turns = vec![
        turn(vec![write("w", "output/main.md", "x")]),
        turn(vec![call("c", "workspace_commit", json!({}))]),
        turn(vec![
            call("f", "workspace_finish", json!({})),
            write("late", "output/late.md", "too late"),
        ]),
    ];
    let h = harness(by_turn(turns));
    let run = h.run_to_end(request(None)).await;
    // Something was committed, so the failure keeps it as partial success.
    assert_eq!(run.status, AgentRunStatus::PartialSuccess);
    let event = h.first_event(&run.id, "run_partial_success");
    assert_eq!(event.payload["code"], "agent.tool_after_finish");
    assert!(
        h.store.file_text(&run.id, "output/late.md").is_none(),
        "the late call must not run"
    );
    let late = h
        .events(&run.id)
        .into_iter()
        .find(|e| e.event_type == "tool_call_failed" && e.payload["callId"] == "late")
        .expect("late call journaled");
    assert_eq!(late.level, EventLevel::Error);
}

#[tokio::test]
async fn running_out_of_rounds_with_tool_calls_fails() {
    let turns: Vec<_> = (0..3)
        .map(|i| {
            turn(vec![call(
                &format!("l{i}"),
                "workspace_list_files",
                json!({}),
            )])
        })
        .collect();
    let h = harness(by_turn(turns));
    h.put_profile(custom_profile("short", |p| p.tools.max_rounds = 3));
    let run = h.run_to_end(request(Some("short"))).await;
    assert_eq!(run.status, AgentRunStatus::Failed);
    let failed = h.run_failed(&run.id, "agent.max_tool_rounds_exceeded");
    assert_eq!(failed.payload["userRetryable"], true);
}
