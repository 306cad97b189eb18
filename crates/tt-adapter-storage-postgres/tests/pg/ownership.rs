//! Ownership across hosts: two stores on one database stand for two hosts. The second writer
//! of a run is refused with `agent.run_locked` while the first heartbeats; once the first is
//! gone and its lease expired, the second takes the run over and the journal goes on gapless.
//! Server-side lease expiry needs real time: the lease here is short (600 ms). A store whose
//! lease was taken over is fenced: its writes are refused at once, before any heartbeat.

use std::sync::Arc;
use std::time::Duration;

use tt_adapter_storage_postgres::PostgresStore;
use tt_domain::ids::{RunId, TaskId};
use tt_domain::task::TaskStatus;
use tt_domain::workspace::{CheckpointReason, WriteGuard};
use tt_ports::{AgentInvocationRepository, AgentRunRepository, EventPage, RunDocument, RunJournal};
use tt_testkit::contract::{
    assert_code, invocation, manifest_for, sample_run, task, tool_event, transition_to, ts, wp,
};

const LEASE: Duration = Duration::from_millis(600);

async fn host(url: &str, name: &str) -> Arc<PostgresStore> {
    super::host(url, name, LEASE).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_writer_is_locked_out_until_the_lease_expires() {
    let (url, a, b) = super::two_hosts("tt_case_ownership", LEASE).await;
    let run = sample_run(1);
    a.create_run(&run, &manifest_for(&run)).await.unwrap();
    a.append(tool_event(&run.id, 1, "inv_root")).await.unwrap();

    assert_code(
        b.append(tool_event(&run.id, 2, "inv_root")).await,
        tt_domain::error_codes::AGENT_RUN_LOCKED,
    );
    assert_code(
        b.save_run(&run).await,
        tt_domain::error_codes::AGENT_RUN_LOCKED,
    );
    // Reading is anyone's.
    assert_eq!(b.last_seq(&run.id).await.unwrap(), 1);

    // A heartbeats: well past one lease, B is still refused.
    tokio::time::sleep(LEASE * 2).await;
    assert_code(
        b.claim_run(&run.id).await,
        tt_domain::error_codes::AGENT_RUN_LOCKED,
    );

    // A dies (no more heartbeats); after the lease B takes over.
    drop(a);
    tokio::time::sleep(LEASE + Duration::from_millis(300)).await;
    b.claim_run(&run.id).await.unwrap();
    let appended = b.append(tool_event(&run.id, 2, "inv_root")).await.unwrap();
    assert_eq!(appended.seq, 2);
    let events = b.read(&run.id, &EventPage::default()).await.unwrap();
    assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![1, 2]);

    // A host coming back with the old identity's lease gone is refused while B holds it.
    let a_again = host(&url, "host-a").await;
    assert_code(
        a_again.append(tool_event(&run.id, 3, "inv_root")).await,
        tt_domain::error_codes::AGENT_RUN_LOCKED,
    );

    // Releasing hands the run over at once.
    b.release_run(&run.id).await.unwrap();
    a_again.claim_run(&run.id).await.unwrap();
}

/// A long lease: nothing waits for a heartbeat, a test ends the lease by hand.
const LONG_LEASE: Duration = Duration::from_secs(60);

