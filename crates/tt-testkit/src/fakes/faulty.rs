//! A fault-injecting wrapper around any store: it counts every write the runtime makes through
//! the run, invocation, journal and workspace ports and fails the chosen one (or every one from
//! it on, like a disk that stays full) with the `StorageError::Io` a file-system adapter reports
//! for ENOSPC, EIO, EROFS or a permission error. Reads always pass through.

use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use tt_domain::event::{AgentRunEvent, NewRunEvent, RecordedEvent};
use tt_domain::ids::{CheckpointId, InvocationId, RunId, TaskId, WorkspaceId};
use tt_domain::invocation::AgentInvocation;
use tt_domain::run::AgentRun;
use tt_domain::task::{AgentTaskRecord, TaskTransition};
use tt_domain::time::Timestamp;
use tt_domain::workspace::{
    CheckpointReason, CheckpointRecord, PersistSnapshot, PersistentChangeSet, RunManifest,
    WorkspacePath, WorkspaceRoot, WriteGuard,
};
use tt_ports::{
    AgentInvocationRepository, AgentRunRepository, EventPage, FileContent, RunDocument, RunJournal,
    RunListPage, StorageError, StorageResult, TaskTransitionOutcome, WorkspaceEntry,
    WorkspaceRepository, WriteOutcome,
};

/// An operating-system write failure, as the userdata adapter words it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiskFault {
    /// ENOSPC.
    NoSpace,
    /// EIO.
    Io,
    /// EROFS.
    ReadOnly,
    /// EACCES.
    PermissionDenied,
}

impl DiskFault {
    pub const ALL: [DiskFault; 4] = [
        DiskFault::NoSpace,
        DiskFault::Io,
        DiskFault::ReadOnly,
        DiskFault::PermissionDenied,
    ];

    /// The OS message (`std::io::Error`'s `Display`).
    pub fn os_message(self) -> &'static str {
        match self {
            DiskFault::NoSpace => "No space left on device (os error 28)",
            DiskFault::Io => "Input/output error (os error 5)",
            DiskFault::ReadOnly => "Read-only file system (os error 30)",
            DiskFault::PermissionDenied => "Permission denied (os error 13)",
        }
    }

    fn error(self, what: String) -> StorageError {
        StorageError::io(what, self.os_message())
    }
}

/// Which writes fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultPlan {
    /// 1-based number of the first failing write, counted over all wrapped ports.
    pub at_write: u64,
    /// Every later write fails too (a disk that stays full); otherwise only that one.
    pub sticky: bool,
    pub fault: DiskFault,
}

/// Picks writes by what they write (`runs/<id>/run.json`, `runs/<id>/events.jsonl`, …).
pub type WriteFilter = fn(&str) -> bool;

/// Wraps a store implementing the run, invocation, journal and workspace ports.
#[derive(Debug)]
pub struct FaultyStore<S> {
    inner: Arc<S>,
    writes: AtomicU64,
    failed: AtomicU64,
    plan: Mutex<Option<FaultPlan>>,
    /// Which writes the plan may fail, by what they write (`runs/<id>/run.json`,
    /// `runs/<id>/events.jsonl`, …); `None`: every write.
    only: Mutex<Option<WriteFilter>>,
}

impl<S> FaultyStore<S> {
    /// Passes everything through until a plan is set.
    pub fn wrap(inner: Arc<S>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            writes: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            plan: Mutex::new(None),
            only: Mutex::new(None),
        })
    }

    /// Lets the plan fail only the writes `only` picks by what they write (a disk full for
    /// new files and appends to the journal while other appends still fit, say); the others
    /// pass and are still counted.
    pub fn fail_only(&self, only: Option<WriteFilter>) {
        *self
            .only
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = only;
    }

    pub fn set_plan(&self, plan: Option<FaultPlan>) {
        *self
            .plan
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = plan;
    }

    /// Writes attempted so far (failed ones included).
    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::SeqCst)
    }

    /// Writes failed so far.
    pub fn failures(&self) -> u64 {
        self.failed.load(Ordering::SeqCst)
    }

    pub fn inner(&self) -> &Arc<S> {
        &self.inner
    }

    /// Counts one write; fails it when the plan says so. `what` names the file or record.
    fn check(&self, what: impl FnOnce() -> String) -> StorageResult<()> {
        let number = self.writes.fetch_add(1, Ordering::SeqCst) + 1;
        let plan = *self
            .plan
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let only = *self
            .only
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match plan {
            Some(plan) if number == plan.at_write || (plan.sticky && number > plan.at_write) => {
                let what = what();
                if only.is_some_and(|only| !only(&what)) {
                    return Ok(());
                }
                self.failed.fetch_add(1, Ordering::SeqCst);
                Err(plan.fault.error(what))
            }
            _ => Ok(()),
        }
    }
}

