//! Ownership across hosts: two stores on one database stand for two hosts. The second writer
//! of a run is refused with `agent.run_locked` while the first heartbeats; once the first is
//! gone and its lease expired, the second takes the run over and the journal goes on gapless.
//! Server-side lease expiry needs real time: the lease here is short (600 ms).

use std::sync::Arc;
use std::time::Duration;

use tt_adapter_storage_postgres::{PostgresOptions, PostgresStore};
use tt_ports::{AgentRunRepository, EventPage, RunJournal};
use tt_testkit::contract::{assert_code, manifest_for, sample_run, tool_event};

const LEASE: Duration = Duration::from_millis(600);

async fn host(url: &str, name: &str) -> Arc<PostgresStore> {
    let options = PostgresOptions {
        pool_size: 2,
        lease: LEASE,
        owner_id: Some(name.to_owned()),
    };
    Arc::new(PostgresStore::open_with(url, options).await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_writer_is_locked_out_until_the_lease_expires() {
    let url = crate::cluster()
        .create_database("tt_case_ownership")
        .await
        .unwrap();
    let a = host(&url, "host-a").await;
    let b = host(&url, "host-b").await;
    let run = sample_run(1);
    a.create_run(&run, &manifest_for(&run)).await.unwrap();
    a.append(tool_event(&run.id, 1, "inv_root")).await.unwrap();

    assert_code(
        b.append(tool_event(&run.id, 2, "inv_root")).await,
        "agent.run_locked",
    );
    assert_code(b.save_run(&run).await, "agent.run_locked");
    // Reading is anyone's.
    assert_eq!(b.last_seq(&run.id).await.unwrap(), 1);

    // A heartbeats: well past one lease, B is still refused.
    tokio::time::sleep(LEASE * 2).await;
    assert_code(b.claim_run(&run.id).await, "agent.run_locked");

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
        "agent.run_locked",
    );

    // Releasing hands the run over at once.
    b.release_run(&run.id).await.unwrap();
    a_again.claim_run(&run.id).await.unwrap();
}
