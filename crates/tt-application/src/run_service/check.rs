//! Checking a stored run for damage (`check_run`): the whole journal read page by page for
//! gaps and for an end that matches the run record, the records against the run's end, and an
//! end the journal refused. Read-only, through the ports, so it holds on every store; it never
//! repairs or writes anything (docs/storage.md, "Damage").

use tt_domain::damage::{
    DamageFinding, JournalScan, RunDamage, rebuilt_record_finding, unrecorded_end_finding,
};
use tt_domain::ids::RunId;
use tt_domain::run::UnrecordedEnd;
use tt_ports::StorageError;

use crate::error::ApplicationResult;
use crate::journal_read::JournalPages;
use crate::timeline::TimelineProjection;

use super::AgentRunService;

impl AgentRunService {
    /// Checks the stored run `run_id` for damage and lists what it finds, each with a code
    /// and one line: a run record that had to be rebuilt, journal gaps (the whole journal), an
    /// empty journal, a journal that does not end with the end the run record shows, records
    /// that stop short of it, an end the journal refused, and whatever the store finds damaged
    /// in the rest of what it keeps (`check_stored`: for the file store every line of every
    /// stored file). `agent.not_found` when there is no such run; a run record that cannot
    /// be read is that read's error.
    pub async fn check_run(&self, run_id: &RunId) -> ApplicationResult<RunDamage> {
        let run = self.services.runs.load_run(run_id).await?;
        let remembered = self.remembered_end(run_id);
        let mut scan = JournalScan::new();
        let mut pages = JournalPages::new(self.services.journal.as_ref(), run_id);
        loop {
            match pages.next().await {
                Ok(Some(events)) => events.iter().for_each(|event| scan.push(event)),
                Ok(None) => break,
                Err(error) => {
                    let after = pages.after().unwrap_or(0);
                    let what = format!("the journal cannot be read after seq {after}");
                    scan.stop_unreadable(storage_finding(&error, &what));
                    break;
                }
            }
        }
        let mut findings: Vec<DamageFinding> =
            run.rebuilt.iter().map(rebuilt_record_finding).collect();
        findings.extend(scan.findings(&run, remembered.as_ref()));
        match crate::timeline::timeline_projection(self.services.invocations.as_ref(), run_id).await
        {
            Ok(projection) => findings.extend(projection.records_finding(&run)),
            Err(error) => findings.push(DamageFinding::new(
                error.code(),
                format!("the records cannot be read: {}", error.detail()),
            )),
        }
        if let Some(finding) = self.unwritten_end_finding(&run).await {
            findings.push(finding);
        }
        // What the reads above do not parse whole (the blobs, the index copy, a line the
        // journal's pages or the records' latest values never reach).
        match self.services.runs.check_stored(run_id).await {
            Ok(stored) => findings.extend(stored),
            Err(error) => findings.push(storage_finding(&error, "the stored files cannot be read")),
        }
        Ok(RunDamage {
            run_id: run_id.clone(),
            status: run.status,
            event_count: scan.count(),
            last_seq: scan.last_seq(),
            findings,
            unrecorded_end: run.unrecorded_end.clone().or(remembered),
        })
    }

    /// The agent graph of a run (`timeline::timeline_projection`) with each agent's fallback
    /// switches (one read of the journal) and its `damage`: what the run record and the
    /// records show wrong (the cheap part of [`check_run`](Self::check_run)).
    pub async fn timeline_projection(
        &self,
        run_id: &RunId,
    ) -> ApplicationResult<TimelineProjection> {
        let mut projection =
            crate::timeline::timeline_projection(self.services.invocations.as_ref(), run_id)
                .await?;
        let mut pages = JournalPages::new(self.services.journal.as_ref(), run_id);
        // The switches are what the journal adds; a journal that cannot be read leaves them
        // out, and the records' graph still stands (check_run reports the journal).
        loop {
            match pages.next().await {
                Ok(Some(page)) => projection.add_model_switches(&page),
                Ok(None) => break,
                Err(error) => {
                    tracing::warn!(%error, "the timeline's fallback switches could not be read");
                    break;
                }
            }
        }
        match self.services.runs.load_run(run_id).await {
            Ok(run) => {
                projection
                    .damage
                    .extend(run.rebuilt.iter().map(rebuilt_record_finding));
                projection.damage.extend(projection.records_finding(&run));
                if let Some(end) = run.unrecorded_end.or_else(|| self.remembered_end(run_id)) {
                    projection.damage.push(unrecorded_end_finding(&end));
                }
            }
            // No record: nothing to compare the records with (the projection says what exists).
            Err(StorageError::NotFound { .. }) => {}
            Err(error) => projection
                .damage
                .push(storage_finding(&error, "the run record cannot be read")),
        }
        Ok(projection)
    }

    /// The finding for an `interrupted` run whose end was never written
    /// (`reopen_run::unwritten_end`); `None` for any other run, or when its records cannot be
    /// read (that is reported on its own).
    async fn unwritten_end_finding(&self, run: &tt_domain::run::AgentRun) -> Option<DamageFinding> {
        if run.status != tt_domain::run::AgentRunStatus::Interrupted {
            return None;
        }
        let invocations = self
            .services
            .invocations
            .list_invocations(&run.id)
            .await
            .ok()?;
        let tasks = self.services.invocations.list_tasks(&run.id).await.ok()?;
        let (owner, status) = super::reopen_run::unwritten_end(run, &invocations, &tasks)?;
        Some(DamageFinding::new(
            tt_domain::error_codes::AGENT_RUN_END_UNWRITTEN,
            format!(
                "agent {owner} ended {} but the run record never got the run's end (the disk \
                 refused it, or the process stopped first); the run was marked interrupted \
                 when a runtime next opened it, and `resume` reopens what its end stopped",
                status.as_str()
            ),
        ))
    }

    /// The end of a run the journal refused, as this process remembers it (the run record
    /// keeps it too unless it refused it as well); `None` when nothing was refused here.
    pub fn remembered_end(&self, run_id: &RunId) -> Option<UnrecordedEnd> {
        self.unrecorded_failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(run_id)
            .cloned()
    }
}

/// A finding for a storage error a check ran into.
fn storage_finding(error: &StorageError, what: &str) -> DamageFinding {
    DamageFinding::new(error.code(), format!("{what}: {error}"))
}
