//! Spend-aware approval (docs/delegation.md, "Spend-aware approval"): every approval request of
//! `agent.delegate` carries what the delegation is expected to cost (priced, or `unknown`,
//! never 0), and `tools.approval."agent.delegate" = {whenEstimatedCostOverUsd}` asks only above
//! the limit (and when the estimate is unknown).

use std::time::Duration;
use tt_application::ResolveToolApprovalRequest;
use tt_domain::approval::{ApprovalDecision, ApprovalRule};
use tt_domain::cost::Usd;
use tt_domain::run::AgentRunStatus;
use tt_domain::task::TaskStatus;

use crate::support::*;

fn writer_turns() -> Vec<tt_domain::model::AgentModelResponse> {
    publish_after(
        vec![
            turn(vec![delegate("d1", "critic", "Find continuity slips.")]),
            await_turn("a1", "allCompleted"),
        ],
        "Final scene.",
    )
}

fn install(h: &Harness, limit_usd: f64) {
    let mut writer = delegator("writer");
    writer.tools.approval.insert(
        "agent.delegate".into(),
        ApprovalRule::WhenEstimatedCostOverUsd(Usd::from_dollars(limit_usd).unwrap()),
    );
    h.put_profile(writer);
    let mut critic = reviewer("critic");
    critic.delegation.max_task_tokens = Some(50_000);
    h.put_profile(critic);
}

/// A harness on the house model (`priced` or not) whose writer asks before delegating a task
/// estimated over `limit_usd`.
fn harness_for(priced: bool, limit_usd: f64) -> Harness {
    let h = harness_with_model_info(
        by_agent(vec![
            ("writer", writer_turns()),
            ("critic", vec![task_return("r", "No slips.")]),
        ]),
        house_model_info(priced),
    );
    install(&h, limit_usd);
    h
}

/// Starts the run and answers its one approval: the request's estimate, as the host read it.
async fn approve_the_delegation(h: &Harness) -> (serde_json::Value, serde_json::Value) {
    let run = h.service.start_run(request(Some("writer"))).await.unwrap();
    let pending = h.pending_approvals(&run.id, Duration::from_millis(5)).await;
    assert_eq!(pending.len(), 1);
    let seen = serde_json::to_value(&pending[0]).unwrap();
    h.service
        .resolve_tool_approval(
            &run.id,
            &pending[0].approval_id,
            ResolveToolApprovalRequest {
                decision: ApprovalDecision::Approve,
                decided_by: Some("tester".into()),
            },
        )
        .await
        .unwrap();
    let ended = h.wait(&run.id).await;
    assert_eq!(ended.status, AgentRunStatus::Completed);
    assert_eq!(h.store.tasks(&run.id)[0].status, TaskStatus::Completed);
    let requested = h.first_event(&run.id, "tool_approval_requested").payload;
    (seen, requested)
}

#[tokio::test]
async fn a_delegation_under_the_limit_runs_without_asking() {
    let h = harness_for(true, 100.0);
    let run = h.run_completed(request(Some("writer"))).await;
    assert!(events_of(&h, &run.id, "tool_approval_requested").is_empty());
    assert_eq!(h.store.tasks(&run.id)[0].status, TaskStatus::Completed);
}

#[tokio::test]
async fn a_delegation_over_the_limit_asks_with_its_priced_estimate() {
    let h = harness_for(true, 0.000_001);
    let (seen, requested) = approve_the_delegation(&h).await;
    for estimate in [&seen["estimate"], &requested["estimate"]] {
        assert_eq!(estimate["targetProfileId"], "critic");
        let tokens = estimate["firstRequestTokens"].as_u64().unwrap();
        assert!(tokens > 100, "{estimate}");
        let first = estimate["firstRequestUsd"].as_f64().unwrap();
        assert!(
            (first - tokens as f64 * 3.0 / 1e6).abs() < 1e-9,
            "{estimate}"
        );
        assert_eq!(estimate["budgetTokens"], 50_000);
        // 50,000 tokens at the dearer (output) price.
        assert!((estimate["budgetUsd"].as_f64().unwrap() - 0.75).abs() < 1e-9);
        let rounds = f64::from(u32::try_from(estimate["maxRounds"].as_u64().unwrap()).unwrap());
        let estimated = estimate["estimatedUsd"].as_f64().unwrap();
        assert!(
            (estimated - (first * rounds).min(0.75)).abs() < 1e-9,
            "{estimate}"
        );
    }
    assert!(
        requested["reason"]
            .as_str()
            .unwrap()
            .contains("is over tools.approval.agent.delegate"),
        "{requested}"
    );
}

#[tokio::test]
async fn an_unpriced_delegation_asks_and_says_its_cost_is_unknown() {
    let h = harness_for(false, 100.0);
    let (seen, requested) = approve_the_delegation(&h).await;
    for estimate in [&seen["estimate"], &requested["estimate"]] {
        assert!(estimate["firstRequestTokens"].as_u64().unwrap() > 100);
        assert_eq!(estimate["firstRequestUsd"], "unknown");
        assert_eq!(estimate["budgetUsd"], "unknown");
        assert_eq!(estimate["estimatedUsd"], "unknown");
    }
    assert!(
        requested["reason"]
            .as_str()
            .unwrap()
            .contains("the estimated cost is unknown"),
        "{requested}"
    );
}
