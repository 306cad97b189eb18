//! `AgentRunRepository` and `AgentInvocationRepository`: `run.json`, `manifest.json` and the
//! run index as files; run documents, invocations and tasks as records of the run's writer (or,
//! for a run this process does not write, read from its record segment). Terminal transitions
//! and run record changes are durability points.

use async_trait::async_trait;
use serde_json::Value;
use serde_json::value::RawValue;
use std::cmp::Reverse;
use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::Path;
use tt_domain::damage::UnreadableRun;
use tt_domain::ids::{InvocationId, RunId, TaskId};
use tt_domain::invocation::AgentInvocation;
use tt_domain::run::{AgentRun, AgentRunStatus};
use tt_domain::task::{AgentTaskRecord, TaskStatus, TaskTransition};
use tt_domain::time::Timestamp;
use tt_domain::workspace::{RunManifest, WorkspaceRoot};
use tt_ports::{
    AgentInvocationRepository, AgentRunRepository, RunDocument, RunListPage, SerializedDocument,
    StorageError, StorageResult, TaskTransitionOutcome,
};

use crate::fsutil::{self, read_json, write_json_atomic};
use crate::layout::{
    EVENTS_FILE, MANIFEST_FILE, Placement, RUN_FILE, check_segment, join_relative, placement,
};
use crate::owned::{self, RecordKind};
use crate::reader::ReaderViews;
use crate::run_index;
use crate::{Inner, RunAccess, RunLocation, UserDataStore, reader};
use tt_ports::runs::{delegations_listed, tasks_where, workspace_keys_listed};

/// How much of a journal's tail a reader looks at for a live run's latest status.
const STATUS_TAIL_BYTES: u64 = 64 * 1024;

/// The status of a run this process does not write, as its journal shows it now: the stored
/// record only keeps meaningful statuses, and a run with no live owner is `interrupted` (the
/// next writer to open the data dir records that).
/// Writes `index/run-summaries/<runId>.json` once the run has ended (nothing before).
pub(crate) fn write_summary(layout: &crate::layout::Layout, run: &AgentRun) -> StorageResult<()> {
    let Some(summary) = tt_domain::run::AgentRunSummary::of(run) else {
        return Ok(());
    };
    let path = layout.summary_file(run.id.as_str());
    if let Some(dir) = path.parent() {
        fsutil::create_dir_all(dir)?;
    }
    write_json_atomic(&path, &summary)
}

pub(crate) fn observed_run(inner: &Inner, dir: &Path, mut run: AgentRun) -> AgentRun {
    if run.status.is_terminal() || inner.is_owned(&run.id) {
        return run;
    }
    if !owned::has_live_owner(dir) {
        run.status = AgentRunStatus::Interrupted;
    } else if let Some(status) = latest_journaled_status(&dir.join(EVENTS_FILE)) {
        run.status = status;
    }
    run
}

/// The status of the last `status_changed` event in the journal's tail, if any.
fn latest_journaled_status(path: &Path) -> Option<AgentRunStatus> {
    let (_, tail) = fsutil::read_last_bytes(path, STATUS_TAIL_BYTES)?;
    tail.split(|byte| *byte == b'\n')
        .rev()
        .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
        .find(|event| event.get("type").and_then(Value::as_str) == Some("status_changed"))
        .and_then(|event| event.get("payload")?.get("status").cloned())
        .and_then(|status| serde_json::from_value(status).ok())
}

/// A run id from a file or directory name that is a safe storage segment.
fn run_id_of(name: &str) -> Option<RunId> {
    tt_domain::ids::is_valid_storage_segment(name).then(|| RunId::from_raw(name))
}

/// The stored runs, and those whose record cannot be read.
pub(crate) struct RunScan {
    pub(crate) runs: Vec<(AgentRun, std::path::PathBuf)>,
    pub(crate) unreadable: Vec<UnreadableRun>,
}

/// The run record in `dir`: `run.json`, or the record rebuilt when it is missing or unreadable
/// (`rebuild`).
pub(crate) fn load_run_file(
    layout: &crate::layout::Layout,
    dir: &Path,
    run_id: &RunId,
) -> StorageResult<AgentRun> {
    crate::rebuild::read_run_record(layout, dir, run_id)
}

impl Inner {
    pub(crate) fn is_owned(&self, run_id: &RunId) -> bool {
        self.lock_owned().contains_key(run_id)
    }

