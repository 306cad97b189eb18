//! `AgentRunRepository` and `AgentInvocationRepository` over the run directory: run records and
//! their index, manifests, run documents, invocations and tasks (with the locked
//! first-terminal-write-wins transition).

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::cmp::Reverse;
use std::fs;
use std::io;
use std::path::Path;
use tt_domain::ids::{InvocationId, RunId, TaskId};
use tt_domain::invocation::AgentInvocation;
use tt_domain::run::AgentRun;
use tt_domain::task::{AgentTaskRecord, TaskTransition};
use tt_domain::time::Timestamp;
use tt_domain::workspace::{RunManifest, WorkspaceRoot};
use tt_ports::{
    AgentInvocationRepository, AgentRunRepository, RunDocument, RunListPage, StorageError,
    StorageResult, TaskTransitionOutcome,
};

use crate::UserDataStore;
use crate::fsutil::{self, json_file_stems, read_json, write_json_atomic};
use crate::layout::{
    self, INVOCATIONS_DIR, MANIFEST_FILE, RUN_FILE, TASKS_DIR, check_segment, document_path,
};
use crate::records;

fn run_lock(run_id: &RunId) -> String {
    format!("run:{run_id}")
}

fn tasks_lock(run_id: &RunId) -> String {
    format!("tasks:{run_id}")
}

/// Loads every `*.json` record in `dir`, sorted by `key` (createdAt, then id).
fn load_all<T, K>(dir: &Path, key: impl Fn(&T) -> K) -> StorageResult<Vec<T>>
where
    T: DeserializeOwned,
    K: Ord,
{
    let mut records = Vec::new();
    for stem in json_file_stems(dir)? {
        // A file deleted between listing and reading is simply no longer part of the set.
        if let Some(record) = read_json::<T>(&dir.join(format!("{stem}.json")))? {
            records.push(record);
        }
    }
    records.sort_by_key(|record| key(record));
    Ok(records)
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
        let guard = self.inner.locks.lock(run_lock(&run.id)).await;
        let run = run.clone();
        let manifest = manifest.clone();
        self.blocking(move |inner| {
            let _guard = guard;
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
            for root in WorkspaceRoot::ALL {
                fsutil::create_dir_all(&run_dir.join(root.name()))?;
            }
            write_json_atomic(&run_dir.join(RUN_FILE), &run)?;
            write_json_atomic(&run_dir.join(MANIFEST_FILE), &manifest)?;
            fsutil::create_dir_all(&inner.layout.index_runs_dir())?;
            write_json_atomic(&index_path, &run)?;
            inner.remember_run_dir(&run.id, run_dir);
            Ok(())
        })
        .await
    }

    async fn save_run(&self, run: &AgentRun) -> StorageResult<()> {
        let guard = self.inner.locks.lock(run_lock(&run.id)).await;
        let run = run.clone();
        self.blocking(move |inner| {
            let _guard = guard;
            let run_dir = inner.run_dir(&run.id)?;
            write_json_atomic(&run_dir.join(RUN_FILE), &run)?;
            write_json_atomic(&inner.layout.index_file(run.id.as_str()), &run)
        })
        .await
    }

    async fn load_run(&self, run_id: &RunId) -> StorageResult<AgentRun> {
        let run_id = run_id.clone();
        self.blocking(move |inner| {
            let run_dir = inner.run_dir(&run_id)?;
            read_json(&run_dir.join(RUN_FILE))?
                .ok_or_else(|| StorageError::not_found(format!("run {run_id}")))
        })
        .await
    }

    async fn load_manifest(&self, run_id: &RunId) -> StorageResult<RunManifest> {
        let run_id = run_id.clone();
        self.blocking(move |inner| {
            let run_dir = inner.run_dir(&run_id)?;
            read_json(&run_dir.join(MANIFEST_FILE))?
                .ok_or_else(|| StorageError::not_found(format!("manifest of run {run_id}")))
        })
        .await
    }

    async fn list_runs(&self, page: RunListPage) -> StorageResult<Vec<AgentRun>> {
        self.blocking(move |inner| {
            // Newest first, ties by id ascending.
            let runs: Vec<AgentRun> =
                load_all(&inner.layout.index_runs_dir(), |run: &AgentRun| {
                    (Reverse(run.created_at), run.id.clone())
                })?;
            Ok(runs
                .into_iter()
                .skip(page.offset)
                .take(page.limit)
                .collect())
        })
        .await
    }

    async fn write_document(
        &self,
        run_id: &RunId,
        document: &RunDocument,
        value: &Value,
    ) -> StorageResult<()> {
        let run_id = run_id.clone();
        let document = document.clone();
        let value = value.clone();
        self.blocking(move |inner| {
            let run_dir = inner.run_dir(&run_id)?;
            let path = document_path(&run_dir, &document)?;
            if let Some(parent) = path.parent() {
                fsutil::create_dir_all(parent)?;
            }
            write_json_atomic(&path, &value)
        })
        .await
    }

    async fn read_document(
        &self,
        run_id: &RunId,
        document: &RunDocument,
    ) -> StorageResult<Option<Value>> {
        let run_id = run_id.clone();
        let document = document.clone();
        self.blocking(move |inner| {
            let run_dir = inner.run_dir(&run_id)?;
            read_json(&document_path(&run_dir, &document)?)
        })
        .await
    }
}

