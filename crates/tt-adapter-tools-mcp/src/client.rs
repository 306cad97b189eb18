//! [`RmcpClient`]: the runtime's [`McpClient`] on rmcp. One connection per server, shared by
//! concurrent calls and started on first use; a server found dead is started once more, and
//! after that its calls fail with `mcp.server_unavailable` until the registration changes.
//! Catalogs are read page by page within `tt_domain::mcp::limits`; calls are bounded in
//! arguments, time and result size, and a cancelled or timed-out call sends MCP's
//! `notifications/cancelled` (rmcp sends it when a request's future is dropped).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{CallToolRequestParams, PaginatedRequestParams};
use serde_json::{Map, Value};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;
use tt_domain::mcp::{McpCallOutput, McpCatalog, McpServerConfig, McpToolInfo, limits};
use tt_ports::tools::{McpClient, ToolSourceError};

use crate::connection::{Connection, connect};
use crate::convert::{call_output, request_failed, tool_info};
use crate::messages::{self, Request};

/// How many times a server is started at most: the first start and one restart.
const MAX_STARTS: u8 = 2;

/// The MCP client of the runtime (see the module header). Cheap to share behind an `Arc`.
#[derive(Default)]
pub struct RmcpClient {
    slots: std::sync::Mutex<HashMap<String, Arc<Slot>>>,
    shut_down: AtomicBool,
}

impl std::fmt::Debug for RmcpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RmcpClient").finish_non_exhaustive()
    }
}

/// One server's connection state.
#[derive(Default)]
struct Slot {
    state: Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    /// The registration the connection was made for; another one starts afresh.
    config: Option<McpServerConfig>,
    connection: Option<Arc<Connection>>,
    starts: u8,
}

fn shutdown_grace() -> Duration {
    Duration::from_millis(limits::SHUTDOWN_GRACE_MS)
}

impl RmcpClient {
    pub fn new() -> Self {
        Self::default()
    }

    fn slot(&self, name: &str) -> Arc<Slot> {
        let mut slots = self
            .slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Arc::clone(slots.entry(name.to_owned()).or_default())
    }

    /// The live connection to `config`'s server, starting (or restarting, once) it.
    async fn connection(
        &self,
        config: &McpServerConfig,
        cancel: &CancellationToken,
    ) -> Result<Arc<Connection>, ToolSourceError> {
        config
            .validate()
            .map_err(|err| messages::invalid(err.message))?;
        if self.shut_down.load(Ordering::Acquire) {
            return Err(messages::shut_down(&config.name));
        }
        let slot = self.slot(&config.name);
        let mut state = tokio::select! {
            state = slot.state.lock() => state,
            () = cancel.cancelled() => return Err(messages::cancelled_start(&config.name)),
        };
        if state.config.as_ref() != Some(config) {
            if let Some(old) = state.connection.take() {
                old.close(shutdown_grace()).await;
            }
            *state = SlotState {
                config: Some(config.clone()),
                ..SlotState::default()
            };
        }
        if let Some(connection) = &state.connection {
            if connection.is_alive() {
                return Ok(Arc::clone(connection));
            }
            tracing::warn!(server = %config.name, "mcp server is gone");
            connection.close(Duration::ZERO).await;
            state.connection = None;
        }
        if state.starts >= MAX_STARTS {
            return Err(messages::not_started_again(&config.name));
        }
        state.starts += 1;
        let started = tokio::select! {
            started = connect(config) => started?,
            () = cancel.cancelled() => {
                // A start the caller gave up on is not the server's failure.
                state.starts -= 1;
                return Err(messages::cancelled_start(&config.name));
            }
        };
        let connection = Arc::new(started);
        if self.shut_down.load(Ordering::Acquire) {
            // Shut down while it started: stop it rather than leave it running.
            connection.close(shutdown_grace()).await;
            return Err(messages::shut_down(&config.name));
        }
        state.connection = Some(Arc::clone(&connection));
        Ok(connection)
    }

