//! Bounded time and generation: `limits.maxRunSeconds`, `limits.maxInvocationSeconds` and
//! `model.maxOutputTokens`. Time is paused, so the deadlines take no real time.

use std::time::Duration;
use tokio::time::Instant;
use tt_domain::run::AgentRunStatus;
use tt_testkit::fakes::FakeModel;

use crate::support::*;

#[tokio::test(start_paused = true)]
async fn a_model_that_never_answers_is_ended_by_the_run_deadline() {
    let h = harness(FakeModel::hanging());
    h.put_profile(custom_profile("bounded", |p| {
        p.limits.max_run_seconds = Some(30)
    }));
    let started = Instant::now();
    let run = h.run_to_end(request(Some("bounded"))).await;
    assert_eq!(started.elapsed(), Duration::from_secs(30));
    assert_eq!(run.status, AgentRunStatus::Failed);
    let failed = h.run_failed(&run.id, "agent.run_deadline_exceeded");
    assert_eq!(failed.payload["retryable"], false);
    assert_eq!(failed.payload["userRetryable"], true);
    assert_eq!(h.event_types(&run.id).last().unwrap(), "run_failed");
}

#[tokio::test(start_paused = true)]
async fn a_run_deadline_after_a_commit_keeps_it_as_partial_success() {
    let model = by_turn(happy_turns());
    model.hang_when(|request| request.round == 3);
    let h = harness(model);
    h.put_profile(custom_profile("bounded", |p| {
        p.limits.max_run_seconds = Some(60)
    }));
    let run = h.run_to_end(request(Some("bounded"))).await;
    assert_eq!(run.status, AgentRunStatus::PartialSuccess);
    let event = h.first_event(&run.id, "run_partial_success");
    assert_eq!(event.payload["code"], "agent.run_deadline_exceeded");
    assert_eq!(event.payload["preservedCommitCount"], 1);
}

#[tokio::test(start_paused = true)]
async fn the_invocation_deadline_ends_the_foreground_agent() {
    let h = harness(FakeModel::hanging());
    h.put_profile(custom_profile("bounded", |p| {
        p.limits.max_invocation_seconds = Some(10);
        p.limits.max_run_seconds = Some(100);
    }));
    let started = Instant::now();
    let run = h.run_to_end(request(Some("bounded"))).await;
    assert_eq!(started.elapsed(), Duration::from_secs(10));
    h.assert_failed_with(&run, "agent.invocation_deadline_exceeded");
}

#[tokio::test(start_paused = true)]
async fn a_delegated_agent_past_its_deadline_fails_only_its_task() {
    let h = harness(critic_hangs());
    h.put_profile(delegator("writer"));
    let mut critic = reviewer("critic");
    critic.limits.max_invocation_seconds = Some(5);
    h.put_profile(critic);
    let run = h.run_completed(request(Some("writer"))).await;
    h.failed_task(&run.id, "agent.invocation_deadline_exceeded");
}

#[tokio::test]
async fn the_profile_output_token_limit_is_sent_with_every_request() {
    let h = happy_harness();
    h.put_profile(custom_profile("short", |p| {
        p.model.max_output_tokens = Some(256)
    }));
    h.run_completed(request(Some("short"))).await;
    let requests = h.model.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests.iter().all(|r| r.max_output_tokens == Some(256)));
    // Unset, the request carries none and the provider's default applies.
    let h = happy_harness();
    h.run_to_end(request(None)).await;
    assert!(
        h.model
            .requests()
            .iter()
            .all(|r| r.max_output_tokens.is_none())
    );
}
