//! Integration tests of the userdata store: the shared storage contract suites, plus the
//! adapter's own durability, layout and path-safety checks.
// Test helpers outside `#[test]` functions (fixtures, assertion helpers) fail loudly by design;
// clippy's test exemption only covers the test functions themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod adapter;

use std::sync::Arc;
use tt_adapter_storage_userdata::UserDataStore;
use tt_testkit::contract::StorageUnderTest;

/// A fresh store in its own temporary data root.
fn userdata() -> StorageUnderTest {
    let dir = tempfile::tempdir().unwrap();
    let store = UserDataStore::open(dir.path().join("data")).unwrap();
    let seeder = Arc::clone(&store);
    StorageUnderTest::from_store(
        store,
        move |definition| seeder.put_profile(definition).unwrap(),
        Some(Box::new(dir)),
    )
}

tt_testkit::storage_contract_tests!(userdata());
