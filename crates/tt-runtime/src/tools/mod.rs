//! Tools from outside the runtime (docs/tools.md): the host's own tools and MCP servers'
//! tools, routed by id (`host/…` to the host's handlers, `mcp/…` to MCP servers) behind the
//! application's `ExternalTools` port.

pub(crate) mod host_answers;
pub(crate) mod host_tools;
pub(crate) mod mcp_servers;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;
use tt_domain::tool_model::{ExternalSource, ExternalToolId};
use tt_ports::{
    ExternalToolCall, ExternalToolDefinition, ExternalToolOutput, ExternalTools, ToolSourceError,
};

use host_tools::HostTools;
use mcp_servers::McpServers;

/// Every outside tool of one runtime.
#[derive(Debug, Clone)]
pub(crate) struct ToolRouter {
    pub(crate) host: HostTools,
    pub(crate) mcp: McpServers,
}

#[async_trait]
impl ExternalTools for ToolRouter {
    async fn definitions(
        &self,
        tools: &[ExternalToolId],
    ) -> Result<Vec<ExternalToolDefinition>, ToolSourceError> {
        let mut definitions = Vec::with_capacity(tools.len());
        for id in tools {
            let definition = match id.source() {
                ExternalSource::Host { name } => self.host.definition(name).ok_or_else(|| {
                    ToolSourceError::new(
                        tt_domain::error_codes::AGENT_TOOL_UNAVAILABLE,
                        format!("no host tool `{name}` is registered with this runtime"),
                    )
                })?,
                ExternalSource::Mcp { server, tool } => {
                    self.mcp.definition(id, server, tool).await?
                }
            };
            definitions.push(definition);
        }
        Ok(definitions)
    }

    async fn call(
        &self,
        call: ExternalToolCall<'_>,
        cancel: CancellationToken,
    ) -> Result<ExternalToolOutput, ToolSourceError> {
        match call.tool.source() {
            ExternalSource::Host { name } => {
                self.host
                    .call(name, call.run_id, call.arguments, call.call_key, cancel)
                    .await
            }
            ExternalSource::Mcp { server, tool } => {
                self.mcp.call(server, tool, call.arguments, cancel).await
            }
        }
    }
}
