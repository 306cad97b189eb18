//! The host side of tools from outside (docs/tools.md): registering, listing, refreshing and
//! removing MCP servers, calling one of their tools by hand, and listing the host's own tools.

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tt_domain::error_codes;
use tt_domain::mcp::{McpCallOutput, McpServerConfig};

use super::AgentRuntime;
use crate::dto::{HostError, HostResult};
use crate::tools::mcp_servers::McpServerEntry;

/// What the runtime knows of one outside tool, for a host's listing.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSummary {
    /// The tool's id: `host/<name>` or `mcp/<server>:<tool>`.
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub description: String,
    pub input_schema: Value,
    pub facts: tt_domain::tool_model::ExternalToolFacts,
}

impl From<tt_ports::ExternalToolDefinition> for ToolSummary {
    fn from(definition: tt_ports::ExternalToolDefinition) -> Self {
        Self {
            id: definition.id.to_string(),
            title: definition.title,
            description: definition.description,
            input_schema: definition.input_schema,
            facts: definition.facts,
        }
    }
}

impl AgentRuntime {
    /// Registers an MCP server and reads its catalog (every page): a server that cannot be
    /// reached, or whose catalog is over the bounds, is not registered (`mcp.server_invalid`,
    /// `mcp.server_unavailable`, `mcp.catalog_too_large`). Registering a name again replaces
    /// it. Its tools are offered only to profiles that list them under `tools.mcp`.
    pub async fn add_mcp_server(&self, config: McpServerConfig) -> HostResult<McpServerEntry> {
        self.ensure_open()?;
        self.tools.mcp.add(config, CancellationToken::new()).await
    }

    /// Every registered MCP server, by name, with its stored catalog.
    pub async fn list_mcp_servers(&self) -> HostResult<Vec<McpServerEntry>> {
        self.ensure_open()?;
        self.tools.mcp.list().await
    }

    /// One registered server (`mcp.server_not_found`), as stored; with `refresh`, its catalog
    /// read again first. Agents already running keep the catalog they started with.
    pub async fn mcp_server(&self, name: &str, refresh: bool) -> HostResult<McpServerEntry> {
        self.ensure_open()?;
        if refresh {
            self.tools.mcp.refresh(name, CancellationToken::new()).await
        } else {
            self.tools.mcp.get(name).await
        }
    }

    /// Forgets a server (`mcp.server_not_found`). Profiles that list its tools can no longer
    /// start agents (`mcp.catalog_invalid`); agents already running fail their next call.
    pub async fn remove_mcp_server(&self, name: &str) -> HostResult<()> {
        self.ensure_open()?;
        self.tools.mcp.remove(name).await
    }

    /// Calls one tool of a registered server by hand, outside any run (`tt-agent mcp call`).
    /// `arguments` must be a JSON object. A reply with `isError` comes back as it is.
    pub async fn call_mcp_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
    ) -> HostResult<McpCallOutput> {
        self.ensure_open()?;
        let Value::Object(arguments) = arguments else {
            return Err(HostError::new(
                error_codes::TOOL_INVALID_ARGUMENTS,
                "the arguments must be a JSON object",
            ));
        };
        let entry = self.tools.mcp.get(server).await?;
        self.tools
            .mcp
            .client()
            .call_tool(&entry.config, tool, &arguments, CancellationToken::new())
            .await
            .map_err(|err| HostError::new(err.code, err.message))
    }

    /// The host tools registered on the builder, by name.
    pub fn list_host_tools(&self) -> Vec<ToolSummary> {
        self.tools
            .host
            .definitions()
            .into_iter()
            .map(ToolSummary::from)
            .collect()
    }
}
