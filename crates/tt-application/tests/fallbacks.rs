//! `model.fallbacks`: a failure retrying does not fix moves the agent to the next binding of
//! its profile with the same history (journaled, `agent_model_fallback_switched`); a spent
//! chain fails coded; a resumed or branched agent goes on with the binding in force.

use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tt_application::{ForkChanges, ForkPoint};
use tt_domain::ids::InvocationId;
use tt_domain::model::{AgentModelRequest, AgentModelResponse};
use tt_domain::profile::{AgentProfileDefinition, FallbackBinding, ModelMode};
use tt_domain::run::AgentRunStatus;
use tt_ports::ModelError;
use tt_testkit::fakes::{FakeCommitBridge, FakeConnections, FakeModel, FakePromptBroker};

use crate::support::*;

fn rate_limited(retry_after_ms: Option<u64>) -> ModelError {
    ModelError::RateLimited {
        message: "too many requests".into(),
        retry_after_ms,
    }
}

/// A writer on `primary`/`big` that falls back to `spare`/`small`, then `spare`/`tiny`, with
/// one retry 10 ms apart.
fn writer(change: impl FnOnce(&mut AgentProfileDefinition)) -> AgentProfileDefinition {
    custom_profile("writer", |p| {
        p.model.mode = ModelMode::ConnectionRef;
        p.model.connection_ref = Some("primary".into());
        p.model.model_id = Some("big".into());
        p.model.fallbacks = ["small", "tiny"]
            .into_iter()
            .map(|model| FallbackBinding {
                connection_ref: "spare".into(),
                model_id: model.into(),
            })
            .collect();
        p.run.model_retry.max_retries = 1;
        p.run.model_retry.interval_ms = 10;
        change(p);
    })
}

/// The spare connection: its window and price differ from the primary's (which has none).
fn spare_info() -> tt_ports::ConnectionModelInfo {
    tt_ports::ConnectionModelInfo {
        context_window_tokens: Some(50_000),
        prices: [(
            "*".to_owned(),
            tt_domain::cost::ModelPrice {
                input: 1.0,
                output: 2.0,
                cached_input: None,
                cache_write: None,
            },
        )]
        .into(),
        ..Default::default()
    }
}

struct Setup {
    h: Harness,
    primary: Arc<FakeModel>,
    spare: Arc<FakeModel>,
}

fn setup(primary: Arc<FakeModel>, spare: Arc<FakeModel>, profile: AgentProfileDefinition) -> Setup {
    let connections = FakeConnections::new()
        .with("primary", primary.clone())
        .with("spare", spare.clone())
        .with_model_info("spare", spare_info());
    let h = harness_full(
        FakeModel::hanging(),
        FakeCommitBridge::approving(),
        FakePromptBroker::answering(),
        Arc::new(connections),
    );
    h.put_profile(profile);
    Setup { h, primary, spare }
}

/// A writer whose primary is always rate limited, so it switches to its first fallback.
fn rate_limited_writer() -> Setup {
    setup(
        failing(rate_limited(None)),
        by_turn(happy_turns()),
        writer(|_| {}),
    )
}

/// A [`rate_limited_writer`] run, completed, and a branch of it cut before the root's `round`,
/// completed too; with the primary's and the spare's call counts before the branch.
async fn branch_of_switched_run(round: u32) -> (Setup, tt_domain::run::AgentRun, (usize, usize)) {
    let s = rate_limited_writer();
    let source = s.h.run_completed(request(Some("writer"))).await;
    let before = (s.primary.call_count(), s.spare.call_count());
    let ended =
        s.h.fork_and_wait(
            &source.id,
            at_round(InvocationId::root(), round),
            ForkChanges::default(),
        )
        .await;
    assert_eq!(ended.status, AgentRunStatus::Completed);
    (s, ended, before)
}

fn failing(error: ModelError) -> Arc<FakeModel> {
    FakeModel::new(move |_| Err(error.clone()))
}

fn models_asked(model: &FakeModel) -> Vec<Option<String>> {
    model.requests().into_iter().map(|r| r.model_id).collect()
}