    /// Every stored run: the index, plus run directories whose index copy is missing. A file
    /// that cannot be read is skipped, never allowed to hide the others.
    pub(crate) fn all_runs(&self) -> StorageResult<Vec<(AgentRun, std::path::PathBuf)>> {
        Ok(self.scan_runs()?.runs)
    }

    /// What [`all_runs`](Self::all_runs) reads, with the run records it could not read.
    pub(crate) fn scan_runs(&self) -> StorageResult<RunScan> {
        let mut runs = Vec::new();
        let mut unreadable = Vec::new();
        let mut seen = HashSet::new();
        for stem in fsutil::json_file_stems(&self.layout.index_runs_dir())? {
            let Some(run_id) = run_id_of(&stem) else {
                continue;
            };
            let Ok(location) = self.run_location(&run_id) else {
                continue;
            };
            match load_run_file(&self.layout, &location.dir, &run_id) {
                Ok(run) => {
                    seen.insert(run.id.clone());
                    runs.push((run, location.dir));
                }
                // Nothing but what creating a run leaves behind: nobody's run.
                Err(StorageError::NotFound { .. }) => {}
                Err(error) => {
                    seen.insert(run_id.clone());
                    unreadable.push(UnreadableRun {
                        run_id: run_id.to_string(),
                        code: error.code().to_string(),
                        message: error.to_string(),
                    });
                }
            }
        }
        for dir in self.layout.all_run_dirs()? {
            let Some(run_id) = dir
                .file_name()
                .and_then(|name| name.to_str())
                .and_then(run_id_of)
            else {
                continue;
            };
            if seen.contains(&run_id) {
                continue;
            }
            let loaded = load_run_file(&self.layout, &dir, &run_id);
            if let Err(error) = &loaded
                && !matches!(error, StorageError::NotFound { .. })
            {
                seen.insert(run_id.clone());
                unreadable.push(UnreadableRun {
                    run_id: run_id.to_string(),
                    code: error.code().to_string(),
                    message: error.to_string(),
                });
            }
            if let Ok(run) = loaded
                && run.id == run_id
            {
                self.remember_run_location(
                    &run_id,
                    RunLocation {
                        canonical: fs::canonicalize(&dir).ok(),
                        dir: dir.clone(),
                    },
                );
                seen.insert(run_id);
                runs.push((run, dir));
            }
        }
        Ok(RunScan { runs, unreadable })
    }
}

impl UserDataStore {
    /// Record `key` of `kind` of a run this process does not write, read from its record
    /// segment in `dir` through `view`.
    pub(crate) fn reader_record<T: serde::de::DeserializeOwned>(
        &self,
        dir: &Path,
        view: &ReaderViews,
        kind: RecordKind,
        key: &str,
    ) -> StorageResult<Option<T>> {
        reader::record(
            dir,
            &view.segments,
            &self.inner.journal_bytes_read,
            kind,
            key,
        )
    }

    /// A run document parsed as `T`, wherever the run keeps it.
    fn document_as<T: serde::de::DeserializeOwned>(
        &self,
        run_id: &RunId,
        document: &RunDocument,
    ) -> StorageResult<Option<T>> {
        let placement = placement(document)?;
        match (self.inner.access(run_id)?, placement) {
            (RunAccess::Owned(run), Placement::File(relative)) => {
                read_json(&join_relative(&run.dir, &relative))
            }
            (RunAccess::Reader { dir, .. }, Placement::File(relative)) => {
                read_json(&join_relative(&dir, &relative))
            }
            (RunAccess::Owned(run), Placement::Record(key)) => run.document(&key),
            (RunAccess::Reader { dir, view }, Placement::Record(key)) => {
                self.reader_record(&dir, &view, RecordKind::Document, &key)
            }
        }
    }

    /// Every record of `kind` of such a run, sorted by `order`.
    fn reader_records<T: serde::de::DeserializeOwned>(
        &self,
        dir: &Path,
        view: &ReaderViews,
        kind: RecordKind,
        order: impl FnMut(&T, &T) -> std::cmp::Ordering,
    ) -> StorageResult<Vec<T>> {
        let mut all = reader::records(dir, &view.segments, &self.inner.journal_bytes_read, kind)?;
        all.sort_by(order);
        Ok(all)
    }
}

