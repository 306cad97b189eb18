//! One live connection to a server: a stdio child's pipes or a Streamable HTTP session, with
//! rmcp's client on top (handshake, requests, `notifications/cancelled`). A connection is
//! alive while its transport is open and, for stdio, its process runs.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{ClientInitializeError, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{Peer, ServiceExt};
use tokio::sync::Mutex;
use tt_domain::mcp::{McpServerConfig, McpTransport, limits};
use tt_ports::tools::ToolSourceError;

use crate::child::{Launch, ServerProcess};
use crate::messages;

/// The largest JSON body or SSE event taken from an HTTP server: a 4 MiB result may grow
/// when escaped as JSON; anything past this is refused by the transport, never cut.
const MAX_HTTP_MESSAGE_BYTES: usize = 4 * limits::MAX_RESULT_BYTES;

/// The least time a server gets to start and finish the MCP handshake: starting a server
/// (an interpreter, a package) often takes longer than one call may.
pub(crate) const MIN_START_TIMEOUT_MS: u64 = 30_000;

/// How many times a lost HTTP event stream is resumed before its requests fail.
const SSE_RETRIES: usize = 3;

type Service = RunningService<RoleClient, ClientConfig>;

/// A started connection. Requests go through [`Connection::peer`], which many calls share.
pub(crate) struct Connection {
    peer: Peer<RoleClient>,
    /// Set when a request found the transport closed, before the SDK may have noticed.
    broken: AtomicBool,
    service: Mutex<Option<Service>>,
    process: Option<ServerProcess>,
}

impl Connection {
    pub(crate) fn peer(&self) -> &Peer<RoleClient> {
        &self.peer
    }

    /// Whether the server can still be reached over this connection.
    pub(crate) fn is_alive(&self) -> bool {
        !self.broken.load(Ordering::Acquire)
            && !self.peer.is_transport_closed()
            && self
                .process
                .as_ref()
                .is_none_or(|process| !process.has_exited())
    }

    /// Marks the connection as gone: the next use starts the server again (once).
    pub(crate) fn mark_broken(&self) {
        self.broken.store(true, Ordering::Release);
    }

    /// Closes the session (stdin for a stdio server), then stops the process: SIGTERM, and a
    /// kill after `grace`.
    pub(crate) async fn close(&self, grace: Duration) {
        if let Some(mut service) = self.service.lock().await.take() {
            // Closing the transport may wait on a server that reads no more; bound it.
            let _closed = service.close_with_timeout(grace).await;
        }
        if let Some(process) = &self.process {
            process.stop(grace).await;
        }
    }
}

fn client_identity() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("tt-agent-runtime", env!("CARGO_PKG_VERSION")),
    )
}

/// Starts a connection (spawning a stdio server), with the handshake bounded by the server's
/// call timeout or [`MIN_START_TIMEOUT_MS`], whichever is longer.
pub(crate) async fn connect(config: &McpServerConfig) -> Result<Connection, ToolSourceError> {
    let name = config.name.as_str();
    let start_timeout_ms = config.call_timeout_ms.max(MIN_START_TIMEOUT_MS);
    let timeout = Duration::from_millis(start_timeout_ms);
    let (process, started) = match &config.transport {
        McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let launch = Launch {
                server: name,
                command,
                args,
                env,
                cwd: cwd.as_deref(),
            };
            let (process, stdout, stdin) =
                ServerProcess::spawn(&launch).map_err(|err| messages::start_failed(name, err))?;
            let transport = AsyncRwTransport::new_client(stdout, stdin);
            let started = tokio::time::timeout(timeout, client_identity().serve(transport)).await;
            (Some(process), started)
        }
        McpTransport::Http { url, headers } => {
            let transport =
                StreamableHttpClientTransport::from_config(http_config(name, url, headers)?);
            let started = tokio::time::timeout(timeout, client_identity().serve(transport)).await;
            (None, started)
        }
    };
    let service = match started {
        Ok(Ok(service)) => service,
        Ok(Err(err)) => return Err(handshake_failed(name, &err, process).await),
        Err(_elapsed) => {
            if let Some(process) = &process {
                process.stop(Duration::ZERO).await;
            }
            return Err(messages::start_timeout(name, start_timeout_ms));
        }
    };
    let peer = service.peer().clone();
    // Catalogs are read when asked and stored by the caller; the SDK must not answer from
    // its own cache.
    peer.set_response_cache_config(rmcp::service::ClientCacheConfig::disabled())
        .await;
    Ok(Connection {
        peer,
        broken: AtomicBool::new(false),
        service: Mutex::new(Some(service)),
        process,
    })
}

async fn handshake_failed(
    name: &str,
    err: &ClientInitializeError,
    process: Option<ServerProcess>,
) -> ToolSourceError {
    if let Some(process) = &process {
        process.stop(Duration::ZERO).await;
    }
    messages::handshake_failed(name, err)
}

/// The SDK's HTTP client takes rustls's process-wide crypto provider. Unless the host has
/// installed one, this installs ring, the provider the model adapters' HTTP client uses.
fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Another thread may have installed one meanwhile; either is fine.
        let _installed = rustls::crypto::ring::default_provider().install_default();
    }
}

/// Headers the SDK sets itself on every request; a registration may not set them.
const SDK_HEADERS: &[&str] = &[
    "accept",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

fn http_config(
    name: &str,
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<StreamableHttpClientTransportConfig, ToolSourceError> {
    let mut custom = HashMap::new();
    for (key, value) in headers {
        if SDK_HEADERS.contains(&key.to_ascii_lowercase().as_str()) {
            return Err(messages::sdk_header(name, key));
        }
        let header = http::HeaderName::from_bytes(key.as_bytes())
            .map_err(|_| messages::bad_header_name(name, key))?;
        let value = http::HeaderValue::from_str(value)
            .map_err(|_| messages::bad_header_value(name, key))?;
        custom.insert(header, value);
    }
    install_crypto_provider();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    config.custom_headers = custom;
    config.max_json_response_size = MAX_HTTP_MESSAGE_BYTES;
    config.max_sse_event_size = MAX_HTTP_MESSAGE_BYTES;
    // A lost event stream is resumed a few times (0.5 s, 1 s, 2 s), not forever: a server
    // that is gone fails its open calls instead of holding them to their timeout.
    let mut retry = ExponentialBackoff::default();
    retry.max_times = Some(SSE_RETRIES);
    retry.base_duration = Duration::from_millis(500);
    config.retry_config = Arc::new(retry);
    Ok(config)
}
