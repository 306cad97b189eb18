//! MCP servers registered with a runtime (docs/tools.md, "MCP servers"): each one's
//! registration and catalog snapshot kept in the store (`McpServerRepository`: files under
//! `<data dir>/mcp/servers/`, or the PostgreSQL store's table), discovered when the server is
//! added and refreshed only when asked; and the MCP side of the outside tools (definitions
//! from the stored catalog, calls through the `McpClient` port).

use serde_json::{Map, Value};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tt_domain::error_codes;
use tt_domain::mcp::{McpCallOutput, McpCatalog, McpServerConfig, McpServerEntry, McpToolInfo};
use tt_domain::tool_model::ExternalToolId;
use tt_ports::{
    Clock, ExternalToolDefinition, ExternalToolOutput, McpClient, McpServerRepository,
    StorageError, ToolSourceError,
};

use crate::dto::{HostError, HostResult};

/// The servers of one store, and the client that reaches them.
#[derive(Clone)]
pub(crate) struct McpServers {
    store: Arc<dyn McpServerRepository>,
    client: Arc<dyn McpClient>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for McpServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServers").finish_non_exhaustive()
    }
}

fn storage_error(err: StorageError) -> HostError {
    HostError::new(err.code(), format!("MCP servers: {err}"))
}

fn not_found(name: &str) -> HostError {
    HostError::new(
        error_codes::MCP_SERVER_NOT_FOUND,
        format!("no MCP server is registered as `{name}`"),
    )
}

fn check_name(name: &str) -> HostResult<()> {
    tt_domain::tool_model::check_mcp_server_name(name)
        .map_err(|err| HostError::new(error_codes::MCP_SERVER_INVALID, err.message))
}

impl McpServers {
    /// Servers kept in `store`.
    pub(crate) fn new(
        store: Arc<dyn McpServerRepository>,
        client: Arc<dyn McpClient>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            store,
            client,
            clock,
        }
    }

    pub(crate) fn client(&self) -> &Arc<dyn McpClient> {
        &self.client
    }

    /// The stored entry of `name`.
    pub(crate) async fn get(&self, name: &str) -> HostResult<McpServerEntry> {
        check_name(name)?;
        self.store
            .get_mcp_server(name)
            .await
            .map_err(storage_error)?
            .ok_or_else(|| not_found(name))
    }

    /// Every stored server, by name; an unreadable entry is skipped.
    pub(crate) async fn list(&self) -> HostResult<Vec<McpServerEntry>> {
        self.store.list_mcp_servers().await.map_err(storage_error)
    }

    async fn put(&self, entry: &McpServerEntry) -> HostResult<()> {
        check_name(&entry.config.name)?;
        self.store
            .put_mcp_server(entry)
            .await
            .map_err(storage_error)
    }

    /// Registers `config` and reads its catalog (all pages) into the entry. A server that
    /// cannot be reached or whose catalog is out of bounds is not registered.
    pub(crate) async fn add(
        &self,
        config: McpServerConfig,
        cancel: CancellationToken,
    ) -> HostResult<McpServerEntry> {
        config
            .validate()
            .map_err(|err| HostError::new(err.code, err.message))?;
        let catalog = self.read_catalog(&config, cancel).await?;
        let entry = McpServerEntry {
            config,
            catalog: Some(catalog),
        };
        self.put(&entry).await?;
        Ok(entry)
    }

    /// Reads `name`'s catalog again and stores it.
    pub(crate) async fn refresh(
        &self,
        name: &str,
        cancel: CancellationToken,
    ) -> HostResult<McpServerEntry> {
        let mut entry = self.get(name).await?;
        entry.catalog = Some(self.read_catalog(&entry.config, cancel).await?);
        self.put(&entry).await?;
        Ok(entry)
    }

    async fn read_catalog(
        &self,
        config: &McpServerConfig,
        cancel: CancellationToken,
    ) -> HostResult<McpCatalog> {
        let tools: Vec<McpToolInfo> = self
            .client
            .list_tools(config, cancel)
            .await
            .map_err(|err| HostError::new(err.code, err.message))?;
        let catalog = McpCatalog {
            server: config.name.clone(),
            fetched_at_ms: u64::try_from(self.clock.now().unix_millis()).unwrap_or(0),
            tools,
        };
        catalog
            .check()
            .map_err(|err| HostError::new(err.code, err.message))?;
        Ok(catalog)
    }

    /// Forgets `name`.
    pub(crate) async fn remove(&self, name: &str) -> HostResult<()> {
        check_name(name)?;
        if self
            .store
            .remove_mcp_server(name)
            .await
            .map_err(storage_error)?
        {
            Ok(())
        } else {
            Err(not_found(name))
        }
    }

    /// The definition of `server`'s `tool` from its stored catalog.
    pub(crate) async fn definition(
        &self,
        id: &ExternalToolId,
        server: &str,
        tool: &str,
    ) -> Result<ExternalToolDefinition, ToolSourceError> {
        let entry = self
            .get(server)
            .await
            .map_err(|err| ToolSourceError::new(error_codes::MCP_CATALOG_INVALID, err.message))?;
        let catalog = entry.catalog.ok_or_else(|| {
            ToolSourceError::new(
                error_codes::MCP_CATALOG_INVALID,
                format!("MCP server `{server}` has no catalog yet: refresh it first"),
            )
        })?;
        let info = catalog.tool(tool).ok_or_else(|| {
            ToolSourceError::new(
                error_codes::MCP_CATALOG_INVALID,
                format!("MCP server `{server}` lists no tool `{tool}` (refresh its catalog?)"),
            )
        })?;
        Ok(ExternalToolDefinition {
            id: id.clone(),
            title: info.title.clone(),
            description: info.description.clone(),
            input_schema: info.input_schema.clone(),
            facts: info.facts(server),
        })
    }

    /// Calls `server`'s `tool`: a reply with `isError` is `mcp.tool_error` with the server's
    /// text.
    pub(crate) async fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: &Map<String, Value>,
        cancel: CancellationToken,
    ) -> Result<ExternalToolOutput, ToolSourceError> {
        let entry = self.get(server).await.map_err(|err| {
            ToolSourceError::new(error_codes::MCP_SERVER_UNAVAILABLE, err.message)
        })?;
        let McpCallOutput {
            text,
            structured,
            is_error,
        } = self
            .client
            .call_tool(&entry.config, tool, arguments, cancel)
            .await?;
        if is_error {
            let message = if text.trim().is_empty() {
                format!("The `{tool}` tool reported a failure without a message.")
            } else {
                text
            };
            return Err(ToolSourceError::new(error_codes::MCP_TOOL_ERROR, message));
        }
        Ok(ExternalToolOutput {
            text,
            structured: structured.unwrap_or(Value::Null),
        })
    }
}
