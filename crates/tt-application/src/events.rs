//! Writing to the run journal and fanning events out live.
//!
//! `EventSink::record` serializes the typed payload once, with the `eventScope` its type
//! states, stamps id and time, appends through the `RunJournal` port (which assigns the seq and
//! writes the payload as it is) and then broadcasts the stored event to live subscribers (the
//! only place the payload is parsed back, and only when someone listens).
//! Subscribers that fall behind re-read the journal, so a live stream never skips a seq.

use std::sync::Arc;
use tokio::sync::{broadcast, watch};
use tt_domain::error_codes;
use tt_domain::event::{
    AgentRunEvent, EventLevel, EventScope, JournalPayload, NewRunEvent, RecordedEvent, RunEventType,
};
use tt_domain::event_payload::EventPayload;
use tt_domain::ids::{EventId, InvocationId, RunId};
use tt_ports::{
    AgentRunRepository, ChainedCommit, Clock, CommitChain, EventPage, IdGenerator, RunJournal,
    RunWrite,
};

use crate::error::{ApplicationError, ApplicationResult};

/// Capacity of the live broadcast; a slower subscriber catches up from the journal.
const LIVE_CAPACITY: usize = 1024;

/// How often a stream of a run this process is not running looks for new journal lines, at the
/// latest: a store that hears other processes' appends (`RunJournal::wait_for_append`) wakes it
/// sooner.
const OTHER_PROCESS_POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// Following another process: how long a stream waits for the run's end event once the stored
/// run is terminal, when nothing more is journaled (the writer saves the status a few writes
/// before the end event; one that died in between never writes it).
const END_TAIL_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// An event not yet journaled, for [`EventSink::record_all`].
#[derive(Debug, Clone)]
pub struct PendingEvent {
    level: EventLevel,
    event_type: RunEventType,
    payload: JournalPayload,
}

/// The outcome of a unit committed without waiting ([`EventSink::commit_chained`]), for
/// whoever must know it is stored before going on: the writer before anything outside its
/// chain, a delegated agent before it starts. Clones share the outcome.
#[derive(Debug, Clone)]
pub(crate) struct Durable(Option<watch::Receiver<Option<ApplicationResult<()>>>>);

impl Durable {
    /// A unit already stored.
    pub(crate) fn stored() -> Self {
        Self(None)
    }

    /// Waits until the unit is stored; `Err` when it was not (nor anything after it in its
    /// chain).
    pub(crate) async fn wait(&self) -> ApplicationResult<()> {
        let Some(outcome) = &self.0 else {
            return Ok(());
        };
        let mut outcome = outcome.clone();
        match outcome.wait_for(Option::is_some).await {
            Ok(settled) => settled.clone().unwrap_or(Ok(())),
            Err(_) => Err(ApplicationError::fatal(
                error_codes::AGENT_STORAGE_IO,
                "a write's outcome was lost before it was known",
            )),
        }
    }
}

/// Awaits a chained unit, sends its events live once it committed, and tells its [`Durable`].
async fn settle_chained(
    pending: ChainedCommit,
    live: broadcast::Sender<AgentRunEvent>,
    done: watch::Sender<Option<ApplicationResult<()>>>,
) {
    let outcome = match pending.await {
        Ok(stored) => {
            send_live(&live, &stored);
            Ok(())
        }
        Err(err) => Err(ApplicationError::from(err)),
    };
    let _ = done.send(Some(outcome));
}

/// The one place events are written.
pub struct EventSink {
    journal: Arc<dyn RunJournal>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
    live: broadcast::Sender<AgentRunEvent>,
}

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSink").finish_non_exhaustive()
    }
}

impl EventSink {
    pub fn new(
        journal: Arc<dyn RunJournal>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
    ) -> Self {
        let (live, _) = broadcast::channel(LIVE_CAPACITY);
        Self {
            journal,
            clock,
            ids,
            live,
        }
    }

