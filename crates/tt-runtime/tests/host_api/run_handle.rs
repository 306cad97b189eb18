//! Driving a run only through its [`RunHandle`]: typed events from the start (also as a
//! `Stream`), the commit and the persistent-state metadata update answered from `pending()`,
//! guidance, `wait`, its outcome (`result`), what is read of it, and a branch of it.

use futures_util::StreamExt;
use tempfile::TempDir;
use tt_runtime::{
    AgentRunStatus, AgentRuntimeBuilder, ForkChanges, ForkPoint, ForkRunRequest, InvocationId,
    RunEventPayload, RunHandle,
};

use super::{committing_writer, request, runtime};

/// Follows a run through its handle's `Stream` (`StreamExt::next`), publishing each commit as
/// `message_id` and acknowledging the metadata update; returns the seqs it saw.
async fn drive(handle: &RunHandle<'_>, message_id: &str) -> Vec<u64> {
    let mut seqs = Vec::new();
    let mut events = handle.events();
    while let Some(item) = StreamExt::next(&mut events).await {
        let item = item.unwrap();
        seqs.push(item.event.seq);
        match item.payload {
            Some(RunEventPayload::ChatCommitRequested(requested)) => handle
                .publish_commit(requested.commit_id.as_str(), message_id)
                .unwrap(),
            Some(RunEventPayload::PersistentStateMetadataUpdateRequested(requested)) => handle
                .answer_metadata_update(&requested.update_id, None)
                .unwrap(),
            _ => {}
        }
    }
    seqs
}

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

#[tokio::test]
async fn a_handle_gives_its_runs_outcome_and_everything_read_of_it() {
    let dir = TempDir::new().unwrap();
    let runtime = runtime(dir.path(), committing_writer());
    let handle = runtime.start(request()).await.unwrap();
    let seqs = drive(&handle, "msg-1").await;
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "in order, no gap"
    );
    let result = handle.result().await.unwrap();
    assert_eq!(result.run.status, AgentRunStatus::Completed);
    assert_eq!(result.failure, None);
    assert_eq!(result.commits.len(), 1);
    assert_eq!(result.commits[0].message_id, "msg-1");
    assert_eq!(result.commits[0].text.as_deref(), Some("Night fell.\n"));
    assert_eq!(result.published_text.as_deref(), Some("Night fell.\n"));
    // What is read of it.
    assert_eq!(handle.usage().await.unwrap().model_calls, 3);
    assert_eq!(handle.usage().await.unwrap().inherited, None);
    let timeline = handle.timeline().await.unwrap();
    assert_eq!(timeline.invocations.len(), 1);
    let conversation = handle.conversation("inv_root").await.unwrap();
    assert!(!conversation.entries.is_empty());
    assert!(handle.check().await.unwrap().findings.is_empty());
    let files = handle.list_files().await.unwrap();
    assert!(files.contains(&"output/main.md".to_owned()), "{files:?}");
    assert_eq!(
        handle.read_file("output/main.md").await.unwrap().text,
        "Night fell.\n"
    );
    assert!(handle.pending_approvals().await.unwrap().is_empty());
    // From a seq on, the rest only: what a reloaded view asks for.
    let rest: Vec<u64> = handle
        .events_after(seqs.len() as u64 - 2)
        .map(|item| item.unwrap().event.seq)
        .collect()
        .await;
    assert_eq!(rest, seqs[seqs.len() - 2..]);
    // A completed run is not resumed: refused with a code.
    assert!(
        handle
            .resume()
            .await
            .unwrap_err()
            .code
            .starts_with("agent.")
    );
}

#[tokio::test]
async fn a_failed_runs_result_carries_its_reason() {
    let dir = TempDir::new().unwrap();
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(committing_writer())
        .commit_handler(|_| async { Err("the chat window is closed".to_owned()) })
        .build()
        .unwrap();
    let handle = runtime.start(request()).await.unwrap();
    let result = handle.result().await.unwrap();
    assert_eq!(result.run.status, AgentRunStatus::Failed);
    let failure = result.failure.unwrap();
    assert_eq!(failure.event_type, "run_failed");
    assert!(failure.code.starts_with("agent."), "{failure:?}");
    assert!(!failure.message.is_empty(), "{failure:?}");
    assert!(result.commits.is_empty());
    assert_eq!(result.published_text, None);
}

/// A branch of a finished scripted run, taken before the writer's commit: the handle forks it,
/// the branch publishes its own take, and its usage counts only the model calls it made, with
/// the source's first round inherited.
#[tokio::test]
async fn a_branch_pays_for_its_own_rounds_and_publishes_its_own_take() {
    let dir = TempDir::new().unwrap();
    let runtime = runtime(dir.path(), committing_writer());
    let source = runtime.start(request()).await.unwrap();
    drive(&source, "msg-1").await;
    assert_eq!(
        source.wait().await.unwrap().status,
        AgentRunStatus::Completed
    );
    let branch = source
        .fork(ForkRunRequest {
            at: ForkPoint::AgentRound {
                invocation_id: InvocationId::root(),
                round: 2,
            },
            changes: ForkChanges::default(),
        })
        .await
        .unwrap();
    drive(&branch, "msg-1.2").await;
    let result = branch.result().await.unwrap();
    assert_eq!(result.run.status, AgentRunStatus::Completed);
    let forked_from = result.run.forked_from.clone().unwrap();
    assert_eq!(forked_from.run_id.as_str(), source.run_id());
    // Its own commit only, not the source's (which came after the fork point anyway).
    assert_eq!(result.commits.len(), 1);
    assert_eq!(result.commits[0].message_id, "msg-1.2");
    assert_eq!(result.published_text.as_deref(), Some("Night fell.\n"));
    let usage = branch.usage().await.unwrap();
    let inherited = usage.inherited.clone().unwrap();
    assert_eq!(inherited.run_id, source.run_id());
    assert_eq!(inherited.seq, forked_from.seq);
    assert_eq!(
        (inherited.model_calls, usage.model_calls),
        (1, 2),
        "the source paid round 1; the branch rounds 2 and 3: {usage:?}"
    );
    // The root's conversation says the same: round 1 was the source's.
    let conversation = branch.conversation("inv_root").await.unwrap();
    let answers = conversation.inherited.clone().unwrap();
    assert_eq!((answers.seq, answers.model_calls), (forked_from.seq, 1));
    assert_eq!(conversation.model_calls, 2, "{conversation:?}");
    let source_usage = source.usage().await.unwrap();
    assert_eq!(
        inherited.input_tokens + usage.input_tokens,
        source_usage.input_tokens
    );
}
