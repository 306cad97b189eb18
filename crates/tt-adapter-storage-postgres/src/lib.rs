//! PostgreSQL storage for tt-agent-runtime: the run, invocation, journal, workspace, profile,
//! skill and transcript ports on one database that several hosts share. The store applies its
//! own schema migrations when it opens (`schema_migrations`); every write is durable when its
//! statement commits.
//!
//! The driver is `tokio-postgres` (no TLS, no macros) with the small pool in [`pool`]; see
//! docs/ARCHITECTURE.md for why not sqlx.

mod checkpoints;
pub mod cluster;
mod commit;
mod connections;
pub mod error;
mod journal;
mod lease;
mod mcp_servers;
mod named_rows;
mod notify;
mod observed;
mod owner_locks;
mod pool;
mod presets;
mod profiles;
mod recovery;
mod retry;
mod run_watch;
mod runs;
pub mod schema;
mod skills;
mod statements;
mod transcripts;
mod workspace;

use tt_ports::StorageResult;

pub use error::{PgResult, PgStoreError};
pub use lease::DEFAULT_LEASE;
pub use pool::redact;
pub use recovery::{InterruptedRun, OWNER_EXITED};
pub use retry::SERVER_RESTART_BOUND;

use std::sync::Arc;
use std::time::Duration;
use tt_domain::ids::RunId;

/// How many connections a store keeps by default: enough for a fan-out's concurrent appends
/// and task transitions without crowding a small server.
pub const DEFAULT_POOL_SIZE: usize = 8;

/// How a store connects and holds runs.
#[derive(Debug, Clone)]
pub struct PostgresOptions {
    /// Pooled connections.
    pub pool_size: usize,
    /// How long a run stays this store's after its last heartbeat.
    pub lease: Duration,
    /// This store's owner id in `run_leases`; `None` makes one from the host name, the pid and
    /// a random part the server draws.
    pub owner_id: Option<String>,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            pool_size: DEFAULT_POOL_SIZE,
            lease: DEFAULT_LEASE,
            owner_id: None,
        }
    }
}

/// What recording an observed interruption needs (`observed.rs`): the time and the new
/// events' ids.
#[derive(Clone)]
pub(crate) struct ObservedRecovery {
    pub(crate) clock: Arc<dyn tt_ports::Clock>,
    pub(crate) ids: Arc<dyn tt_ports::IdGenerator>,
}

/// The PostgreSQL store: every storage port it implements shares one pool.
pub struct PostgresStore {
    pool: Arc<pool::Pool>,
    ownership: Arc<lease::Ownership>,
    journal: commit::JournalCommitter,
    heard: Arc<notify::Heard>,
    /// Set by [`PostgresStore::with_observed_recovery`]: a read that finds a run's owner gone
    /// records the run `interrupted` (`observed.rs`).
    observed_recovery: Option<ObservedRecovery>,
    /// One recovery of a run at a time in this store (a run found gone by two readers at once
    /// is interrupted once).
    recovering: tokio::sync::Mutex<()>,
    /// Keeps the LISTEN connection open; `None` when it could not be opened (followers then
    /// poll).
    _listener: Option<tokio_postgres::Client>,
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_owned())
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "host".to_owned())
}

impl PostgresStore {
    /// Connects to `url` (`postgres://user@host:port/db`), applies the pending migrations and
    /// returns the store.
    pub async fn open(url: &str) -> StorageResult<Self> {
        Self::open_with_pool_size(url, DEFAULT_POOL_SIZE).await
    }

    /// [`PostgresStore::open`] with `size` pooled connections.
    pub async fn open_with_pool_size(url: &str, size: usize) -> StorageResult<Self> {
        Self::open_with(
            url,
            PostgresOptions {
                pool_size: size,
                ..PostgresOptions::default()
            },
        )
        .await
    }

    /// [`PostgresStore::open`] with explicit options. Must be called inside a tokio runtime:
    /// it spawns the connections' tasks and the lease heartbeat.
    pub async fn open_with(url: &str, options: PostgresOptions) -> StorageResult<Self> {
        let pool = Arc::new(pool::Pool::open(url, options.pool_size).await?);
        let owner_id = {
            let mut conn = pool.get().await?;
            schema::migrate(conn.client()?).await?;
            match options.owner_id {
                Some(owner_id) => owner_id,
                None => {
                    let row = conn
                        .query_one("SELECT md5(random()::text || clock_timestamp()::text)", &[])
                        .await
                        .map_err(error::io("drawing an owner id"))?;
                    let random: String = row.get(0);
                    format!(
                        "{}/{}/{}",
                        host_name(),
                        std::process::id(),
                        random.get(..12).unwrap_or(&random)
                    )
                }
            }
        };
        let ownership = Arc::new(lease::Ownership::new(owner_id, options.lease, url));
        lease::spawn_heartbeat(&ownership, &pool);
        let journal = commit::JournalCommitter::spawn(url, &ownership);
        let heard = Arc::new(notify::Heard::default());
        let listener = notify::spawn_listener(url, &heard).await.ok();
        Ok(Self {
            pool,
            ownership,
            journal,
            heard,
            observed_recovery: None,
            recovering: tokio::sync::Mutex::new(()),
            _listener: listener,
        })
    }

    /// Whether the store's LISTEN connection is open (journal waits and runs watches hear
    /// other hosts).
    pub(crate) fn listening(&self) -> bool {
        self._listener.is_some()
    }

    /// This store's owner id in `run_leases`.
    pub fn owner_id(&self) -> &str {
        &self.ownership.owner_id
    }

    /// Claims `run_id` for writing (done by every write; a host calls it to take over a run
    /// whose owner's lease expired). `agent.run_locked` while another store's lease is live.
    pub async fn claim_run(&self, run_id: &RunId) -> StorageResult<()> {
        retry::retrying(|_| self.ownership.claim(&self.pool, run_id)).await
    }

    /// Gives up this store's lease of `run_id`, so another host may write it at once.
    pub async fn release_run(&self, run_id: &RunId) -> StorageResult<()> {
        self.ownership.release(&self.pool, run_id).await
    }

    /// The schema version the database is at.
    pub async fn schema_version(&self) -> StorageResult<i32> {
        let conn = self.pool.get().await?;
        let row = conn
            .query_one(
                "SELECT coalesce(max(version), 0) FROM schema_migrations",
                &[],
            )
            .await
            .map_err(error::io("reading schema_migrations"))?;
        Ok(row.get(0))
    }
}
