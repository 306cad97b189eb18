//! `limits.watchdog`: no activity for the warning limit journals `agent_inactivity_warned`,
//! and the stop limit after it ends the agent with `agent.inactivity_timeout`; activity resets
//! it, and waiting for a person or for delegated tasks never counts. Time is paused, so the
//! limits take no real time.

use serde_json::json;
use std::time::Duration;
use tokio::time::Instant;
use tt_application::ResolveToolApprovalRequest;
use tt_domain::approval::{ApprovalDecision, ApprovalRule};
use tt_domain::profile::WatchdogLimits;
use tt_domain::run::AgentRunStatus;
use tt_domain::task::TaskStatus;
use tt_testkit::fakes::FakeModel;

use crate::support::*;

fn watchdog(warn: u64, stop: Option<u64>) -> Option<WatchdogLimits> {
    Some(WatchdogLimits {
        warn_after_seconds: warn,
        stop_after_seconds: stop,
    })
}

fn watched(id: &str, warn: u64, stop: Option<u64>) -> tt_domain::profile::AgentProfileDefinition {
    custom_profile(id, |p| p.limits.watchdog = watchdog(warn, stop))
}

/// The run completes with no inactivity warning.
async fn completed_unwarned(h: &Harness, run_id: &tt_domain::ids::RunId) {
    let run = h.wait(run_id).await;
    assert_eq!(run.status, AgentRunStatus::Completed);
    assert!(events_of(h, &run.id, "agent_inactivity_warned").is_empty());
}

/// The writer delegates "Check the draft." to the critic (who follows `critic`), waits up to
/// five minutes, then publishes.
fn writer_awaiting_critic(
    critic: Vec<tt_domain::model::AgentModelResponse>,
) -> std::sync::Arc<tt_testkit::fakes::FakeModel> {
    by_agent(vec![
        (
            "writer",
            delegate_wait_publish(
                "critic",
                "Check the draft.",
                json!({"timeoutMs": 300_000}),
                "Final scene.",
            ),
        ),
        ("critic", critic),
    ])
}

#[tokio::test(start_paused = true)]
async fn an_inactive_agent_is_warned_then_stopped_with_a_code() {
    let h = harness(FakeModel::hanging());
    h.put_profile(watched("watched", 30, Some(20)));
    let started = Instant::now();
    let run = h.run_to_end(request(Some("watched"))).await;
    assert_eq!(started.elapsed(), Duration::from_secs(50));
    assert_eq!(run.status, AgentRunStatus::Failed);
    let warned = h.first_event(&run.id, "agent_inactivity_warned");
    assert_eq!(
        warned.payload,
        json!({
            "invocationId": "inv_root", "profileId": "watched", "idleSeconds": 30,
            "stopAfterSeconds": 20, "eventScope": {"invocationId": "inv_root"},
        })
    );
    assert_eq!(warned.level, tt_domain::event::EventLevel::Warn);
    let failed = h.run_failed(&run.id, "agent.inactivity_timeout");
    assert_eq!(failed.payload["userRetryable"], true);
    assert!(warned.seq < failed.seq);
    assert_eq!(
        events_of(&h, &run.id, "agent_inactivity_warned").len(),
        1,
        "warned once"
    );
}

#[tokio::test(start_paused = true)]
async fn a_watchdog_that_only_warns_lets_the_agent_go_on() {
    let model = by_turn(happy_turns());
    model.hang_all();
    let h = harness(model);
    h.put_profile(watched("watched", 30, None));
    let run = h.service.start_run(request(Some("watched"))).await.unwrap();
    // The first call answers after 100 s: one warning, no stop; then the agent goes on.
    h.model.wait_for_parked(1).await;
    tokio::time::sleep(Duration::from_secs(100)).await;
    let run = h.release_to_completion(&run.id).await;
    assert_eq!(events_of(&h, &run.id, "agent_inactivity_warned").len(), 1);
}

#[tokio::test(start_paused = true)]
async fn activity_resets_the_watchdog() {
    let model = by_turn(happy_turns());
    model.hang_all();
    let h = harness(model);
    h.put_profile(watched("watched", 30, Some(20)));
    let run = h.service.start_run(request(Some("watched"))).await.unwrap();
    // Each answer comes 25 s after its request: 75 s in all, never 30 s without activity.
    for _ in 0..3 {
        h.model.wait_for_parked(1).await;
        tokio::time::sleep(Duration::from_secs(25)).await;
        h.model.release_parked();
    }
    completed_unwarned(&h, &run.id).await;
}

