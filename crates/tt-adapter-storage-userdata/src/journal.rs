//! `RunJournal` over `events.jsonl`. The owner appends from memory (last seq, length and a sparse
//! seq → byte-offset index, see [`OwnedRun`](crate::owned::OwnedRun)); any other process reads
//! through a [`JournalView`](crate::journal_index::JournalView), never writing.

use async_trait::async_trait;
use std::path::Path;
use tt_domain::event::{AgentRunEvent, NewRunEvent, RecordedEvent};
use tt_domain::ids::RunId;
use tt_ports::{EventPage, RunJournal, RunWrite, StorageResult};

use crate::journal_index::{JournalIndex, ReadPlan, read_page};
use crate::layout::EVENTS_FILE;
use crate::{Inner, RunAccess, UserDataStore};

impl Inner {
    /// Plans something from a run's journal as this process can see it now: the owner's
    /// in-memory index, or a reader's view refreshed from the file.
    fn with_journal<T>(
        &self,
        run_id: &RunId,
        plan: impl FnOnce(&Path, &JournalIndex) -> T,
    ) -> StorageResult<T> {
        match self.access(run_id)? {
            RunAccess::Owned(run) => Ok(run.with_journal(plan)),
            RunAccess::Reader { dir, view } => {
                let mut view = view
                    .journal
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let index = view.refresh(&self.journal_bytes_read, &dir)?;
                Ok(plan(&dir.join(EVENTS_FILE), index))
            }
        }
    }
}

#[async_trait]
impl RunJournal for UserDataStore {
    async fn append(&self, event: NewRunEvent) -> StorageResult<RecordedEvent> {
        let run = self.inner.owned_run(&event.run_id)?;
        run.append_event(event)
    }

    /// Under one hold of the run's files: the seqs follow one another.
    async fn append_all(&self, events: Vec<NewRunEvent>) -> StorageResult<Vec<RecordedEvent>> {
        let Some(first) = events.first() else {
            return Ok(Vec::new());
        };
        let run = self.inner.owned_run(&first.run_id)?;
        run.append_events(events)
    }

    /// The writes one by one in order, as the caller made them before there was a unit: the
    /// files and the journal come out byte for byte the same.
    async fn commit(
        &self,
        run_id: &RunId,
        writes: Vec<RunWrite>,
    ) -> StorageResult<Vec<RecordedEvent>> {
        tt_ports::commit_in_order(self, run_id, writes).await
    }

    async fn read(&self, run_id: &RunId, page: &EventPage) -> StorageResult<Vec<AgentRunEvent>> {
        let plan = self.inner.with_journal(run_id, |path, index| {
            ReadPlan::new(path.to_path_buf(), index, page)
        })?;
        read_page(&self.inner.journal_bytes_read, &plan, page)
    }

    async fn last_seq(&self, run_id: &RunId) -> StorageResult<u64> {
        self.inner.with_journal(run_id, |_, index| index.last_seq)
    }
}

/// The last `limit` events of a run (blocking; recovery reads how far a dead run got).
pub(crate) fn tail(
    inner: &Inner,
    run_id: &RunId,
    limit: usize,
) -> StorageResult<Vec<AgentRunEvent>> {
    let page = EventPage {
        before_seq: Some(u64::MAX),
        limit: Some(limit),
        ..EventPage::default()
    };
    let plan = inner.with_journal(run_id, |path, index| {
        ReadPlan::new(path.to_path_buf(), index, &page)
    })?;
    read_page(&inner.journal_bytes_read, &plan, &page)
}
