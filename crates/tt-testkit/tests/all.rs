//! Integration tests of tt-testkit: the storage contract suites run against the in-memory
//! fake, so it behaves like the file-system adapter that runs the same suites.

use tt_testkit::contract::StorageUnderTest;
use tt_testkit::fakes::InMemoryStore;

/// A fresh in-memory store.
fn in_memory() -> StorageUnderTest {
    let store = InMemoryStore::new();
    let seeder = std::sync::Arc::clone(&store);
    StorageUnderTest::from_store(
        store,
        move |definition| seeder.put_profile(definition.clone()),
        None,
    )
}

tt_testkit::storage_contract_tests!(in_memory());
