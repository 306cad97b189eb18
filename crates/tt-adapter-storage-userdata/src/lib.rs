//! File-system storage for tt-agent-runtime in the run-directory layout: one `UserDataStore`
//! under a data root implements the run, invocation, journal, workspace, profile, skill and
//! transcript ports.
//!
//! Layout under the data root (docs/storage.md has the whole picture):
//! ```text
//! index/runs/<runId>.json                      copy of run.json (list index)
//! profiles/<profileId>.json                    profile definitions
//! skills/...                                   skill files per scope
//! transcripts/<workspaceId>.jsonl              what the transcript bridge published
//! connections/<name>.json                      named model connections (`ConnectionFiles`)
//! mcp/servers/<name>.json                      registered MCP servers (`McpServerFiles`)
//! chats/<workspaceId>/persistent-states/<stateId>/{manifest.json, persist/...}
//! chats/<workspaceId>/chat-head/<generation>     the run holding the chat's head
//! chats/<workspaceId>/runs/<runId>/
//!   run.json manifest.json events.jsonl records.jsonl blobs.jsonl owner.lock
//!   input/{prompt_snapshot, resolved_profile, persist_snapshot}.json
//!   output/ scratch/ plan/ summaries/ persist/
//! ```
//!
//! Ownership: a process writes a run only while it holds the run's OS lock (`owner.lock`); all
//! its writes to that run go through one [`owned::OwnedRun`], in order. Any process may read any
//! run at any time, and reading never writes. Durability: see [`durability`] (group commit) and
//! docs/storage.md (the durability points).

mod chat_head;
mod connections;
mod durability;
mod event_line;
mod fast_map;
#[cfg(test)]
mod fault_tests;
mod faults;
mod fsutil;
mod journal;
mod journal_index;
mod layout;
mod listing;
mod locks;
mod mcp_servers;
mod owned;
mod presets;
mod profile_cache;
mod profiles;
mod reader;
mod rebuild;
mod recovery;
mod run_index;
mod run_watch;
mod runs;
mod segment;
mod show;
mod skills;
mod spin_lock;
mod stored_check;
mod transcripts;
mod workspace;
mod workspace_files;
mod written;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tt_domain::ids::RunId;
use tt_domain::run::AgentRun;
use tt_ports::{StorageError, StorageResult};

use crate::durability::Flusher;
use crate::layout::Layout;
use crate::locks::KeyedLocks;
use crate::owned::OwnedRun;
use crate::reader::ReaderViews;

pub use crate::connections::ConnectionFiles;
pub use crate::mcp_servers::McpServerFiles;
pub use crate::presets::PresetTemplateFiles;
pub use crate::recovery::{InterruptedRun, OWNER_EXITED};
pub use crate::show::RECORD_REFERENCES;

/// How many runs a process keeps open for writing before idle ones are closed (their lock is
/// released; a later write takes it again). Each open run holds four file descriptors.
const MAX_OPEN_RUNS: usize = 64;

/// How many runs a process keeps a reader's journal and segment indexes of.
const MAX_JOURNAL_VIEWS: usize = 256;

/// File-system storage rooted at one data directory. Cheap to share: hold it as
/// `Arc<UserDataStore>` and hand it out as each storage port.
pub struct UserDataStore {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for UserDataStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserDataStore")
            .field("root", &self.inner.layout.root())
            .field("read_only", &self.inner.flusher.is_none())
            .finish_non_exhaustive()
    }
}

/// How this process may reach a run.
pub(crate) enum RunAccess {
    /// This process writes the run.
    Owned(Arc<OwnedRun>),
    /// Another process writes it, or nobody does: read from the files.
    Reader {
        dir: PathBuf,
        view: Arc<ReaderViews>,
    },
}

/// A run directory with its canonical form (the boundary for symlink checks), resolved once.
#[derive(Debug, Clone)]
pub(crate) struct RunLocation {
    pub(crate) dir: PathBuf,
    pub(crate) canonical: Option<PathBuf>,
}

/// A map by run id.
type RunMap<V> = fast_map::FastMap<RunId, V>;

pub(crate) struct Inner {
    pub(crate) layout: Layout,
    /// runId -> run directory, filled from `index/runs/<runId>.json` (or a search) on a miss.
    run_dirs: Mutex<RunMap<RunLocation>>,
    /// The runs this process writes. Dropped before the flusher, so each flushes on close.
    owned: Mutex<RunMap<Arc<OwnedRun>>>,
    /// Journal and segment indexes of runs this process reads but does not write.
    views: Mutex<RunMap<Arc<ReaderViews>>>,
    pub(crate) locks: KeyedLocks,
    pub(crate) journal_bytes_read: AtomicU64,
    /// Parsed profile files, each with the stamp of the file it came from.
    pub(crate) profiles: profile_cache::ProfileCache,
    /// `None` for a read-only store.
    flusher: Option<Flusher>,
}

