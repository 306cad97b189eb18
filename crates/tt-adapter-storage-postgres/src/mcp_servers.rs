//! Registered MCP servers, one row per registration (`tt_mcp_servers`: the name and the entry
//! as JSON), so every host sharing the database offers the same servers and catalogs.

use async_trait::async_trait;
use tt_domain::mcp::McpServerEntry;
use tt_ports::{McpServerRepository, StorageResult};

use crate::PostgresStore;
use crate::error::{io, parse, to_json};
use crate::retry::retrying;

#[async_trait]
impl McpServerRepository for PostgresStore {
    async fn get_mcp_server(&self, name: &str) -> StorageResult<Option<McpServerEntry>> {
        retrying(|_| async move {
            let conn = self.pool.get().await?;
            let row = conn
                .query_opt("SELECT body FROM tt_mcp_servers WHERE name = $1", &[&name])
                .await
                .map_err(io(format!("MCP server {name}")))?;
            row.map(|row| parse(format!("MCP server {name}"), row.get(0)))
                .transpose()
        })
        .await
    }

    async fn list_mcp_servers(&self) -> StorageResult<Vec<McpServerEntry>> {
        retrying(|_| async move {
            let conn = self.pool.get().await?;
            let rows = conn
                .query("SELECT body FROM tt_mcp_servers ORDER BY name", &[])
                .await
                .map_err(io("MCP servers"))?;
            // One unreadable entry never hides the others.
            Ok(rows
                .iter()
                .filter_map(|row| parse::<McpServerEntry>("an MCP server", row.get(0)).ok())
                .collect())
        })
        .await
    }

    async fn put_mcp_server(&self, entry: &McpServerEntry) -> StorageResult<()> {
        let name = entry.config.name.as_str();
        let body = to_json(format!("MCP server {name}"), entry)?;
        retrying(|_| {
            let body = body.clone();
            async move {
                let conn = self.pool.get().await?;
                // An upsert: a retried try writes the same row again.
                conn.execute(
                    "INSERT INTO tt_mcp_servers (name, body) VALUES ($1, $2)
                     ON CONFLICT (name) DO UPDATE SET body = EXCLUDED.body,
                         updated_at = clock_timestamp()",
                    &[&name, &body],
                )
                .await
                .map_err(io(format!("MCP server {name}")))?;
                Ok(())
            }
        })
        .await
    }

    async fn remove_mcp_server(&self, name: &str) -> StorageResult<bool> {
        retrying(|_| async move {
            let conn = self.pool.get().await?;
            let removed = conn
                .execute("DELETE FROM tt_mcp_servers WHERE name = $1", &[&name])
                .await
                .map_err(io(format!("MCP server {name}")))?;
            Ok(removed > 0)
        })
        .await
    }
}