    async fn append(
        &self,
        run_id: &RunId,
        level: EventLevel,
        event_type: RunEventType,
        payload: JournalPayload,
    ) -> ApplicationResult<RecordedEvent> {
        let event = NewRunEvent {
            id: EventId::generate(self.ids.next_token()),
            run_id: run_id.clone(),
            timestamp: self.clock.now(),
            level,
            event_type,
            payload,
        };
        let stored = self.journal.append(event).await?;
        self.publish(std::slice::from_ref(&stored));
        Ok(stored)
    }

    /// Appends one event from its typed payload (`tt_domain::event_payload`): the struct names
    /// the event type, spells its fields and states its `eventScope`, so a payload cannot go
    /// out under the wrong type, with a misspelled key or in another agent's view.
    pub async fn record<P: EventPayload>(
        &self,
        run_id: &RunId,
        level: EventLevel,
        payload: &P,
    ) -> ApplicationResult<RecordedEvent> {
        let scope = payload.scope();
        let payload = serialized(payload, scope.as_ref())?;
        self.append(run_id, level, P::TYPE, payload).await
    }

    /// Appends several events, in order, as one append of the journal
    /// (`RunJournal::append_all`): for events journaled one right after the other, so a store
    /// commits them together. Built with [`EventSink::pending`]. A journal failure is fatal
    /// for the caller; the events before the one that failed may be in the journal.
    pub async fn record_all(
        &self,
        run_id: &RunId,
        events: Vec<PendingEvent>,
    ) -> ApplicationResult<Vec<RecordedEvent>> {
        let mut new_events = Vec::with_capacity(events.len());
        for pending in events {
            new_events.push(NewRunEvent {
                id: EventId::generate(self.ids.next_token()),
                run_id: run_id.clone(),
                timestamp: self.clock.now(),
                level: pending.level,
                event_type: pending.event_type,
                payload: pending.payload,
            });
        }
        let stored = self.journal.append_all(new_events).await?;
        self.publish(&stored);
        Ok(stored)
    }

    /// Writes records and events as one unit of the journal (`RunJournal::commit`): for a
    /// record and the events that name it, written one right after the other, so a store
    /// commits them together. The events are stamped already ([`stamp`](Self::stamp), where
    /// each would have been recorded on its own, so ids and times are taken in the same
    /// order). A journal failure is fatal for the caller; the writes before the one that
    /// failed may have been written.
    pub async fn commit(
        &self,
        run_id: &RunId,
        writes: Vec<RunWrite>,
    ) -> ApplicationResult<Vec<RecordedEvent>> {
        let stored = self.journal.commit(run_id, writes).await?;
        self.publish(&stored);
        Ok(stored)
    }

    /// [`commit`](Self::commit) without waiting for the unit to be durable
    /// (`RunJournal::commit_chained`): returns once the unit is queued behind the writer's
    /// earlier units of `chain`, with its [`Durable`] outcome. Its events reach live receivers
    /// once it committed (at once when the store committed it before answering, as `commit`).
    pub(crate) async fn commit_chained(
        &self,
        run_id: &RunId,
        writes: Vec<RunWrite>,
        chain: &CommitChain,
    ) -> ApplicationResult<Durable> {
        let mut pending = self.journal.commit_chained(run_id, writes, chain).await?;
        let mut context = std::task::Context::from_waker(std::task::Waker::noop());
        if let std::task::Poll::Ready(outcome) = pending.as_mut().poll(&mut context) {
            self.publish(&outcome?);
            return Ok(Durable::stored());
        }
        let (done, outcome) = watch::channel(None);
        let live = self.live.clone();
        tokio::spawn(settle_chained(pending, live, done));
        Ok(Durable(Some(outcome)))
    }

    /// Sends stored events to live receivers.
    fn publish(&self, stored: &[RecordedEvent]) {
        send_live(&self.live, stored);
    }

