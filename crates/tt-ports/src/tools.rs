//! Tools served from outside the runtime (docs/tools.md): the host's own tools and MCP
//! servers' tools, as the engine reaches them ([`ExternalTools`]: what each one is, and one
//! call), and the MCP client an adapter provides ([`McpClient`]).

use async_trait::async_trait;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;
use tt_domain::ids::RunId;
use tt_domain::mcp::{McpCallOutput, McpServerConfig, McpToolInfo};
use tt_domain::tool_model::{ExternalToolFacts, ExternalToolId};

/// One outside tool as an agent is offered it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExternalToolDefinition {
    pub id: ExternalToolId,
    pub title: Option<String>,
    /// What it does, from the agent's point of view.
    pub description: String,
    /// The JSON schema of its arguments (an object).
    pub input_schema: Value,
    pub facts: ExternalToolFacts,
}

/// One call of an outside tool.
#[derive(Debug, Clone, Copy)]
pub struct ExternalToolCall<'a> {
    pub run_id: &'a RunId,
    pub tool: &'a ExternalToolId,
    /// A JSON object (checked before the call).
    pub arguments: &'a Map<String, Value>,
    /// The call's stable key in the run (`call_<hex16>`, the same on every resume), for a
    /// source that deduplicates.
    pub call_key: &'a str,
}

/// What a call gave back.
#[derive(Debug, Clone, PartialEq)]
pub struct ExternalToolOutput {
    /// The text the agent reads.
    pub text: String,
    /// Structured content, `Null` when none.
    pub structured: Value,
}

/// Why a call or a look-up failed: a listed code, a message for whoever reads it (the agent,
/// for a call), the source's own finer reason, and whether the call may have taken effect.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ToolSourceError {
    pub code: tt_domain::error_codes::Code,
    pub message: String,
    /// The source's own code or reason (a host's error code), kept apart from `code`.
    pub reason: Option<String>,
    /// The call was sent and may have run (a timeout, a server that died mid-call).
    pub may_have_run: bool,
}

impl ToolSourceError {
    pub fn new(code: tt_domain::error_codes::Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            reason: None,
            may_have_run: false,
        }
    }

    /// The same error, marked as one whose call may have run.
    pub fn sent(mut self) -> Self {
        self.may_have_run = true;
        self
    }
}

/// Every outside tool the runtime can offer, and the calls of them. The composition root
/// routes `host/…` ids to the host's handlers and `mcp/…` ids to MCP servers.
#[async_trait]
pub trait ExternalTools: Send + Sync {
    /// The definitions of `tools` as they are now, in the same order, for an agent's tool
    /// snapshot. A tool no source knows is an error (`agent.tool_unavailable`,
    /// `mcp.catalog_invalid`).
    async fn definitions(
        &self,
        tools: &[ExternalToolId],
    ) -> Result<Vec<ExternalToolDefinition>, ToolSourceError>;

    /// Runs one call. An `Ok` whose tool reported a failure is an `Err` with the tool's code
    /// (`tool.host_failed`, `mcp.tool_error`). Cancelling `cancel` stops the call (an MCP
    /// server is sent the protocol's cancellation).
    async fn call(
        &self,
        call: ExternalToolCall<'_>,
        cancel: CancellationToken,
    ) -> Result<ExternalToolOutput, ToolSourceError>;
}

/// No outside tools: every look-up fails and no call can be made.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoExternalTools;

#[async_trait]
impl ExternalTools for NoExternalTools {
    async fn definitions(
        &self,
        tools: &[ExternalToolId],
    ) -> Result<Vec<ExternalToolDefinition>, ToolSourceError> {
        match tools.first() {
            None => Ok(Vec::new()),
            Some(tool) => Err(ToolSourceError::new(
                tt_domain::error_codes::AGENT_TOOL_UNAVAILABLE,
                format!("`{tool}` is not provided by this runtime"),
            )),
        }
    }

    async fn call(
        &self,
        call: ExternalToolCall<'_>,
        _cancel: CancellationToken,
    ) -> Result<ExternalToolOutput, ToolSourceError> {
        Err(ToolSourceError::new(
            tt_domain::error_codes::AGENT_TOOL_UNAVAILABLE,
            format!("`{}` is not provided by this runtime", call.tool),
        ))
    }
}

/// An MCP client: connects to registered servers (starting a stdio server on first use),
/// reads their catalogs and calls their tools, within the bounds of `tt_domain::mcp::limits`.
#[async_trait]
pub trait McpClient: Send + Sync {
    /// Every tool the server lists, all pages (`mcp.catalog_too_large` past the bounds,
    /// `mcp.server_unavailable` when it cannot be reached).
    async fn list_tools(
        &self,
        server: &McpServerConfig,
        cancel: CancellationToken,
    ) -> Result<Vec<McpToolInfo>, ToolSourceError>;

    /// Calls `tool` with `arguments`. A reply with `isError` is `Ok` with `is_error` set; a
    /// timeout (`mcp.call_timeout`) or a server that died mid-call is `Err` marked
    /// [`ToolSourceError::may_have_run`]. Cancelling sends MCP's cancellation.
    async fn call_tool(
        &self,
        server: &McpServerConfig,
        tool: &str,
        arguments: &Map<String, Value>,
        cancel: CancellationToken,
    ) -> Result<McpCallOutput, ToolSourceError>;

    /// Stops every server it started (SIGTERM, then a kill after a grace period) and closes
    /// every connection.
    async fn shutdown(&self);
}