#[tokio::test(start_paused = true)]
async fn waiting_for_an_approval_or_a_commit_never_counts() {
    let h = harness_with_bridge(
        by_turn(happy_turns()),
        tt_testkit::fakes::FakeCommitBridge::hanging(),
    );
    h.put_profile(custom_profile("watched", |p| {
        p.limits.watchdog = watchdog(30, Some(20));
        p.tools
            .approval
            .insert("workspace.write_file".into(), ApprovalRule::Always);
    }));
    let run = h.service.start_run(request(Some("watched"))).await.unwrap();
    // A person takes ten minutes to approve the write ...
    let pending = h.pending_approvals(&run.id, Duration::from_secs(1)).await;
    tokio::time::sleep(Duration::from_secs(600)).await;
    h.service
        .resolve_tool_approval(
            &run.id,
            &pending[0].approval_id,
            ResolveToolApprovalRequest::new(ApprovalDecision::Approve),
        )
        .await
        .unwrap();
    // ... and the host ten more to publish the commit.
    while h.bridge.requests().is_empty() {
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    tokio::time::sleep(Duration::from_secs(600)).await;
    h.bridge.approve();
    completed_unwarned(&h, &run.id).await;
}

#[tokio::test(start_paused = true)]
async fn awaiting_a_delegated_task_never_counts() {
    let model = writer_awaiting_critic(vec![task_return("r", "Looks fine.")]);
    model.hang_when(|request| request.agent_profile_id.as_str() == "critic");
    let h = harness(model);
    let mut writer = delegator("writer");
    writer.limits.watchdog = watchdog(30, Some(20));
    h.put_profile(writer);
    // The critic has a watchdog of its own, longer than its slow model.
    let mut critic = reviewer("critic");
    critic.limits.watchdog = watchdog(1000, None);
    h.put_profile(critic);
    let run = h.service.start_run(request(Some("writer"))).await.unwrap();
    h.model.wait_for_parked(1).await;
    // Four minutes: within one `agent_await` (at most five), eight times the warning limit.
    tokio::time::sleep(Duration::from_secs(240)).await;
    h.model.stop_hanging();
    h.model.release_parked();
    completed_unwarned(&h, &run.id).await;
    assert_eq!(h.store.tasks(&run.id)[0].status, TaskStatus::Completed);
}

#[tokio::test(start_paused = true)]
async fn a_delegated_agent_stopped_by_its_watchdog_fails_only_its_task() {
    let h = harness(critic_hangs());
    // The run's default watchdog (its root profile's) applies to the critic, which sets none.
    let mut writer = delegator("writer");
    writer.limits.watchdog = watchdog(30, Some(20));
    h.put_profile(writer);
    h.put_profile(reviewer("critic"));
    let run = h.run_completed(request(Some("writer"))).await;
    h.failed_task(&run.id, "agent.inactivity_timeout");
    let warned = events_of(&h, &run.id, "agent_inactivity_warned");
    assert_eq!(warned.len(), 1);
    assert_eq!(warned[0].payload["profileId"], "critic");
}

#[tokio::test(start_paused = true)]
async fn a_run_resumed_after_a_failure_in_the_middle_keeps_its_watchdog() {
    // Round 2 hangs past the warning, then fails the run; resumed, round 2 hangs again and the
    // limits the run froze at its start still hold (warned at 30 s, stopped 20 s later).
    let failures = std::sync::atomic::AtomicUsize::new(0);
    let turns = happy_turns();
    let model = FakeModel::new(move |request| {
        if request.round == 2 && failures.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            return Err(tt_ports::ModelError::Rejected {
                status: Some(400),
                message: "the server went away".into(),
            });
        }
        Ok(turns[request.round as usize - 1].clone())
    });
    model.hang_when(|request| request.round == 2);
    let h = harness(model);
    h.put_profile(watched("watched", 30, Some(20)));
    let run = h.service.start_run(request(Some("watched"))).await.unwrap();
    h.model.wait_for_parked(1).await;
    tokio::time::sleep(Duration::from_secs(35)).await;
    h.model.release_parked();
    let run = h.wait(&run.id).await;
    h.assert_failed_with(&run, "agent.validation_error");
    assert_eq!(events_of(&h, &run.id, "agent_inactivity_warned").len(), 1);

    let resumed_at = Instant::now();
    h.service.resume_run(&run.id).await.unwrap();
    let run = h.wait(&run.id).await;
    assert_eq!(resumed_at.elapsed(), Duration::from_secs(50));
    assert_eq!(run.status, AgentRunStatus::Failed);
    let failed = events_of(&h, &run.id, "run_failed");
    assert_eq!(
        failed.last().unwrap().payload["code"],
        "agent.inactivity_timeout"
    );
    let warned = events_of(&h, &run.id, "agent_inactivity_warned");
    assert_eq!(warned.len(), 2, "warned again after the resume");
    assert_eq!(warned[1].payload["idleSeconds"], 30);
    assert!(warned[1].seq > h.first_event(&run.id, "run_resumed").seq);
}

#[tokio::test(start_paused = true)]
async fn a_resumed_delegated_agent_keeps_the_runs_watchdog() {
    let model = writer_awaiting_critic(vec![]);
    model.hang_when(|request| request.agent_profile_id.as_str() == "critic");
    let h = harness(model);
    let mut writer = delegator("writer");
    writer.limits.watchdog = watchdog(30, Some(20));
    h.put_profile(writer);
    h.put_profile(reviewer("critic"));
    let run = h.service.start_run(request(Some("writer"))).await.unwrap();
    // The run is stopped while the critic's model call hangs, then resumed.
    h.model.wait_for_parked(1).await;
    h.service.cancel_run(&run.id).await.unwrap();
    let stopped = h.wait(&run.id).await;
    assert_eq!(stopped.status, AgentRunStatus::Cancelled);
    h.service.resume_run(&run.id).await.unwrap();
    let run = h.wait(&run.id).await;
    assert_eq!(run.status, AgentRunStatus::Completed);
    // The critic, whose profile sets no watchdog, runs under the run's again after the resume.
    h.failed_task(&run.id, "agent.inactivity_timeout");
}
