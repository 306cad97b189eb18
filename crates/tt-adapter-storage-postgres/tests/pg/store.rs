//! The store's own checks: migrations are recorded and applied once.

use tt_adapter_storage_postgres::PostgresStore;
use tt_adapter_storage_postgres::schema::MIGRATIONS;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_are_recorded_and_applied_once() {
    let store = crate::fresh_store().await;
    let latest = MIGRATIONS.last().map(|(version, _, _)| *version).unwrap();
    assert_eq!(store.schema_version().await.unwrap(), latest);
    let url = crate::cluster().url("tt_case_migrate_twice");
    crate::cluster()
        .create_database("tt_case_migrate_twice")
        .await
        .unwrap();
    let first = PostgresStore::open(&url).await.unwrap();
    let second = PostgresStore::open(&url).await.unwrap();
    assert_eq!(first.schema_version().await.unwrap(), latest);
    assert_eq!(second.schema_version().await.unwrap(), latest);
}

/// PostgreSQL keeps every checkpointed version, so a branch (docs/branching.md) can rebuild a
/// workspace from any of them, not only from the current file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpointed_versions_read_back_by_their_sha256() {
    use tt_domain::text::sha256_hex;
    use tt_domain::workspace::{CheckpointReason, WriteGuard};
    use tt_ports::{AgentRunRepository, WorkspaceRepository};
    use tt_testkit::contract::{manifest_for, sample_run, ts, wp};
    let store = crate::fresh_store().await;
    let run = sample_run(1);
    store.create_run(&run, &manifest_for(&run)).await.unwrap();
    let path = wp("output/main.md");
    for (n, text) in ["draft 1", "draft 2!"].into_iter().enumerate() {
        store
            .write(&run.id, &path, text, &WriteGuard::None)
            .await
            .unwrap();
        store
            .create_checkpoint(
                &run.id,
                CheckpointReason::ToolWorkspaceWrite,
                n as u64 + 1,
                std::slice::from_ref(&path),
                ts(100),
            )
            .await
            .unwrap();
    }
    for text in ["draft 1", "draft 2!"] {
        assert_eq!(
            store
                .checkpoint_blob(&run.id, &sha256_hex(text.as_bytes()))
                .await
                .unwrap()
                .as_deref(),
            Some(text)
        );
    }
    assert_eq!(
        store
            .checkpoint_blob(&run.id, &sha256_hex(b"never written"))
            .await
            .unwrap(),
        None
    );
}
