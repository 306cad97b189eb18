//! Drift recovery (plain-text answers) and model retries.

use serde_json::json;
use std::time::Duration;
use tt_domain::run::AgentRunStatus;
use tt_ports::ModelError;
use tt_testkit::fakes::{FakeModel, responses};

use crate::support::*;

#[tokio::test]
async fn foreground_run_recovers_from_no_commit_drift_with_nudge() {
    let mut turns = vec![responses::text("Here is my scene: the storm broke.")];
    turns.extend(happy_turns());
    let h = harness(by_turn(turns));
    let run = h.run_completed(request(None)).await;
    // The plain text was kept, not lost.
    assert_eq!(
        h.store
            .file_text(&run.id, "output/direct_output.md")
            .as_deref(),
        Some("Here is my scene: the storm broke.")
    );
    let captured = h.first_event(&run.id, "direct_output_captured");
    assert_eq!(captured.payload["path"], "output/direct_output.md");
    let drift = h.first_event(&run.id, "drift_recovery_attempted");
    assert_eq!(drift.payload["attempt"], 1);
    assert_eq!(drift.payload["reasonCode"], "model.tool_call_required");
    assert_eq!(drift.payload["committedCount"], 0);
    // The next request carries the assistant text and the reminder.
    let second = &h.model.requests()[1];
    let nudge = second.messages.last().unwrap().text_content();
    assert!(
        nudge.starts_with("[system reminder, direct output recovery attempt 1]"),
        "{nudge}"
    );
    assert!(
        nudge.contains("workspace_commit") && nudge.contains("output/direct_output.md"),
        "{nudge}"
    );
    insta::assert_snapshot!("drift_nudge_no_commit", nudge);
}

#[tokio::test]
async fn foreground_run_recovers_from_post_commit_drift_with_nudge() {
    let turns = vec![
        turn(vec![write("w", "output/main.md", "x")]),
        turn(vec![call("c", "workspace_commit", json!({}))]),
        responses::text(""),
        turn(vec![call("f", "workspace_finish", json!({}))]),
    ];
    let h = harness(by_turn(turns));
    let run = h.run_completed(request(None)).await;
    let nudge = h.model.requests()[3]
        .messages
        .last()
        .unwrap()
        .text_content();
    assert!(nudge.contains("already published"), "{nudge}");
    insta::assert_snapshot!("drift_nudge_after_commit", nudge);
    // Empty text is not captured.
    assert!(
        h.store
            .file_text(&run.id, "output/direct_output.md")
            .is_none()
    );
}

#[tokio::test]
async fn drift_until_max_rounds_fails_with_tool_call_required() {
    let h = harness(FakeModel::new(|_| {
        Ok(responses::text("I refuse to use tools."))
    }));
    h.put_profile(custom_profile("chatty", |p| p.tools.max_rounds = 3));
    let run = h.run_to_end(request(Some("chatty"))).await;
    assert_eq!(run.status, AgentRunStatus::Failed);
    assert_eq!(h.model.call_count(), 3);
    let failed = h.run_failed(&run.id, "model.tool_call_required");
    assert_eq!(failed.payload["userRetryable"], true);
    let attempts = h
        .event_types(&run.id)
        .iter()
        .filter(|t| *t == "drift_recovery_attempted")
        .count();
    assert_eq!(attempts, 2);
}

#[tokio::test]
async fn foreground_run_keeps_committed_chat_as_partial_success_on_tool_call_required_drift() {
    let turns = vec![
        turn(vec![write("w", "output/main.md", "x")]),
        turn(vec![call("c", "workspace_commit", json!({}))]),
        responses::text("done!"),
        responses::text("really done!"),
    ];
    let h = harness(by_turn(turns));
    h.put_profile(custom_profile("four", |p| p.tools.max_rounds = 4));
    let run = h.run_to_end(request(Some("four"))).await;
    assert_eq!(run.status, AgentRunStatus::PartialSuccess);
    assert_eq!(
        h.first_event(&run.id, "run_partial_success").payload["code"],
        "model.tool_call_required"
    );
}

#[tokio::test(start_paused = true)]
async fn rate_limited_and_transient_errors_are_retried_with_events() {
    let mut answers = vec![
        Err(ModelError::RateLimited {
            message: "slow down".into(),
            retry_after_ms: Some(5000),
        }),
        Err(ModelError::Transient {
            message: "502 bad gateway".into(),
        }),
    ];
    answers.extend(happy_turns().into_iter().map(Ok));
    let h = harness(FakeModel::sequence(answers));
    let run = h.run_completed(request(None)).await;
    let failed = events_of(&h, &run.id, "model_call_attempt_failed");
    assert_eq!(failed.len(), 2);
    assert_eq!(failed[0].payload["retryable"], true);
    assert_eq!(failed[0].payload["willRetry"], true);
    let scheduled = events_of(&h, &run.id, "model_call_retry_scheduled");
    // Retry-After (5 s) wins over the profile's 3 s interval; then the interval applies.
    assert_eq!(scheduled[0].payload["intervalMs"], 5000);
    assert_eq!(scheduled[1].payload["intervalMs"], 3000);
    assert_eq!(scheduled[1].payload["nextAttempt"], 3);
    let attempts: Vec<_> = events_of(&h, &run.id, "model_call_attempt_started")
        .iter()
        .filter(|e| e.payload["round"] == 1)
        .map(|e| e.payload["attempt"].as_u64().unwrap())
        .collect();
    assert_eq!(attempts, [1, 2, 3]);
}

