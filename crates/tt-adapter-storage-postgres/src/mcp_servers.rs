//! Registered MCP servers, one row per registration (`tt_mcp_servers`: the name and the entry
//! as JSON), so every host sharing the database offers the same servers and catalogs.

use async_trait::async_trait;
use tt_domain::mcp::McpServerEntry;
use tt_ports::{McpServerRepository, StorageResult};

use crate::PostgresStore;
use crate::error::{parse, to_json};

#[async_trait]
impl McpServerRepository for PostgresStore {
    async fn get_mcp_server(&self, name: &str) -> StorageResult<Option<McpServerEntry>> {
        self.document(
            "SELECT body FROM tt_mcp_servers WHERE name = $1",
            &[&name],
            &format!("MCP server {name}"),
        )
        .await
    }

    async fn list_mcp_servers(&self) -> StorageResult<Vec<McpServerEntry>> {
        let rows = self
            .rows(
                "SELECT body FROM tt_mcp_servers ORDER BY name",
                &[],
                "MCP servers",
            )
            .await?;
        // One unreadable entry never hides the others.
        Ok(rows
            .iter()
            .filter_map(|row| parse::<McpServerEntry>("an MCP server", row.get(0)).ok())
            .collect())
    }

    async fn put_mcp_server(&self, entry: &McpServerEntry) -> StorageResult<()> {
        let name = entry.config.name.as_str();
        let body = to_json(format!("MCP server {name}"), entry)?;
        // An upsert: a retried try writes the same row again.
        self.affected(
            "INSERT INTO tt_mcp_servers (name, body) VALUES ($1, $2)
             ON CONFLICT (name) DO UPDATE SET body = EXCLUDED.body,
                 updated_at = clock_timestamp()",
            &[&name, &body],
            &format!("MCP server {name}"),
        )
        .await
        .map(drop)
    }

    async fn remove_mcp_server(&self, name: &str) -> StorageResult<bool> {
        let removed = self
            .affected(
                "DELETE FROM tt_mcp_servers WHERE name = $1",
                &[&name],
                &format!("MCP server {name}"),
            )
            .await?;
        Ok(removed > 0)
    }
}
