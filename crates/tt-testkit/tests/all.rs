//! Integration tests of tt-testkit: the storage and skills contract suites run against the
//! in-memory fakes, so they behave like the file-system adapter that runs the same suites.
// Test helpers outside `#[test]` functions fail loudly by design.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use tt_ports::{
    ConnectionRepository, McpServerRepository, PresetTemplateRepository, TranscriptRepository,
};
use tt_testkit::contract::{RepositoryUnderTest, SkillsUnderTest, StorageUnderTest};
use tt_testkit::fakes::{self, InMemorySkills, InMemoryStore};

/// A fresh in-memory store.
fn in_memory() -> StorageUnderTest {
    let store = InMemoryStore::new();
    let seeder = Arc::clone(&store);
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
    let seeder = Arc::clone(&skills);
    SkillsUnderTest::new(
        skills,
        move |scope, id, path, bytes| seeder.put_file_bytes(scope, id, path, bytes.to_vec()),
        None,
    )
}

tt_testkit::skills_contract_tests!(in_memory_skills());

/// An in-memory store kept apart from runs under test; "reopening" it is another handle on the
/// same entries.
fn in_memory_repository<R: ?Sized + Send + Sync + 'static>(repo: Arc<R>) -> RepositoryUnderTest<R> {
    let same = Arc::clone(&repo);
    RepositoryUnderTest {
        repo,
        reopen: Arc::new(move || Arc::clone(&same)),
        _guard: None,
    }
}

tt_testkit::transcripts_contract_tests!(in_memory_repository::<dyn TranscriptRepository>(
    Arc::new(fakes::InMemoryTranscripts::default())
));
tt_testkit::mcp_servers_contract_tests!(in_memory_repository::<dyn McpServerRepository>(Arc::new(
    fakes::InMemoryMcpServers::default()
)));
tt_testkit::connections_contract_tests!(in_memory_repository::<dyn ConnectionRepository>(
    Arc::new(fakes::InMemoryConnections::default())
));
tt_testkit::preset_templates_contract_tests!(in_memory_repository::<dyn PresetTemplateRepository>(
    Arc::new(fakes::InMemoryPresetTemplates::default())
));

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