#[tokio::test(start_paused = true)]
async fn retries_stop_after_max_retries() {
    let h = harness(FakeModel::new(|_| {
        Err(ModelError::Transient {
            message: "down".into(),
        })
    }));
    let run = h.run_to_end(request(None)).await;
    assert_eq!(run.status, AgentRunStatus::Failed);
    // maxRetries = 3 gives 4 attempts.
    assert_eq!(h.model.call_count(), 4);
    let failed = h.first_event(&run.id, "run_failed");
    // The contract's host code; the adapter's finer one in details.
    assert_eq!(failed.payload["code"], "agent.transient");
    assert_eq!(failed.payload["details"]["modelCode"], "model.transient");
    assert_eq!(failed.payload["retryable"], true);
}

#[tokio::test]
async fn rejected_requests_are_not_retried() {
    let h = harness(FakeModel::new(|_| {
        Err(ModelError::Rejected {
            status: Some(400),
            message: "bad request".into(),
        })
    }));
    let run = h.run_to_end(request(None)).await;
    assert_eq!(run.status, AgentRunStatus::Failed);
    assert_eq!(h.model.call_count(), 1);
    let failed = h.first_event(&run.id, "model_call_attempt_failed");
    assert_eq!(failed.payload["willRetry"], false);
}

#[tokio::test]
async fn run_failed_flags_follow_the_error_classification() {
    // (model error, retryable and userRetryable in run_failed, the host-visible code, details)
    let rejected = |status: u16| ModelError::Rejected {
        status: Some(status),
        message: format!("HTTP {status}"),
    };
    let cases = [
        (
            rejected(401),
            false,
            "agent.unauthorized",
            json!({"modelCode": "model.request_rejected", "httpStatus": 401}),
        ),
        (
            rejected(403),
            false,
            "agent.permission_denied",
            json!({"modelCode": "model.request_rejected", "httpStatus": 403}),
        ),
        (
            rejected(400),
            false,
            "agent.validation_error",
            json!({"modelCode": "model.request_rejected", "httpStatus": 400}),
        ),
        // Other upstream failures keep their own code.
        (rejected(404), false, "model.request_rejected", json!({})),
        (
            ModelError::InvalidResponse {
                code: tt_domain::error_codes::MODEL_INVALID_TOOL_CALL,
                message: "tool call #1 has no id".into(),
            },
            false,
            "model.invalid_tool_call",
            json!({}),
        ),
        (
            ModelError::Other("no model id".into()),
            false,
            "model.provider_error",
            json!({}),
        ),
    ];
    for (error, retryable, code, details) in cases {
        let answer = error.clone();
        let h = harness(FakeModel::new(move |_| Err(answer.clone())));
        let run = h.run_to_end(request(None)).await;
        let failed = h.first_event(&run.id, "run_failed");
        assert_eq!(failed.payload["code"], code, "{error:?}");
        assert_eq!(failed.payload["details"], details, "{error:?}");
        assert_eq!(failed.payload["retryable"], retryable, "{error:?}");
        assert_eq!(failed.payload["userRetryable"], retryable, "{error:?}");
    }
    // Policy and argument errors (here: model slips past the limit) are not retryable either.
    let slip = || call("x", "shell_exec", json!({}));
    let h = harness(by_turn(vec![turn(vec![slip(), slip(), slip(), slip()])]));
    let run = h.run_to_end(request(None)).await;
    let failed = h.first_event(&run.id, "run_failed");
    assert_eq!(failed.payload["retryable"], false);
    assert_eq!(failed.payload["userRetryable"], false);
}

#[tokio::test(start_paused = true)]
async fn usage_counts_failed_model_calls_apart() {
    let mut answers = vec![Err(ModelError::Transient {
        message: "502 bad gateway".into(),
    })];
    answers.extend(happy_turns().into_iter().map(Ok));
    let h = harness(FakeModel::sequence(answers));
    let run = h.run_to_end(request(None)).await;
    let usage = tt_application::run_usage(h.store.as_ref(), &run.id)
        .await
        .unwrap();
    assert_eq!(usage.model_calls, 3);
    assert_eq!(usage.failed_model_calls, 1);
    assert_eq!(usage.by_invocation[0].failed_model_calls, 1);

    // Every call failed: no completed call, and the failures are visible.
    let h = harness(FakeModel::new(|_| {
        Err(ModelError::Rejected {
            status: Some(401),
            message: "unauthorized".into(),
        })
    }));
    let run = h.run_to_end(request(None)).await;
    let usage = tt_application::run_usage(h.store.as_ref(), &run.id)
        .await
        .unwrap();
    assert_eq!(usage.model_calls, 0);
    assert_eq!(usage.failed_model_calls, 1);
    assert_eq!(usage.by_invocation.len(), 1);
}

