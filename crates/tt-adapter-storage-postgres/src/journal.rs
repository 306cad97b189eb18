//! The run journal on PostgreSQL. Appends go through the store's group commit
//! ([`crate::commit`]): one statement per batch bumps each run's `last_seq` (the row lock
//! serializes appends to one run, on any host), inserts the events under the new seqs, so seqs
//! are gapless and an append is durable when its batch commits, and notifies `tt_journal`, so
//! followers on other hosts hear it when it commits.

use std::time::Duration;

use async_trait::async_trait;
use tt_domain::event::{AgentRunEvent, NewRunEvent, RecordedEvent, RunEventType};
use tt_domain::ids::RunId;
use tt_domain::task::TaskContinuation;
use tt_ports::{
    ChainedCommit, CommitChain, EventPage, RunJournal, RunWrite, StorageError, StorageResult,
};

use crate::PostgresStore;
use crate::commit::{NewTaskRow, Write, stopped};
use crate::error::{io, parse, to_json};
use crate::retry::retrying;

/// The status a `status_changed` event states (kept as the run's `journal_status` with it).
fn stated_status(event: &NewRunEvent) -> Option<String> {
    /// The one field read of the payload's text.
    #[derive(serde::Deserialize)]
    struct Stated {
        status: Option<serde_json::Value>,
    }
    if event.event_type != RunEventType::StatusChanged {
        return None;
    }
    let stated: Stated = serde_json::from_str(event.payload.get()).ok()?;
    match stated.status? {
        serde_json::Value::String(status) => Some(status),
        _ => None,
    }
}

/// An event's row body: the event as its JSON line, the payload's text copied in as it is.
fn event_json(event: &RecordedEvent) -> StorageResult<String> {
    event
        .to_json()
        .map_err(|err| StorageError::Other(format!("cannot serialize event: {err}")))
}

/// The events of one row (migration 20): `seq` is the row's last event's, `span` how many it
/// holds; one event is its JSON, several a JSON array of them. Each gets its seq back (the
/// bodies hold 0).
fn events_from_row(
    run_id: &RunId,
    seq: i64,
    span: i32,
    body: &str,
) -> StorageResult<Vec<AgentRunEvent>> {
    let last = u64::try_from(seq).unwrap_or(0);
    let what = || format!("event {seq} of run {run_id}");
    let mut events: Vec<AgentRunEvent> = if span <= 1 {
        vec![parse(what(), body)?]
    } else {
        parse(what(), body)?
    };
    let count = u64::try_from(events.len()).unwrap_or(u64::MAX);
    if count != u64::try_from(span.max(1)).unwrap_or(1) || count > last {
        return Err(StorageError::corrupt(
            what(),
            format!("the row holds {count} events, its span says {span}"),
        ));
    }
    for (event, seq) in events.iter_mut().zip(last + 1 - count..) {
        event.seq = seq;
    }
    Ok(events)
}

/// The page of `page` (its limit and filter; `bound` is its after or before seq) from the rows
/// a page's query read: rows are parsed in the page's order only until the page is full, the
/// way a filtered page over a long journal stops early. Before a seq, the rows come newest
/// first, the one row at or past `bound` (which may hold events below it) first of all.
fn page_of_rows(
    run_id: &RunId,
    page: &EventPage,
    bound: u64,
    rows: &[tokio_postgres::Row],
) -> StorageResult<Vec<AgentRunEvent>> {
    let limit = page.effective_limit();
    let descending = page.before_seq.is_some();
    let mut ordered: Vec<&tokio_postgres::Row> = rows.iter().collect();
    if descending {
        ordered.sort_unstable_by_key(|row| std::cmp::Reverse(row.get::<_, i64>(0)));
    }
    let mut events = Vec::with_capacity(limit.min(rows.len()));
    for row in ordered {
        let mut held = events_from_row(run_id, row.get(0), row.get(1), row.get(2))?;
        if descending {
            held.reverse();
        }
        for event in held {
            let in_range = if descending {
                event.seq < bound
            } else {
                event.seq > bound
            };
            if in_range && page.matches(&event) {
                events.push(event);
                if events.len() == limit {
                    break;
                }
            }
        }
        if events.len() == limit {
            break;
        }
    }
    if descending {
        events.reverse();
    }
    Ok(events)
}

/// A unit as the group commit takes it: its writes, and its events to answer with their seqs.
struct Unit {
    queued: Vec<Write>,
    stored: StoredEvents,
}