#[async_trait]
impl AgentRunRepository for UserDataStore {
    async fn create_run(&self, run: &AgentRun, manifest: &RunManifest) -> StorageResult<()> {
        if manifest.run_id != run.id {
            return Err(StorageError::Other(format!(
                "manifest names run {} but the run is {}",
                manifest.run_id, run.id
            )));
        }
        let inner = &self.inner;
        if inner.flusher.is_none() {
            return Err(inner.read_only_error(&format!("run {}", run.id)));
        }
        let run_dir = inner
            .layout
            .run_dir(run.workspace_id.as_str(), run.id.as_str())?;
        let index_path = inner.layout.index_file(run.id.as_str());
        let exists = || StorageError::AlreadyExists {
            what: format!("run {}", run.id),
        };
        if index_path.exists() {
            return Err(exists());
        }
        if let Some(parent) = run_dir.parent() {
            fsutil::create_dir_all(parent)?;
        }
        match fs::create_dir(&run_dir) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => return Err(exists()),
            Err(err) => return Err(StorageError::io(run_dir.display().to_string(), err)),
        }
        // Take the lock before anything else lands, so a run.json always has had an owner.
        let owned = match inner.open_owned(&run.id, run_dir.clone(), true) {
            Ok(owned) => owned,
            Err(err) => {
                // Best effort: an empty directory without run.json is nobody's run.
                let _ = fs::remove_dir_all(&run_dir);
                return Err(err);
            }
        };
        let written = (|| -> StorageResult<()> {
            // Indexed before its record exists: recovery finds every unfinished run by its
            // marker, and a listing by its line (docs/storage.md, "The run indexes").
            run_index::mark_unfinished(&inner.layout, &run.id, run.workspace_id.as_str())?;
            run_index::append_created(
                &inner.layout,
                &run_index::LogEntry {
                    created_ms: run.created_at.unix_millis(),
                    run_id: run.id.clone(),
                    workspace_id: run.workspace_id.to_string(),
                },
            )?;
            for root in WorkspaceRoot::ALL {
                fsutil::create_dir_all(&run_dir.join(root.name()))?;
            }
            write_json_atomic(&run_dir.join(MANIFEST_FILE), manifest)?;
            write_json_atomic(&run_dir.join(RUN_FILE), run)?;
            fsutil::create_dir_all(&inner.layout.index_runs_dir())?;
            write_json_atomic(&index_path, run)
        })();
        if let Err(err) = written {
            // A run that could not be created leaves nothing behind: not its writer, not its
            // directory, not its index copy (best effort; the next start cleans up the rest).
            drop(owned);
            inner.forget_owned(&run.id);
            let _ = fs::remove_file(&index_path);
            let _ = fs::remove_dir_all(&run_dir);
            let _ = run_index::clear_unfinished(&inner.layout, &run.id);
            return Err(err);
        }
        inner.remember_run_location(
            &run.id,
            RunLocation {
                canonical: fs::canonicalize(&run_dir).ok(),
                dir: run_dir,
            },
        );
        drop(owned);
        Ok(())
    }

    async fn save_run(&self, run: &AgentRun) -> StorageResult<()> {
        let owned = self.inner.owned_run(&run.id)?;
        let layout = &self.inner.layout;
        // A run resumed or reopened is unfinished again: marked before its record says so.
        if !run.status.is_terminal() && !run_index::is_marked(layout, &run.id) {
            run_index::mark_unfinished(layout, &run.id, run.workspace_id.as_str())?;
        }
        write_json_atomic(&owned.dir.join(RUN_FILE), run)?;
        write_json_atomic(&layout.index_file(run.id.as_str()), run)?;
        write_summary(layout, run)?;
        owned.finished.store(
            run.status.is_terminal(),
            std::sync::atomic::Ordering::Release,
        );
        // Every change of the stored run record (a commit about to be offered, the end of the
        // run) is a durability point.
        self.inner.durable(&owned).await?;
        // Only once its record says it ended does a run leave the unfinished index.
        if run.status.is_terminal() {
            run_index::clear_unfinished(layout, &run.id)?;
        }
        Ok(())
    }

    async fn load_run(&self, run_id: &RunId) -> StorageResult<AgentRun> {
        let dir = self.inner.run_location(run_id)?.dir;
        let run = load_run_file(&self.inner.layout, &dir, run_id)?;
        Ok(observed_run(&self.inner, &dir, run))
    }

    async fn load_manifest(&self, run_id: &RunId) -> StorageResult<RunManifest> {
        let dir = self.inner.run_location(run_id)?.dir;
        read_json(&dir.join(MANIFEST_FILE))?
            .ok_or_else(|| StorageError::not_found(format!("manifest of run {run_id}")))
    }

    async fn list_runs(&self, page: RunListPage) -> StorageResult<Vec<AgentRun>> {
        if let Some(runs) = self.inner.list_from_log(page)? {
            return Ok(runs);
        }
        // No complete run log (a data dir written before it, read by a reader): scan.
        let mut runs: Vec<AgentRun> = self
            .inner
            .all_runs()?
            .into_iter()
            .map(|(run, dir)| observed_run(&self.inner, &dir, run))
            .collect();
        // Newest first, ties by id ascending.
        runs.sort_by(|a, b| (Reverse(a.created_at), &a.id).cmp(&(Reverse(b.created_at), &b.id)));
        Ok(runs
            .into_iter()
            .skip(page.offset)
            .take(page.limit)
            .collect())
    }

    async fn list_chat_runs(&self, stable_chat_id: &str) -> StorageResult<Vec<AgentRun>> {
        self.inner.chat_runs(stable_chat_id)
    }

    async fn unreadable_runs(&self) -> StorageResult<Vec<UnreadableRun>> {
        let mut unreadable = self.inner.scan_runs()?.unreadable;
        unreadable.sort_by(|a, b| a.run_id.cmp(&b.run_id));
        Ok(unreadable)
    }

    async fn check_stored(
        &self,
        run_id: &RunId,
    ) -> StorageResult<Vec<tt_domain::damage::DamageFinding>> {
        let dir = self.inner.run_location(run_id)?.dir;
        crate::stored_check::check_run_files(&self.inner.layout, &dir, run_id)
    }

    async fn write_document(
        &self,
        run_id: &RunId,
        document: &RunDocument,
        value: &Value,
    ) -> StorageResult<()> {
        let owned = self.inner.owned_run(run_id)?;
        match placement(document)? {
            Placement::File(relative) => {
                let path = join_relative(&owned.dir, &relative);
                if let Some(parent) = path.parent() {
                    fsutil::create_dir_all(parent)?;
                }
                write_json_atomic(&path, value)
            }
            Placement::Record(key) => owned.put_document(&key, value),
        }
    }

    async fn write_serialized_document(
        &self,
        run_id: &RunId,
        document: &RunDocument,
        serialized: &SerializedDocument,
    ) -> StorageResult<()> {
        let owned = self.inner.owned_run(run_id)?;
        match placement(document)? {
            // Files are written pretty, from a `Value`.
            Placement::File(_) => {
                self.write_document(run_id, document, &serialized.to_value()?)
                    .await
            }
            Placement::Record(key) => owned.put_serialized_document(&key, serialized.as_str()),
        }
    }

    async fn read_document(
        &self,
        run_id: &RunId,
        document: &RunDocument,
    ) -> StorageResult<Option<Value>> {
        self.document_as(run_id, document)
    }

    async fn read_serialized_document(
        &self,
        run_id: &RunId,
        document: &RunDocument,
    ) -> StorageResult<Option<SerializedDocument>> {
        // Checked as JSON and copied, never built into a `Value` tree.
        match self.document_as::<Box<RawValue>>(run_id, document)? {
            Some(raw) => SerializedDocument::from_raw(&raw).map(Some),
            None => Ok(None),
        }
    }

    async fn release_run(&self, run_id: &RunId) -> StorageResult<()> {
        self.sync_run(run_id).await?;
        self.close_run(run_id)
    }

    fn watch_runs(&self) -> Option<Box<dyn tt_ports::RunWatch>> {
        Some(Box::new(crate::run_watch::FileRunWatch::new(&self.inner)))
    }
}

