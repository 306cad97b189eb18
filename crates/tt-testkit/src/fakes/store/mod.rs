//! `InMemoryStore`: all five storage ports (runs, invocations, journal, workspace, profiles) kept
//! in memory behind one lock, with inspection helpers and failure injection for tests.
//!
//! Semantics follow the port docs and the userdata adapter; see the submodules for each port.

mod ports;
mod workspace;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::Value;
use tokio::sync::watch;
use tt_domain::event::{AgentRunEvent, RunEventType};
use tt_domain::ids::{InvocationId, ProfileId, RunId, TaskId, WorkspaceId};
use tt_domain::invocation::AgentInvocation;
use tt_domain::profile::AgentProfileDefinition;
use tt_domain::run::AgentRun;
use tt_domain::task::AgentTaskRecord;
use tt_domain::time::Timestamp;
use tt_domain::workspace::{CheckpointRecord, PersistentChange, RunManifest};
use tt_ports::{RunDocument, StorageError, StorageResult};

/// A storage operation that a test can make fail once with [`InMemoryStore::fail_next`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StoreOp {
    CreateRun,
    SaveRun,
    LoadRun,
    WriteDocument,
    ReadDocument,
    SaveInvocation,
    CreateTask,
    TransitionTask,
    JournalAppend,
    JournalRead,
    WorkspaceRead,
    WorkspaceWrite,
    WorkspaceAppend,
    CreateCheckpoint,
    InitPersistProjection,
    PromotePersist,
    LoadProfile,
}

/// One armed failure: fires on the next matching call, then disarms.
#[derive(Debug, Clone)]
struct Fault {
    op: StoreOp,
    /// For `JournalAppend`: only an event of this type triggers the fault.
    event_type: Option<RunEventType>,
    error: StorageError,
}

/// A promoted `persist/` state, keyed by workspace and state id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersistentStateRecord {
    pub state_id: String,
    pub base_state_id: Option<String>,
    /// The run that promoted it (`None` for states seeded by a test).
    pub run_id: Option<RunId>,
    /// Every file of the state, keyed by logical path (`persist/...`).
    pub files: BTreeMap<String, String>,
    pub changes: Vec<PersistentChange>,
    pub created_at: Option<Timestamp>,
}

/// One stored checkpoint: its record plus the text of every snapshotted file.
#[derive(Debug, Clone)]
struct StoredCheckpoint {
    record: CheckpointRecord,
    files: BTreeMap<String, String>,
}

#[derive(Debug)]
struct RunState {
    run: AgentRun,
    manifest: RunManifest,
    invocations: BTreeMap<InvocationId, AgentInvocation>,
    tasks: BTreeMap<TaskId, AgentTaskRecord>,
    // Looked up by key only, never iterated, so HashMap order cannot leak into results.
    documents: HashMap<RunDocument, Value>,
    events: Vec<AgentRunEvent>,
    /// Workspace files keyed by logical path; directories exist implicitly.
    files: BTreeMap<String, String>,
    checkpoints: Vec<StoredCheckpoint>,
}

impl RunState {
    fn sorted_invocations(&self) -> Vec<AgentInvocation> {
        let mut invocations: Vec<AgentInvocation> = self.invocations.values().cloned().collect();
        invocations.sort_by(|a, b| a.creation_order().cmp(&b.creation_order()));
        invocations
    }

    fn sorted_tasks(&self) -> Vec<AgentTaskRecord> {
        let mut tasks: Vec<AgentTaskRecord> = self.tasks.values().cloned().collect();
        tasks.sort_by(|a, b| a.creation_order().cmp(&b.creation_order()));
        tasks
    }
}

#[derive(Debug, Default)]
struct StoreState {
    runs: BTreeMap<RunId, RunState>,
    profiles: BTreeMap<ProfileId, AgentProfileDefinition>,
    /// `(workspaceId, stateId)` -> state.
    persistent_states: BTreeMap<(String, String), PersistentStateRecord>,
    /// workspaceId -> the run whose state is the conversation's head.
    chat_heads: BTreeMap<String, RunId>,
    faults: Vec<Fault>,
}

impl StoreState {
    fn run(&self, run_id: &RunId) -> StorageResult<&RunState> {
        self.runs
            .get(run_id)
            .ok_or_else(|| StorageError::not_found(format!("run {run_id}")))
    }

