//! A small fixed pool of `tokio-postgres` connections. Each connection sits behind its own
//! mutex so a caller can run a transaction on it; a caller takes the first idle one, or waits
//! for the next in turn. Connections that broke are replaced on the next checkout. Each
//! connection keeps the statements it prepared ([`StatementCache`]), so a statement is parsed
//! and planned once per connection and then costs one round trip, not two.

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::PoisonError;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{MappedMutexGuard, Mutex, MutexGuard};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, GenericClient, NoTls, Row, Statement};

use crate::error::{PgResult, PgStoreError};

/// The statements one connection prepared, by their SQL text.
#[derive(Default)]
pub(crate) struct StatementCache {
    statements: std::sync::Mutex<HashMap<String, Statement>>,
}

pub(crate) type Params<'p> = &'p [&'p (dyn ToSql + Sync)];

impl StatementCache {
    /// The prepared statement for `sql` on `client` (which must be this cache's connection or
    /// a transaction on it), preparing it the first time.
    pub(crate) async fn statement<C: GenericClient>(
        &self,
        client: &C,
        sql: &str,
    ) -> Result<Statement, tokio_postgres::Error> {
        let known = self
            .statements
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(sql)
            .cloned();
        if let Some(statement) = known {
            return Ok(statement);
        }
        let statement = client.prepare(sql).await?;
        self.statements
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }

    /// `client.query` through the cache.
    pub(crate) async fn query<C: GenericClient>(
        &self,
        client: &C,
        sql: &str,
        params: Params<'_>,
    ) -> Result<Vec<Row>, tokio_postgres::Error> {
        let statement = self.statement(client, sql).await?;
        client.query(&statement, params).await
    }

    /// `client.query_opt` through the cache.
    pub(crate) async fn query_opt<C: GenericClient>(
        &self,
        client: &C,
        sql: &str,
        params: Params<'_>,
    ) -> Result<Option<Row>, tokio_postgres::Error> {
        let statement = self.statement(client, sql).await?;
        client.query_opt(&statement, params).await
    }

    /// `client.query_one` through the cache.
    pub(crate) async fn query_one<C: GenericClient>(
        &self,
        client: &C,
        sql: &str,
        params: Params<'_>,
    ) -> Result<Row, tokio_postgres::Error> {
        let statement = self.statement(client, sql).await?;
        client.query_one(&statement, params).await
    }

    /// `client.execute` through the cache.
    pub(crate) async fn execute<C: GenericClient>(
        &self,
        client: &C,
        sql: &str,
        params: Params<'_>,
    ) -> Result<u64, tokio_postgres::Error> {
        let statement = self.statement(client, sql).await?;
        client.execute(&statement, params).await
    }
}

/// A pooled connection and its prepared statements.
pub(crate) struct Connection {
    client: Client,
    cache: StatementCache,
}

/// The connections of one store.
pub(crate) struct Pool {
    url: String,
    slots: Vec<Mutex<Option<Connection>>>,
    next: AtomicUsize,
}

/// One checked-out connection; returned to the pool on drop. Its `query*`/`execute` methods
/// go through the connection's statement cache; [`PooledClient::parts`] gives the client and
/// the cache apart, for transactions.
pub(crate) struct PooledClient<'a> {
    guard: MappedMutexGuard<'a, Connection>,
}

impl PooledClient<'_> {
    /// The connection.
    pub(crate) fn client(&mut self) -> PgResult<&mut Client> {
        Ok(&mut self.guard.client)
    }

    /// The connection and its statement cache, borrowed apart (a transaction holds the
    /// first and prepares through the second).
    pub(crate) fn parts(&mut self) -> (&mut Client, &StatementCache) {
        let connection = &mut *self.guard;
        (&mut connection.client, &connection.cache)
    }

    /// The statement cache.
    pub(crate) fn cache(&self) -> &StatementCache {
        &self.guard.cache
    }

    /// `query` with a cached statement.
    pub(crate) async fn query(
        &self,
        sql: &str,
        params: Params<'_>,
    ) -> Result<Vec<Row>, tokio_postgres::Error> {
        self.guard
            .cache
            .query(&self.guard.client, sql, params)
            .await
    }

    /// `query_opt` with a cached statement.
    pub(crate) async fn query_opt(
        &self,
        sql: &str,
        params: Params<'_>,
    ) -> Result<Option<Row>, tokio_postgres::Error> {
        self.guard
            .cache
            .query_opt(&self.guard.client, sql, params)
            .await
    }

    /// `query_one` with a cached statement.
    pub(crate) async fn query_one(
        &self,
        sql: &str,
        params: Params<'_>,
    ) -> Result<Row, tokio_postgres::Error> {
        self.guard
            .cache
            .query_one(&self.guard.client, sql, params)
            .await
    }

    /// `execute` with a cached statement.
    pub(crate) async fn execute(
        &self,
        sql: &str,
        params: Params<'_>,
    ) -> Result<u64, tokio_postgres::Error> {
        self.guard
            .cache
            .execute(&self.guard.client, sql, params)
            .await
    }
}

impl Deref for PooledClient<'_> {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.guard.client
    }
}

impl DerefMut for PooledClient<'_> {
    fn deref_mut(&mut self) -> &mut Client {
        &mut self.guard.client
    }
}

/// Opens one connection and drives it on the current tokio runtime.
pub(crate) async fn connect(url: &str) -> PgResult<Client> {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .map_err(|err| PgStoreError::pg(format!("connecting to {}", redact(url)), err))?;
    tokio::spawn(async move {
        // The connection ends when its client is dropped or the server goes away; the pool
        // sees a closed client on its next checkout and reconnects.
        let _ = connection.await;
    });
    Ok(client)
}

/// The URL without its password, for messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let credentials = &url[scheme_end + 3..at];
            match credentials.find(':') {
                Some(colon) => format!(
                    "{}{}:***{}",
                    &url[..scheme_end + 3],
                    &credentials[..colon],
                    &url[at..]
                ),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

impl Pool {
    /// A pool of `size` connections to `url`; the first is opened now so a bad URL fails early.
    pub(crate) async fn open(url: &str, size: usize) -> PgResult<Self> {
        let size = size.max(1);
        let first = connect(url).await?;
        let mut slots = Vec::with_capacity(size);
        slots.push(Mutex::new(Some(Connection {
            client: first,
            cache: StatementCache::default(),
        })));
        for _ in 1..size {
            slots.push(Mutex::new(None));
        }
        Ok(Self {
            url: url.to_owned(),
            slots,
            next: AtomicUsize::new(0),
        })
    }

    /// The first idle connection, or the next in turn when all are busy.
    pub(crate) async fn get(&self) -> PgResult<PooledClient<'_>> {
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let count = self.slots.len();
        let mut guard = None;
        for offset in 0..count {
            if let Some(slot) = self.slots.get((start + offset) % count)
                && let Ok(taken) = slot.try_lock()
            {
                guard = Some(taken);
                break;
            }
        }
        let mut guard = match guard {
            Some(guard) => guard,
            None => match self.slots.get(start % count) {
                Some(slot) => slot.lock().await,
                None => return Err(PgStoreError::Config("the pool has no connections".into())),
            },
        };
        if guard
            .as_ref()
            .is_none_or(|connection| connection.client.is_closed())
        {
            *guard = Some(Connection {
                client: connect(&self.url).await?,
                cache: StatementCache::default(),
            });
        }
        let guard = MutexGuard::try_map(guard, Option::as_mut)
            .map_err(|_| PgStoreError::Config("a pooled connection was missing".to_owned()))?;
        Ok(PooledClient { guard })
    }
}
