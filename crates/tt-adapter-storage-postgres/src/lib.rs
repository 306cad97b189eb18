//! PostgreSQL storage for tt-agent-runtime: the run, invocation, journal, workspace and profile
//! ports on one database that several hosts share. The store applies its own schema migrations when it
//! opens (`schema_migrations`); every write is durable when its statement commits.
//!
//! The driver is `tokio-postgres` (no TLS, no macros) with the small pool in [`pool`]; see
//! docs/ARCHITECTURE.md for why not sqlx.

pub mod cluster;
pub mod error;
mod journal;
mod pool;
mod profiles;
mod runs;
pub mod schema;
mod workspace;

use tt_ports::StorageResult;

pub use error::{PgResult, PgStoreError};
pub use pool::redact;

/// How many connections a store keeps by default: enough for a fan-out's concurrent appends
/// and task transitions without crowding a small server.
pub const DEFAULT_POOL_SIZE: usize = 8;

/// The PostgreSQL store: every storage port it implements shares one pool.
pub struct PostgresStore {
    pool: pool::Pool,
}

impl PostgresStore {
    /// Connects to `url` (`postgres://user@host:port/db`), applies the pending migrations and
    /// returns the store.
    pub async fn open(url: &str) -> StorageResult<Self> {
        Self::open_with_pool_size(url, DEFAULT_POOL_SIZE).await
    }

    /// [`PostgresStore::open`] with `size` pooled connections.
    pub async fn open_with_pool_size(url: &str, size: usize) -> StorageResult<Self> {
        let pool = pool::Pool::open(url, size).await?;
        {
            let mut conn = pool.get().await?;
            schema::migrate(conn.client()?).await?;
        }
        Ok(Self { pool })
    }

    /// The schema version the database is at.
    pub async fn schema_version(&self) -> StorageResult<i32> {
        let mut conn = self.pool.get().await?;
        let row = conn
            .client()?
            .query_one(
                "SELECT coalesce(max(version), 0) FROM schema_migrations",
                &[],
            )
            .await
            .map_err(error::io("reading schema_migrations"))?;
        Ok(row.get(0))
    }
}
