//! Integration tests of tt-testkit: the storage and skills contract suites run against the
//! in-memory fakes, so they behave like the file-system adapter that runs the same suites.
// Test helpers outside `#[test]` functions fail loudly by design.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use tt_testkit::contract::{SkillsUnderTest, StorageUnderTest};
use tt_testkit::fakes::{InMemorySkills, InMemoryStore};

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

/// A fresh in-memory skill store.
fn in_memory_skills() -> SkillsUnderTest {
    let skills = InMemorySkills::new();
    let seeder = std::sync::Arc::clone(&skills);
    SkillsUnderTest::new(
        skills,
        move |scope, id, path, bytes| seeder.put_file_bytes(scope, id, path, bytes.to_vec()),
        None,
    )
}

tt_testkit::skills_contract_tests!(in_memory_skills());

/// A fresh in-memory transcript store; "reopening" it is another handle on the same entries.
fn in_memory_transcripts() -> tt_testkit::contract::TranscriptsUnderTest {
    let transcripts = std::sync::Arc::new(tt_testkit::fakes::InMemoryTranscripts::default());
    let same = std::sync::Arc::clone(&transcripts);
    tt_testkit::contract::TranscriptsUnderTest {
        repo: transcripts,
        reopen: std::sync::Arc::new(move || same.clone() as _),
        _guard: None,
    }
}

tt_testkit::transcripts_contract_tests!(in_memory_transcripts());

/// In-memory MCP servers; "reopening" is another handle on the same entries.
fn in_memory_mcp_servers() -> tt_testkit::contract::McpServersUnderTest {
    let servers = std::sync::Arc::new(tt_testkit::fakes::InMemoryMcpServers::default());
    let same = std::sync::Arc::clone(&servers);
    tt_testkit::contract::McpServersUnderTest {
        repo: servers,
        reopen: std::sync::Arc::new(move || same.clone() as _),
        _guard: None,
    }
}

tt_testkit::mcp_servers_contract_tests!(in_memory_mcp_servers());

/// In-memory connections; "reopening" is another handle on the same documents.
fn in_memory_connections() -> tt_testkit::contract::ConnectionsUnderTest {
    let connections = std::sync::Arc::new(tt_testkit::fakes::InMemoryConnections::default());
    let same = std::sync::Arc::clone(&connections);
    tt_testkit::contract::ConnectionsUnderTest {
        repo: connections,
        reopen: std::sync::Arc::new(move || same.clone() as _),
        _guard: None,
    }
}

tt_testkit::connections_contract_tests!(in_memory_connections());

/// In-memory preset templates; "reopening" is another handle on the same templates.
fn in_memory_preset_templates() -> tt_testkit::contract::PresetTemplatesUnderTest {
    let templates = std::sync::Arc::new(tt_testkit::fakes::InMemoryPresetTemplates::default());
    let same = std::sync::Arc::clone(&templates);
    tt_testkit::contract::PresetTemplatesUnderTest {
        repo: templates,
        reopen: std::sync::Arc::new(move || same.clone() as _),
        _guard: None,
    }
}

tt_testkit::preset_templates_contract_tests!(in_memory_preset_templates());

/// The storage contract suite again, on the ports a `memory://` URL opens
/// (`tt_testkit::memory_store`): what a runtime gets from its store table.
mod memory_url {
    use std::sync::Arc;
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
        StorageUnderTest {
            runs: ports.runs,
            invocations: ports.invocations,
            journal: ports.journal,
            workspace: ports.workspace,
            profiles: ports.profiles,
            seed_profile: Arc::new(move |definition| seeder.put_profile(definition.clone())),
            _guard: Some(Box::new(stores)),
        }
    }

    tt_testkit::storage_contract_tests!(opened().await);
}
