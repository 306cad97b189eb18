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
