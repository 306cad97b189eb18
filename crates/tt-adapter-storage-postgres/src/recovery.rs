//! Runs whose owner is gone: a run left in a non-terminal status whose host's session ended
//! (its owner lock is free: the host crashed or was killed) or whose lease expired (its host
//! stopped heartbeating) is taken over and marked `interrupted`, as the file store does
//! for a run whose lock is free when a runtime opens its data dir. Its unfinished tasks and
//! invocations become `interrupted` too, each with its journal event, then `run_interrupted
//! {reason, lastSeq, previousStatus}`; workspace files and `persist/` stay as they were. The
//! lease is then released, so any host may `resume` the run.

use tt_domain::event::{EventLevel, NewRunEvent, RunEventType};
use tt_domain::event_payload::{
    AgentInvocationInterrupted, AgentTaskInterrupted, EventPayload, RunInterrupted, journal_payload,
};
use tt_domain::ids::{EventId, RunId};
use tt_domain::invocation::InvocationStatus;
use tt_domain::run::AgentRunStatus;
use tt_domain::time::Timestamp;
use tt_ports::{
    AgentInvocationRepository, AgentRunRepository, EventPage, RunJournal, StorageError,
    StorageResult,
};

use crate::PostgresStore;
use crate::error::io;

pub use tt_ports::interruption::OWNER_EXITED;

/// How far back the journal is searched for the last `status_changed`.
const LOOK_BACK: usize = 256;

/// A run this store found unfinished with an expired lease and marked `interrupted`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterruptedRun {
    pub run_id: RunId,
    /// How far the run got: its last journaled status, else its stored one.
    pub previous_status: AgentRunStatus,
    /// The journal's last seq before the interruption events.
    pub last_seq: u64,
}

impl PostgresStore {
    /// Marks every unfinished run whose host is gone (its owner lock is free), whose lease
    /// expired, or that never had one `interrupted` (see the module docs) and returns them.
    /// Runs another live host holds are left alone,
    /// and so is a run another host takes over first. A runtime calls it when it opens the
    /// store; a host may call it again later to pick up runs of hosts that died since.
    pub async fn recover_interrupted_runs(
        &self,
        now: Timestamp,
        mut next_event_id: impl FnMut() -> EventId + Send,
    ) -> StorageResult<Vec<InterruptedRun>> {
        let unfinished: Vec<&str> = AgentRunStatus::ALL
            .iter()
            .filter(|status| !status.is_terminal())
            .map(|status| status.as_str())
            .collect();
        let candidates: Vec<String> = {
            let conn = self.pool.get().await?;
            conn.query(
                // `unfinished` (indexed) keeps this from reading every run ever stored. A run
                // another host holds is a candidate too: `claim_run` takes it only when that
                // host is gone (its owner lock is free) or its lease ran out.
                "SELECT r.run_id FROM runs r LEFT JOIN run_leases l ON l.run_id = r.run_id
                 WHERE r.unfinished
                   AND (l.run_id IS NULL OR l.owner_id <> $2 OR l.expires_at < clock_timestamp())
                   AND (r.body::json ->> 'status') = ANY($1)
                 ORDER BY r.created_ms, r.run_id",
                &[&unfinished, &self.owner_id()],
            )
            .await
            .map_err(io("the run index"))?
            .iter()
            .map(|row| row.get(0))
            .collect()
        };
        let mut recovered = Vec::new();
        for run_id in candidates {
            let run_id = RunId::from_raw(run_id);
            match self.recover_run(&run_id, now, &mut next_event_id).await {
                Ok(Some(run)) => recovered.push(run),
                Ok(None) => {}
                // Another host took it over (or it went away) since the listing.
                Err(StorageError::Locked { .. } | StorageError::NotFound { .. }) => continue,
                Err(other) => return Err(other),
            }
        }
        Ok(recovered)
    }

