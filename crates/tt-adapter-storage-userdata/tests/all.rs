//! Integration tests of the userdata store: the shared storage and skills contract suites, plus
//! the adapter's own durability, layout and path-safety checks.
// Test helpers outside `#[test]` functions (fixtures, assertion helpers) fail loudly by design;
// clippy's test exemption only covers the test functions themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod adapter;

use std::path::Path;
use std::sync::Arc;
use tt_adapter_storage_userdata::{
    ConnectionFiles, McpServerFiles, PresetTemplateFiles, UserDataStore,
};
use tt_ports::{ConnectionRepository, McpServerRepository, PresetTemplateRepository, StoragePorts};
use tt_testkit::contract::{RepositoryUnderTest, SkillsUnderTest, StorageUnderTest};

/// A fresh store in its own temporary data root.
fn userdata() -> StorageUnderTest {
    let dir = tempfile::tempdir().unwrap();
    let store = UserDataStore::open(dir.path().join("data")).unwrap();
    let seeder = Arc::clone(&store);
    StorageUnderTest::from_ports(
        StoragePorts::from_store(store, "userdata"),
        move |definition| seeder.put_profile(definition).unwrap(),
        Some(Box::new(dir)),
    )
}

tt_testkit::storage_contract_tests!(userdata());

/// A fresh store in its own temporary data root, seen as a skill store. Skill text is seeded
/// with plain file writes so non-UTF-8 bytes can be stored too.
fn userdata_skills() -> SkillsUnderTest {
    let dir = tempfile::tempdir().unwrap();
    let store = UserDataStore::open(dir.path().join("data")).unwrap();
    let skills_root = dir.path().join("data").join("skills");
    SkillsUnderTest::new(
        store,
        move |scope, id, path, bytes| {
            let mut file = skills_root.clone();
            for segment in scope.storage_segments().unwrap() {
                file.push(segment);
            }
            file.push(id.as_str());
            for segment in path.segments() {
                file.push(segment);
            }
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, bytes).unwrap();
        },
        Some(Box::new(dir)),
    )
}

tt_testkit::skills_contract_tests!(userdata_skills());

/// A fresh data dir seen through the transcript port; reopening reads it with a read-only store.
fn userdata_transcripts() -> tt_testkit::contract::TranscriptsUnderTest {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("data");
    let store = UserDataStore::open(root.clone()).unwrap();
    tt_testkit::contract::TranscriptsUnderTest {
        repo: store,
        reopen: std::sync::Arc::new(move || UserDataStore::open_read_only(root.clone()) as _),
        _guard: Some(Box::new(dir)),
    }
}

tt_testkit::transcripts_contract_tests!(userdata_transcripts());

/// A fresh data dir's files of one store (`open` makes a handle on them in a data dir);
/// reopening reads them through a new handle.
fn files_in_fresh_data_dir<R: ?Sized + 'static>(
    open: fn(&Path) -> Arc<R>,
) -> RepositoryUnderTest<R> {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("data");
    RepositoryUnderTest {
        repo: open(&root),
        reopen: Arc::new(move || open(&root)),
        _guard: Some(Box::new(dir)),
    }
}

tt_testkit::mcp_servers_contract_tests!(files_in_fresh_data_dir::<dyn McpServerRepository>(
    |root| Arc::new(McpServerFiles::in_data_dir(root))
));
tt_testkit::connections_contract_tests!(files_in_fresh_data_dir::<dyn ConnectionRepository>(
    |root| Arc::new(ConnectionFiles::in_data_dir(root))
));
tt_testkit::preset_templates_contract_tests!(
    files_in_fresh_data_dir::<dyn PresetTemplateRepository>(|root| Arc::new(
        PresetTemplateFiles::in_data_dir(root)
    ))
);
