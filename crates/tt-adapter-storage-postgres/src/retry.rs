//! Riding out a server restart: a unit of work (one port call: a read, a fenced write, a task
//! transition, a batch of the group commit) that fails because the connection to the server
//! was lost is tried again on a new connection, with backoff, until it succeeds or
//! [`SERVER_RESTART_BOUND`] has passed since it first failed; then its error is returned as
//! before (`agent.storage_io`) and the run ends as it did without retries. A unit that may have
//! committed before its connection dropped checks what landed before it writes again (each
//! caller says how: `Attempt::retried`), so nothing is applied twice. docs/storage.md, "A server
//! restart".

use std::time::Duration;

use tokio::time::Instant;
use tt_ports::StorageResult;

use crate::error::is_connection_lost;

/// How long the store keeps retrying a unit whose connection was lost: a server that is back
/// within this long (a restart, a failover) costs live runs nothing.
pub const SERVER_RESTART_BOUND: Duration = Duration::from_secs(60);

/// The first pause before a retry; it doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(25);
const MAX_PAUSE: Duration = Duration::from_secs(1);

/// Which try of a unit this is.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Attempt {
    /// An earlier try lost its connection: what it sent may have committed.
    pub retried: bool,
}

/// Waits between tries of one unit, with backoff, until [`SERVER_RESTART_BOUND`] has passed.
pub(crate) struct Backoff {
    deadline: Option<Instant>,
    pause: Duration,
}

impl Backoff {
    pub(crate) fn new() -> Self {
        Self {
            deadline: None,
            pause: FIRST_PAUSE,
        }
    }

    /// Waits before the next try; `false` (without waiting) once the bound has passed.
    pub(crate) async fn wait(&mut self) -> bool {
        let now = Instant::now();
        let deadline = *self.deadline.get_or_insert(now + SERVER_RESTART_BOUND);
        if now >= deadline {
            return false;
        }
        tokio::time::sleep(self.pause.min(deadline - now)).await;
        self.pause = (self.pause * 2).min(MAX_PAUSE);
        true
    }
}

/// Runs `unit` until it does not fail with a lost connection, or the bound has passed.
pub(crate) async fn retrying<T, F, Fut>(mut unit: F) -> StorageResult<T>
where
    F: FnMut(Attempt) -> Fut,
    Fut: std::future::Future<Output = StorageResult<T>>,
{
    let mut backoff = Backoff::new();
    let mut attempt = Attempt::default();
    loop {
        match unit(attempt).await {
            Err(error) if is_connection_lost(&error) => {
                if !backoff.wait().await {
                    return Err(error);
                }
                attempt.retried = true;
            }
            done => return done,
        }
    }
}