    /// Marks one run `interrupted` when its owner is gone: claims it (`agent.run_locked` while
    /// a live host holds it), interrupts it unless it ended meanwhile (`None` then), and lets
    /// it go. The recovery at open and a read that finds the run's owner gone
    /// (`observed.rs`) both come here; one at a time per store, so a run is interrupted once.
    pub(crate) async fn recover_run(
        &self,
        run_id: &RunId,
        now: Timestamp,
        next_event_id: &mut (impl FnMut() -> EventId + Send),
    ) -> StorageResult<Option<InterruptedRun>> {
        let _one_at_a_time = self.recovering.lock().await;
        self.claim_run(run_id).await?;
        let outcome = self.interrupt(run_id, now, next_event_id).await;
        // Let it go whatever happened: the next host to look can retry or resume it.
        let released = self.release_run(run_id).await;
        let outcome = outcome?;
        released?;
        Ok(outcome)
    }

    async fn interrupt(
        &self,
        run_id: &RunId,
        now: Timestamp,
        next_event_id: &mut (impl FnMut() -> EventId + Send),
    ) -> StorageResult<Option<InterruptedRun>> {
        // Re-read under the lease: it may have ended just before its owner went away.
        let mut record = self.load_run(run_id).await?;
        if record.status.is_terminal() {
            return Ok(None);
        }
        let last_seq = RunJournal::last_seq(self, run_id).await?;
        let previous_status = self
            .last_journaled_status(run_id)
            .await?
            .filter(|status| !status.is_terminal())
            .unwrap_or(record.status);
        for task in self.list_tasks(run_id).await? {
            if task.status.is_terminal() {
                continue;
            }
            let transition = tt_ports::interruption::owner_exited_task();
            let task = self
                .transition_task(run_id, &task.id, &transition, now)
                .await?
                .task;
            self.record(
                run_id,
                now,
                next_event_id(),
                EventLevel::Warn,
                &AgentTaskInterrupted::of(&task),
            )
            .await?;
        }
        for mut invocation in self.list_invocations(run_id).await? {
            if invocation.status.is_terminal() {
                continue;
            }
            invocation.transition(InvocationStatus::Interrupted, now)?;
            self.save_invocation(&invocation).await?;
            self.record(
                run_id,
                now,
                next_event_id(),
                EventLevel::Warn,
                &AgentInvocationInterrupted::of(&invocation),
            )
            .await?;
        }
        self.record(
            run_id,
            now,
            next_event_id(),
            EventLevel::Error,
            &RunInterrupted {
                reason: OWNER_EXITED.to_owned(),
                last_seq,
                previous_status,
            },
        )
        .await?;
        record.status = AgentRunStatus::Interrupted;
        record.updated_at = now;
        self.save_run(&record).await?;
        Ok(Some(InterruptedRun {
            run_id: run_id.clone(),
            previous_status,
            last_seq,
        }))
    }

    async fn record<P: EventPayload>(
        &self,
        run_id: &RunId,
        now: Timestamp,
        id: EventId,
        level: EventLevel,
        payload: &P,
    ) -> StorageResult<()> {
        self.append(NewRunEvent {
            id,
            run_id: run_id.clone(),
            timestamp: now,
            level,
            event_type: P::TYPE,
            payload: journal_payload(payload)
                .map_err(|err| StorageError::Other(format!("{} payload: {err}", P::TYPE)))?,
        })
        .await
        .map(drop)
    }

    /// The status the run's last `status_changed` event names (the stored record is not
    /// rewritten for the statuses a working run passes through).
    async fn last_journaled_status(&self, run_id: &RunId) -> StorageResult<Option<AgentRunStatus>> {
        let page = EventPage {
            before_seq: Some(u64::MAX >> 1),
            limit: Some(LOOK_BACK),
            ..EventPage::default()
        };
        let events = RunJournal::read(self, run_id, &page).await?;
        Ok(events
            .iter()
            .rev()
            .filter(|event| event.event_type == RunEventType::StatusChanged)
            .find_map(|event| serde_json::from_value(event.payload.get("status")?.clone()).ok()))
    }
}
