//! The owner's session advisory locks: beside its lease, the store that writes a run holds a
//! session-level advisory lock on it (`pg_try_advisory_lock` of `tt_owner:<runId>`) on one
//! connection of its own. PostgreSQL drops a session's locks the moment the session ends, so
//! when a host dies (a crash, `kill -9`, a power cut: its connections close) another host finds
//! the lock free and may take the run over at once instead of waiting for the lease to run out.
//! A host that is alive keeps its lock, so only its lease running out (it stalled) lets
//! another host take its run. The lease row says whether its holder holds the lock
//! (`run_leases.locked`): a free lock means a dead holder only when the holder had it (one that
//! took a run over from a stalled host gets the lock at its next heartbeat, once the stalled
//! host let it go). Writes stay fenced by the lease either way (`lease.rs`).

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};
use tokio_postgres::Client;

/// The lock key of `run_id`'s owner, apart from the per-path write locks.
fn key(run_id: &str) -> String {
    format!("tt_owner:{run_id}")
}

/// This store's owner locks and the session that holds them.
pub(crate) struct OwnerLocks {
    url: String,
    /// The session the locks live in; reopened when it closed (its locks went with it).
    session: tokio::sync::Mutex<Option<Client>>,
    /// Runs whose lock this store's session holds.
    locked: Mutex<HashSet<String>>,
    /// Runs this store let go from sync code (`forget`): unlocked at the next heartbeat.
    to_unlock: Mutex<Vec<String>>,
}

impl OwnerLocks {
    pub(crate) fn new(url: &str) -> Self {
        Self {
            url: url.to_owned(),
            session: tokio::sync::Mutex::new(None),
            locked: Mutex::new(HashSet::new()),
            to_unlock: Mutex::new(Vec::new()),
        }
    }

    fn locked(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.locked.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The session, opened (again) when it is not open; `true` with it when it was just
    /// opened, so locks held before are gone.
    async fn session(&self) -> Option<(tokio::sync::MutexGuard<'_, Option<Client>>, bool)> {
        let mut session = self.session.lock().await;
        let reopened = session.as_ref().is_none_or(Client::is_closed);
        if reopened {
            *session = Some(crate::pool::connect(&self.url).await.ok()?);
        }
        Some((session, reopened))
    }

    /// Takes `run_id`'s owner lock if nobody holds it.
    pub(crate) async fn try_lock(&self, run_id: &str) -> Lock {
        if self.locked().contains(run_id) {
            return Lock::AlreadyHeld;
        }
        let Some((session, reopened)) = self.session().await else {
            return Lock::Busy;
        };
        if reopened {
            self.locked().clear();
        }
        let Some(client) = session.as_ref() else {
            return Lock::Busy;
        };
        let taken = client
            .query_one(
                "SELECT pg_try_advisory_lock(hashtextextended($1, 0))",
                &[&key(run_id)],
            )
            .await
            .is_ok_and(|row| row.get::<_, bool>(0));
        if taken {
            self.locked().insert(run_id.to_owned());
            Lock::Taken
        } else {
            Lock::Busy
        }
    }

    /// Lets `run_id`'s owner lock go (a run released, or a claim that failed).
    pub(crate) async fn unlock(&self, run_id: &str) {
        if !self.locked().remove(run_id) {
            return;
        }
        let session = self.session.lock().await;
        if let Some(client) = session.as_ref().filter(|client| !client.is_closed()) {
            // A failure leaves the lock to the session's end; the lease fences writes anyway.
            let _ = client
                .query_one(
                    "SELECT pg_advisory_unlock(hashtextextended($1, 0))",
                    &[&key(run_id)],
                )
                .await;
        }
    }

    /// `unlock` from code that cannot wait: done at the next heartbeat.
    pub(crate) fn unlock_later(&self, run_id: &str) {
        self.to_unlock
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(run_id.to_owned());
    }

    /// The heartbeat's part: unlocks what `unlock_later` queued, then takes the lock of every
    /// run this store holds but has no lock of (taken over while its previous owner still held
    /// it, or the session was lost with its locks). Returns the runs it locked now.
    pub(crate) async fn settle(&self, held: &[String]) -> Vec<String> {
        let queued: Vec<String> = std::mem::take(
            &mut *self
                .to_unlock
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for run_id in queued {
            self.unlock(&run_id).await;
        }
        let lost = self
            .session
            .lock()
            .await
            .as_ref()
            .is_none_or(Client::is_closed);
        if lost {
            self.locked().clear();
        }
        let mut taken = Vec::new();
        for run_id in held {
            if self.try_lock(run_id).await == Lock::Taken {
                taken.push(run_id.clone());
            }
        }
        taken
    }
}

/// What taking a run's owner lock found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lock {
    /// Nobody held it; this store does now.
    Taken,
    /// This store held it already.
    AlreadyHeld,
    /// Another session holds it (or the server could not be asked).
    Busy,
}
