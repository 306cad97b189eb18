//! A server restart under a store's writes (docs/storage.md, "A server restart"): the server is
//! stopped with `pg_ctl stop -m immediate` while an append, a workspace write, a task
//! transition and a run record write are on their way, and started again on the same port and
//! data dir; each of them completes once the server is back, once, and the journal stays
//! gapless. A cluster of its own (it is stopped), with durable commits.

use std::time::Duration;

use tt_adapter_storage_postgres::PostgresStore;
use tt_adapter_storage_postgres::cluster::TestCluster;
use tt_domain::workspace::{WorkspacePath, WriteGuard};
use tt_ports::{AgentRunRepository, EventPage, RunJournal, WorkspaceRepository};
use tt_testkit::contract::{manifest_for, sample_run, tool_event};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_made_while_the_server_restarts_complete_once_it_is_back() {
    let cluster = tokio::task::block_in_place(|| TestCluster::start(true)).unwrap();
    let url = cluster.create_database("tt_case_restart").await.unwrap();
    let store = PostgresStore::open(&url).await.unwrap();
    let mut run = sample_run(1);
    store.create_run(&run, &manifest_for(&run)).await.unwrap();
    RunJournal::append(&store, tool_event(&run.id, 1, "inv_root"))
        .await
        .unwrap();

    tokio::task::block_in_place(|| cluster.stop_immediately()).unwrap();
    let path = WorkspacePath::parse("scratch/during.md").unwrap();
    run.updated_at = tt_domain::time::Timestamp::from_unix_millis(99);
    let writes = async {
        tokio::join!(
            RunJournal::append(&store, tool_event(&run.id, 2, "inv_root")),
            WorkspaceRepository::write(
                &store,
                &run.id,
                &path,
                "written while down",
                &WriteGuard::MustNotExist
            ),
            store.save_run(&run),
        )
    };
    let restart = async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        tokio::task::block_in_place(|| cluster.start_again()).unwrap();
    };
    let ((appended, written, saved), ()) = tokio::join!(writes, restart);
    assert_eq!(appended.unwrap().seq, 2);
    assert_eq!(written.unwrap().previous_sha256, None);
    saved.unwrap();

    let reader = PostgresStore::open(&url).await.unwrap();
    let events = RunJournal::read(&reader, &run.id, &EventPage::default())
        .await
        .unwrap();
    assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![1, 2]);
    assert_eq!(
        WorkspaceRepository::read(&reader, &run.id, &path)
            .await
            .unwrap()
            .text,
        "written while down"
    );
    assert_eq!(
        reader.load_run(&run.id).await.unwrap().updated_at,
        run.updated_at
    );
    // The store still holds the run: its next write goes through.
    RunJournal::append(&store, tool_event(&run.id, 3, "inv_root"))
        .await
        .unwrap();
    drop(cluster);
}