/// Starts a run and waits for a deadline to end it, past the harness's own 600 s bound (so
/// before checking its journal).
async fn start_until_its_deadline(h: &Harness) -> tt_domain::run::AgentRun {
    let run = h.service.start_run(request(None)).await.unwrap();
    tokio::time::timeout(Duration::from_secs(3600), h.service.wait_for_run(&run.id))
        .await
        .expect("the deadline ends the run")
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_hung_model_call_fails_at_its_deadline() {
    let h = harness(FakeModel::hanging());
    let started = tokio::time::Instant::now();
    let run = start_until_its_deadline(&h).await;
    let run = h.wait(&run.id).await;
    assert_eq!(run.status, AgentRunStatus::Failed);
    // The default deadline: 5 minutes for the call, whatever its attempts.
    assert_eq!(started.elapsed().as_secs(), 300);
    assert_eq!(h.model.call_count(), 1);
    let attempt = h.first_event(&run.id, "model_call_attempt_failed");
    assert_eq!(attempt.payload["code"], "model.call_deadline_exceeded");
    assert_eq!(attempt.payload["limit"], "callDeadline");
    assert_eq!(attempt.payload["limitMs"], 300_000);
    assert_eq!(attempt.payload["willRetry"], false);
    let failed = h.run_failed(&run.id, "model.call_deadline_exceeded");
    assert_eq!(failed.payload["retryable"], false);
}

/// Runs a default writer (or one whose profile sets `profile_deadline`) on a hung model behind
/// a connection whose call deadline is `connection_deadline`; the seconds the run took.
async fn hung_call_seconds(profile_deadline: Option<u64>, connection_deadline: u64) -> u64 {
    let h = harness_with_model_info(
        FakeModel::hanging(),
        tt_ports::ConnectionModelInfo {
            call_deadline: Some(Duration::from_secs(connection_deadline)),
            ..Default::default()
        },
    );
    if let Some(seconds) = profile_deadline {
        let mut profile = tt_domain::profile::default_writer_definition();
        profile.run.model_retry.deadline_seconds = Some(seconds);
        h.put_profile(profile);
    }
    let started = tokio::time::Instant::now();
    let run = start_until_its_deadline(&h).await;
    h.run_failed(&run.id, "model.call_deadline_exceeded");
    started.elapsed().as_secs()
}

#[tokio::test(start_paused = true)]
async fn a_connections_call_deadline_applies_unless_the_profile_sets_one() {
    // The connection's deadline, when the profile names none.
    assert_eq!(hung_call_seconds(None, 40).await, 40);
    // The profile's own deadline wins over the connection's.
    assert_eq!(hung_call_seconds(Some(20), 40).await, 20);
}

#[tokio::test(start_paused = true)]
async fn retries_stop_when_their_wait_would_pass_the_call_deadline() {
    let h = harness(FakeModel::new(|_| {
        Err(ModelError::Transient {
            message: "down".into(),
        })
    }));
    let mut profile = tt_domain::profile::default_writer_definition();
    profile.run.model_retry.deadline_seconds = Some(5);
    h.put_profile(profile);
    let run = h.run_to_end(request(None)).await;
    assert_eq!(run.status, AgentRunStatus::Failed);
    // Attempt 1 at 0 s, attempt 2 at 3 s; a third at 6 s would start past the 5 s deadline.
    assert_eq!(h.model.call_count(), 2);
    let attempts = events_of(&h, &run.id, "model_call_attempt_failed");
    assert_eq!(attempts[1].payload["code"], "model.transient");
    assert_eq!(attempts[1].payload["willRetry"], false);
    assert!(attempts[1].payload.get("limit").is_none());
    let failed = h.run_failed(&run.id, "model.call_deadline_exceeded");
    assert_says(
        failed.payload["message"].as_str().unwrap(),
        &[
            "within 5000 ms",
            "the last attempt failed: model.transient: down",
        ],
    );
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_attempt_names_its_limit_and_is_retried() {
    let mut answers = vec![Err(ModelError::TimedOut {
        limit: tt_ports::ModelTimeLimit::Idle,
        limit_ms: 120_000,
        message: "the provider sent nothing for 120000 ms (idle timeout)".into(),
    })];
    answers.extend(happy_turns().into_iter().map(Ok));
    let h = harness(FakeModel::sequence(answers));
    let run = h.run_completed(request(None)).await;
    let attempt = h.first_event(&run.id, "model_call_attempt_failed");
    assert_eq!(attempt.payload["code"], "model.timeout");
    assert_eq!(attempt.payload["limit"], "idleTimeout");
    assert_eq!(attempt.payload["limitMs"], 120_000);
    assert_eq!(attempt.payload["willRetry"], true);
}