#[async_trait]
impl AgentInvocationRepository for UserDataStore {
    async fn save_invocation(&self, invocation: &AgentInvocation) -> StorageResult<()> {
        check_segment("invocation id", invocation.id.as_str())?;
        let owned = self.inner.owned_run(&invocation.run_id)?;
        owned.save_invocation(invocation)?;
        if invocation.status.is_terminal() {
            self.inner.durable(&owned).await?;
        }
        Ok(())
    }

    async fn load_invocation(
        &self,
        run_id: &RunId,
        invocation_id: &InvocationId,
    ) -> StorageResult<AgentInvocation> {
        check_segment("invocation id", invocation_id.as_str())?;
        let found = match self.inner.access(run_id)? {
            RunAccess::Owned(run) => run.invocation(invocation_id),
            RunAccess::Reader { dir, view } => {
                self.reader_record(&dir, &view, RecordKind::Invocation, invocation_id.as_str())?
            }
        };
        found.ok_or_else(|| StorageError::not_found(format!("invocation {invocation_id}")))
    }

    async fn list_invocations(&self, run_id: &RunId) -> StorageResult<Vec<AgentInvocation>> {
        match self.inner.access(run_id)? {
            RunAccess::Owned(run) => Ok(run.invocations()),
            RunAccess::Reader { dir, view } => self.reader_records(
                &dir,
                &view,
                RecordKind::Invocation,
                |a: &AgentInvocation, b| a.creation_order().cmp(&b.creation_order()),
            ),
        }
    }