    fn run_mut(&mut self, run_id: &RunId) -> StorageResult<&mut RunState> {
        self.runs
            .get_mut(run_id)
            .ok_or_else(|| StorageError::not_found(format!("run {run_id}")))
    }

    /// Removes and returns the first armed fault for `op` (and `event_type`, when the fault
    /// names one).
    fn take_fault(
        &mut self,
        op: StoreOp,
        event_type: Option<&RunEventType>,
    ) -> Option<StorageError> {
        let index = self.faults.iter().position(|fault| {
            fault.op == op
                && (fault.event_type.is_none() || fault.event_type.as_ref() == event_type)
        })?;
        Some(self.faults.remove(index).error)
    }

    fn check_fault(&mut self, op: StoreOp) -> StorageResult<()> {
        match self.take_fault(op, None) {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }
}

/// In-memory storage for tests: implements `AgentRunRepository`, `AgentInvocationRepository`,
/// `RunJournal`, `WorkspaceRepository` and `ProfileRepository`.
///
/// Every operation runs synchronously under one `std::sync::Mutex` (never held across an
/// await), so each call is atomic with respect to all others: task transitions are
/// first-terminal-write-wins, journal seqs are gapless, guarded writes cannot race.
///
/// Failure injection: [`fail_next`](Self::fail_next) arms a one-shot error for the next call of
/// an operation; [`fail_journal_append_of`](Self::fail_journal_append_of) fails the append of
/// one event type (for example `run_completed`). A failed call has no side effects.
///
/// `read` and `append` exist on both `RunJournal` and `WorkspaceRepository`; call them through
/// an `Arc<dyn Port>` or with the trait named (`RunJournal::read(&*store, …)`).
pub struct InMemoryStore {
    state: Mutex<StoreState>,
    /// Counts journal appends; lets tests await an event without polling.
    appended: watch::Sender<u64>,
}

impl std::fmt::Debug for InMemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryStore").finish_non_exhaustive()
    }
}