impl UserDataStore {
    /// Opens (creating if missing) the data root for reading and writing. Runs left unfinished
    /// by a process that is gone are marked `interrupted` by
    /// [`recover_interrupted_runs`](Self::recover_interrupted_runs), which the runtime calls
    /// when it starts.
    pub fn open(data_root: impl Into<PathBuf>) -> StorageResult<Arc<UserDataStore>> {
        let root = data_root.into();
        fsutil::create_dir_all(&root)?;
        Ok(Self::with_flusher(root, Some(Flusher::start()?)))
    }

    /// Opens the data root for reading only: nothing is ever created, repaired or locked, and
    /// every write fails with `agent.storage_read_only`. Safe beside a live writer.
    pub fn open_read_only(data_root: impl Into<PathBuf>) -> Arc<UserDataStore> {
        Self::with_flusher(data_root.into(), None)
    }

    fn with_flusher(root: PathBuf, flusher: Option<Flusher>) -> Arc<UserDataStore> {
        Arc::new(UserDataStore {
            inner: Arc::new(Inner {
                layout: Layout::new(root),
                run_dirs: Mutex::new(RunMap::default()),
                owned: Mutex::new(RunMap::default()),
                views: Mutex::new(RunMap::default()),
                locks: KeyedLocks::default(),
                journal_bytes_read: AtomicU64::new(0),
                profiles: profile_cache::ProfileCache::default(),
                flusher,
            }),
        })
    }

    /// The data root this store was opened on.
    pub fn data_root(&self) -> &Path {
        self.inner.layout.root()
    }

    /// Whether this store refuses writes.
    pub fn is_read_only(&self) -> bool {
        self.inner.flusher.is_none()
    }

    /// The physical directory of a run (for diagnostics and host tooling; never model-facing).
    pub async fn run_directory(&self, run_id: &RunId) -> StorageResult<PathBuf> {
        Ok(self.inner.run_location(run_id)?.dir)
    }

    /// Total bytes read from journal files by this store (open scans and page reads). Lets tests
    /// prove that a page read touches only a small part of a large journal.
    #[doc(hidden)]
    pub fn journal_bytes_read(&self) -> u64 {
        self.inner.journal_bytes_read.load(Ordering::Relaxed)
    }

    /// How many runs this store currently holds open for writing.
    #[doc(hidden)]
    pub fn open_run_count(&self) -> usize {
        self.inner.lock_owned().len()
    }

    /// Every `fsync`/`fdatasync` the store has made in this process (all stores together).
    pub fn fsync_count() -> u64 {
        fsutil::fsync_count()
    }

    /// Makes everything written to `run_id` so far durable now (a durability point on demand).
    pub async fn sync_run(&self, run_id: &RunId) -> StorageResult<()> {
        let owned = self.inner.lock_owned().get(run_id).cloned();
        match owned {
            Some(run) => self.inner.durable(&run).await,
            None => Ok(()),
        }
    }

    /// Closes a run this process writes: flushes it and releases its lock (a later write takes
    /// it again). Does nothing for a run it does not write.
    pub fn close_run(&self, run_id: &RunId) -> StorageResult<()> {
        let run = self.inner.lock_owned().remove(run_id);
        match run {
            Some(run) => run.sync.flush(),
            None => Ok(()),
        }
    }

    /// Runs blocking file-system work on tokio's blocking pool (profiles and skills; the run
    /// paths write inline).
    pub(crate) async fn blocking<T, F>(&self, work: F) -> StorageResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Inner) -> StorageResult<T> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || work(&inner))
            .await
            .map_err(|err| StorageError::Other(format!("storage task did not finish: {err}")))?
    }
}

impl Inner {
    fn lock_owned(&self) -> std::sync::MutexGuard<'_, RunMap<Arc<OwnedRun>>> {
        self.owned.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn read_only_error(&self, what: &str) -> StorageError {
        StorageError::ReadOnly {
            what: format!("{what} in {}", self.layout.root().display()),
        }
    }

