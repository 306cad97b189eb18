//! `AgentRunRepository::watch_runs` on PostgreSQL: the runs other hosts of the database create
//! or change, heard over LISTEN/NOTIFY on the store's listening connection (`notify.rs`). A new
//! run, a saved record or a new journaled status (`tt_runs`, migration 16's triggers) is
//! reported at once; a journal append alone (`tt_journal`: a model call answered, so tokens and
//! cost moved) at most once per [`JOURNAL_EVERY`] per run, the last one of a burst included.
//! Runs this store holds the lease of are left out: their changes reach the runtime through
//! its own events. Nothing is polled.

use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::Weak;
use std::time::Duration;
use tokio::sync::broadcast;
use tokio::time::Instant;
use tt_domain::ids::RunId;
use tt_ports::{RunChange, RunWatch};

use crate::lease::Ownership;
use crate::notify::HeardChange;

/// The least time between two reports of one run's journal growing.
pub(crate) const JOURNAL_EVERY: Duration = Duration::from_secs(1);

/// The PostgreSQL store's [`RunWatch`].
pub(crate) struct PgRunWatch {
    changes: broadcast::Receiver<HeardChange>,
    ownership: Weak<Ownership>,
    /// When each run was last reported.
    reported: HashMap<String, Instant>,
    /// Journal growth held back, by run: when it is due.
    held: HashMap<String, Instant>,
}

impl PgRunWatch {
    pub(crate) fn new(
        changes: broadcast::Receiver<HeardChange>,
        ownership: Weak<Ownership>,
    ) -> Self {
        Self {
            changes,
            ownership,
            reported: HashMap::new(),
            held: HashMap::new(),
        }
    }

    fn report(&mut self, run_id: String) -> Option<RunChange> {
        self.held.remove(&run_id);
        let now = Instant::now();
        self.reported
            .retain(|_, at| now.duration_since(*at) < JOURNAL_EVERY);
        self.reported.insert(run_id.clone(), now);
        Some(RunChange::Changed(RunId::from_raw(run_id)))
    }

    /// What to do with a change heard: report it now, or hold it back (`None`).
    fn heard(&mut self, (run_id, record): HeardChange) -> Option<Option<RunChange>> {
        let ownership = self.ownership.upgrade()?;
        if ownership.holds(&RunId::from_raw(run_id.as_str())) {
            return Some(None);
        }
        let last = self.reported.get(&run_id).copied();
        match last {
            Some(at) if !record && at.elapsed() < JOURNAL_EVERY => {
                self.held.entry(run_id).or_insert(at + JOURNAL_EVERY);
                Some(None)
            }
            _ => Some(self.report(run_id)),
        }
    }
}

#[async_trait]
impl RunWatch for PgRunWatch {
    async fn next(&mut self) -> Option<RunChange> {
        loop {
            let now = Instant::now();
            if let Some(due) = self
                .held
                .iter()
                .find(|(_, at)| **at <= now)
                .map(|(run_id, _)| run_id.clone())
            {
                return self.report(due);
            }
            let next_due = self.held.values().min().copied();
            // Both branches are cancel-safe: a receive dropped loses nothing, and the held
            // changes stay in `held`.
            let received = tokio::select! {
                received = self.changes.recv() => received,
                () = sleep_until(next_due), if next_due.is_some() => continue,
            };
            match received {
                Ok(change) => match self.heard(change) {
                    Some(Some(report)) => return Some(report),
                    Some(None) => {}
                    None => return None,
                },
                Err(broadcast::error::RecvError::Lagged(_)) => return Some(RunChange::Lagged),
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