/// A unit's events (seq 0 until answered) and which of its writes are events.
struct StoredEvents {
    events: Vec<RecordedEvent>,
    is_event: Vec<bool>,
}

impl StoredEvents {
    /// The events with the seqs the batch answered (one number per write of the unit).
    fn numbered(self, answers: Vec<u64>) -> Vec<RecordedEvent> {
        let seqs = answers
            .into_iter()
            .zip(self.is_event)
            .filter_map(|(seq, event)| event.then_some(seq));
        self.events
            .into_iter()
            .zip(seqs)
            .map(|(event, seq)| RecordedEvent { seq, ..event })
            .collect()
    }
}

impl Unit {
    /// `writes`, all of `run_id`, as the group commit's writes.
    fn of(run_id: &RunId, writes: Vec<RunWrite>) -> StorageResult<Self> {
        let foreign = |other: &RunId| {
            StorageError::Other(format!(
                "commit takes writes of one run, got {run_id} and {other}"
            ))
        };
        let mut events = Vec::new();
        let mut queued = Vec::with_capacity(writes.len());
        for write in writes {
            queued.push(match write {
                RunWrite::Event(event) => {
                    if event.run_id != *run_id {
                        return Err(foreign(&event.run_id));
                    }
                    let status = stated_status(&event);
                    let event = event.with_seq(0);
                    let body = event_json(&event)?;
                    events.push(event);
                    Write::Event { body, status }
                }
                RunWrite::Document { document, body } => Write::Document {
                    path: document.relative_path(),
                    body: body.as_str().to_owned(),
                },
                RunWrite::Invocation(invocation) => {
                    if invocation.run_id != *run_id {
                        return Err(foreign(&invocation.run_id));
                    }
                    Write::Invocation {
                        invocation_id: invocation.id.as_str().to_owned(),
                        body: to_json("invocation", &invocation)?,
                    }
                }
                RunWrite::Task(task) => {
                    if task.run_id != *run_id {
                        return Err(foreign(&task.run_id));
                    }
                    Write::Task(NewTaskRow {
                        task_id: task.id.as_str().to_owned(),
                        parent_id: task.parent_invocation_id.as_str().to_owned(),
                        child_id: task.child_invocation_id.as_str().to_owned(),
                        workspace_key: task.workspace_key.clone(),
                        delegation: task.continuation == TaskContinuation::ReturnToParent,
                        body: to_json("task", &task)?,
                    })
                }
            });
        }
        let is_event = queued
            .iter()
            .map(|write| matches!(write, Write::Event { .. }))
            .collect();
        Ok(Self {
            queued,
            stored: StoredEvents { events, is_event },
        })
    }
}

#[async_trait]
impl RunJournal for PostgresStore {
    async fn append(&self, event: NewRunEvent) -> StorageResult<RecordedEvent> {
        self.claim_run(&event.run_id).await?;
        let run_id = event.run_id.clone();
        let status = stated_status(&event);
        // Stored with seq 0; the row's seq column is the truth and is put back on read.
        let stored = event.with_seq(0);
        let body = event_json(&stored)?;
        let seq = self.journal.append(run_id.as_str(), body, status).await?;
        Ok(RecordedEvent { seq, ..stored })
    }

    async fn append_all(&self, events: Vec<NewRunEvent>) -> StorageResult<Vec<RecordedEvent>> {
        let Some(first) = events.first() else {
            return Ok(Vec::new());
        };
        let run_id = first.run_id.clone();
        if let Some(other) = events.iter().find(|event| event.run_id != run_id) {
            return Err(StorageError::Other(format!(
                "append_all takes events of one run, got {run_id} and {}",
                other.run_id
            )));
        }
        self.claim_run(&run_id).await?;
        let mut stored = Vec::with_capacity(events.len());
        let mut bodies = Vec::with_capacity(events.len());
        for event in events {
            let status = stated_status(&event);
            let event = event.with_seq(0);
            bodies.push((event_json(&event)?, status));
            stored.push(event);
        }
        // One unit of the group commit: the events commit together, in this order.
        let seqs = self.journal.append_all(run_id.as_str(), bodies).await?;
        Ok(stored
            .into_iter()
            .zip(seqs)
            .map(|(event, seq)| RecordedEvent { seq, ..event })
            .collect())
    }

    /// One unit of the group commit: the records and events commit together, in one batch
    /// (one round trip, one flush), or none of them does.
    async fn commit(
        &self,
        run_id: &RunId,
        writes: Vec<RunWrite>,
    ) -> StorageResult<Vec<RecordedEvent>> {
        if writes.is_empty() {
            return Ok(Vec::new());
        }
        let unit = Unit::of(run_id, writes)?;
        self.claim_run(run_id).await?;
        let answers = self.journal.submit(run_id.as_str(), unit.queued).await?;
        Ok(unit.stored.numbered(answers))
    }