    /// `event` with its id and time taken now, for [`commit`](Self::commit).
    pub fn stamp(&self, run_id: &RunId, event: PendingEvent) -> RunWrite {
        RunWrite::Event(NewRunEvent {
            id: EventId::generate(self.ids.next_token()),
            run_id: run_id.clone(),
            timestamp: self.clock.now(),
            level: event.level,
            event_type: event.event_type,
            payload: event.payload,
        })
    }

    /// One event for [`record_all`](Self::record_all), from its typed payload (with the
    /// `eventScope` the payload states, as [`record`](Self::record) writes it).
    pub fn pending<P: EventPayload>(
        level: EventLevel,
        payload: &P,
    ) -> ApplicationResult<PendingEvent> {
        Ok(PendingEvent {
            level,
            event_type: P::TYPE,
            payload: serialized(payload, payload.scope().as_ref())?,
        })
    }

    /// [`record`](Self::record) for an event whose payload names no agent but belongs to one
    /// (guidance belongs to the run's foreground): its `eventScope` is `scope`, with any agent
    /// the payload names as related.
    pub async fn record_in<P: EventPayload>(
        &self,
        run_id: &RunId,
        level: EventLevel,
        payload: &P,
        scope: &InvocationId,
    ) -> ApplicationResult<RecordedEvent> {
        let named = payload.scope();
        let scope = EventScope::agent(scope).related(named.iter().flat_map(EventScope::ids));
        let payload = serialized(payload, Some(&scope))?;
        self.append(run_id, level, P::TYPE, payload).await
    }

    /// A live receiver of every event appended from now on (all runs).
    pub fn live(&self) -> broadcast::Receiver<AgentRunEvent> {
        self.live.subscribe()
    }

    pub fn journal(&self) -> &Arc<dyn RunJournal> {
        &self.journal
    }
}

/// Sends stored events to live receivers, parsed. Nobody watching live is fine, and then the
/// events are neither parsed nor copied for them: a subscriber that comes later reads them
/// from the journal, where they already are (as does one that misses an event whose payload
/// does not parse back: it sees the gap and reads the journal).
fn send_live(live: &broadcast::Sender<AgentRunEvent>, stored: &[RecordedEvent]) {
    if live.receiver_count() > 0 {
        for event in stored {
            if let Ok(event) = event.to_event() {
                let _ = live.send(event);
            }
        }
    }
}

/// `payload` serialized as journaled, with `scope` as its `eventScope`.
fn serialized<P: EventPayload>(
    payload: &P,
    scope: Option<&EventScope>,
) -> ApplicationResult<JournalPayload> {
    JournalPayload::typed(payload, scope).map_err(|err| {
        crate::error::ApplicationError::fatal(
            error_codes::AGENT_INTERNAL_ERROR,
            format!("{} payload: {err}", P::TYPE),
        )
    })
}

/// Whether this event type ends a run for good. `run_failed`, `run_cancelled` and
/// `run_interrupted` end it only until it is resumed (docs/resume.md): a stream of such a run
/// ends by the executor's end or the stored status instead, so one read from seq 0 goes on
/// through `run_resumed` to the run's last end.
fn ends_run_for_good(event_type: &RunEventType) -> bool {
    matches!(
        event_type,
        RunEventType::RunCompleted | RunEventType::RunPartialSuccess
    )
}

/// Whether this event type is one of a run's ends (for good or until a resume): the last event
/// of a journal whose run record is terminal, once the writer is done with it.
fn is_run_end(event_type: &RunEventType) -> bool {
    matches!(
        event_type,
        RunEventType::RunCompleted
            | RunEventType::RunPartialSuccess
            | RunEventType::RunFailed
            | RunEventType::RunCancelled
            | RunEventType::RunInterrupted
            | RunEventType::RunAbandoned
    )
}

