//! Run cancel interrupts a model call or a host commit wait at once; the run ends cancelled
//! and nothing more is written after `run_cancelled`.

use serde_json::json;
use std::time::Duration;
use tt_domain::invocation::InvocationStatus;
use tt_domain::run::AgentRunStatus;
use tt_testkit::fakes::{FakeCommitBridge, FakeModel};

use crate::support::*;

#[tokio::test]
async fn cancel_during_a_model_call_stops_the_run() {
    let h = harness(FakeModel::hanging());
    let run = h.start_parked(request(None), 1).await;
    let after_cancel = h.service.cancel_run(&run.id).await.unwrap();
    assert!(matches!(
        after_cancel.status,
        AgentRunStatus::Cancelling | AgentRunStatus::Cancelled
    ));
    let run = h.wait(&run.id).await;
    assert_eq!(run.status, AgentRunStatus::Cancelled);
    assert_eq!(h.model.parked_count(), 0, "the parked call was interrupted");
    assert_eq!(
        h.store.invocations(&run.id)[0].status,
        InvocationStatus::Cancelled
    );
    let types = h.event_types(&run.id);
    assert_eq!(types.last().map(String::as_str), Some("run_cancelled"));
    assert!(types.contains(&"run_cancel_requested".to_owned()));
    assert!(!types.contains(&"run_failed".to_owned()));
    // Cancelling again returns the terminal run unchanged.
    assert_eq!(
        h.service.cancel_run(&run.id).await.unwrap().status,
        AgentRunStatus::Cancelled
    );
    assert_eq!(h.event_types(&run.id).len(), types.len());
}

#[tokio::test]
async fn cancel_during_a_host_commit_wait_stops_the_run() {
    let h = harness_with_bridge(by_turn(happy_turns()), FakeCommitBridge::hanging());
    let run = h.service.start_run(request(None)).await.unwrap();
    tokio::time::timeout(
        Duration::from_secs(60),
        h.store
            .wait_for_event_type(&run.id, "chat_commit_requested"),
    )
    .await
    .expect("commit requested");
    let run = h.cancel_to_end(&run.id).await;
    assert_eq!(h.bridge.pending_count(), 0);
    let types = h.event_types(&run.id);
    assert!(!types.contains(&"chat_commit_completed".to_owned()));
    assert_eq!(types.last().map(String::as_str), Some("run_cancelled"));
    // The draft written before the cancel is kept.
    assert_eq!(
        h.store.file_text(&run.id, "output/main.md").as_deref(),
        Some("A storm rolled in.")
    );
}

#[tokio::test(start_paused = true)]
async fn cancel_during_a_retry_wait_stops_the_run() {
    let h = harness(FakeModel::new(|_| {
        Err(tt_ports::ModelError::Transient {
            message: "down".into(),
        })
    }));
    let run = h.service.start_run(request(None)).await.unwrap();
    h.store
        .wait_for_event_type(&run.id, "model_call_retry_scheduled")
        .await;
    h.cancel_to_end(&run.id).await;
    assert_eq!(h.model.call_count(), 1);
}

#[tokio::test]
async fn cancelling_an_unknown_run_is_not_found() {
    let h = harness(by_turn(vec![turn(vec![call(
        "x",
        "workspace_finish",
        json!({}),
    )])]));
    let err = h
        .service
        .cancel_run(&tt_domain::ids::RunId::from_raw("run_missing"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "agent.not_found");
}

#[tokio::test]
async fn a_cancel_whose_journal_write_fails_still_stops_the_run() {
    let h = harness(FakeModel::hanging());
    let run = h.start_parked(request(None), 1).await;
    h.store.fail_journal_append_of(
        tt_domain::event::RunEventType::RunCancelRequested,
        tt_ports::StorageError::io("events.jsonl", "disk full"),
    );
    let refused = h.service.cancel_run(&run.id).await.unwrap_err();
    assert_eq!(refused.code(), "agent.storage_io");
    // The cancel was fired anyway: the parked model call ends and the run stops.
    let run = tokio::time::timeout(Duration::from_secs(60), h.wait(&run.id))
        .await
        .expect("the run stopped");
    assert_eq!(run.status, AgentRunStatus::Cancelled);
    assert_eq!(h.model.parked_count(), 0);
}
