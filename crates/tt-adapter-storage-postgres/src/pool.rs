//! A small fixed pool of `tokio-postgres` connections. Each connection sits behind its own
//! mutex so a caller can run a transaction on it; a caller takes the first idle one, or waits
//! for the next in turn. Connections that broke are replaced on the next checkout.

use std::sync::atomic::{AtomicUsize, Ordering};

use std::ops::{Deref, DerefMut};

use tokio::sync::{MappedMutexGuard, Mutex, MutexGuard};
use tokio_postgres::{Client, NoTls};

use crate::error::{PgResult, PgStoreError};

/// The connections of one store.
pub struct Pool {
    url: String,
    slots: Vec<Mutex<Option<Client>>>,
    next: AtomicUsize,
}

/// One checked-out connection; returned to the pool on drop.
pub struct PooledClient<'a> {
    guard: MappedMutexGuard<'a, Client>,
}

impl PooledClient<'_> {
    /// The connection.
    pub fn client(&mut self) -> PgResult<&mut Client> {
        Ok(&mut self.guard)
    }
}

impl Deref for PooledClient<'_> {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.guard
    }
}

impl DerefMut for PooledClient<'_> {
    fn deref_mut(&mut self) -> &mut Client {
        &mut self.guard
    }
}

/// Opens one connection and drives it on the current tokio runtime.
pub async fn connect(url: &str) -> PgResult<Client> {
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
    pub async fn open(url: &str, size: usize) -> PgResult<Self> {
        let size = size.max(1);
        let first = connect(url).await?;
        let mut slots = Vec::with_capacity(size);
        slots.push(Mutex::new(Some(first)));
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
    pub async fn get(&self) -> PgResult<PooledClient<'_>> {
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
        if guard.as_ref().is_none_or(Client::is_closed) {
            *guard = Some(connect(&self.url).await?);
        }
        let guard = MutexGuard::try_map(guard, Option::as_mut)
            .map_err(|_| PgStoreError::Config("a pooled connection was missing".to_owned()))?;
        Ok(PooledClient { guard })
    }
}
