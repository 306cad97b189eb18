//! The append-only run journal. The store assigns `seq` (strictly increasing, gapless, from 1);
//! appends must not re-read the journal and page reads must not load all of it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tt_domain::event::{AgentRunEvent, NewRunEvent, RecordedEvent};
use tt_domain::ids::RunId;
use tt_domain::invocation::AgentInvocation;
use tt_domain::task::AgentTaskRecord;

use crate::error::{StorageError, StorageResult};
use crate::runs::{AgentInvocationRepository, AgentRunRepository, RunDocument, SerializedDocument};

/// Default and maximum page sizes.
pub const DEFAULT_EVENT_PAGE_LIMIT: usize = 100;
pub const MAX_EVENT_PAGE_LIMIT: usize = 500;

/// One page request. `before_seq` wins over `after_seq`: it returns the *last* `limit` events
/// below it. `after_seq` returns the first `limit` events above it. With neither, the first
/// `limit` events. The invocation filter is applied before paging and keeps events whose
/// `eventScope` names the invocation as primary or related.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventPage {
    pub after_seq: Option<u64>,
    pub before_seq: Option<u64>,
    /// Clamped to `1..=500`; `None` means 100.
    pub limit: Option<usize>,
    pub invocation_id: Option<String>,
}

impl EventPage {
    pub fn effective_limit(&self) -> usize {
        self.limit
            .unwrap_or(DEFAULT_EVENT_PAGE_LIMIT)
            .clamp(1, MAX_EVENT_PAGE_LIMIT)
    }

    /// Whether `event` passes this page's invocation filter.
    pub fn matches(&self, event: &AgentRunEvent) -> bool {
        match &self.invocation_id {
            None => true,
            Some(id) => event.concerns_invocation(id),
        }
    }
}

#[async_trait]
pub trait RunJournal: Send + Sync {
    /// Appends one event as a whole line and returns it with its assigned seq. The payload is
    /// written as it comes, serialized ([`NewRunEvent::payload`]); the answer carries it so,
    /// and a caller parses it only if it reads it ([`RecordedEvent::to_event`]).
    async fn append(&self, event: NewRunEvent) -> StorageResult<RecordedEvent>;

    /// Appends `events` (all of one run) in order and returns them with their seqs, which
    /// follow one another. Durable when it returns, like [`append`](Self::append); on an error
    /// the events before the one that failed may have been appended, never one after it. A
    /// caller uses it for events it journals one right after the other, so a store can commit
    /// them together (one round trip, one flush) instead of one at a time. The default appends
    /// them one by one.
    async fn append_all(&self, events: Vec<NewRunEvent>) -> StorageResult<Vec<RecordedEvent>> {
        let mut stored = Vec::with_capacity(events.len());
        for event in events {
            stored.push(self.append(event).await?);
        }
        Ok(stored)
    }

    /// Writes `writes` (all of `run_id`) in order as one unit: records and the events that
    /// name them, which a caller would otherwise write one right after the other through two
    /// ports. Durable when it returns, like [`append`](Self::append); returns the stored
    /// events in order. Each record is written as its own port method writes it
    /// ([`RunWrite`]). On an error the writes before the one that failed may have been
    /// written, never one after it. A store that can commits the whole unit together (one
    /// round trip, one flush; PostgreSQL); [`commit_in_order`] writes them one by one through
    /// the store's own ports, which is what the file store and the fakes do.
    async fn commit(
        &self,
        run_id: &RunId,
        writes: Vec<RunWrite>,
    ) -> StorageResult<Vec<RecordedEvent>>;

    /// [`commit`](Self::commit) for a writer that goes on before the unit is durable: returns
    /// once the unit is queued behind everything this store queued before it (so its events
    /// take seqs after theirs), with a future of its outcome. The unit is written only if
    /// every earlier unit of `chain` was; a unit that fails breaks the chain
    /// ([`CommitChain`]), so what a failure or a crash leaves of a chain is a prefix of it. The
    /// writer must await a unit's outcome before anything that relies on it being stored
    /// (another connection reading or changing its records), and before it writes anything
    /// outside the chain. The default commits the unit before it returns (the file store and
    /// the fakes, which write in order anyway); PostgreSQL queues it in its group commit.
    async fn commit_chained(
        &self,
        run_id: &RunId,
        writes: Vec<RunWrite>,
        chain: &CommitChain,
    ) -> StorageResult<ChainedCommit> {
        if chain.is_broken() {
            return Err(CommitChain::refused(run_id.as_str()));
        }
        match self.commit(run_id, writes).await {
            Ok(stored) => Ok(Box::pin(std::future::ready(Ok(stored)))),
            Err(err) => {
                chain.mark_broken();
                Err(err)
            }
        }
    }

