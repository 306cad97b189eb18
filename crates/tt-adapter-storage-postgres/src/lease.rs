//! Run ownership across hosts: the store that writes a run holds its lease (`run_leases`: owner
//! id, expiry), renewed by a heartbeat every third of the lease, and its owner lock
//! (`owner_locks.rs`, a session advisory lock PostgreSQL drops when the holder's session ends).
//! A store claims a run on its first write; the claim succeeds when nobody holds the lease, the
//! store holds it already, the holder let it expire, or the holder is gone (its owner lock is
//! free), and otherwise fails with `agent.run_locked`. A store that finds on heartbeat that its
//! lease was taken over forgets the run, so its next write is refused, and so is every later
//! one until the runtime releases the run (its executor here has ended).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use tt_domain::ids::RunId;
use tt_ports::{StorageError, StorageResult};

use crate::error::io;
use crate::owner_locks::{Lock, OwnerLocks};
use crate::pool::{Params, Pool, StatementCache};
use tokio_postgres::GenericClient;

/// The default lease: a host that stops heartbeating loses its runs after this long.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(15);

/// This store's identity and the runs it holds.
pub(crate) struct Ownership {
    pub(crate) owner_id: String,
    pub(crate) lease: Duration,
    held: Mutex<HashSet<String>>,
    /// Runs another store took over from this one: this store claims them no more until the
    /// runtime lets them go (`release`, once their executor here has ended), so a host that
    /// stalled past its lease cannot take back, with its next write, a run another host
    /// interrupted and released meanwhile.
    lost: Mutex<HashSet<String>>,
    locks: OwnerLocks,
}

/// The lease in milliseconds, as the `float8` the SQL multiplies an interval by.
fn lease_millis(lease: Duration) -> f64 {
    lease.as_secs_f64() * 1_000.0
}

impl Ownership {
    pub(crate) fn new(owner_id: String, lease: Duration, url: &str) -> Self {
        Self {
            owner_id,
            lease,
            held: Mutex::new(HashSet::new()),
            lost: Mutex::new(HashSet::new()),
            locks: OwnerLocks::new(url),
        }
    }

    /// This store's lease in milliseconds, for the SQL that writes a lease row.
    pub(crate) fn lease_millis(&self) -> f64 {
        lease_millis(self.lease)
    }

    pub(crate) fn holds(&self, run_id: &RunId) -> bool {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(run_id.as_str())
    }

    fn held_ids(&self) -> Vec<String> {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    }

    /// `run_id` was taken over: no longer this store's, and not claimed again until released.
    pub(crate) fn forget(&self, run_id: &str) {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(run_id);
        self.lost
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(run_id.to_owned());
        self.locks.unlock_later(run_id);
    }

    fn was_lost(&self, run_id: &RunId) -> bool {
        self.lost
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(run_id.as_str())
    }

    /// Claims `run_id` for this store unless it holds it already; `Locked` when another
    /// store's lease is live, `NotFound` when the run does not exist. A takeover locks the
    /// lease row `FOR UPDATE`, so it waits for the old holder's writes in flight (they hold it
    /// `FOR KEY SHARE`), and the old holder's later writes see the new owner and are refused.
    pub(crate) async fn claim(&self, pool: &Pool, run_id: &RunId) -> StorageResult<()> {
        if self.holds(run_id) {
            return Ok(());
        }
        if self.was_lost(run_id) {
            return Err(StorageError::Locked {
                what: format!("run {run_id}"),
                owner_pid: None,
            });
        }
        // Free means whoever held the run before is gone (or there was nobody): when the lease
        // row says its holder had the lock, the lease need not have run out. Taken now, it is
        // let go below if the claim fails.
        let lock = self.locks.try_lock(run_id.as_str()).await;
        let claimed = self.claim_lease(pool, run_id, lock).await;
        if claimed.is_err() && lock == Lock::Taken {
            self.locks.unlock(run_id.as_str()).await;
        }
        claimed
    }