    /// One unit of the group commit, queued behind everything queued before and not waited
    /// for: the writer goes on at once. The committer writes it only while `chain` is not
    /// broken and breaks it when the unit fails (`commit.rs`), so a chain's units land as a
    /// prefix, in order.
    async fn commit_chained(
        &self,
        run_id: &RunId,
        writes: Vec<RunWrite>,
        chain: &CommitChain,
    ) -> StorageResult<ChainedCommit> {
        if chain.is_broken() {
            return Err(CommitChain::refused(run_id.as_str()));
        }
        let queued = async {
            let unit = Unit::of(run_id, writes)?;
            self.claim_run(run_id).await?;
            let answer =
                self.journal
                    .queue_unit(run_id.as_str(), unit.queued, Some(chain.clone()))?;
            Ok::<_, StorageError>((unit.stored, answer))
        };
        let (stored, answer) = queued.await.inspect_err(|_| chain.mark_broken())?;
        Ok(Box::pin(async move {
            let answers = answer.await.map_err(|_| stopped())??;
            Ok(stored.numbered(answers.into_iter().map(|a| a.number).collect()))
        }))
    }

    async fn read(&self, run_id: &RunId, page: &EventPage) -> StorageResult<Vec<AgentRunEvent>> {
        retrying(|_| async move {
            let limit = page.effective_limit();
            let sql_limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let filtered = page.invocation_id.is_some();
            // A row is keyed by its last seq (migration 20): the rows after a seq are a range
            // of the key, the first of them possibly holding a few events at or below it; the
            // rows before a seq are a range too, plus the one row that may hold events on
            // both sides of it. Each row holds at least one event of the page, so `limit`
            // rows are enough.
            let (sql, bound) = match (page.before_seq, page.after_seq) {
                (Some(before), _) => (
                    if filtered {
                        "(SELECT seq, span, body FROM events WHERE run_id = $1 AND seq < $2
                          ORDER BY seq DESC LIMIT ALL OFFSET $3)
                         UNION ALL
                         (SELECT seq, span, body FROM events WHERE run_id = $1 AND seq >= $2
                          ORDER BY seq LIMIT 1)"
                    } else {
                        "(SELECT seq, span, body FROM events WHERE run_id = $1 AND seq < $2
                          ORDER BY seq DESC LIMIT $3)
                         UNION ALL
                         (SELECT seq, span, body FROM events WHERE run_id = $1 AND seq >= $2
                          ORDER BY seq LIMIT 1)"
                    },
                    before,
                ),
                (None, after) => (
                    if filtered {
                        "SELECT seq, span, body FROM events WHERE run_id = $1 AND seq > $2
                         ORDER BY seq LIMIT ALL OFFSET $3"
                    } else {
                        "SELECT seq, span, body FROM events WHERE run_id = $1 AND seq > $2
                         ORDER BY seq LIMIT $3"
                    },
                    after.unwrap_or(0),
                ),
            };
            let bound = i64::try_from(bound).unwrap_or(i64::MAX);
            // A filtered page reads the range and filters here (the filter looks into the
            // payload's eventScope); the OFFSET 0 keeps one statement shape for both.
            let third = if filtered { 0 } else { sql_limit };
            let conn = self.pool.get().await?;
            let rows = conn
                .query(sql, &[&run_id.as_str(), &bound, &third])
                .await
                .map_err(io(format!("runs/{run_id}/events")))?;
            drop(conn);
            if rows.is_empty() {
                self.require_run(run_id).await?;
            }
            let bound = u64::try_from(bound).unwrap_or(0);
            page_of_rows(run_id, page, bound, &rows)
        })
        .await
    }

    async fn wait_for_append(&self, run_id: &RunId, after_seq: u64, max_wait: Duration) {
        self.heard.wait(run_id.as_str(), after_seq, max_wait).await;
    }

    async fn last_seq(&self, run_id: &RunId) -> StorageResult<u64> {
        let what = format!("run {run_id}");
        let row = self
            .row(
                "SELECT last_seq FROM runs WHERE run_id = $1",
                &[&run_id.as_str()],
                &what,
            )
            .await?
            .ok_or_else(|| StorageError::not_found(what))?;
        Ok(crate::runs::as_u64(row.get(0)))
    }
}
