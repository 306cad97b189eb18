//! The tt-agent-runtime host API as JSON over HTTP, a live event stream (Server-Sent Events,
//! resumable from a seq) and the run inspector page, for a browser or a desktop shell's web view.
//!
//! A driving adapter: it knows only `tt-runtime`'s [`AgentRuntime`] and its DTOs. The server
//! binds to loopback, demands a per-server secret token on every request, refuses foreign
//! `Origin` and `Host` headers, and size-limits request bodies (see `docs/host-http.md`).

mod api;
mod error;
mod extract;
mod info;
mod page;
mod security;
mod stream;

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use tt_runtime::AgentRuntime;

pub use error::ApiError;
pub use info::{CommitBridgeMode, Features, ServerInfo};

/// The largest request body accepted by default (1 MiB): a start request with a long history
/// fits, a flood does not.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;

/// How a server is bound and what the page is told about it.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Where to listen; `127.0.0.1:0` (any free loopback port) by default.
    pub bind: SocketAddr,
    /// The secret every request must carry; `None` draws a fresh random one.
    pub token: Option<String>,
    /// Request bodies larger than this are refused with `http.body_too_large` (413).
    pub max_body_bytes: usize,
    /// What the page shows about this server and which controls it offers.
    pub info: ServerInfo,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            token: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            info: ServerInfo::default(),
        }
    }
}

/// A bound, not yet serving, inspector server.
#[derive(Debug)]
pub struct HostHttpServer {
    listener: tokio::net::TcpListener,
    local_addr: SocketAddr,
    token: String,
    router: axum::Router,
    stopping: tokio::sync::watch::Sender<bool>,
}

impl HostHttpServer {
    /// Binds the listener (so the port is known before serving) and builds the routes.
    pub async fn bind(runtime: Arc<AgentRuntime>, options: ServerOptions) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(options.bind).await?;
        let local_addr = listener.local_addr()?;
        let token = match options.token {
            Some(token) if !token.trim().is_empty() => token,
            _ => security::random_token()?,
        };
        let guard = security::Guard::new(local_addr, token.clone());
        let (stopping, stopping_rx) = tokio::sync::watch::channel(false);
        let state = extract::AppState {
            runtime,
            info: Arc::new(options.info),
            stopping: stopping_rx,
        };
        let router = api::router(state, guard, options.max_body_bytes);
        Ok(Self {
            listener,
            local_addr,
            token,
            router,
            stopping,
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The secret every request must carry.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The page's URL, token included: what a person opens (or a shell loads in its web view).
    pub fn page_url(&self) -> String {
        format!("http://{}/?token={}", self.local_addr, self.token)
    }

    /// Serves until `shutdown` resolves. Open event streams then end (a graceful shutdown
    /// would otherwise wait for every browser that follows a run); requests in flight finish.
    pub async fn serve(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let stopping = self.stopping;
        let shutdown = async move {
            shutdown.await;
            let _ = stopping.send(true);
        };
        axum::serve(self.listener, self.router)
            .with_graceful_shutdown(shutdown)
            .await
    }
}
