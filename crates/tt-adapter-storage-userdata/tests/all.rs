//! Integration tests of the userdata store: the shared storage and skills contract suites, plus
//! the adapter's own durability, layout and path-safety checks.
// Test helpers outside `#[test]` functions (fixtures, assertion helpers) fail loudly by design;
// clippy's test exemption only covers the test functions themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod adapter;

use std::sync::Arc;
use tt_adapter_storage_userdata::UserDataStore;
use tt_testkit::contract::{SkillsUnderTest, StorageUnderTest};

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

/// A fresh data dir's MCP server files; reopening reads them through a new handle.
fn userdata_mcp_servers() -> tt_testkit::contract::McpServersUnderTest {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("data");
    let files = tt_adapter_storage_userdata::McpServerFiles::in_data_dir(&root);
    tt_testkit::contract::McpServersUnderTest {
        repo: std::sync::Arc::new(files),
        reopen: std::sync::Arc::new(move || {
            std::sync::Arc::new(tt_adapter_storage_userdata::McpServerFiles::in_data_dir(
                &root,
            )) as _
        }),
        _guard: Some(Box::new(dir)),
    }
}

tt_testkit::mcp_servers_contract_tests!(userdata_mcp_servers());

/// A fresh data dir's connection files; reopening reads them through a new handle.
fn userdata_connections() -> tt_testkit::contract::ConnectionsUnderTest {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("data");
    let files = tt_adapter_storage_userdata::ConnectionFiles::in_data_dir(&root);
    tt_testkit::contract::ConnectionsUnderTest {
        repo: std::sync::Arc::new(files),
        reopen: std::sync::Arc::new(move || {
            std::sync::Arc::new(tt_adapter_storage_userdata::ConnectionFiles::in_data_dir(
                &root,
            )) as _
        }),
        _guard: Some(Box::new(dir)),
    }
}

tt_testkit::connections_contract_tests!(userdata_connections());

/// A fresh data dir's preset template files; reopening reads them through a new handle.
fn userdata_preset_templates() -> tt_testkit::contract::PresetTemplatesUnderTest {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("data");
    let files = tt_adapter_storage_userdata::PresetTemplateFiles::in_data_dir(&root);
    tt_testkit::contract::PresetTemplatesUnderTest {
        repo: std::sync::Arc::new(files),
        reopen: std::sync::Arc::new(move || {
            std::sync::Arc::new(
                tt_adapter_storage_userdata::PresetTemplateFiles::in_data_dir(&root),
            ) as _
        }),
        _guard: Some(Box::new(dir)),
    }
}

tt_testkit::preset_templates_contract_tests!(userdata_preset_templates());