#[tokio::test(start_paused = true)]
async fn a_rate_limited_model_moves_the_agent_to_its_fallback_with_the_same_history() {
    let s = setup(
        failing(rate_limited(None)),
        by_turn(metered_turns()),
        writer(|_| {}),
    );
    let run = s.h.run_completed(request(Some("writer"))).await;
    // Two attempts (one retry) on the primary, then every round on the fallback.
    assert_eq!(s.primary.call_count(), 2);
    assert_eq!(models_asked(&s.spare), vec![Some("small".to_owned()); 3]);
    // The same history: the fallback's first request is the one the primary was asked.
    let (asked, answered) = (&s.primary.requests()[1], &s.spare.requests()[0]);
    assert_eq!(asked.round, answered.round);
    assert_eq!(asked.messages, answered.messages);
    let switched = events_of(&s.h, &run.id, "agent_model_fallback_switched");
    assert_eq!(switched.len(), 1);
    let mut payload = switched[0].payload.clone();
    payload.as_object_mut().unwrap().remove("eventScope");
    assert_eq!(
        payload,
        json!({
            "invocationId": "inv_root", "profileId": "writer", "round": 1, "fallbackIndex": 1,
            "from": {"connectionRef": "primary", "modelId": "big", "provider": "fake"},
            "to": {"connectionRef": "spare", "modelId": "small", "provider": "fake"},
            "reason": "rate_limited", "code": "model.provider_rate_limited",
            "message": "model.provider_rate_limited: too many requests",
            "contextWindowTokens": 50_000, "price": {"input": 1.0, "output": 2.0},
        })
    );
    // It follows the last failed attempt, before the round's answer.
    let failed = events_of(&s.h, &run.id, "model_call_attempt_failed");
    assert!(failed.last().unwrap().seq < switched[0].seq);
    assert!(switched[0].seq < s.h.first_event(&run.id, "model_completed").seq);
    // The calls are priced by the fallback's price ($1 in, $2 out per million tokens): the
    // primary's connection has none.
    let costs: Vec<f64> = events_of(&s.h, &run.id, "model_completed")
        .iter()
        .map(|e| e.payload["costUsd"].as_f64().unwrap())
        .collect();
    assert_eq!(costs, [0.002; 3]);
}

#[tokio::test(start_paused = true)]
async fn a_call_past_its_deadline_moves_the_agent_to_its_fallback() {
    let s = setup(
        FakeModel::hanging(),
        by_turn(happy_turns()),
        writer(|p| p.run.model_retry.deadline_seconds = Some(30)),
    );
    let started = tokio::time::Instant::now();
    let run = s.h.run_completed(request(Some("writer"))).await;
    // The hung primary is asked once and given up on at its deadline, not retried.
    assert_eq!(s.primary.call_count(), 1);
    assert_eq!(started.elapsed(), std::time::Duration::from_secs(30));
    assert_eq!(models_asked(&s.spare), vec![Some("small".to_owned()); 3]);
    let switched = events_of(&s.h, &run.id, "agent_model_fallback_switched");
    assert_eq!(switched.len(), 1);
    assert_eq!(switched[0].payload["reason"], "call_deadline_exceeded");
    assert_eq!(switched[0].payload["code"], "model.call_deadline_exceeded");
    assert_eq!(switched[0].payload["round"], 1);
}

#[tokio::test(start_paused = true)]
async fn the_timeline_shows_each_agents_fallback_switches_and_a_branch_cut_before_has_none() {
    let s = rate_limited_writer();
    let run = s.h.run_completed(request(Some("writer"))).await;
    let timeline = s.h.service.timeline_projection(&run.id).await.unwrap();
    let root = &timeline.invocations[0];
    assert_eq!(root.model_switches.len(), 1);
    let switch = serde_json::to_value(&root.model_switches[0]).unwrap();
    let seq =
        s.h.first_event(&run.id, "agent_model_fallback_switched")
            .seq;
    assert_eq!(
        switch,
        json!({
            "seq": seq, "round": 1, "fallbackIndex": 1,
            "from": {"connectionRef": "primary", "modelId": "big", "provider": "fake"},
            "to": {"connectionRef": "spare", "modelId": "small", "provider": "fake"},
            "reason": "rate_limited", "code": "model.provider_rate_limited",
        })
    );

    // A branch cut before the switch has not inherited it: its timeline shows only the switch
    // it made on its own.
    let branch =
        s.h.fork_and_wait(
            &run.id,
            ForkPoint::Seq { seq: seq - 1 },
            ForkChanges::default(),
        )
        .await;
    assert_eq!(branch.status, AgentRunStatus::Completed);
    let timeline = s.h.service.timeline_projection(&branch.id).await.unwrap();
    let switches = &timeline.invocations[0].model_switches;
    assert_eq!(switches.len(), 1);
    assert!(switches[0].seq > s.h.first_event(&branch.id, "run_resumed").seq);
}

#[tokio::test(start_paused = true)]
async fn a_long_rate_limit_moves_on_at_once_past_the_bound() {
    let s = setup(
        failing(rate_limited(Some(60_000))),
        by_turn(happy_turns()),
        writer(|p| p.model.fallback_on_rate_limit_after_seconds = Some(5)),
    );
    let run = s.h.run_completed(request(Some("writer"))).await;
    assert_eq!(s.primary.call_count(), 1, "no retry past the bound");
    assert!(events_of(&s.h, &run.id, "model_call_retry_scheduled").is_empty());
    let switched = s.h.first_event(&run.id, "agent_model_fallback_switched");
    assert_eq!(switched.payload["reason"], "rate_limited");
}

#[tokio::test(start_paused = true)]
async fn a_model_the_server_does_not_know_moves_on_without_retries() {
    let s = setup(
        failing(ModelError::Rejected {
            status: Some(404),
            message: "model: big not found".into(),
        }),
        by_turn(happy_turns()),
        writer(|_| {}),
    );
    let run = s.h.run_completed(request(Some("writer"))).await;
    assert_eq!(s.primary.call_count(), 1);
    let switched = s.h.first_event(&run.id, "agent_model_fallback_switched");
    assert_eq!(switched.payload["reason"], "model_not_found");
    assert_eq!(switched.payload["code"], "model.request_rejected");
}

