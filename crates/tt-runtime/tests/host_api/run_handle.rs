//! Driving a run only through its [`RunHandle`]: typed events from the start, the commit and
//! the persistent-state metadata update answered from `pending()`, guidance, and `wait`.

use tempfile::TempDir;
use tt_runtime::{AgentRunStatus, RunEventPayload};

use super::{committing_writer, request, runtime};

#[tokio::test]
async fn a_run_driven_through_its_handle_publishes_and_completes() {
    let dir = TempDir::new().unwrap();
    let runtime = runtime(dir.path(), committing_writer());
    let handle = runtime.start(request()).await.unwrap();
    let mut events = handle.events();
    let mut published = Vec::new();
    let mut acknowledged = Vec::new();
    let mut typed = 0;
    while let Some(item) = events.next().await.unwrap() {
        if item.payload.is_some() {
            typed += 1;
        }
        match item.payload {
            Some(RunEventPayload::ChatCommitRequested(requested)) => {
                let pending = handle.pending().await.unwrap();
                assert_eq!(pending.commits.len(), 1);
                assert_eq!(
                    pending.commits[0].commit_id.as_str(),
                    requested.commit_id.as_str()
                );
                handle
                    .publish_commit(requested.commit_id.as_str(), "msg-1")
                    .unwrap();
                published.push(requested.commit_id.to_string());
            }
            Some(RunEventPayload::PersistentStateMetadataUpdateRequested(requested)) => {
                let pending = handle.pending().await.unwrap();
                assert_eq!(pending.metadata_updates.len(), 1);
                assert_eq!(pending.metadata_updates[0].update_id, requested.update_id);
                handle
                    .answer_metadata_update(&requested.update_id, None)
                    .unwrap();
                acknowledged.push(requested.update_id);
            }
            _ => {}
        }
    }
    assert_eq!(published.len(), 1);
    assert_eq!(acknowledged.len(), 1);
    assert!(typed > 10, "every known event comes with its typed payload");
    let ended = handle.wait().await.unwrap();
    assert_eq!(ended.status, AgentRunStatus::Completed);
    assert!(handle.pending().await.unwrap().is_empty());
    // A handle on a finished run still reads it; guidance to it is refused with a code.
    let again = runtime.run(handle.run_id());
    assert_eq!(again.get().await.unwrap().status, AgentRunStatus::Completed);
    let refused = again.submit_guidance("Too late.").await.unwrap_err();
    assert!(refused.code.starts_with("agent."), "{}", refused.code);
}
