//! The host side of tools from outside (docs/tools.md): registering, listing, refreshing and
//! removing MCP servers, calling one of their tools by hand, listing the host's own tools, and
//! declaring and answering host-answered tools.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tt_domain::error_codes;
use tt_domain::mcp::{McpCallOutput, McpServerConfig};

use super::AgentRuntime;
use crate::dto::{HostError, HostResult};
use crate::tools::host_answers::{AnswerHostToolCallRequest, PendingHostToolCall};
use crate::tools::host_tools::HostTool;
use tt_domain::mcp::McpServerEntry;

/// What the runtime knows of one outside tool, for a host's listing.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSummary {
    /// The tool's id: `host/<name>` or `mcp/<server>:<tool>`.
    pub id: String,
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

/// A host-answered tool as a host declares it at run time (`register_host_tool`): the same
/// facts as [`HostTool`](crate::HostTool)'s builder methods.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RegisterHostToolRequest {
    /// `chat.search`: lowercase words of `a-z0-9_` joined by dots; profiles list `host/<name>`.
    pub name: String,
    pub title: Option<String>,
    /// What the agent reads of the tool, from its point of view.
    pub description: String,
    /// A JSON schema of type `object`.
    pub input_schema: Value,
    #[serde(default)]
    pub reads_only: bool,
    #[serde(default)]
    pub idempotent: bool,
    #[serde(default)]
    pub ask_first: bool,
    pub max_inline_result_bytes: Option<u64>,
    /// How long a call waits for the answer (5 minutes when absent).
    pub answer_timeout_ms: Option<u64>,
}

impl RegisterHostToolRequest {
    fn into_tool(self) -> HostTool {
        let mut tool = HostTool::answered_by_host(self.name, self.description, self.input_schema);
        if let Some(title) = self.title {
            tool = tool.title(title);
        }
        if self.reads_only {
            tool = tool.reads_only();
        }
        if self.idempotent {
            tool = tool.idempotent();
        }
        if self.ask_first {
            tool = tool.ask_first();
        }
        if let Some(bytes) = self.max_inline_result_bytes {
            tool = tool.max_inline_result_bytes(bytes);
        }
        if let Some(ms) = self.answer_timeout_ms {
            tool = tool.answer_timeout(Duration::from_millis(ms));
        }
        tool
    }
}

impl AgentRuntime {
    /// Declares a tool whose calls the host answers through the host API (see
    /// [`HostTool::answered_by_host`]), for a host that registers its tools after the runtime
    /// is built (a webview, a process speaking HTTP). Declaring a host-answered tool again
    /// replaces it for agents that start later; a name a builder-registered handler holds, a
    /// bad name or schema is `tool.id_invalid`.
    pub fn register_host_tool(&self, request: RegisterHostToolRequest) -> HostResult<ToolSummary> {
        self.ensure_open()?;
        let name = request.name.clone();
        self.tools.host.insert(request.into_tool())?;
        self.tools
            .host
            .definition(&name)
            .map(ToolSummary::from)
            .ok_or_else(|| HostError::new(error_codes::TOOL_ID_INVALID, "not registered"))
    }

    /// The calls of host-answered tools in run `run_id` waiting for the host's answer, by
    /// call key. A run this store does not hold is refused with its not-found code.
    pub async fn pending_host_tool_calls(
        &self,
        run_id: &str,
    ) -> HostResult<Vec<PendingHostToolCall>> {
        self.ensure_open()?;
        let pending = self.tools.host.answers.pending_for_run(run_id);
        if pending.is_empty() {
            self.get_run(run_id).await?;
        }
        Ok(pending)
    }

    /// Answers a waiting call of a host-answered tool: `text`/`structured`, or `error` (the
    /// agent reads its message). `host.tool_call_not_pending` when nothing waits under that
    /// key (answered already, cancelled, timed out).
    pub fn answer_host_tool_call(&self, request: AnswerHostToolCallRequest) -> HostResult<()> {
        self.ensure_open()?;
        self.tools.host.answers.answer(request)
    }

    /// Calls of host-answered tools as they start waiting, for a host that pushes them to its
    /// front end; one that falls more than 256 behind misses some and should read
    /// [`pending_host_tool_calls`](Self::pending_host_tool_calls) again.
    pub fn host_tool_call_feed(
        &self,
    ) -> HostResult<tokio::sync::broadcast::Receiver<PendingHostToolCall>> {
        self.ensure_open()?;
        Ok(self.tools.host.answers.subscribe())
    }
}
