//! Registered MCP servers, one row per registration (`tt_mcp_servers`: the name and the entry
//! as JSON), so every host sharing the database offers the same servers and catalogs.

use async_trait::async_trait;
use tt_domain::mcp::McpServerEntry;
use tt_ports::{McpServerRepository, StorageResult};

use crate::PostgresStore;
use crate::error::{parse, to_json};
use crate::named_rows::{NamedRows, named_rows};

/// `tt_mcp_servers`: the name and the entry as JSON.
const MCP_SERVERS: NamedRows = named_rows!(
    "tt_mcp_servers",
    "name",
    ", updated_at = clock_timestamp()",
    "MCP server",
    "MCP servers"
);

#[async_trait]
impl McpServerRepository for PostgresStore {
    async fn get_mcp_server(&self, name: &str) -> StorageResult<Option<McpServerEntry>> {
        self.named_document(&MCP_SERVERS, name).await
    }

    async fn list_mcp_servers(&self) -> StorageResult<Vec<McpServerEntry>> {
        let bodies = self.named_bodies(&MCP_SERVERS).await?;
        // One unreadable entry never hides the others.
        Ok(bodies
            .iter()
            .filter_map(|body| parse::<McpServerEntry>("an MCP server", body).ok())
            .collect())
    }

    async fn put_mcp_server(&self, entry: &McpServerEntry) -> StorageResult<()> {
        let name = entry.config.name.as_str();
        let body = to_json(format!("MCP server {name}"), entry)?;
        self.named_put(&MCP_SERVERS, name, &body).await
    }

    async fn remove_mcp_server(&self, name: &str) -> StorageResult<bool> {
        self.named_delete(&MCP_SERVERS, name).await
    }
}
