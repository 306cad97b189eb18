//! Adapter-specific tests: what the contract cannot see (files on disk, crashes, symlinks,
//! reopening a data root).

mod checkpoints;
mod durability;
mod journal;
mod layout;
mod ownership;
mod persist;
mod power_cut;
mod profiles;
mod rebuild;
mod run_index;
mod skills;
mod symlinks;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use tempfile::TempDir;
use tt_adapter_storage_userdata::UserDataStore;
use tt_domain::ids::RunId;
use tt_domain::run::AgentRun;
use tt_domain::workspace::{CheckpointReason, CheckpointRecord, WorkspacePath};
use tt_ports::{AgentRunRepository, WorkspaceRepository};
use tt_testkit::contract::{manifest_for, sample_run, ts, wp};

/// A temporary data root and a store opened on it.
pub(crate) struct Fixture {
    pub dir: TempDir,
    pub store: Arc<UserDataStore>,
}

impl Fixture {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = UserDataStore::open(dir.path().join("data")).unwrap();
        Self { dir, store }
    }

    pub(crate) fn data_root(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// A new directory `name` beside the data root, outside the store.
    pub(crate) fn outside_dir(&self, name: &str) -> PathBuf {
        let outside = self.dir.path().join(name);
        std::fs::create_dir(&outside).unwrap();
        outside
    }

    /// A new store on the same data root, as after a process restart: the old store is
    /// dropped (closing its runs and releasing their locks).
    pub(crate) fn reopen(&mut self) -> Arc<UserDataStore> {
        self.store = UserDataStore::open(self.data_root()).unwrap();
        Arc::clone(&self.store)
    }

    /// [`Fixture::reopen`], then the new store marks what the old one left `interrupted`
    /// (at `ts(100)`): the store and the runs it marked.
    pub(crate) fn reopen_and_recover(
        &mut self,
    ) -> (
        Arc<UserDataStore>,
        Vec<tt_adapter_storage_userdata::InterruptedRun>,
    ) {
        let store = self.reopen();
        let recovered = store
            .recover_interrupted_runs(tt_testkit::contract::ts(100), event_ids())
            .unwrap();
        (store, recovered)
    }

    /// The text of the file at `path` of run `run_id`, read through the port.
    pub(crate) async fn text(&self, run_id: &RunId, path: &str) -> String {
        self.store.read(run_id, &wp(path)).await.unwrap().text
    }

    pub(crate) async fn run(&self, n: u32) -> (AgentRun, PathBuf) {
        let run = sample_run(n);
        self.store
            .create_run(&run, &manifest_for(&run))
            .await
            .unwrap();
        let dir = self.store.run_directory(&run.id).await.unwrap();
        (run, dir)
    }
}

/// Checkpoints the file at `path` of run `run_id` for `reason`, as of event `event_seq`, at
/// `at` ms.
pub(crate) async fn checkpoint(
    store: &UserDataStore,
    run_id: &RunId,
    reason: CheckpointReason,
    event_seq: u64,
    path: WorkspacePath,
    at: i64,
) -> CheckpointRecord {
    store
        .create_checkpoint(run_id, reason, event_seq, &[path], ts(at))
        .await
        .unwrap()
}

/// `result` is the refusal of a path that leaves its root through a symlink.
#[track_caller]
pub(crate) fn assert_escape<T: std::fmt::Debug>(result: tt_ports::StorageResult<T>) {
    match result {
        Err(err @ tt_ports::StorageError::SymlinkEscape { .. }) => {
            assert_eq!(err.code(), "agent.workspace_symlink_escape");
        }
        other => panic!("expected SymlinkEscape, got {other:?}"),
    }
}

/// Event ids for `recover_interrupted_runs`: `evt_recovery_1`, `evt_recovery_2`, …
pub(crate) fn event_ids() -> impl FnMut() -> tt_domain::ids::EventId {
    let mut n = 0;
    move || {
        n += 1;
        tt_domain::ids::EventId::from_raw(format!("evt_recovery_{n}"))
    }
}

/// Every file under `dir`, relative, sorted.
pub(crate) fn files_under(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                walk(base, &path, out);
            } else {
                out.push(
                    path.strip_prefix(base)
                        .unwrap()
                        .to_string_lossy()
                        .replace('\\', "/"),
                );
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}