    async fn claim_lease(&self, pool: &Pool, run_id: &RunId, lock: Lock) -> StorageResult<()> {
        let holder_gone = lock == Lock::Taken;
        let locked = lock != Lock::Busy;
        let what = format!("run {run_id}");
        let mut conn = pool.get().await?;
        let (client, cache) = conn.parts();
        let tx = client.transaction().await.map_err(io(&what))?;
        let current = cache
            .query_opt(
                &tx,
                "SELECT owner_id = $2 OR expires_at < clock_timestamp() OR ($3 AND locked)
                 FROM run_leases WHERE run_id = $1 FOR UPDATE",
                &[&run_id.as_str(), &self.owner_id, &holder_gone],
            )
            .await
            .map_err(io(&what))?;
        // The lease row's values ($1 to $4): the run, its owner, how long it lasts, locked.
        let lease_ms = lease_millis(self.lease);
        let lease_params: Params<'_> = &[&run_id.as_str(), &self.owner_id, &lease_ms, &locked];
        let claimed = match current {
            Some(row) if row.get::<_, bool>(0) => {
                cache
                    .execute(
                        &tx,
                        "UPDATE run_leases SET owner_id = $2,
                         expires_at = clock_timestamp() + $3::float8 * interval '1 millisecond',
                         locked = $4
                     WHERE run_id = $1",
                        lease_params,
                    )
                    .await
                    .map_err(io(&what))?;
                true
            }
            Some(_) => false,
            None => {
                let inserted = cache
                    .execute(
                        &tx,
                        "INSERT INTO run_leases (run_id, owner_id, expires_at, locked)
                         SELECT run_id, $2, clock_timestamp() + $3::float8 * interval '1 millisecond', $4
                         FROM runs WHERE run_id = $1
                         ON CONFLICT (run_id) DO NOTHING",
                        lease_params,
                    )
                    .await
                    .map_err(io(&what))?;
                if inserted == 0 {
                    let exists = cache
                        .query_opt(
                            &tx,
                            "SELECT 1 FROM runs WHERE run_id = $1",
                            &[&run_id.as_str()],
                        )
                        .await
                        .map_err(io(&what))?;
                    if exists.is_none() {
                        return Err(StorageError::not_found(what));
                    }
                }
                // Zero rows with the run there: another store claimed it at the same moment.
                inserted == 1
            }
        };
        tx.commit().await.map_err(io(&what))?;
        if !claimed {
            return Err(StorageError::Locked {
                what,
                owner_pid: None,
            });
        }
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(run_id.as_str().to_owned());
        Ok(())
    }

    /// In a write's transaction: locks this store's lease row of `run_id` `FOR KEY SHARE`
    /// until the transaction ends (a takeover waits for it, see [`Ownership::claim`]), and
    /// with `lock_key` also takes that transaction-scoped advisory lock, in one round trip.
    /// `NotFound` without the run, `Locked` (and the run forgotten) when another store holds
    /// its lease: a store whose lease was taken over cannot write, heartbeat or not.
    pub(crate) async fn fence<C: GenericClient>(
        &self,
        client: &C,
        cache: &StatementCache,
        run_id: &RunId,
        lock_key: Option<&str>,
    ) -> StorageResult<()> {
        let what = format!("run {run_id}");
        let row = cache
            .query_one(
                client,
                "SELECT EXISTS (SELECT 1 FROM runs WHERE run_id = $1),
                        EXISTS (SELECT 1 FROM run_leases WHERE run_id = $1 AND owner_id = $2
                                FOR KEY SHARE),
                        CASE WHEN $3::text IS NULL THEN ''
                             ELSE pg_advisory_xact_lock(hashtextextended($3, 0))::text END",
                &[&run_id.as_str(), &self.owner_id, &lock_key],
            )
            .await
            .map_err(io(&what))?;
        match (row.get::<_, bool>(0), row.get::<_, bool>(1)) {
            (true, true) => Ok(()),
            (false, _) => Err(StorageError::not_found(what)),
            (true, false) => Err(self.lost(run_id)),
        }
    }