/// A resumable live stream of one run's events, strictly in seq order without gaps.
///
/// It first replays the journal after `after_seq`, then follows the live broadcast; if the
/// broadcast lags it re-reads the journal. It ends after the run's terminal event, or, when
/// the run's executor has ended without one reaching the journal (a full or read-only disk),
/// once the journal has nothing more: a follower never waits on a run that is over.
pub struct RunEventStream {
    run_id: RunId,
    journal: Arc<dyn RunJournal>,
    live: broadcast::Receiver<AgentRunEvent>,
    next_seq: u64,
    buffer: std::collections::VecDeque<AgentRunEvent>,
    finished: bool,
    invocation_filter: Option<String>,
    /// Turns true when the run's executor ends; `None`: no executor runs it (any more).
    executor_done: Option<watch::Receiver<bool>>,
    /// The executor has ended: one more journal read, then the stream ends.
    draining: bool,
    /// Set when another process runs the run (or nobody does): the stream polls the journal
    /// and ends once the stored run is terminal and nothing more is journaled.
    elsewhere: Option<Arc<dyn AgentRunRepository>>,
    /// Following another process: a stored end that a resume may undo does not end the stream
    /// (see [`RunEventStream::through_resumes`]).
    through_resumes: bool,
    /// Whether the last event read (whatever the invocation filter) is one of a run's ends.
    last_read_ends_run: bool,
    /// Following another process: since when the stored run has been terminal with nothing
    /// more journaled.
    quiet_since_terminal: Option<tokio::time::Instant>,
}

impl std::fmt::Debug for RunEventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunEventStream")
            .field("run_id", &self.run_id)
            .field("next_seq", &self.next_seq)
            .finish()
    }
}

impl RunEventStream {
    /// Subscribes before reading so nothing appended in between is missed. `executor_done`
    /// is the run's executor's end signal, `None` when no executor runs it.
    pub fn new(
        sink: &EventSink,
        run_id: RunId,
        after_seq: u64,
        invocation_filter: Option<String>,
        executor_done: Option<watch::Receiver<bool>>,
    ) -> Self {
        Self {
            run_id,
            journal: Arc::clone(&sink.journal),
            live: sink.live(),
            next_seq: after_seq + 1,
            buffer: Default::default(),
            finished: false,
            invocation_filter,
            executor_done,
            draining: false,
            elsewhere: None,
            through_resumes: false,
            last_read_ends_run: false,
            quiet_since_terminal: None,
        }
    }

    /// Follows a run that another process writes (or nobody does): there is no live broadcast
    /// for it here, so the stream polls the journal, and ends after the terminal event, or once
    /// `runs` reports the run terminal (for example `interrupted`) and the journal's last event
    /// is one of the run's ends (or the record says its end went unrecorded, or nothing more
    /// was journaled for [`END_TAIL_GRACE`]).
    pub fn following_other_process(mut self, runs: Arc<dyn AgentRunRepository>) -> Self {
        self.elsewhere = Some(runs);
        self
    }

    /// Following a run another process writes, keeps on past an end that a resume may undo:
    /// a stored run that is `interrupted`, `failed` or `cancelled` and not abandoned
    /// ([`AgentRun::is_resumable`](tt_domain::run::AgentRun::is_resumable)) is waited on, so the
    /// stream goes on through `run_interrupted` and `run_resumed` when another host takes the
    /// run over, and ends after `run_completed` or `run_partial_success`, or once the stored
    /// run is terminal and no longer resumable (abandoned). A run nobody resumes is followed
    /// until the caller stops. No effect on a run this process executes.
    pub fn through_resumes(mut self) -> Self {
        self.through_resumes = true;
        self
    }