#[tokio::test(start_paused = true)]
async fn a_spent_chain_fails_the_agent_coded() {
    let s = setup(
        failing(rate_limited(None)),
        failing(ModelError::Transient {
            message: "502 bad gateway".into(),
        }),
        writer(|_| {}),
    );
    let run = s.h.run_to_end(request(Some("writer"))).await;
    assert_eq!(run.status, AgentRunStatus::Failed);
    let switched = events_of(&s.h, &run.id, "agent_model_fallback_switched");
    let steps: Vec<(u64, &str, &str)> = switched
        .iter()
        .map(|e| {
            (
                e.payload["fallbackIndex"].as_u64().unwrap(),
                e.payload["to"]["modelId"].as_str().unwrap(),
                e.payload["reason"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            (1, "small", "rate_limited"),
            (2, "tiny", "retries_exhausted")
        ]
    );
    assert_eq!(
        models_asked(&s.spare),
        ["small", "small", "tiny", "tiny"].map(|m| Some(m.to_owned()))
    );
    let failed = s.h.run_failed(&run.id, "model.fallbacks_exhausted");
    assert!(
        failed.payload["message"]
            .as_str()
            .unwrap()
            .contains("502 bad gateway"),
        "{failed:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_profile_without_fallbacks_fails_as_before() {
    let s = setup(
        failing(rate_limited(None)),
        by_turn(happy_turns()),
        writer(|p| p.model.fallbacks.clear()),
    );
    let run = s.h.run_to_end(request(Some("writer"))).await;
    s.h.assert_failed_with(&run, "agent.rate_limited");
    assert!(events_of(&s.h, &run.id, "agent_model_fallback_switched").is_empty());
    assert_eq!(s.spare.call_count(), 0);
}

/// The fallback answers round 1, refuses round 2 once (a failure no fallback covers), then
/// answers as the happy path does.
fn spare_refusing_round_two_once() -> Arc<FakeModel> {
    let refusals = AtomicUsize::new(0);
    let turns = happy_turns();
    FakeModel::new(
        move |request: &AgentModelRequest| -> Result<AgentModelResponse, ModelError> {
            if request.round == 2 && refusals.fetch_add(1, Ordering::SeqCst) == 0 {
                return Err(ModelError::Rejected {
                    status: Some(400),
                    message: "messages: malformed".into(),
                });
            }
            Ok(turns[request.round as usize - 1].clone())
        },
    )
}

#[tokio::test(start_paused = true)]
async fn a_resumed_agent_goes_on_with_the_binding_in_force() {
    let s = setup(
        failing(rate_limited(None)),
        spare_refusing_round_two_once(),
        writer(|_| {}),
    );
    let run = s.h.run_to_end(request(Some("writer"))).await;
    assert_eq!(run.status, AgentRunStatus::Failed);
    let asked_before = s.primary.call_count();
    s.h.service.resume_run(&run.id).await.unwrap();
    let run = s.h.wait(&run.id).await;
    assert_eq!(run.status, AgentRunStatus::Completed);
    // The primary is not asked again; round 2 goes to the fallback in force.
    assert_eq!(s.primary.call_count(), asked_before);
    let rounds: Vec<(u32, Option<String>)> = s
        .spare
        .requests()
        .into_iter()
        .map(|r| (r.round, r.model_id))
        .collect();
    let small = Some("small".to_owned());
    assert_eq!(
        rounds,
        [
            (1, small.clone()),
            (2, small.clone()),
            (2, small.clone()),
            (3, small)
        ]
    );
    assert_eq!(
        events_of(&s.h, &run.id, "agent_model_fallback_switched").len(),
        1
    );
}

#[tokio::test(start_paused = true)]
async fn a_branch_after_a_switch_stays_on_the_fallback() {
    let (s, ended, (primary_before, spare_before)) = branch_of_switched_run(2).await;
    assert_eq!(s.primary.call_count(), primary_before);
    let asked: Vec<(u32, Option<String>)> = s.spare.requests()[spare_before..]
        .iter()
        .map(|r| (r.round, r.model_id.clone()))
        .collect();
    let small = Some("small".to_owned());
    assert_eq!(asked, [(2, small.clone()), (3, small)]);
    // The switch is in the branch's copied journal, not journaled again.
    assert_eq!(
        events_of(&s.h, &ended.id, "agent_model_fallback_switched").len(),
        1
    );
}

#[tokio::test(start_paused = true)]
async fn a_branch_cut_before_the_switch_starts_on_the_profiles_own_model() {
    let (s, ended, (primary_before, _)) = branch_of_switched_run(1).await;
    // The journal up to the cut has no switch: the branch asks the primary again, and
    // switches again on its own.
    assert_eq!(s.primary.call_count(), primary_before + 2);
    let switched = events_of(&s.h, &ended.id, "agent_model_fallback_switched");
    assert_eq!(switched.len(), 1);
    assert!(switched[0].seq > s.h.first_event(&ended.id, "run_resumed").seq);
}
