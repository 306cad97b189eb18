//! MCP servers registered with a runtime (docs/tools.md, "MCP servers"): each one's
//! registration and catalog snapshot kept in `<data dir>/mcp/servers/<name>.json`, discovered
//! when the server is added and refreshed only when asked; and the MCP side of the outside
//! tools (definitions from the stored catalog, calls through the `McpClient` port).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use tokio_util::sync::CancellationToken;
use tt_domain::error_codes;
use tt_domain::mcp::{McpCallOutput, McpCatalog, McpServerConfig, McpToolInfo};
use tt_domain::tool_model::ExternalToolId;
use tt_ports::{Clock, ExternalToolDefinition, ExternalToolOutput, McpClient, ToolSourceError};

use crate::dto::{HostError, HostResult};

/// One stored server: its registration and the catalog last read from it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerEntry {
    pub config: McpServerConfig,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog: Option<McpCatalog>,
}

/// The servers of one data dir, and the client that reaches them.
#[derive(Clone)]
pub(crate) struct McpServers {
    dir: Option<PathBuf>,
    client: Arc<dyn McpClient>,
    clock: Arc<dyn Clock>,
    /// Entries read, by name, with the file's modification time and length when read: a call
    /// checks the file's metadata instead of reading and parsing it again, and still sees an
    /// entry another process registered since.
    read: Arc<Mutex<HashMap<String, (FileStamp, McpServerEntry)>>>,
}

/// What tells a file changed: its modification time and its length.
type FileStamp = (Option<std::time::SystemTime>, u64);

impl std::fmt::Debug for McpServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServers")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

fn storage_error(message: String) -> HostError {
    HostError::new(error_codes::AGENT_STORAGE_IO, message)
}

fn not_found(name: &str) -> HostError {
    HostError::new(
        error_codes::MCP_SERVER_NOT_FOUND,
        format!("no MCP server is registered as `{name}`"),
    )
}

impl McpServers {
    /// Servers kept under `dir` (`None`: a runtime without a data dir keeps none).
    pub(crate) fn new(
        dir: Option<PathBuf>,
        client: Arc<dyn McpClient>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            dir,
            client,
            clock,
            read: Arc::default(),
        }
    }

    pub(crate) fn client(&self) -> &Arc<dyn McpClient> {
        &self.client
    }

    fn path(&self, name: &str) -> HostResult<PathBuf> {
        tt_domain::tool_model::check_mcp_server_name(name)
            .map_err(|err| HostError::new(error_codes::MCP_SERVER_INVALID, err.message))?;
        let dir = self.dir.as_ref().ok_or_else(|| {
            HostError::new(
                error_codes::MCP_SERVER_INVALID,
                "this runtime has no data dir to keep MCP servers in",
            )
        })?;
        Ok(dir.join(format!("{name}.json")))
    }

    /// The stored entry of `name` (read again only when its file changed).
    pub(crate) async fn get(&self, name: &str) -> HostResult<McpServerEntry> {
        let path = self.path(name)?;
        let stamp = match tokio::fs::metadata(&path).await {
            Ok(meta) => (meta.modified().ok(), meta.len()),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Err(not_found(name));
            }
            Err(err) => {
                return Err(storage_error(format!(
                    "MCP server `{name}` could not be read: {err}"
                )));
            }
        };
        if let Some((known, entry)) = self.cached().get(name)
            && *known == stamp
        {
            return Ok(entry.clone());
        }
        let text = match tokio::fs::read_to_string(&path).await {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Err(not_found(name));
            }
            Err(err) => {
                return Err(storage_error(format!(
                    "MCP server `{name}` could not be read: {err}"
                )));
            }
        };
        let entry: McpServerEntry = serde_json::from_str(&text).map_err(|err| {
            HostError::new(
                error_codes::AGENT_STORAGE_CORRUPT,
                format!("MCP server `{name}`'s stored entry is unreadable: {err}"),
            )
        })?;
        self.cached()
            .insert(name.to_owned(), (stamp, entry.clone()));
        Ok(entry)
    }

    fn cached(&self) -> std::sync::MutexGuard<'_, HashMap<String, (FileStamp, McpServerEntry)>> {
        self.read.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Every stored server, by name; an unreadable entry is skipped.
    pub(crate) async fn list(&self) -> HostResult<Vec<McpServerEntry>> {
        let Some(dir) = &self.dir else {
            return Ok(Vec::new());
        };
        let mut names = Vec::new();
        let mut entries = match tokio::fs::read_dir(dir).await {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(err) => return Err(storage_error(format!("MCP servers: {err}"))),
        };
        while let Some(entry) = entries
            .next_entry()
            .await
            .map_err(|err| storage_error(format!("MCP servers: {err}")))?
        {
            let file = entry.file_name();
            if let Some(name) = file.to_str().and_then(|file| file.strip_suffix(".json")) {
                names.push(name.to_owned());
            }
        }
        names.sort();
        let mut servers = Vec::with_capacity(names.len());
        for name in names {
            if let Ok(entry) = self.get(&name).await {
                servers.push(entry);
            }
        }
        Ok(servers)
    }

    async fn put(&self, entry: &McpServerEntry) -> HostResult<()> {
        let path = self.path(&entry.config.name)?;
        if let Some(dir) = path.parent() {
            tokio::fs::create_dir_all(dir)
                .await
                .map_err(|err| storage_error(format!("MCP servers: {err}")))?;
        }
        let text = serde_json::to_string_pretty(entry)
            .map_err(|err| storage_error(format!("MCP server: {err}")))?;
        // Written aside and renamed over, so a crash leaves the old entry or the new one.
        let temporary = path.with_extension("json.tmp");
        tokio::fs::write(&temporary, text)
            .await
            .map_err(|err| storage_error(format!("MCP server: {err}")))?;
        tokio::fs::rename(&temporary, &path)
            .await
            .map_err(|err| storage_error(format!("MCP server: {err}")))
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
        let path = self.path(name)?;
        self.cached().remove(name);
        match tokio::fs::remove_file(&path).await {
            Ok(()) => Ok(()),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Err(not_found(name)),
            Err(err) => Err(storage_error(format!("MCP server `{name}`: {err}"))),
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