#[async_trait]
impl<S: AgentRunRepository + 'static> AgentRunRepository for FaultyStore<S> {
    async fn create_run(&self, run: &AgentRun, manifest: &RunManifest) -> StorageResult<()> {
        self.check(|| format!("runs/{}/run.json", run.id))?;
        self.inner.create_run(run, manifest).await
    }

    async fn save_run(&self, run: &AgentRun) -> StorageResult<()> {
        self.check(|| format!("runs/{}/run.json", run.id))?;
        self.inner.save_run(run).await
    }

    async fn load_run(&self, run_id: &RunId) -> StorageResult<AgentRun> {
        self.inner.load_run(run_id).await
    }

    async fn load_manifest(&self, run_id: &RunId) -> StorageResult<RunManifest> {
        self.inner.load_manifest(run_id).await
    }

    async fn list_runs(&self, page: RunListPage) -> StorageResult<Vec<AgentRun>> {
        self.inner.list_runs(page).await
    }

    async fn unreadable_runs(&self) -> StorageResult<Vec<tt_domain::damage::UnreadableRun>> {
        self.inner.unreadable_runs().await
    }

    async fn check_stored(
        &self,
        run_id: &RunId,
    ) -> StorageResult<Vec<tt_domain::damage::DamageFinding>> {
        self.inner.check_stored(run_id).await
    }

    async fn write_document(
        &self,
        run_id: &RunId,
        document: &RunDocument,
        value: &Value,
    ) -> StorageResult<()> {
        self.check(|| format!("runs/{run_id}/{}", document.relative_path()))?;
        self.inner.write_document(run_id, document, value).await
    }

    async fn read_document(
        &self,
        run_id: &RunId,
        document: &RunDocument,
    ) -> StorageResult<Option<Value>> {
        self.inner.read_document(run_id, document).await
    }

    async fn read_serialized_document(
        &self,
        run_id: &RunId,
        document: &RunDocument,
    ) -> StorageResult<Option<tt_ports::SerializedDocument>> {
        self.inner.read_serialized_document(run_id, document).await
    }
}

#[async_trait]
impl<S: AgentInvocationRepository + 'static> AgentInvocationRepository for FaultyStore<S> {
    async fn save_invocation(&self, invocation: &AgentInvocation) -> StorageResult<()> {
        self.check(|| {
            format!(
                "runs/{}/invocations/{}.json",
                invocation.run_id, invocation.id
            )
        })?;
        self.inner.save_invocation(invocation).await
    }

    async fn load_invocation(
        &self,
        run_id: &RunId,
        invocation_id: &InvocationId,
    ) -> StorageResult<AgentInvocation> {
        self.inner.load_invocation(run_id, invocation_id).await
    }

    async fn list_invocations(&self, run_id: &RunId) -> StorageResult<Vec<AgentInvocation>> {
        self.inner.list_invocations(run_id).await
    }

    async fn create_task(&self, task: &AgentTaskRecord) -> StorageResult<()> {
        self.check(|| format!("runs/{}/tasks/{}.json", task.run_id, task.id))?;
        self.inner.create_task(task).await
    }

    async fn load_task(&self, run_id: &RunId, task_id: &TaskId) -> StorageResult<AgentTaskRecord> {
        self.inner.load_task(run_id, task_id).await
    }

    async fn list_tasks(&self, run_id: &RunId) -> StorageResult<Vec<AgentTaskRecord>> {
        self.inner.list_tasks(run_id).await
    }

    async fn transition_task(
        &self,
        run_id: &RunId,
        task_id: &TaskId,
        transition: &TaskTransition,
        now: Timestamp,
    ) -> StorageResult<TaskTransitionOutcome> {
        self.check(|| format!("runs/{run_id}/tasks/{task_id}.json"))?;
        self.inner
            .transition_task(run_id, task_id, transition, now)
            .await
    }
}

