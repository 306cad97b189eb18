//! An in-memory, write-through view of each run's invocation and task records, so listing them
//! (which the runtime does on every delegation, wait and result) does not re-read every file.
//!
//! Every write goes to disk first and then to the view, under one per-run mutex, so the view is
//! never ahead of the files; a run's view is filled from disk on first use. One process owns a
//! data root (as for the journal), so no other writer can make the view stale.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tt_domain::ids::{InvocationId, RunId, TaskId};
use tt_domain::invocation::AgentInvocation;
use tt_domain::task::AgentTaskRecord;

/// Runs whose records are kept; past this the whole view is dropped and refilled on demand.
const MAX_CACHED_RUNS: usize = 256;

/// One run's records, each set loaded on first use.
#[derive(Debug, Default)]
pub(crate) struct RunRecords {
    pub(crate) tasks: Option<BTreeMap<TaskId, AgentTaskRecord>>,
    pub(crate) invocations: Option<BTreeMap<InvocationId, AgentInvocation>>,
}

impl RunRecords {
    /// Tasks ordered by `createdAt`, then id.
    pub(crate) fn sorted_tasks(&self) -> Option<Vec<AgentTaskRecord>> {
        let mut tasks: Vec<AgentTaskRecord> = self.tasks.as_ref()?.values().cloned().collect();
        tasks.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Some(tasks)
    }

    /// Invocations ordered by `createdAt`, then id.
    pub(crate) fn sorted_invocations(&self) -> Option<Vec<AgentInvocation>> {
        let mut invocations: Vec<AgentInvocation> =
            self.invocations.as_ref()?.values().cloned().collect();
        invocations.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Some(invocations)
    }
}

/// The per-run views.
#[derive(Debug, Default)]
pub(crate) struct RecordCache {
    runs: Mutex<HashMap<RunId, Arc<Mutex<RunRecords>>>>,
}

impl RecordCache {
    /// The view of `run_id`; lock it for the whole read-or-write so disk and view agree.
    pub(crate) fn run(&self, run_id: &RunId) -> Arc<Mutex<RunRecords>> {
        let mut runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        if runs.len() >= MAX_CACHED_RUNS && !runs.contains_key(run_id) {
            runs.clear();
        }
        Arc::clone(runs.entry(run_id.clone()).or_default())
    }
}

/// Locks a run's view, recovering from a poisoned lock (the data is a cache of the files).
pub(crate) fn lock(records: &Mutex<RunRecords>) -> MutexGuard<'_, RunRecords> {
    records.lock().unwrap_or_else(PoisonError::into_inner)
}