impl InMemoryStore {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(StoreState::default()),
            appended: watch::Sender::new(0),
        })
    }

    fn lock(&self) -> MutexGuard<'_, StoreState> {
        // A test that panicked while holding the lock leaves consistent data behind (every
        // mutation is applied whole), so poisoning is safe to ignore.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    // ----- seeding -------------------------------------------------------------------------

    /// Stores (or replaces) a profile definition for `ProfileRepository`.
    pub fn put_profile(&self, def: AgentProfileDefinition) {
        self.lock().profiles.insert(def.id.clone(), def);
    }

    /// Seeds a promoted `persist/` state that a run can project with
    /// `init_persist_projection(run, Some(state_id))`. Paths are logical (`persist/notes.md`);
    /// a path that does not start with `persist/` is placed under it.
    pub fn put_persistent_state<'a>(
        &self,
        workspace_id: &WorkspaceId,
        state_id: &str,
        files: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) {
        let files = files
            .into_iter()
            .map(|(path, text)| {
                let path = if path.starts_with("persist/") {
                    path.to_owned()
                } else {
                    format!("persist/{path}")
                };
                (path, text.to_owned())
            })
            .collect();
        let record = PersistentStateRecord {
            state_id: state_id.to_owned(),
            base_state_id: None,
            run_id: None,
            files,
            changes: Vec::new(),
            created_at: None,
        };
        self.lock().persistent_states.insert(
            (workspace_id.as_str().to_owned(), state_id.to_owned()),
            record,
        );
    }

    // ----- failure injection ---------------------------------------------------------------

    /// Makes the next call of `op` fail with `error` (one shot; arming several queues them).
    pub fn fail_next(&self, op: StoreOp, error: StorageError) {
        self.lock().faults.push(Fault {
            op,
            event_type: None,
            error,
        });
    }

    /// Makes the next journal append fail with an I/O error (`agent.storage_io`).
    pub fn fail_next_journal_append(&self) {
        self.fail_next(
            StoreOp::JournalAppend,
            StorageError::io("events.jsonl", "injected journal failure"),
        );
    }

    /// Makes the next append of an event of `event_type` fail with `error`; other events are
    /// appended normally until then.
    pub fn fail_journal_append_of(&self, event_type: RunEventType, error: StorageError) {
        self.lock().faults.push(Fault {
            op: StoreOp::JournalAppend,
            event_type: Some(event_type),
            error,
        });
    }

    /// Number of armed faults that have not fired yet.
    pub fn pending_faults(&self) -> usize {
        self.lock().faults.len()
    }

    // ----- inspection ----------------------------------------------------------------------

    pub fn run(&self, run_id: &RunId) -> Option<AgentRun> {
        self.lock().runs.get(run_id).map(|state| state.run.clone())
    }

    /// The text of a workspace file, by logical path (`output/main.md`).
    pub fn file_text(&self, run_id: &RunId, path: &str) -> Option<String> {
        self.lock().runs.get(run_id)?.files.get(path).cloned()
    }

    /// Every workspace file of a run, keyed by logical path.
    pub fn files(&self, run_id: &RunId) -> BTreeMap<String, String> {
        self.lock()
            .runs
            .get(run_id)
            .map(|state| state.files.clone())
            .unwrap_or_default()
    }

    pub fn document(&self, run_id: &RunId, document: &RunDocument) -> Option<Value> {
        self.lock()
            .runs
            .get(run_id)?
            .documents
            .get(document)
            .cloned()
    }

    /// The whole journal of a run, in seq order.
    pub fn events(&self, run_id: &RunId) -> Vec<AgentRunEvent> {
        self.lock()
            .runs
            .get(run_id)
            .map(|state| state.events.clone())
            .unwrap_or_default()
    }

    /// The journal's event types, in seq order.
    pub fn event_types(&self, run_id: &RunId) -> Vec<String> {
        self.lock()
            .runs
            .get(run_id)
            .map(|state| {
                state
                    .events
                    .iter()
                    .map(|event| event.event_type.to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Invocations ordered by `createdAt` then id.
    pub fn invocations(&self, run_id: &RunId) -> Vec<AgentInvocation> {
        self.lock()
            .runs
            .get(run_id)
            .map(RunState::sorted_invocations)
            .unwrap_or_default()
    }

    /// Tasks ordered by `createdAt` then id.
    pub fn tasks(&self, run_id: &RunId) -> Vec<AgentTaskRecord> {
        self.lock()
            .runs
            .get(run_id)
            .map(RunState::sorted_tasks)
            .unwrap_or_default()
    }

    /// Checkpoint records in creation order.
    pub fn checkpoints(&self, run_id: &RunId) -> Vec<CheckpointRecord> {
        self.lock()
            .runs
            .get(run_id)
            .map(|state| {
                state
                    .checkpoints
                    .iter()
                    .map(|checkpoint| checkpoint.record.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The text a checkpoint captured for `path`.
    pub fn checkpoint_file(
        &self,
        run_id: &RunId,
        checkpoint_id: &str,
        path: &str,
    ) -> Option<String> {
        let state = self.lock();
        state
            .runs
            .get(run_id)?
            .checkpoints
            .iter()
            .find(|checkpoint| checkpoint.record.id.as_str() == checkpoint_id)?
            .files
            .get(path)
            .cloned()
    }

    pub fn persistent_state(
        &self,
        workspace_id: &WorkspaceId,
        state_id: &str,
    ) -> Option<PersistentStateRecord> {
        self.lock()
            .persistent_states
            .get(&(workspace_id.as_str().to_owned(), state_id.to_owned()))
            .cloned()
    }

    // ----- waiting -------------------------------------------------------------------------

    /// Waits until the run's journal holds an event matching `predicate` and returns the first
    /// such event. Wakes on every append (no polling); wrap it in `tokio::time::timeout` when a
    /// test must not hang.
    pub async fn wait_for_event(
        &self,
        run_id: &RunId,
        predicate: impl Fn(&AgentRunEvent) -> bool,
    ) -> AgentRunEvent {
        let mut appended = self.appended.subscribe();
        loop {
            if let Some(event) = self
                .events(run_id)
                .into_iter()
                .find(|event| predicate(event))
            {
                return event;
            }
            if appended.changed().await.is_err() {
                // The sender lives as long as `self`, so this cannot happen; never spin.
                std::future::pending::<()>().await;
            }
        }
    }

    /// Waits for the first event of type `event_type` (for example `"agent_task_started"`).
    pub async fn wait_for_event_type(&self, run_id: &RunId, event_type: &str) -> AgentRunEvent {
        self.wait_for_event(run_id, |event| event.event_type == event_type)
            .await
    }
}