    async fn create_task(&self, task: &AgentTaskRecord) -> StorageResult<()> {
        check_segment("task id", task.id.as_str())?;
        self.inner.owned_run(&task.run_id)?.create_task(task)
    }

    async fn load_task(&self, run_id: &RunId, task_id: &TaskId) -> StorageResult<AgentTaskRecord> {
        check_segment("task id", task_id.as_str())?;
        let found = match self.inner.access(run_id)? {
            RunAccess::Owned(run) => run.task(task_id),
            RunAccess::Reader { dir, view } => {
                self.reader_record(&dir, &view, RecordKind::Task, task_id.as_str())?
            }
        };
        found.ok_or_else(|| StorageError::not_found(format!("task {task_id}")))
    }

    async fn task_status(&self, run_id: &RunId, task_id: &TaskId) -> StorageResult<TaskStatus> {
        match self.inner.access(run_id)? {
            RunAccess::Owned(run) => run
                .task_status(task_id)
                .ok_or_else(|| StorageError::not_found(format!("task {task_id}"))),
            RunAccess::Reader { .. } => Ok(self.load_task(run_id, task_id).await?.status),
        }
    }

    async fn list_tasks(&self, run_id: &RunId) -> StorageResult<Vec<AgentTaskRecord>> {
        match self.inner.access(run_id)? {
            RunAccess::Owned(run) => Ok(run.tasks()),
            RunAccess::Reader { dir, view } => {
                self.reader_records(&dir, &view, RecordKind::Task, |a: &AgentTaskRecord, b| {
                    a.creation_order().cmp(&b.creation_order())
                })
            }
        }
    }

    async fn list_tasks_by_parent(
        &self,
        run_id: &RunId,
        parent: &InvocationId,
    ) -> StorageResult<Vec<AgentTaskRecord>> {
        match self.inner.access(run_id)? {
            RunAccess::Owned(run) => Ok(run.tasks_by_parent(parent)),
            RunAccess::Reader { .. } => {
                tasks_where(self, run_id, |task| task.parent_invocation_id == *parent).await
            }
        }
    }

    async fn count_delegations_by_parent(
        &self,
        run_id: &RunId,
        parent: &InvocationId,
    ) -> StorageResult<u64> {
        match self.inner.access(run_id)? {
            RunAccess::Owned(run) => Ok(run.delegations_by_parent(parent)),
            RunAccess::Reader { .. } => delegations_listed(self, run_id, parent).await,
        }
    }

    async fn workspace_keys_like(&self, run_id: &RunId, base: &str) -> StorageResult<Vec<String>> {
        match self.inner.access(run_id)? {
            RunAccess::Owned(run) => Ok(run.workspace_keys_like(base)),
            RunAccess::Reader { .. } => workspace_keys_listed(self, run_id, base).await,
        }
    }

    async fn list_tasks_by_child(
        &self,
        run_id: &RunId,
        child: &InvocationId,
    ) -> StorageResult<Vec<AgentTaskRecord>> {
        match self.inner.access(run_id)? {
            RunAccess::Owned(run) => Ok(run.tasks_by_child(child)),
            RunAccess::Reader { .. } => {
                tasks_where(self, run_id, |task| task.child_invocation_id == *child).await
            }
        }
    }

    async fn transition_task(
        &self,
        run_id: &RunId,
        task_id: &TaskId,
        transition: &TaskTransition,
        now: Timestamp,
    ) -> StorageResult<TaskTransitionOutcome> {
        check_segment("task id", task_id.as_str())?;
        let owned = self.inner.owned_run(run_id)?;
        let outcome = owned.transition_task(task_id, transition, now)?;
        if outcome.changed && outcome.task.status.is_terminal() {
            self.inner.durable(&owned).await?;
        }
        Ok(outcome)
    }
}
