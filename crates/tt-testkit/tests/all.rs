//! Integration tests of tt-testkit: the storage and skills contract suites run against the
//! in-memory fakes, so they behave like the file-system adapter that runs the same suites.
// Test helpers outside `#[test]` functions fail loudly by design.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use tt_ports::StoragePorts;
use tt_testkit::contract::{
    ConnectionsUnderTest, McpServersUnderTest, PresetTemplatesUnderTest, SkillsUnderTest,
    StorageUnderTest, TranscriptsUnderTest,
};
use tt_testkit::fakes::{
    InMemoryConnections, InMemoryMcpServers, InMemoryPresetTemplates, InMemorySkills,
    InMemoryStore, InMemoryTranscripts,
};

/// A fresh in-memory store.
fn in_memory() -> StorageUnderTest {
    let store = InMemoryStore::new();
    let seeder = Arc::clone(&store);
    StorageUnderTest::from_ports(
        StoragePorts::from_store(store, "memory"),
        move |definition| seeder.put_profile(definition.clone()),
        None,
    )
}

tt_testkit::storage_contract_tests!(in_memory());

/// A fresh in-memory skill store.
fn in_memory_skills() -> SkillsUnderTest {
    let skills = InMemorySkills::new();
    let seeder = Arc::clone(&skills);
    SkillsUnderTest::new(
        skills,
        move |scope, id, path, bytes| seeder.put_file_bytes(scope, id, path, bytes.to_vec()),
        None,
    )
}

tt_testkit::skills_contract_tests!(in_memory_skills());

// The stores kept apart from runs, each in memory: "reopening" one is another handle on the
// same data.
tt_testkit::transcripts_contract_tests!(TranscriptsUnderTest::shared(Arc::new(
    InMemoryTranscripts::default()
)));
tt_testkit::mcp_servers_contract_tests!(McpServersUnderTest::shared(Arc::new(
    InMemoryMcpServers::default()
)));
tt_testkit::connections_contract_tests!(ConnectionsUnderTest::shared(Arc::new(
    InMemoryConnections::default()
)));
tt_testkit::preset_templates_contract_tests!(PresetTemplatesUnderTest::shared(Arc::new(
    InMemoryPresetTemplates::default()
)));

/// The storage contract suite again, on the ports a `memory://` URL opens
/// (`tt_testkit::memory_store`): what a runtime gets from its store table.
mod memory_url {
    use tt_ports::{StoreFactory, StoreOptions};
    use tt_testkit::contract::StorageUnderTest;
    use tt_testkit::memory_store::MemoryStores;

    async fn opened() -> StorageUnderTest {
        let stores = MemoryStores::new();
        let ports = stores
            .open("memory://contract", &StoreOptions::default())
            .await
            .unwrap();
        let seeder = stores.get("contract").unwrap().store;
        StorageUnderTest::from_ports(
            ports,
            move |definition| seeder.put_profile(definition.clone()),
            Some(Box::new(stores)),
        )
    }

    tt_testkit::storage_contract_tests!(opened().await);
}
