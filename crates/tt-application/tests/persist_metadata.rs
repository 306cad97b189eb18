//! The persistent-state metadata handshake when a run finishes: the host binds the promoted
//! state to the last committed message, or the run ends as partial success.

use serde_json::{Value, json};
use tt_domain::run::AgentRunStatus;

use crate::support::*;

/// The payload with its `updateId` (drawn from the id sequence) checked and replaced, so the
/// snapshot does not move when another event draws an id.
fn stable(payload: &Value) -> Value {
    let mut payload = payload.clone();
    assert!(
        payload["updateId"]
            .as_str()
            .is_some_and(|id| id.starts_with("persist_metadata_"))
    );
    payload["updateId"] = json!("[updateId]");
    payload
}

#[tokio::test]
async fn persistent_state_metadata_is_bound_to_the_last_commit_on_finish() {
    let (h, run) = happy_run().await;

    let updates = h.bridge.metadata_updates();
    assert_eq!(updates.len(), 1);
    let committed = &events_of(&h, &run.id, "persistent_changes_committed")[0];
    assert_eq!(updates[0].message_id, h.bridge.receipts()[0].message_id);
    assert_eq!(
        updates[0].state_id,
        committed.payload["stateId"].as_str().unwrap()
    );
    assert_eq!(updates[0].changes, committed.payload["changes"]);

    let requested = &events_of(&h, &run.id, "persistent_state_metadata_update_requested")[0];
    let updated = &events_of(&h, &run.id, "persistent_state_metadata_updated")[0];
    assert_eq!(requested.payload["updateId"], updated.payload["updateId"]);
    let types = h.event_types(&run.id);
    let pos = |t: &str| types.iter().position(|x| x == t).unwrap();
    assert!(
        pos("persistent_changes_committed") < pos("persistent_state_metadata_update_requested")
    );
    assert!(
        pos("persistent_state_metadata_update_requested")
            < pos("persistent_state_metadata_updated")
    );
    assert!(pos("persistent_state_metadata_updated") < pos("run_completed"));
    insta::assert_json_snapshot!(
        "persistent_state_metadata_update_requested",
        stable(&requested.payload)
    );
    insta::assert_json_snapshot!(
        "persistent_state_metadata_updated",
        stable(&updated.payload)
    );
}

#[tokio::test]
async fn persistent_state_metadata_update_failure_keeps_the_commit_as_partial_success() {
    let h = happy_harness();
    h.bridge.reject_metadata_updates("the chat was deleted");
    let run = h.run_to_end(request(None)).await;
    assert_eq!(run.status, AgentRunStatus::PartialSuccess);

    let failed = &events_of(&h, &run.id, "persistent_state_metadata_update_failed")[0];
    insta::assert_json_snapshot!(
        "persistent_state_metadata_update_failed",
        stable(&failed.payload)
    );
    let ended = &events_of(&h, &run.id, "run_partial_success")[0];
    assert_eq!(
        ended.payload["code"],
        "agent.persistent_state_metadata_update_failed"
    );
    assert_eq!(ended.payload["preservedCommitCount"], 1);
    assert!(events_of(&h, &run.id, "persistent_state_metadata_updated").is_empty());
    assert!(events_of(&h, &run.id, "run_completed").is_empty());
}

/// A host that answers commits but never the metadata update does not hold the run in
/// `finishing` for good: after five minutes the run ends `partial_success`, its commit kept.
#[tokio::test(start_paused = true)]
async fn an_unanswered_metadata_update_times_out_as_partial_success() {
    let h = happy_harness();
    h.bridge.ignore_metadata_updates();
    let started = tokio::time::Instant::now();
    let run = h.run_to_end(request(None)).await;
    assert_eq!(run.status, AgentRunStatus::PartialSuccess);
    assert!(started.elapsed() >= std::time::Duration::from_secs(300));
    let failed = &events_of(&h, &run.id, "persistent_state_metadata_update_failed")[0];
    assert_eq!(
        failed.payload["message"],
        "the host did not answer within 300 s"
    );
    let ended = &events_of(&h, &run.id, "run_partial_success")[0];
    assert_eq!(
        ended.payload["code"],
        "agent.persistent_state_metadata_update_failed"
    );
}
