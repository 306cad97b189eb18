//! What a host registers, kept in memory: MCP servers (`InMemoryMcpServers`), named model
//! connections (`InMemoryConnections`) and preset templates (`InMemoryPresetTemplates`), with
//! the rules of the file store (they pass the same contract suites).

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use tt_domain::ids::is_valid_storage_segment;
use tt_domain::mcp::McpServerEntry;
use tt_ports::{
    ConnectionRepository, McpServerRepository, PresetKey, PresetTemplateRepository, StorageResult,
};

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Registered MCP servers by name, in memory.
#[derive(Debug, Default)]
pub struct InMemoryMcpServers {
    entries: Mutex<BTreeMap<String, McpServerEntry>>,
}

#[async_trait]
impl McpServerRepository for InMemoryMcpServers {
    async fn get_mcp_server(&self, name: &str) -> StorageResult<Option<McpServerEntry>> {
        Ok(lock(&self.entries).get(name).cloned())
    }

    async fn list_mcp_servers(&self) -> StorageResult<Vec<McpServerEntry>> {
        Ok(lock(&self.entries).values().cloned().collect())
    }

    async fn put_mcp_server(&self, entry: &McpServerEntry) -> StorageResult<()> {
        lock(&self.entries).insert(entry.config.name.clone(), entry.clone());
        Ok(())
    }

    async fn remove_mcp_server(&self, name: &str) -> StorageResult<bool> {
        Ok(lock(&self.entries).remove(name).is_some())
    }
}

/// Named model connection documents by name, in memory.
#[derive(Debug, Default)]
pub struct InMemoryConnections {
    documents: Mutex<BTreeMap<String, String>>,
}

#[async_trait]
impl ConnectionRepository for InMemoryConnections {
    async fn list_connection_names(&self) -> StorageResult<Vec<String>> {
        Ok(lock(&self.documents).keys().cloned().collect())
    }

    async fn read_connection(&self, name: &str) -> StorageResult<Option<String>> {
        Ok(lock(&self.documents).get(name).cloned())
    }

    async fn put_connection(&self, name: &str, document: &str) -> StorageResult<()> {
        tt_ports::store_inputs::check_storage_segment("connection name", name)?;
        lock(&self.documents).insert(name.to_owned(), document.to_owned());
        Ok(())
    }

    async fn remove_connection(&self, name: &str) -> StorageResult<bool> {
        if !is_valid_storage_segment(name) {
            return Ok(false);
        }
        Ok(lock(&self.documents).remove(name).is_some())
    }
}

/// Preset templates by api id and name, in memory.
#[derive(Debug, Default)]
pub struct InMemoryPresetTemplates {
    templates: Mutex<BTreeMap<(String, String), String>>,
}

#[async_trait]
impl PresetTemplateRepository for InMemoryPresetTemplates {
    async fn read_preset_template(&self, key: PresetKey<'_>) -> StorageResult<Option<String>> {
        let key = (key.api_id.to_owned(), key.name.to_owned());
        Ok(lock(&self.templates).get(&key).cloned())
    }

    async fn put_preset_template(&self, key: PresetKey<'_>, template: &str) -> StorageResult<()> {
        tt_ports::store_inputs::check_preset_template_key(key)?;
        let key = (key.api_id.to_owned(), key.name.to_owned());
        lock(&self.templates).insert(key, template.to_owned());
        Ok(())
    }
}
