//! A run as a store that does not write it reads it, as the file store reads a run another
//! process writes (`observed_run` there): the stored record keeps only the meaningful statuses,
//! so a live run's status is the one its journal last stated (`runs.journal_status`, set by
//! the group commit in the statement that stores each `status_changed`, migration 14); and a
//! run whose owner is gone (its owner lock is free, its lease ran out, or it has none) is
//! `interrupted`. A store given a clock and ids ([`PostgresStore::with_observed_recovery`],
//! which `tt-runtime`'s `open_store_url` does) records that at once, with the mechanism a
//! runtime opening the store uses (`recovery.rs`): the run is claimed, its unfinished agents
//! and `run_interrupted` are journaled and its record saved `interrupted`, so the stored
//! record and the journal's end agree and a follower reads `run_interrupted` as the run's end.
//! A store without them only reports `interrupted`, writing nothing, as the file store's
//! readers do. Either way a waiter or follower that reads the run (the application's followers
//! read it at least every 200 ms) sees it `interrupted` within one read of the owner's session
//! ending, and at the latest one lease after the owner's last heartbeat.

use std::sync::Arc;

use tt_domain::ids::{EventId, RunId};
use tt_domain::run::{AgentRun, AgentRunStatus};
use tt_ports::{Clock, IdGenerator, StorageError, StorageResult};

use crate::error::{io, parse};
use crate::retry::retrying;
use crate::{ObservedRecovery, PostgresStore};

/// The columns of `runs r LEFT JOIN run_leases l` a reader needs besides the body: the status
/// the journal last stated, and whether the run is unfinished with its owner gone. A lease row
/// whose holder had its owner lock (`locked`) while no session holds that lock now means the
/// holder's session ended (its host died); the locks held are listed once per statement
/// (`pg_locks` shows a bigint advisory key as `classid` (high half) and `objid`).
pub(crate) const OBSERVED_COLUMNS: &str = "r.journal_status,
    CASE WHEN NOT r.unfinished THEN false
         WHEN l.run_id IS NULL OR l.expires_at < clock_timestamp() THEN true
         WHEN NOT l.locked THEN false
         ELSE hashtextextended('tt_owner:' || r.run_id, 0) NOT IN (
             SELECT (k.classid::bigint << 32) | k.objid::bigint FROM pg_locks k
             WHERE k.locktype = 'advisory' AND k.granted AND k.objsubid = 1
               AND k.database = (SELECT oid FROM pg_database WHERE datname = current_database()))
    END";

/// What a reader found beside a run's record.
pub(crate) struct Observed {
    /// The status of the journal's last `status_changed`, as stored.
    pub(crate) journal_status: Option<String>,
    /// The run is unfinished and whoever wrote it is gone.
    pub(crate) owner_gone: bool,
}

impl Observed {
    /// `run` as this reader sees it, without writing anything: a run another store writes has
    /// the status its journal states; one whose owner is gone is `interrupted`.
    pub(crate) fn apply(&self, mut run: AgentRun) -> AgentRun {
        if run.status.is_terminal() {
            return run;
        }
        if self.owner_gone {
            run.status = AgentRunStatus::Interrupted;
        } else if let Some(status) = self.journal_status.as_deref().and_then(parse_status)
            && !status.is_terminal()
        {
            run.status = status;
        }
        run
    }
}

fn parse_status(text: &str) -> Option<AgentRunStatus> {
    serde_json::from_value(serde_json::Value::String(text.to_owned())).ok()
}

impl PostgresStore {
    /// This store records `interrupted` for a run whose owner it finds gone when it reads it
    /// (see the module docs), with `clock`'s time and event ids from `ids`.
    #[must_use]
    pub fn with_observed_recovery(
        mut self,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
    ) -> Self {
        self.observed_recovery = Some(ObservedRecovery { clock, ids });
        self
    }

    /// The answer of `load_run` for a run this store does not hold, read as `run` with
    /// `observed` beside it. A run whose owner is gone is recorded `interrupted` first when this
    /// store can (then read again); otherwise it only reads so.
    pub(crate) async fn observed_run(
        &self,
        run_id: &RunId,
        run: AgentRun,
        observed: Observed,
    ) -> StorageResult<AgentRun> {
        if !observed.owner_gone || run.status.is_terminal() {
            return Ok(observed.apply(run));
        }
        let Some(recovery) = &self.observed_recovery else {
            return Ok(observed.apply(run));
        };
        let ids = Arc::clone(&recovery.ids);
        match self
            .recover_run(run_id, recovery.clock.now(), &mut || {
                EventId::generate(ids.next_token())
            })
            .await
        {
            // Recorded here, or by another host first, or it went on elsewhere: read it again.
            Ok(_) | Err(StorageError::Locked { .. }) => {}
            // It could not be recorded now (the next read tries again); it reads so anyway.
            Err(_) => return Ok(observed.apply(run)),
        }
        let (run, observed) = self.read_run_row(run_id).await?;
        Ok(observed.apply(run))
    }

    /// The run's record and what a reader finds beside it, in one statement.
    pub(crate) async fn read_run_row(&self, run_id: &RunId) -> StorageResult<(AgentRun, Observed)> {
        retrying(|_| async move {
            let conn = self.pool.get().await?;
            let row = conn
                .query_opt(
                    &format!(
                        "SELECT r.body, {OBSERVED_COLUMNS} FROM runs r
                         LEFT JOIN run_leases l ON l.run_id = r.run_id WHERE r.run_id = $1"
                    ),
                    &[&run_id.as_str()],
                )
                .await
                .map_err(io(format!("run {run_id}")))?
                .ok_or_else(|| StorageError::not_found(format!("run {run_id}")))?;
            let run = parse(format!("run {run_id}"), row.get(0))?;
            Ok((
                run,
                Observed {
                    journal_status: row.get(1),
                    owner_gone: row.get(2),
                },
            ))
        })
        .await
    }
}
