//! Integration tests of the PostgreSQL store against a throwaway cluster the tests start
//! themselves: the shared storage contract suites (the same the file-system adapter passes) and
//! the store's own schema checks.
// Test helpers outside `#[test]` functions fail loudly by design.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod pg;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use tt_adapter_storage_postgres::PostgresStore;
use tt_adapter_storage_postgres::cluster::TestCluster;
use tt_ports::{
    ConnectionRepository, McpServerRepository, PresetTemplateRepository, ProfileRepository,
    SkillFileRef, StoragePorts, TranscriptRepository,
};
use tt_testkit::contract::{RepositoryUnderTest, StorageUnderTest};

/// One cluster per test process; every case gets its own database on it.
pub fn cluster() -> &'static TestCluster {
    static CLUSTER: OnceLock<TestCluster> = OnceLock::new();
    CLUSTER.get_or_init(|| TestCluster::start(false).expect("start a throwaway PostgreSQL"))
}

/// A fresh, migrated database on the shared cluster.
pub async fn fresh_store() -> Arc<PostgresStore> {
    fresh_database("tt_case").await.1
}

/// A fresh, migrated database named `<prefix>_<n>` on the shared cluster: its URL and a store
/// on it.
async fn fresh_database(prefix: &str) -> (String, Arc<PostgresStore>) {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let name = format!("{prefix}_{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let url = cluster().create_database(&name).await.unwrap();
    let store = Arc::new(PostgresStore::open(&url).await.unwrap());
    (url, store)
}

/// A new store on the database at `url` (as another host opens it), for a contract suite's
/// synchronous `reopen`.
fn reopen_blocking(url: &str) -> Arc<PostgresStore> {
    tokio::task::block_in_place(|| {
        tokio::runtime::Handle::current()
            .block_on(async { Arc::new(PostgresStore::open(url).await.unwrap()) })
    })
}

/// The store seen through every storage port the contract suites test.
async fn postgres() -> StorageUnderTest {
    let store = fresh_store().await;
    let seeder = Arc::clone(&store);
    StorageUnderTest::from_ports(
        StoragePorts::from_store(store, "postgres"),
        move |definition| {
            let seeder = Arc::clone(&seeder);
            let definition = definition.clone();
            tokio::task::block_in_place(|| {
                tokio::runtime::Handle::current()
                    .block_on(seeder.save_profile(&definition))
                    .unwrap();
            });
        },
        None,
    )
}

tt_testkit::storage_contract_tests!(postgres().await);

/// The store seen through the skills port, seeded with bytes the way a host's files would be.
async fn postgres_skills() -> tt_testkit::contract::skills::SkillsUnderTest {
    let store = fresh_store().await;
    let seeder = Arc::clone(&store);
    tt_testkit::contract::skills::SkillsUnderTest::new(
        store,
        move |scope, id, path, bytes| {
            let seeder = Arc::clone(&seeder);
            tokio::task::block_in_place(|| {
                tokio::runtime::Handle::current()
                    .block_on(seeder.put_skill_bytes(SkillFileRef::new(scope, id, path), bytes))
                    .unwrap();
            });
        },
        None,
    )
}

tt_testkit::skills_contract_tests!(postgres_skills().await);

/// A fresh database seen through one port of the store (`as_port`); reopening opens a new
/// store on the same database (another host).
async fn fresh_port<R: ?Sized + 'static>(
    prefix: &str,
    as_port: fn(Arc<PostgresStore>) -> Arc<R>,
) -> RepositoryUnderTest<R> {
    let (url, store) = fresh_database(prefix).await;
    RepositoryUnderTest {
        repo: as_port(store),
        reopen: Arc::new(move || as_port(reopen_blocking(&url))),
        _guard: None,
    }
}

tt_testkit::transcripts_contract_tests!(
    fresh_port::<dyn TranscriptRepository>("tt_transcripts", |store| store).await
);
tt_testkit::mcp_servers_contract_tests!(
    fresh_port::<dyn McpServerRepository>("tt_mcp_servers", |store| store).await
);
tt_testkit::connections_contract_tests!(
    fresh_port::<dyn ConnectionRepository>("tt_connections", |store| store).await
);
tt_testkit::preset_templates_contract_tests!(
    fresh_port::<dyn PresetTemplateRepository>("tt_presets", |store| store).await
);
