//! The MCP server port: where registered MCP servers and their catalog snapshots are kept, so
//! every host of one store (a PostgreSQL database shared by many) offers the same servers.
//! Names reach an adapter already checked (`tt_domain::tool_model::check_mcp_server_name`).

use async_trait::async_trait;
use tt_domain::mcp::McpServerEntry;

use crate::error::StorageResult;

#[async_trait]
pub trait McpServerRepository: Send + Sync {
    /// The stored entry of `name`, or `None`. Called on every MCP tool call: an adapter keeps
    /// it cheap (a cache it checks against the store's change marker).
    async fn get_mcp_server(&self, name: &str) -> StorageResult<Option<McpServerEntry>>;

    /// Every stored entry, by name; an entry that cannot be read is left out.
    async fn list_mcp_servers(&self) -> StorageResult<Vec<McpServerEntry>>;

    /// Stores `entry` under its `config.name`, replacing what was there; durable and whole
    /// when it returns (a crash leaves the old entry or the new one).
    async fn put_mcp_server(&self, entry: &McpServerEntry) -> StorageResult<()>;

    /// Forgets `name`; `false` when nothing was stored under it.
    async fn remove_mcp_server(&self, name: &str) -> StorageResult<bool>;
}
