//! The run's spend approval (docs/delegation.md, "Run spend approval"): a run whose priced
//! spend reaches `limits.askAboveTotalCostUsd` parks (no further model call) until a person
//! raises the limit or refuses; parked survives a restart and a branch, and a raise after a
//! resume repeats nothing.

use std::time::Duration;
use tt_application::{
    AnswerSpendLimitRequest, ForkPoint, ForkRunRequest, PendingSpendLimit, SpendLimitDecision,
};
use tt_domain::cost::Usd;
use tt_domain::ids::RunId;
use tt_domain::model::AgentModelResponse;
use tt_domain::run::{AgentRun, AgentRunStatus};

use crate::support::*;

/// A writer that asks once the run spent $0.01: after its first answer.
fn parking_harness() -> Harness {
    let h = harness_with_model_info(by_turn(metered_turns()), house_model_info(true));
    h.put_profile(custom_profile("writer", |p| {
        p.limits.ask_above_total_cost_usd = Usd::from_dollars(0.01);
    }));
    h
}

async fn parked(h: &Harness, run_id: &RunId) -> PendingSpendLimit {
    loop {
        if let Some(pending) = h.service.pending_spend_limit_now(run_id) {
            return pending;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Raises `run_id`'s spend limit to `limit_usd`, which the run takes.
async fn raise_to(h: &Harness, run_id: &RunId, limit_usd: f64) {
    h.service
        .answer_spend_limit(run_id, raise(limit_usd))
        .await
        .unwrap();
}

/// Raises `run_id`'s spend limit to $1 and waits for the run to complete.
async fn raise_and_complete(h: &Harness, run_id: &RunId) {
    raise_to(h, run_id, 1.0).await;
    assert_eq!(h.wait(run_id).await.status, AgentRunStatus::Completed);
}

/// Starts a run of the writer and waits until it parks at its spend limit.
async fn start_parked(h: &Harness) -> (AgentRun, PendingSpendLimit) {
    let run = h.service.start_run(request(Some("writer"))).await.unwrap();
    let pending = parked(h, &run.id).await;
    (run, pending)
}

fn refusal(decided_by: Option<&str>) -> AnswerSpendLimitRequest {
    AnswerSpendLimitRequest {
        decision: SpendLimitDecision::Refuse,
        decided_by: decided_by.map(str::to_owned),
    }
}

fn raise(limit_usd: f64) -> AnswerSpendLimitRequest {
    AnswerSpendLimitRequest {
        decision: SpendLimitDecision::Raise { limit_usd },
        decided_by: Some("tester".into()),
    }
}

#[tokio::test(start_paused = true)]
async fn a_run_at_its_spend_limit_parks_until_a_person_raises_it() {
    let h = parking_harness();
    let (run, pending) = start_parked(&h).await;
    assert_eq!(
        pending,
        PendingSpendLimit {
            spent_usd: 0.0105,
            limit_usd: 0.01
        }
    );
    // Parked: no further model call, and the run waits for a person.
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(h.model.call_count(), 1);
    let stored = h.service.load_run(&run.id).await.unwrap();
    assert_eq!(stored.status, AgentRunStatus::AwaitingApproval);
    let reached = h.first_event(&run.id, "spend_limit_reached").payload;
    assert_eq!(reached["spentUsd"], 0.0105);
    assert_eq!(reached["limitUsd"], 0.01);
    assert_eq!(reached["invocationId"], "inv_root");

    // A limit not above the spend is refused, and the run stays parked.
    let low = h.service.answer_spend_limit(&run.id, raise(0.0105)).await;
    assert_eq!(low.unwrap_err().code(), "agent.spend_limit_invalid");
    assert!(h.service.pending_spend_limit_now(&run.id).is_some());

    let receipt = h
        .service
        .answer_spend_limit(&run.id, raise(1.0))
        .await
        .unwrap();
    assert_eq!(
        (receipt.decision.as_str(), receipt.limit_usd),
        ("raise", 1.0)
    );
    // Answered once: a second answer finds nothing waiting.
    let again = h.service.answer_spend_limit(&run.id, raise(2.0)).await;
    assert!(again.is_err());
    let ended = h.wait(&run.id).await;
    assert_eq!(ended.status, AgentRunStatus::Completed);
    assert_eq!(h.model.call_count(), 3);
    let answered = events_of(&h, &run.id, "spend_limit_answered");
    assert_eq!(answered.len(), 1);
    assert_eq!(answered[0].payload["decision"], "raise");
    assert_eq!(answered[0].payload["decidedBy"], "tester");
    assert_eq!(events_of(&h, &run.id, "spend_limit_reached").len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_refused_spend_limit_ends_the_run_coded() {
    let h = parking_harness();
    let (run, _) = start_parked(&h).await;
    let receipt = h
        .service
        .answer_spend_limit(&run.id, refusal(None))
        .await
        .unwrap();
    assert_eq!(
        (receipt.decision.as_str(), receipt.decided_by.as_str()),
        ("refuse", "host")
    );
    let ended = h.wait(&run.id).await;
    assert_eq!(ended.status, AgentRunStatus::Failed);
    assert_eq!(h.model.call_count(), 1);
    let failed = h.first_event(&run.id, "run_failed").payload;
    assert_eq!(failed["code"], "agent.run_spend_refused", "{failed}");
    assert!(h.service.pending_spend_limit_now(&run.id).is_none());
    let late = h.service.answer_spend_limit(&run.id, raise(1.0)).await;
    assert_eq!(late.unwrap_err().code(), "agent.run_not_running");
}

/// Parks a run, then stops it as a host shutdown does: it ends `interrupted`.
async fn interrupted_while_parked(h: &Harness) -> RunId {
    let run = h.service.start_run(request(Some("writer"))).await.unwrap();
    parked(h, &run.id).await;
    let mut done = h.service.interrupt_for_shutdown(&run.id).unwrap();
    done.wait_for(|done| *done).await.unwrap();
    let stopped = h.service.load_run(&run.id).await.unwrap();
    assert_eq!(stopped.status, AgentRunStatus::Interrupted);
    run.id
}

#[tokio::test(start_paused = true)]
async fn a_run_resumed_while_parked_is_parked_again_and_repeats_nothing_after_the_raise() {
    let h = parking_harness();
    let run_id = interrupted_while_parked(&h).await;
    h.service.resume_run(&run_id).await.unwrap();
    let pending = parked(&h, &run_id).await;
    assert_eq!(pending.spent_usd, 0.0105);
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(h.model.call_count(), 1);
    // Parked again from the journal: not journaled twice.
    assert_eq!(events_of(&h, &run_id, "spend_limit_reached").len(), 1);

    raise_and_complete(&h, &run_id).await;
    // Rounds 2 and 3 only: the first answer was not asked for again.
    let rounds: Vec<u32> = h.model.requests().iter().map(|r| r.round).collect();
    assert_eq!(rounds, [1, 2, 3]);
}

#[tokio::test(start_paused = true)]
async fn a_run_resumed_after_the_raise_goes_on_under_the_raised_limit() {
    let h = parking_harness();
    let (run, _) = start_parked(&h).await;
    // Raised to just above the first answer: the second reaches it again.
    raise_to(&h, &run.id, 0.015).await;
    let pending = parked(&h, &run.id).await;
    assert_eq!((pending.spent_usd, pending.limit_usd), (0.021, 0.015));
    let mut done = h.service.interrupt_for_shutdown(&run.id).unwrap();
    done.wait_for(|done| *done).await.unwrap();

    h.service.resume_run(&run.id).await.unwrap();
    let pending = parked(&h, &run.id).await;
    assert_eq!((pending.spent_usd, pending.limit_usd), (0.021, 0.015));
    raise_and_complete(&h, &run.id).await;
    let rounds: Vec<u32> = h.model.requests().iter().map(|r| r.round).collect();
    assert_eq!(rounds, [1, 2, 3]);
    assert_eq!(events_of(&h, &run.id, "spend_limit_reached").len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_branch_cut_while_parked_is_parked_and_one_cut_after_the_raise_is_not() {
    let h = parking_harness();
    let source = h.service.start_run(request(Some("writer"))).await.unwrap();
    parked(&h, &source.id).await;
    raise_and_complete(&h, &source.id).await;
    let reached = h.first_event(&source.id, "spend_limit_reached").seq;
    let answered = h.first_event(&source.id, "spend_limit_answered").seq;
    let fork = |seq: u64| ForkRunRequest {
        at: ForkPoint::Seq { seq },
        changes: Default::default(),
    };

    let asked_before = h.model.call_count();
    let branch = h.service.fork_run(&source.id, fork(reached)).await.unwrap();
    let pending = parked(&h, &branch.id).await;
    assert_eq!(pending.limit_usd, 0.01);
    assert_eq!(h.model.call_count(), asked_before);
    assert_eq!(events_of(&h, &branch.id, "spend_limit_reached").len(), 1);
    raise_and_complete(&h, &branch.id).await;
    assert_eq!(h.model.call_count(), asked_before + 2);

    let asked_before = h.model.call_count();
    let branch = h
        .service
        .fork_run(&source.id, fork(answered))
        .await
        .unwrap();
    assert_eq!(h.wait(&branch.id).await.status, AgentRunStatus::Completed);
    assert_eq!(h.model.call_count(), asked_before + 2);
    assert_eq!(events_of(&h, &branch.id, "spend_limit_reached").len(), 1);
}

/// A writer (unpriced answers) that delegates to a critic whose first answer is priced
/// ($0.0105) and reaches the run's limit of $0.01.
fn delegating_harness() -> Harness {
    let metered = |mut response: AgentModelResponse| {
        response.usage = Some(tt_domain::model::ModelUsage {
            input_tokens: 1_000,
            output_tokens: 500,
            ..Default::default()
        });
        response
    };
    let h = harness_with_model_info(
        by_agent(vec![
            (
                "writer",
                delegate_wait_publish(
                    "critic",
                    "Find continuity slips.",
                    serde_json::json!({"mode": "allCompleted"}),
                    "Final scene.",
                ),
            ),
            (
                "critic",
                vec![
                    metered(turn(vec![call(
                        "l",
                        "workspace_list_files",
                        serde_json::json!({}),
                    )])),
                    task_return("r", "No slips."),
                ],
            ),
        ]),
        house_model_info(true),
    );
    let mut writer = delegator("writer");
    writer.limits.ask_above_total_cost_usd = Usd::from_dollars(0.01);
    h.put_profile(writer);
    h.put_profile(reviewer("critic"));
    h
}

fn critic_id(h: &Harness, run_id: &RunId) -> tt_domain::ids::InvocationId {
    h.store.tasks(run_id)[0].child_invocation_id.clone()
}

#[tokio::test(start_paused = true)]
async fn a_delegated_agent_that_reaches_the_limit_parks_and_goes_on_after_the_raise() {
    let h = delegating_harness();
    let (run, _) = start_parked(&h).await;
    let critic = critic_id(&h, &run.id);
    let reached = h.first_event(&run.id, "spend_limit_reached").payload;
    assert_eq!(reached["invocationId"], critic.as_str());
    let parked_critic = h
        .store
        .invocations(&run.id)
        .into_iter()
        .find(|inv| inv.id == critic)
        .unwrap();
    assert_eq!(
        parked_critic.status,
        tt_domain::invocation::InvocationStatus::AwaitingApproval
    );
    raise_and_complete(&h, &run.id).await;
    assert_eq!(
        h.store.tasks(&run.id)[0].status,
        tt_domain::task::TaskStatus::Completed
    );
}

#[tokio::test(start_paused = true)]
async fn a_refusal_fails_the_parked_task_and_ends_the_run_at_its_next_model_call() {
    let h = delegating_harness();
    let (run, _) = start_parked(&h).await;
    h.service
        .answer_spend_limit(&run.id, refusal(Some("tester")))
        .await
        .unwrap();
    assert_eq!(h.wait(&run.id).await.status, AgentRunStatus::Failed);
    h.failed_task(&run.id, "agent.run_spend_refused");
    let failed = h.first_event(&run.id, "run_failed").payload;
    assert_eq!(failed["code"], "agent.run_spend_refused", "{failed}");
}