#[async_trait]
impl AgentInvocationRepository for UserDataStore {
    async fn save_invocation(&self, invocation: &AgentInvocation) -> StorageResult<()> {
        let invocation = invocation.clone();
        self.blocking(move |inner| {
            check_segment("invocation id", invocation.id.as_str())?;
            let dir = inner.run_dir(&invocation.run_id)?.join(INVOCATIONS_DIR);
            let view = inner.records.run(&invocation.run_id);
            let mut view = records::lock(&view);
            fsutil::create_dir_all(&dir)?;
            write_json_atomic(&dir.join(format!("{}.json", invocation.id)), &invocation)?;
            if let Some(invocations) = view.invocations.as_mut() {
                invocations.insert(invocation.id.clone(), invocation);
            }
            Ok(())
        })
        .await
    }

    async fn load_invocation(
        &self,
        run_id: &RunId,
        invocation_id: &InvocationId,
    ) -> StorageResult<AgentInvocation> {
        let run_id = run_id.clone();
        let invocation_id = invocation_id.clone();
        self.blocking(move |inner| {
            check_segment("invocation id", invocation_id.as_str())?;
            let path = inner
                .run_dir(&run_id)?
                .join(INVOCATIONS_DIR)
                .join(format!("{invocation_id}.json"));
            let view = inner.records.run(&run_id);
            let view = records::lock(&view);
            if let Some(invocations) = view.invocations.as_ref() {
                return invocations
                    .get(&invocation_id)
                    .cloned()
                    .ok_or_else(|| StorageError::not_found(format!("invocation {invocation_id}")));
            }
            read_json(&path)?
                .ok_or_else(|| StorageError::not_found(format!("invocation {invocation_id}")))
        })
        .await
    }

    async fn list_invocations(&self, run_id: &RunId) -> StorageResult<Vec<AgentInvocation>> {
        let run_id = run_id.clone();
        self.blocking(move |inner| {
            let dir = inner.run_dir(&run_id)?.join(INVOCATIONS_DIR);
            let view = inner.records.run(&run_id);
            let mut view = records::lock(&view);
            if view.invocations.is_none() {
                let loaded: Vec<AgentInvocation> = load_all(&dir, |inv: &AgentInvocation| {
                    (inv.created_at, inv.id.clone())
                })?;
                view.invocations = Some(
                    loaded
                        .into_iter()
                        .map(|inv| (inv.id.clone(), inv))
                        .collect(),
                );
            }
            Ok(view.sorted_invocations().unwrap_or_default())
        })
        .await
    }