/// Ends `run_id`'s lease on the server at once, as if its holder had missed its heartbeats.
pub(crate) async fn expire_lease(url: &str, run_id: &str) {
    tt_adapter_storage_postgres::cluster::TestCluster::expire_lease(url, run_id)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_whose_lease_was_taken_over_cannot_write() {
    let (url, a, b) = super::two_hosts("tt_case_fencing", LONG_LEASE).await;
    let run = sample_run(7);
    a.create_run(&run, &manifest_for(&run)).await.unwrap();
    a.append(tool_event(&run.id, 1, "inv_root")).await.unwrap();
    tt_ports::WorkspaceRepository::write(&*a, &run.id, &wp("output/a.md"), "a", &WriteGuard::None)
        .await
        .unwrap();
    a.create_task(&task(&run, "task_1", 10)).await.unwrap();

    // A's lease ends without A noticing (no heartbeat has run); B takes the run over.
    expire_lease(&url, run.id.as_str()).await;
    b.claim_run(&run.id).await.unwrap();

    // Every kind of write A still tries is refused, though A believes it holds the run.
    assert_code(
        a.append(tool_event(&run.id, 2, "inv_root")).await,
        tt_domain::error_codes::AGENT_RUN_LOCKED,
    );
    assert_code(
        a.save_run(&run).await,
        tt_domain::error_codes::AGENT_RUN_LOCKED,
    );
    assert_code(
        tt_ports::WorkspaceRepository::write(
            &*a,
            &run.id,
            &wp("output/a.md"),
            "late",
            &WriteGuard::None,
        )
        .await,
        tt_domain::error_codes::AGENT_RUN_LOCKED,
    );
    assert_code(
        a.write_document(
            &run.id,
            &RunDocument::PersistSnapshot,
            &serde_json::json!({}),
        )
        .await,
        tt_domain::error_codes::AGENT_RUN_LOCKED,
    );
    assert_code(
        a.save_invocation(&invocation(&run, "inv_late", 20)).await,
        tt_domain::error_codes::AGENT_RUN_LOCKED,
    );
    assert_code(
        a.create_task(&task(&run, "task_late", 30)).await,
        tt_domain::error_codes::AGENT_RUN_LOCKED,
    );
    let transition = transition_to(TaskStatus::Running);
    assert_code(
        a.transition_task(&run.id, &TaskId::from_raw("task_1"), &transition, ts(40))
            .await,
        tt_domain::error_codes::AGENT_RUN_LOCKED,
    );
    assert_code(
        tt_ports::WorkspaceRepository::create_checkpoint(
            &*a,
            &run.id,
            CheckpointReason::ToolWorkspaceWrite,
            1,
            &[],
            ts(50),
        )
        .await,
        tt_domain::error_codes::AGENT_RUN_LOCKED,
    );

    // Nothing of A's reached the store; B goes on from A's last committed write.
    assert_eq!(
        b.read(&run.id, &EventPage::default()).await.unwrap().len(),
        1
    );
    let text = tt_ports::WorkspaceRepository::read(&*b, &run.id, &wp("output/a.md"))
        .await
        .unwrap()
        .text;
    assert_eq!(text, "a");
    assert_eq!(
        b.append(tool_event(&run.id, 2, "inv_root"))
            .await
            .unwrap()
            .seq,
        2
    );
}

/// A task transition is a compare and swap fenced on the lease (no transaction): as the first
/// write after a takeover it changes nothing and says the run is another store's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_transition_after_a_takeover_changes_nothing() {
    let (url, a, b) = super::two_hosts("tt_case_fenced_transition", LONG_LEASE).await;
    let run = sample_run(8);
    a.create_run(&run, &manifest_for(&run)).await.unwrap();
    a.create_task(&task(&run, "task_1", 10)).await.unwrap();
    expire_lease(&url, run.id.as_str()).await;
    b.claim_run(&run.id).await.unwrap();

    let running = transition_to(TaskStatus::Running);
    assert_code(
        a.transition_task(&run.id, &TaskId::from_raw("task_1"), &running, ts(40))
            .await,
        tt_domain::error_codes::AGENT_RUN_LOCKED,
    );
    let stored = b
        .load_task(&run.id, &TaskId::from_raw("task_1"))
        .await
        .unwrap();
    assert_eq!(stored.status, TaskStatus::Queued);
    let outcome = b
        .transition_task(&run.id, &TaskId::from_raw("task_1"), &running, ts(41))
        .await
        .unwrap();
    assert!(outcome.changed);
    assert_eq!(outcome.task.status, TaskStatus::Running);
}

/// Ends `run_id`'s lease by hand and has `taker` claim it. The holder's heartbeat may renew the
/// lease between the two: then it is ended again.
async fn take_over(url: &str, taker: &PostgresStore, run_id: &RunId) {
    for _ in 0..50 {
        expire_lease(url, run_id.as_str()).await;
        match taker.claim_run(run_id).await {
            Ok(()) => return,
            Err(error) => assert_eq!(error.code(), "agent.run_locked"),
        }
    }
    panic!("the run was never taken over");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_refuses_only_the_runs_another_store_holds() {
    let (url, a, b) = super::two_hosts("tt_case_batch_refusal", LEASE).await;
    let mine = sample_run(11);
    let theirs = sample_run(12);
    a.create_run(&mine, &manifest_for(&mine)).await.unwrap();
    b.create_run(&theirs, &manifest_for(&theirs)).await.unwrap();
    // A thinks it holds B's run too: B's lease is ended by hand and A takes it, then C takes
    // it from A the same way, so A still has it in its held set but not on the server.
    let c = host(&url, "host-c").await;
    take_over(&url, &a, &theirs.id).await;
    take_over(&url, &c, &theirs.id).await;

    // Appends and documents of both runs, all at once, so they share batches.
    let writes = (1..=40_u64).map(|n| {
        let a = Arc::clone(&a);
        let run_id = if n % 2 == 0 {
            mine.id.clone()
        } else {
            theirs.id.clone()
        };
        async move {
            let appended = a.append(tool_event(&run_id, n, "inv_root")).await;
            let document = a
                .write_document(
                    &run_id,
                    &RunDocument::PersistSnapshot,
                    &serde_json::json!({"n": n}),
                )
                .await;
            (run_id, appended.map(|event| event.seq), document)
        }
    });
    let results = futures_util::future::join_all(writes).await;
    let mut seqs = Vec::new();
    for (run_id, appended, document) in results {
        if run_id == mine.id {
            seqs.push(appended.unwrap());
            document.unwrap();
        } else {
            assert_code(appended, tt_domain::error_codes::AGENT_RUN_LOCKED);
            assert_code(document, tt_domain::error_codes::AGENT_RUN_LOCKED);
        }
    }
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=20).collect::<Vec<u64>>());
    assert_eq!(c.last_seq(&theirs.id).await.unwrap(), 0);
    assert!(
        c.read_document(&theirs.id, &RunDocument::PersistSnapshot)
            .await
            .unwrap()
            .is_none()
    );
}