    /// The location of an existing run: from memory, the run index, or (when its index copy is
    /// missing) a search of the conversation folders.
    pub(crate) fn run_location(&self, run_id: &RunId) -> StorageResult<RunLocation> {
        layout::check_segment("run id", run_id.as_str())?;
        if let Some(location) = self
            .run_dirs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(run_id)
        {
            return Ok(location.clone());
        }
        let index_path = self.layout.index_file(run_id.as_str());
        let indexed = match fsutil::read_json::<AgentRun>(&index_path) {
            Ok(Some(run)) if run.id == *run_id => Some(
                self.layout
                    .run_dir(run.workspace_id.as_str(), run_id.as_str())?,
            ),
            // A bad or mismatched index copy must not hide the run: search for it instead.
            Ok(_) | Err(StorageError::Corrupt { .. }) => None,
            Err(other) => return Err(other),
        };
        let dir = match indexed.filter(|dir| dir.is_dir()) {
            Some(dir) => dir,
            None => self
                .layout
                .find_run_dir(run_id.as_str())?
                .ok_or_else(|| StorageError::not_found(format!("run {run_id}")))?,
        };
        let location = RunLocation {
            canonical: std::fs::canonicalize(&dir).ok(),
            dir,
        };
        self.remember_run_location(run_id, location.clone());
        Ok(location)
    }

    pub(crate) fn remember_run_location(&self, run_id: &RunId, location: RunLocation) {
        self.run_dirs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(run_id.clone(), location);
    }

    /// How this process reaches `run_id` right now.
    pub(crate) fn access(&self, run_id: &RunId) -> StorageResult<RunAccess> {
        if let Some(run) = self.lock_owned().get(run_id) {
            return Ok(RunAccess::Owned(Arc::clone(run)));
        }
        let dir = self.run_location(run_id)?.dir;
        let view = {
            let mut views = self.views.lock().unwrap_or_else(PoisonError::into_inner);
            if views.len() >= MAX_JOURNAL_VIEWS && !views.contains_key(run_id) {
                // Views are caches of the files: dropping them only costs a rescan.
                views.clear();
            }
            Arc::clone(views.entry(run_id.clone()).or_default())
        };
        Ok(RunAccess::Reader { dir, view })
    }

    /// The writer of `run_id` when this process has it open; never opens one.
    pub(crate) fn open_owned_run(&self, run_id: &RunId) -> Option<Arc<OwnedRun>> {
        self.lock_owned().get(run_id).cloned()
    }

    /// The writer of `run_id` in this process, taking the run's lock on first use.
    pub(crate) fn owned_run(&self, run_id: &RunId) -> StorageResult<Arc<OwnedRun>> {
        if let Some(run) = self.lock_owned().get(run_id) {
            return Ok(Arc::clone(run));
        }
        let location = self.run_location(run_id)?;
        self.open_owned(run_id, location.dir, false)
    }

    /// Opens (or, for `fresh`, starts) the writer of a run and registers it.
    pub(crate) fn open_owned(
        &self,
        run_id: &RunId,
        dir: PathBuf,
        fresh: bool,
    ) -> StorageResult<Arc<OwnedRun>> {
        let Some(flusher) = &self.flusher else {
            return Err(self.read_only_error(&format!("run {run_id}")));
        };
        let mut owned = self.lock_owned();
        if let Some(run) = owned.get(run_id) {
            return Ok(Arc::clone(run));
        }
        // Finished runs nobody is using are closed (flushed, lock released); past the cap, every
        // idle run is. Only the table holds these, so nobody is writing them right now.
        let crowded = owned.len() >= MAX_OPEN_RUNS;
        owned.retain(|_, run| {
            Arc::strong_count(run) > 1
                || !(crowded || run.finished.load(std::sync::atomic::Ordering::Acquire))
        });
        let run = Arc::new(OwnedRun::open(
            run_id.clone(),
            dir,
            fresh,
            &self.journal_bytes_read,
        )?);
        flusher.register(&run.sync);
        owned.insert(run_id.clone(), Arc::clone(&run));
        drop(owned);
        self.views
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(run_id);
        Ok(run)
    }

    /// Drops this process's writer of `run_id` (its lock is released once nobody uses it).
    pub(crate) fn forget_owned(&self, run_id: &RunId) {
        self.lock_owned().remove(run_id);
    }

    /// A durability point: waits until everything written to `run` so far is on stable storage.
    pub(crate) async fn durable(&self, run: &OwnedRun) -> StorageResult<()> {
        match &self.flusher {
            Some(flusher) => flusher.durable(&run.sync).await,
            None => Ok(()),
        }
    }
}

impl Drop for OwnedRun {
    fn drop(&mut self) {
        // Closing a run makes it durable; a failure here was already reported to any waiter.
        let _ = self.sync.flush();
    }
}
