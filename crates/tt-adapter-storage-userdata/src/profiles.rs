//! `ProfileRepository` over `profiles/<profileId>.json`, plus a writer for hosts and tests that
//! seed profile definitions.

use async_trait::async_trait;
use tt_domain::ids::ProfileId;
use tt_domain::profile::AgentProfileDefinition;
use tt_ports::{ProfileRepository, StorageError, StorageResult};

use crate::UserDataStore;
use crate::fsutil::{self, json_file_stems, read_json, write_json_atomic};
use crate::profile_cache::FileStamp;

impl UserDataStore {
    /// Stores a profile definition as `profiles/<id>.json`, replacing any previous one. Blocking
    /// (small synchronous file write); meant for setup code and tests.
    pub fn put_profile(&self, definition: &AgentProfileDefinition) -> StorageResult<()> {
        let dir = self.inner.layout.profiles_dir();
        fsutil::create_dir_all(&dir)?;
        // Profile ids are lowercase letters, digits, `-` and `_` by construction: a safe name.
        write_json_atomic(&dir.join(format!("{}.json", definition.id)), definition)
    }
}

#[async_trait]
impl ProfileRepository for UserDataStore {
    async fn load_profile(&self, id: &ProfileId) -> StorageResult<Option<AgentProfileDefinition>> {
        let path = self.inner.layout.profiles_dir().join(format!("{id}.json"));
        // Stamped before reading: if the file changes in between, the entry is stale at once
        // and the next load reads again.
        let stamp = FileStamp::of(&path);
        if let Some(definition) = stamp
            .as_ref()
            .and_then(|stamp| self.inner.profiles.get(id, stamp))
        {
            // A hit needs no await; yield once anyway, as the read on the blocking pool did.
            // Without it an agent that delegates hundreds of tasks in one round starts every
            // one of them before any of them runs: fanout(256)'s peak memory rose from 16 to
            // 25 MiB and fanout(1024)'s from 33 to 64, and growing the heap cost more CPU than
            // the cache saved.
            tokio::task::yield_now().await;
            return Ok(Some(definition));
        }
        let definition: Option<AgentProfileDefinition> =
            self.blocking(move |_| read_json(&path)).await?;
        if let (Some(stamp), Some(definition)) = (stamp, &definition) {
            self.inner
                .profiles
                .put(id.clone(), stamp, definition.clone());
        }
        Ok(definition)
    }

    async fn list_profile_ids(&self) -> StorageResult<Vec<ProfileId>> {
        self.blocking(|inner| {
            let mut ids: Vec<ProfileId> = json_file_stems(&inner.layout.profiles_dir())?
                .iter()
                .filter_map(|stem| ProfileId::parse(stem).ok())
                .collect();
            ids.sort();
            Ok(ids)
        })
        .await
    }

    async fn save_profile(&self, definition: &AgentProfileDefinition) -> StorageResult<()> {
        let definition = definition.clone();
        self.blocking(move |inner| {
            let dir = inner.layout.profiles_dir();
            fsutil::create_dir_all(&dir)?;
            write_json_atomic(&dir.join(format!("{}.json", definition.id)), &definition)
        })
        .await
    }

    async fn delete_profile(&self, id: &ProfileId) -> StorageResult<bool> {
        let path = self.inner.layout.profiles_dir().join(format!("{id}.json"));
        let id = id.clone();
        // The cache is keyed by the file's stamp: a file that is gone is never served from it.
        self.blocking(move |_| match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(err) if fsutil::is_missing(&err) => Ok(false),
            Err(err) => Err(StorageError::io(format!("profile {id}"), err)),
        })
        .await
    }
}