    /// The next event, or `None` once the run's terminal event has been delivered.
    pub async fn next(&mut self) -> ApplicationResult<Option<AgentRunEvent>> {
        loop {
            if let Some(event) = self.pop_buffered() {
                return Ok(Some(event));
            }
            if self.finished {
                return Ok(None);
            }
            // Catch up from the journal first.
            if self.read_journal().await? {
                continue;
            }
            if let Some(runs) = self.elsewhere.clone() {
                self.poll_other_process(runs.as_ref()).await?;
                continue;
            }
            if self.draining {
                // The executor is over and the journal holds nothing more.
                self.finished = true;
                continue;
            }
            let done = match &mut self.executor_done {
                None => true,
                Some(done) => *done.borrow_and_update(),
            };
            if done {
                // Whatever was appended before the executor ended is read once more.
                self.draining = true;
                continue;
            }
            self.wait_live().await;
        }
    }

    /// Reads what the journal holds after the last event delivered into the buffer; `true`
    /// when it held anything.
    async fn read_journal(&mut self) -> ApplicationResult<bool> {
        let page = EventPage {
            after_seq: Some(self.next_seq - 1),
            before_seq: None,
            limit: Some(500),
            invocation_id: None,
        };
        let events = self.journal.read(&self.run_id, &page).await?;
        if events.is_empty() {
            return Ok(false);
        }
        self.buffer.extend(events);
        self.quiet_since_terminal = None;
        Ok(true)
    }

    /// Following another process, with the journal read to its end: the stream finishes once
    /// the stored run has ended (for good, with `through_resumes`) and its end is journaled,
    /// else waits for the next append.
    async fn poll_other_process(&mut self, runs: &dyn AgentRunRepository) -> ApplicationResult<()> {
        // Journal first, then status: an event written before the run turned terminal
        // is always read before the stream ends.
        let run = runs.load_run(&self.run_id).await?;
        if run.status.is_terminal() && !(self.through_resumes && run.is_resumable()) {
            if self.read_journal().await? {
                return Ok(());
            }
            // The writer saves the terminal status a few writes before it journals
            // the run's end (its invocations and tasks settle in between): wait for
            // that end, unless the journal refused it (`unrecorded_end`) or nothing
            // more comes for a while (a writer that died in between).
            let quiet = *self
                .quiet_since_terminal
                .get_or_insert_with(tokio::time::Instant::now);
            if self.last_read_ends_run
                || run.unrecorded_end.is_some()
                || quiet.elapsed() >= END_TAIL_GRACE
            {
                self.finished = true;
                return Ok(());
            }
        }
        self.journal
            .wait_for_append(&self.run_id, self.next_seq - 1, OTHER_PROCESS_POLL)
            .await;
        Ok(())
    }

    /// Up to date: waits for the next live event of this run, or the executor's end.
    async fn wait_live(&mut self) {
        let received = match &mut self.executor_done {
            Some(done) => tokio::select! {
                received = self.live.recv() => Some(received),
                _ = done.changed() => None,
            },
            None => Some(self.live.recv().await),
        };
        match received {
            // The executor ended (or its sender is gone): checked on the next turn.
            None => {
                if let Some(done) = &self.executor_done
                    && done.has_changed().is_err()
                {
                    self.executor_done = None;
                }
            }
            Some(Ok(event)) => {
                // Anything but the next seq (a gap means we raced the journal) is left for
                // the journal re-read of the next loop turn.
                if event.run_id == self.run_id && event.seq == self.next_seq {
                    self.buffer.push_back(event);
                }
            }
            Some(Err(broadcast::error::RecvError::Lagged(_))) => {}
            Some(Err(broadcast::error::RecvError::Closed)) => {
                self.finished = true;
            }
        }
    }

    fn pop_buffered(&mut self) -> Option<AgentRunEvent> {
        while let Some(event) = self.buffer.pop_front() {
            if event.seq < self.next_seq {
                continue;
            }
            self.next_seq = event.seq + 1;
            self.last_read_ends_run = is_run_end(&event.event_type);
            if ends_run_for_good(&event.event_type) {
                self.finished = true;
                self.buffer.clear();
            }
            let keep = match &self.invocation_filter {
                None => true,
                Some(id) => event.concerns_invocation(id),
            };
            if keep {
                return Some(event);
            }
            if self.finished {
                return None;
            }
        }
        None
    }
}
