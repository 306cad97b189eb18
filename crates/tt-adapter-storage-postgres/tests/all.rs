//! Integration tests of the PostgreSQL store against a throwaway cluster the tests start
//! themselves: the shared storage contract suites (the ones the store implements so far) and
//! the store's own schema checks.
// Test helpers outside `#[test]` functions fail loudly by design.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod pg;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use tt_adapter_storage_postgres::PostgresStore;
use tt_adapter_storage_postgres::cluster::TestCluster;
use tt_ports::ProfileRepository;
use tt_testkit::contract::StorageUnderTest;
use tt_testkit::fakes::InMemoryStore;

/// One cluster per test process; every case gets its own database on it.
pub fn cluster() -> &'static TestCluster {
    static CLUSTER: OnceLock<TestCluster> = OnceLock::new();
    CLUSTER.get_or_init(|| TestCluster::start(false).expect("start a throwaway PostgreSQL"))
}

/// A fresh, migrated database on the shared cluster.
pub async fn fresh_store() -> Arc<PostgresStore> {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let name = format!("tt_case_{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let url = cluster().create_database(&name).await.unwrap();
    Arc::new(PostgresStore::open(&url).await.unwrap())
}

/// The store seen through the ports the contract suites test. The workspace port is not on
/// PostgreSQL yet, so its suite is not run here and the field holds the in-memory fake.
async fn postgres() -> StorageUnderTest {
    let store = fresh_store().await;
    let seeder = Arc::clone(&store);
    StorageUnderTest {
        runs: store.clone(),
        invocations: store.clone(),
        journal: store.clone(),
        workspace: InMemoryStore::new(),
        profiles: store,
        seed_profile: Arc::new(move |definition| {
            let seeder = Arc::clone(&seeder);
            let definition = definition.clone();
            tokio::task::block_in_place(|| {
                tokio::runtime::Handle::current()
                    .block_on(seeder.save_profile(&definition))
                    .unwrap();
            });
        }),
        _guard: None,
    }
}

tt_testkit::__storage_contract_cases! { postgres().await;
    // `create_and_load_run` also lists the run's workspace roots: it joins when the
    // workspace port is on PostgreSQL.
    runs {
        create_run_twice_is_already_exists,
        missing_run_is_not_found,
        save_run_replaces_the_record,
        list_runs_newest_first_with_paging,
        documents_round_trip_and_missing_is_none,
        serialized_documents_read_back_as_written,
    }
    invocations {
        invocations_round_trip_in_creation_order,
        tasks_round_trip_in_creation_order,
        records_of_one_millisecond_list_in_registration_order,
        tasks_are_found_by_parent_and_by_child,
        first_terminal_write_wins,
        concurrent_terminal_transitions_change_once,
    }
    journal {
        seqs_start_at_one_and_are_gapless,
        append_to_missing_run_is_not_found,
        pages_over_ten_thousand_events,
        invocation_filter_includes_related_ids,
        concurrent_appends_are_gapless,
    }
    profiles {
        load_list_and_missing_profiles,
    }
}