    async fn create_task(&self, task: &AgentTaskRecord) -> StorageResult<()> {
        let guard = self.inner.locks.lock(tasks_lock(&task.run_id)).await;
        let task = task.clone();
        self.blocking(move |inner| {
            let _guard = guard;
            check_segment("task id", task.id.as_str())?;
            let dir = inner.run_dir(&task.run_id)?.join(TASKS_DIR);
            let path = dir.join(format!("{}.json", task.id));
            let view = inner.records.run(&task.run_id);
            let mut view = records::lock(&view);
            if path.exists() {
                return Err(StorageError::AlreadyExists {
                    what: format!("task {}", task.id),
                });
            }
            fsutil::create_dir_all(&dir)?;
            write_json_atomic(&path, &task)?;
            if let Some(tasks) = view.tasks.as_mut() {
                tasks.insert(task.id.clone(), task);
            }
            Ok(())
        })
        .await
    }

    async fn load_task(&self, run_id: &RunId, task_id: &TaskId) -> StorageResult<AgentTaskRecord> {
        let run_id = run_id.clone();
        let task_id = task_id.clone();
        self.blocking(move |inner| {
            let run_dir = inner.run_dir(&run_id)?;
            let view = inner.records.run(&run_id);
            let view = records::lock(&view);
            if let Some(tasks) = view.tasks.as_ref() {
                layout::check_segment("task id", task_id.as_str())?;
                return tasks
                    .get(&task_id)
                    .cloned()
                    .ok_or_else(|| StorageError::not_found(format!("task {task_id}")));
            }
            load_task_sync(&run_dir, &task_id)
        })
        .await
    }

    async fn list_tasks(&self, run_id: &RunId) -> StorageResult<Vec<AgentTaskRecord>> {
        let run_id = run_id.clone();
        self.blocking(move |inner| {
            let dir = inner.run_dir(&run_id)?.join(TASKS_DIR);
            let view = inner.records.run(&run_id);
            let mut view = records::lock(&view);
            if view.tasks.is_none() {
                let loaded: Vec<AgentTaskRecord> = load_all(&dir, |task: &AgentTaskRecord| {
                    (task.created_at, task.id.clone())
                })?;
                view.tasks = Some(
                    loaded
                        .into_iter()
                        .map(|task| (task.id.clone(), task))
                        .collect(),
                );
            }
            Ok(view.sorted_tasks().unwrap_or_default())
        })
        .await
    }

    async fn transition_task(
        &self,
        run_id: &RunId,
        task_id: &TaskId,
        transition: &TaskTransition,
        now: Timestamp,
    ) -> StorageResult<TaskTransitionOutcome> {
        // Load, apply and save under one lock so concurrent transitions serialize and exactly
        // one terminal write can win.
        let guard = self.inner.locks.lock(tasks_lock(run_id)).await;
        let run_id = run_id.clone();
        let task_id = task_id.clone();
        let transition = transition.clone();
        self.blocking(move |inner| {
            let _guard = guard;
            let run_dir = inner.run_dir(&run_id)?;
            let view = inner.records.run(&run_id);
            let mut view = records::lock(&view);
            let cached = view
                .tasks
                .as_ref()
                .map(|tasks| tasks.get(&task_id).cloned());
            let mut task = match cached {
                Some(Some(task)) => task,
                Some(None) => return Err(StorageError::not_found(format!("task {task_id}"))),
                None => load_task_sync(&run_dir, &task_id)?,
            };
            let changed = task.apply_transition(&transition, now)?;
            if changed {
                write_json_atomic(
                    &run_dir.join(TASKS_DIR).join(format!("{task_id}.json")),
                    &task,
                )?;
                if let Some(tasks) = view.tasks.as_mut() {
                    tasks.insert(task_id.clone(), task.clone());
                }
            }
            Ok(TaskTransitionOutcome { task, changed })
        })
        .await
    }
}

fn load_task_sync(run_dir: &Path, task_id: &TaskId) -> StorageResult<AgentTaskRecord> {
    layout::check_segment("task id", task_id.as_str())?;
    read_json(&run_dir.join(TASKS_DIR).join(format!("{task_id}.json")))?
        .ok_or_else(|| StorageError::not_found(format!("task {task_id}")))
}