    /// The error of a fenced write that wrote nothing: `NotFound` without the run, else
    /// `Locked` (this store lost the run and forgets it).
    pub(crate) async fn refused<C: GenericClient>(
        &self,
        client: &C,
        cache: &StatementCache,
        run_id: &RunId,
    ) -> StorageError {
        let what = format!("run {run_id}");
        match cache
            .query_opt(
                client,
                "SELECT 1 FROM runs WHERE run_id = $1",
                &[&run_id.as_str()],
            )
            .await
        {
            Ok(Some(_)) => self.lost(run_id),
            Ok(None) => StorageError::not_found(what),
            Err(err) => io(what)(err),
        }
    }

    /// Forgets `run_id` and says it is another store's.
    pub(crate) fn lost(&self, run_id: &RunId) -> StorageError {
        self.forget(run_id.as_str());
        StorageError::Locked {
            what: format!("run {run_id}"),
            owner_pid: None,
        }
    }

    /// Renews every lease this store holds; forgets the ones another store took over.
    async fn renew(&self, pool: &Pool) -> StorageResult<()> {
        let held = self.held_ids();
        if held.is_empty() {
            self.locks.settle(&held).await;
            return Ok(());
        }
        let newly_locked = self.locks.settle(&held).await;
        if !newly_locked.is_empty() {
            let conn = pool.get().await?;
            conn.execute(
                "UPDATE run_leases SET locked = true WHERE owner_id = $1 AND run_id = ANY($2)",
                &[&self.owner_id, &newly_locked],
            )
            .await
            .map_err(io("run leases"))?;
        }
        let conn = pool.get().await?;
        let rows = conn
            .query(
                "UPDATE run_leases SET expires_at = clock_timestamp() + $3::float8 * interval '1 millisecond'
                 WHERE owner_id = $1 AND run_id = ANY($2) RETURNING run_id",
                &[&self.owner_id, &held, &lease_millis(self.lease)],
            )
            .await
            .map_err(io("run leases"))?;
        let renewed: HashSet<String> = rows.iter().map(|row| row.get(0)).collect();
        for run_id in held.iter().filter(|id| !renewed.contains(*id)) {
            self.forget(run_id);
        }
        Ok(())
    }

    /// Gives up the lease of `run_id` (its run ended, or this host lets it go).
    pub(crate) async fn release(&self, pool: &Pool, run_id: &RunId) -> StorageResult<()> {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(run_id.as_str());
        self.lost
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(run_id.as_str());
        self.locks.unlock(run_id.as_str()).await;
        let conn = pool.get().await?;
        conn.execute(
            "DELETE FROM run_leases WHERE run_id = $1 AND owner_id = $2",
            &[&run_id.as_str(), &self.owner_id],
        )
        .await
        .map_err(io(format!("run {run_id}")))?;
        Ok(())
    }
}

/// How soon a renewal that failed (the server could not be reached) is tried again.
const RENEWAL_RETRY: Duration = Duration::from_millis(250);

/// Renews the store's leases every third of the lease until the store is dropped. A renewal
/// that failed is tried again every [`RENEWAL_RETRY`] (at most every beat) until one succeeds,
/// so a lease outlives a server restart shorter than itself, renewed as soon as the server is
/// back (docs/storage.md, "A server restart").
pub(crate) fn spawn_heartbeat(ownership: &Arc<Ownership>, pool: &Arc<Pool>) {
    let ownership: Weak<Ownership> = Arc::downgrade(ownership);
    let pool: Weak<Pool> = Arc::downgrade(pool);
    tokio::spawn(async move {
        let mut failed = false;
        loop {
            let period = match ownership.upgrade() {
                Some(ownership) => (ownership.lease / 3).max(Duration::from_millis(50)),
                None => return,
            };
            let pause = if failed {
                RENEWAL_RETRY.min(period)
            } else {
                period
            };
            tokio::time::sleep(pause).await;
            let (Some(ownership), Some(pool)) = (ownership.upgrade(), pool.upgrade()) else {
                return;
            };
            failed = ownership.renew(&pool).await.is_err();
        }
    });
}