    /// Reads one page, in ascending seq order.
    async fn read(&self, run_id: &RunId, page: &EventPage) -> StorageResult<Vec<AgentRunEvent>>;

    /// Seq of the last event (0 when empty).
    async fn last_seq(&self, run_id: &RunId) -> StorageResult<u64>;

    /// Waits until an event above `after_seq` may have been appended to `run_id` by another
    /// process, or at most `max_wait`: a follower of a run written elsewhere calls it between
    /// journal reads. It may return early for no reason, so the caller always re-reads. The
    /// default just waits `max_wait` (polling); a store that can hear appends from other
    /// processes (PostgreSQL's LISTEN/NOTIFY) returns as soon as one commits.
    async fn wait_for_append(&self, run_id: &RunId, after_seq: u64, max_wait: std::time::Duration) {
        let _ = (run_id, after_seq);
        tokio::time::sleep(max_wait).await;
    }
}

/// The units one writer commits one after another without waiting for each to be durable
/// ([`RunJournal::commit_chained`]). A unit of a chain is written only if every earlier unit
/// of the chain was: once one fails, the chain is broken and every later unit is refused, so
/// what a failure (or a crash) leaves of the chain is a prefix of it, in its order.
#[derive(Debug, Clone, Default)]
pub struct CommitChain {
    broken: Arc<AtomicBool>,
}

impl CommitChain {
    /// Whether a unit of the chain failed (every later one is refused).
    pub fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Acquire)
    }

    /// Marks the chain broken: a unit of it failed.
    pub fn mark_broken(&self) {
        self.broken.store(true, Ordering::Release);
    }

    /// The error a unit queued after a broken chain gets.
    pub fn refused(run_id: &str) -> StorageError {
        StorageError::Io {
            what: format!("runs/{run_id}/events"),
            message: "an earlier write of this writer failed, so this one was not made".to_owned(),
        }
    }
}

/// The outcome of a chained unit ([`RunJournal::commit_chained`]): its stored events once it
/// committed, or why it did not.
pub type ChainedCommit = Pin<Box<dyn Future<Output = StorageResult<Vec<RecordedEvent>>> + Send>>;

/// One write of a unit ([`RunJournal::commit`]).
#[derive(Debug, Clone)]
pub enum RunWrite {
    /// A run document, as [`AgentRunRepository::write_serialized_document`] writes it.
    Document {
        document: RunDocument,
        body: SerializedDocument,
    },
    /// An invocation record, as [`AgentInvocationRepository::save_invocation`] writes it.
    Invocation(AgentInvocation),
    /// A new task record, as [`AgentInvocationRepository::create_task`] writes it (an existing
    /// task id fails with `AlreadyExists`).
    Task(AgentTaskRecord),
    /// A journal event, as [`RunJournal::append`] appends it (events that follow one another
    /// in the unit go in one [`RunJournal::append_all`]).
    Event(NewRunEvent),
}

/// [`RunJournal::commit`] as the writes one by one, in order, through `store`'s own ports (the
/// events that follow one another in one [`RunJournal::append_all`]): for a store that has no
/// way to commit them together.
pub async fn commit_in_order<S>(
    store: &S,
    run_id: &RunId,
    writes: Vec<RunWrite>,
) -> StorageResult<Vec<RecordedEvent>>
where
    S: RunJournal + AgentRunRepository + AgentInvocationRepository + ?Sized,
{
    let mut stored: Vec<RecordedEvent> = Vec::new();
    // Sized for a unit of events only (the common case): no growth while gathering them.
    let mut events = Vec::with_capacity(writes.len());
    // The first append's events are taken over as they are, not copied.
    let mut keep = |appended: Vec<RecordedEvent>| {
        if stored.is_empty() {
            stored = appended;
        } else {
            stored.extend(appended);
        }
    };
    for write in writes {
        let record = match write {
            RunWrite::Event(event) => {
                events.push(event);
                continue;
            }
            record => record,
        };
        if !events.is_empty() {
            keep(store.append_all(std::mem::take(&mut events)).await?);
        }
        match record {
            RunWrite::Document { document, body } => {
                store
                    .write_serialized_document(run_id, &document, &body)
                    .await?;
            }
            RunWrite::Invocation(invocation) => {
                store.save_invocation(&invocation).await?;
                // A crash here leaves an agent with no task yet (docs/resume.md); tests stop a
                // process at this line to check that resume takes the agent up.
                tracing::debug!(
                    agent = invocation.id.as_str(),
                    "invocation record written; writing the rest of its unit"
                );
            }
            RunWrite::Task(task) => store.create_task(&task).await?,
            RunWrite::Event(_) => {}
        }
    }
    if !events.is_empty() {
        keep(store.append_all(events).await?);
    }
    Ok(stored)
}
