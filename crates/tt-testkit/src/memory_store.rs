//! `memory://<name>`: the in-memory fakes as a store a runtime opens by URL, for embedders'
//! tests. Register [`MemoryStores`] in the runtime's store table
//! (`tt_runtime::StoreRegistry::register`); every URL of one name opens the same stores, so
//! two runtimes of a test can share runs as two hosts of one database do. Nothing survives the
//! `MemoryStores` value.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use tt_ports::{StorageError, StoragePorts, StorageResult, StoreFactory, StoreOptions};

use crate::fakes::{
    InMemoryConnections, InMemoryMcpServers, InMemoryPresetTemplates, InMemorySkills,
    InMemoryStore, InMemoryTranscripts,
};

/// The scheme [`MemoryStores`] opens.
pub const MEMORY_SCHEME: &str = "memory";

/// Every store of one `memory://<name>`.
#[derive(Clone)]
pub struct MemoryStore {
    pub store: Arc<InMemoryStore>,
    pub skills: Arc<InMemorySkills>,
    pub transcripts: Arc<InMemoryTranscripts>,
    pub mcp_servers: Arc<InMemoryMcpServers>,
    pub connections: Arc<InMemoryConnections>,
    pub preset_templates: Arc<InMemoryPresetTemplates>,
}

impl MemoryStore {
    fn new() -> Self {
        Self {
            store: InMemoryStore::new(),
            skills: InMemorySkills::new(),
            transcripts: Arc::default(),
            mcp_servers: Arc::default(),
            connections: Arc::default(),
            preset_templates: Arc::default(),
        }
    }

    /// These stores seen through every storage port.
    pub fn ports(&self, description: impl Into<String>) -> StoragePorts {
        StoragePorts::from_store(Arc::clone(&self.store), description)
            .with_skills(Arc::clone(&self.skills) as _)
            .with_transcripts(Arc::clone(&self.transcripts) as _)
            .with_mcp_servers(Arc::clone(&self.mcp_servers) as _)
            .with_connections(Arc::clone(&self.connections) as _)
            .with_preset_templates(Arc::clone(&self.preset_templates) as _)
    }
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore").finish_non_exhaustive()
    }
}

/// The `memory` scheme's factory: in-memory stores by name (`memory://` alone is the name
/// `default`).
#[derive(Debug, Default)]
pub struct MemoryStores {
    named: Mutex<HashMap<String, MemoryStore>>,
}

impl MemoryStores {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The stores `memory://<name>` opened, for a test to look into; `None` before any.
    pub fn get(&self, name: &str) -> Option<MemoryStore> {
        self.named
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .cloned()
    }
}

/// The name a `memory://` URL gives: what follows the scheme, `default` when nothing does.
fn store_name(url: &str) -> StorageResult<String> {
    let rest = url
        .split_once("://")
        .map(|(_, rest)| rest)
        .ok_or_else(|| StorageError::Other(format!("`{url}` is not a memory:// URL")))?;
    let name = rest.trim_end_matches('/');
    if name.is_empty() {
        return Ok("default".to_owned());
    }
    tt_ports::store_inputs::check_storage_segment("memory store name", name)?;
    Ok(name.to_owned())
}

#[async_trait]
impl StoreFactory for MemoryStores {
    fn schemes(&self) -> Vec<String> {
        vec![MEMORY_SCHEME.to_owned()]
    }

    fn example(&self) -> String {
        "memory://<name>".to_owned()
    }

    async fn open(&self, url: &str, _options: &StoreOptions) -> StorageResult<StoragePorts> {
        let name = store_name(url)?;
        let store = self
            .named
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(name.clone())
            .or_insert_with(MemoryStore::new)
            .clone();
        Ok(store.ports(format!("memory://{name}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_name_opens_the_same_stores_and_names_are_checked() {
        let stores = MemoryStores::new();
        let options = StoreOptions::default();
        let a = stores.open("memory://a", &options).await.unwrap();
        let again = stores.open("memory://a/", &options).await.unwrap();
        assert!(Arc::ptr_eq(&a.runs, &again.runs));
        let other = stores.open("memory://", &options).await.unwrap();
        assert!(!Arc::ptr_eq(&a.runs, &other.runs));
        assert_eq!(other.description, "memory://default");
        assert!(stores.get("a").is_some());
        let err = stores.open("memory://../x", &options).await.unwrap_err();
        assert_eq!(err.code(), "agent.storage_segment_invalid");
    }
}
