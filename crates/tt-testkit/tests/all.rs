//! Integration tests of tt-testkit: the storage and skills contract suites run against the
//! in-memory fakes, so they behave like the file-system adapter that runs the same suites.

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