    async fn read_catalog(
        &self,
        server: &McpServerConfig,
        connection: &Connection,
    ) -> Result<Vec<McpToolInfo>, ToolSourceError> {
        let name = server.name.as_str();
        let timeout = Duration::from_millis(server.call_timeout_ms);
        let mut tools = Vec::new();
        let mut bytes = 0usize;
        let mut cursor = None;
        for _page in 0..limits::MAX_CATALOG_PAGES {
            let params = PaginatedRequestParams::default().with_cursor(cursor.take());
            let page = tokio::time::timeout(timeout, connection.peer().list_tools(Some(params)))
                .await
                .map_err(|_elapsed| messages::list_timeout(name, server.call_timeout_ms))?
                .map_err(|err| request_failed(name, Request::List, err, connection))?;
            for tool in page.tools {
                let info = tool_info(tool);
                let schema = info.input_schema.to_string().len();
                if schema > limits::MAX_TOOL_SCHEMA_BYTES {
                    return Err(messages::schema_too_large(name, &info.name, schema));
                }
                bytes += schema + info.description.len() + info.name.len();
                if bytes > limits::MAX_CATALOG_BYTES {
                    return Err(messages::catalog_bytes(name));
                }
                tools.push(info);
                if tools.len() > limits::MAX_TOOLS_PER_SERVER {
                    return Err(messages::too_many_tools(name));
                }
            }
            match page.next_cursor {
                // An empty cursor is read as none, as some servers send it on the last page.
                Some(next) if !next.is_empty() => cursor = Some(next),
                _ => return check_catalog(name, tools),
            }
        }
        Err(messages::too_many_pages(name))
    }
}

fn check_catalog(
    server: &str,
    tools: Vec<McpToolInfo>,
) -> Result<Vec<McpToolInfo>, ToolSourceError> {
    let catalog = McpCatalog {
        server: server.to_owned(),
        fetched_at_ms: 0,
        tools,
    };
    catalog
        .check()
        .map_err(|err| ToolSourceError::new(err.code, err.message))?;
    Ok(catalog.tools)
}

fn check_arguments(
    server: &str,
    tool: &str,
    arguments: &Map<String, Value>,
) -> Result<(), ToolSourceError> {
    let mut counter = ByteCounter(0);
    // Counting stops (with an error) as soon as the bound is passed.
    if serde_json::to_writer(&mut counter, arguments).is_err() {
        return Err(messages::arguments_too_large(server, tool));
    }
    Ok(())
}

/// Counts the bytes written, failing once they pass `limits::MAX_ARGUMENT_BYTES`.
struct ByteCounter(usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        if self.0 > limits::MAX_ARGUMENT_BYTES {
            return Err(std::io::Error::other("arguments too large"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[async_trait]
impl McpClient for RmcpClient {
    async fn list_tools(
        &self,
        server: &McpServerConfig,
        cancel: CancellationToken,
    ) -> Result<Vec<McpToolInfo>, ToolSourceError> {
        let connection = self.connection(server, &cancel).await?;
        tokio::select! {
            listed = self.read_catalog(server, &connection) => listed,
            () = cancel.cancelled() => Err(messages::cancelled(&server.name, Request::List)),
        }
    }

    async fn call_tool(
        &self,
        server: &McpServerConfig,
        tool: &str,
        arguments: &Map<String, Value>,
        cancel: CancellationToken,
    ) -> Result<McpCallOutput, ToolSourceError> {
        let name = server.name.as_str();
        check_arguments(name, tool, arguments)?;
        let connection = self.connection(server, &cancel).await?;
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments.clone());
        let timeout = Duration::from_millis(server.call_timeout_ms);
        // Dropping the request future (on timeout or cancellation) makes rmcp send
        // `notifications/cancelled` for it.
        let answer = tokio::select! {
            answer = tokio::time::timeout(timeout, connection.peer().call_tool(params)) => answer,
            () = cancel.cancelled() => return Err(messages::cancelled(name, Request::Call(tool))),
        };
        match answer {
            Err(_elapsed) => Err(messages::call_timeout(name, tool, server.call_timeout_ms)),
            Ok(Err(err)) => Err(request_failed(name, Request::Call(tool), err, &connection)),
            Ok(Ok(result)) => call_output(name, tool, result),
        }
    }

    async fn shutdown(&self) {
        self.shut_down.store(true, Ordering::Release);
        let slots: Vec<Arc<Slot>> = self
            .slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .drain()
            .map(|(_, slot)| slot)
            .collect();
        let mut closing = tokio::task::JoinSet::new();
        for slot in slots {
            closing.spawn(async move {
                let connection = slot.state.lock().await.connection.take();
                if let Some(connection) = connection {
                    connection.close(shutdown_grace()).await;
                }
            });
        }
        while closing.join_next().await.is_some() {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tt_domain::error_codes;

    fn arguments(text_len: usize) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("t".into(), Value::String("x".repeat(text_len)));
        map
    }

    #[test]
    fn arguments_are_bounded_at_256_kib_as_json() {
        // `{"t":""}` is 8 bytes.
        let at_bound = arguments(limits::MAX_ARGUMENT_BYTES - 8);
        assert_eq!(check_arguments("s", "t", &at_bound), Ok(()));
        let over = arguments(limits::MAX_ARGUMENT_BYTES - 7);
        let err = check_arguments("s", "t", &over).unwrap_err();
        assert_eq!(err.code, error_codes::MCP_ARGUMENTS_TOO_LARGE);
        assert!(!err.may_have_run);
    }
}