#[async_trait]
impl<S: RunJournal + AgentRunRepository + AgentInvocationRepository + 'static> RunJournal
    for FaultyStore<S>
{
    async fn append(&self, event: NewRunEvent) -> StorageResult<RecordedEvent> {
        self.check(|| format!("runs/{}/events.jsonl", event.run_id))?;
        self.inner.append(event).await
    }

    /// One by one through this wrapper's own ports, so each write of a unit is counted (and
    /// can fail) where it was counted before there were units.
    async fn commit(
        &self,
        run_id: &RunId,
        writes: Vec<tt_ports::RunWrite>,
    ) -> StorageResult<Vec<RecordedEvent>> {
        tt_ports::commit_in_order(self, run_id, writes).await
    }

    async fn read(&self, run_id: &RunId, page: &EventPage) -> StorageResult<Vec<AgentRunEvent>> {
        self.inner.read(run_id, page).await
    }

    async fn last_seq(&self, run_id: &RunId) -> StorageResult<u64> {
        self.inner.last_seq(run_id).await
    }
}

#[async_trait]
impl<S: WorkspaceRepository + 'static> WorkspaceRepository for FaultyStore<S> {
    async fn list(
        &self,
        run_id: &RunId,
        path: Option<&WorkspacePath>,
        depth: u32,
    ) -> StorageResult<Vec<WorkspaceEntry>> {
        self.inner.list(run_id, path, depth).await
    }

    async fn read(&self, run_id: &RunId, path: &WorkspacePath) -> StorageResult<FileContent> {
        self.inner.read(run_id, path).await
    }

    async fn sha256(&self, run_id: &RunId, path: &WorkspacePath) -> StorageResult<Option<String>> {
        self.inner.sha256(run_id, path).await
    }

    async fn write(
        &self,
        run_id: &RunId,
        path: &WorkspacePath,
        content: &str,
        guard: &WriteGuard,
    ) -> StorageResult<WriteOutcome> {
        self.check(|| format!("runs/{run_id}/{path}"))?;
        self.inner.write(run_id, path, content, guard).await
    }

    async fn append(
        &self,
        run_id: &RunId,
        path: &WorkspacePath,
        content: &str,
    ) -> StorageResult<WriteOutcome> {
        self.check(|| format!("runs/{run_id}/{path}"))?;
        self.inner.append(run_id, path, content).await
    }

    async fn create_checkpoint(
        &self,
        run_id: &RunId,
        reason: CheckpointReason,
        event_seq: u64,
        paths: &[WorkspacePath],
        created_at: Timestamp,
    ) -> StorageResult<CheckpointRecord> {
        self.check(|| format!("runs/{run_id}/checkpoints"))?;
        self.inner
            .create_checkpoint(run_id, reason, event_seq, paths, created_at)
            .await
    }

    async fn init_persist_projection(
        &self,
        run_id: &RunId,
        base_state_id: Option<&str>,
    ) -> StorageResult<PersistSnapshot> {
        self.check(|| format!("runs/{run_id}/persist"))?;
        self.inner
            .init_persist_projection(run_id, base_state_id)
            .await
    }

    async fn promote_persist(
        &self,
        run_id: &RunId,
        snapshot: &PersistSnapshot,
        created_at: Timestamp,
    ) -> StorageResult<PersistentChangeSet> {
        self.check(|| format!("persistent-states/{run_id}"))?;
        self.inner
            .promote_persist(run_id, snapshot, created_at)
            .await
    }

    async fn promoted_state(&self, run_id: &RunId) -> StorageResult<Option<PersistentChangeSet>> {
        self.inner.promoted_state(run_id).await
    }

    async fn chat_head(&self, workspace_id: &WorkspaceId) -> StorageResult<Option<RunId>> {
        self.inner.chat_head(workspace_id).await
    }

    async fn swap_chat_head(
        &self,
        workspace_id: &WorkspaceId,
        expected: Option<&RunId>,
        run_id: &RunId,
    ) -> StorageResult<bool> {
        self.check(|| format!("chats/{workspace_id}/chat-head"))?;
        self.inner
            .swap_chat_head(workspace_id, expected, run_id)
            .await
    }

    async fn walk_files(
        &self,
        run_id: &RunId,
        roots: &[WorkspaceRoot],
        max_depth: u32,
        max_files: usize,
    ) -> StorageResult<Vec<WorkspacePath>> {
        self.inner
            .walk_files(run_id, roots, max_depth, max_files)
            .await
    }

    async fn checkpoint_record(
        &self,
        run_id: &RunId,
        id: &CheckpointId,
    ) -> StorageResult<Option<CheckpointRecord>> {
        self.inner.checkpoint_record(run_id, id).await
    }
}
