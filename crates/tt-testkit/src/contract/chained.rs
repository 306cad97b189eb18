//! Contract case for `RunJournal::commit_chained`: units a writer queues without waiting for
//! each are stored in the order queued, and once one fails every later unit of its chain is
//! refused, so the journal holds a prefix of the chain.

use serde_json::json;
use tt_domain::event::RecordedEvent;
use tt_domain::ids::RunId;
use tt_ports::{ChainedCommit, CommitChain, EventPage, RunWrite, StorageResult};

use super::{StorageUnderTest, assert_already_exists, create_sample_run, task, tool_event};

/// A chained unit's outcome, whether the store answered it at once or queued it.
async fn outcome(queued: StorageResult<ChainedCommit>) -> StorageResult<Vec<RecordedEvent>> {
    match queued {
        Ok(pending) => pending.await,
        Err(err) => Err(err),
    }
}

/// Queues `writes` as the next unit of `chain` in run `id`: the store's answer, not yet the
/// unit's outcome.
async fn queue(
    s: &StorageUnderTest,
    id: &RunId,
    writes: Vec<RunWrite>,
    chain: &CommitChain,
) -> StorageResult<ChainedCommit> {
    s.journal.commit_chained(id, writes, chain).await
}

/// Event `n` of run `id`, a tool call of `invocation`, as a write.
fn event(id: &RunId, n: u64, invocation: &str) -> RunWrite {
    RunWrite::Event(tool_event(id, n, invocation))
}

fn seqs(events: &[RecordedEvent]) -> Vec<u64> {
    events.iter().map(|event| event.seq).collect()
}

/// Units queued one after the other take seqs in that order and their records are stored once
/// their outcome is; a unit that fails (a task id that is taken) breaks its chain: the unit
/// queued after it is refused, though it was queued before the failure was known, and the
/// journal holds nothing of it. Another chain is not affected.
pub async fn commit_chained_writes_a_prefix_of_the_chain(s: StorageUnderTest) {
    let run = create_sample_run(&s, 1).await;
    let id = &run.id;
    let chain = CommitChain::default();
    let task_a = task(&run, "task_a", 3);
    let first = queue(
        &s,
        id,
        vec![
            event(id, 1, "inv_root"),
            RunWrite::Task(task_a.clone()),
            event(id, 2, "inv_root"),
        ],
        &chain,
    )
    .await;
    let second = queue(&s, id, vec![event(id, 3, "inv_root")], &chain).await;
    assert_eq!(seqs(&outcome(first).await.unwrap()), vec![1, 2]);
    assert_eq!(seqs(&outcome(second).await.unwrap()), vec![3]);
    assert_eq!(
        s.invocations.load_task(id, &task_a.id).await.unwrap(),
        task_a
    );
    assert!(!chain.is_broken());

    // The task id is taken: that unit fails, and the one queued after it is refused.
    let third = queue(
        &s,
        id,
        vec![event(id, 4, "inv_root"), RunWrite::Task(task_a.clone())],
        &chain,
    )
    .await;
    let fourth = queue(&s, id, vec![event(id, 5, "inv_root")], &chain).await;
    let third = outcome(third).await;
    assert_already_exists(third);
    assert!(outcome(fourth).await.is_err());
    assert!(chain.is_broken());
    let later = queue(&s, id, vec![event(id, 6, "inv_root")], &chain).await;
    assert!(outcome(later).await.is_err());
    let stored = s.journal.read(id, &EventPage::default()).await.unwrap();
    assert!(
        stored
            .iter()
            .all(|event| event.payload["n"] != json!(5) && event.payload["n"] != json!(6)),
        "{stored:?}"
    );
    let last = s.journal.last_seq(id).await.unwrap();
    assert!(last == 3 || last == 4, "{last}");

    // Another writer's chain goes on.
    let other = CommitChain::default();
    let next = queue(&s, id, vec![event(id, 7, "inv_b")], &other).await;
    assert_eq!(seqs(&outcome(next).await.unwrap()), vec![last + 1]);
}
