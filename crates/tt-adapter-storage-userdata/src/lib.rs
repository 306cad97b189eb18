//! File-system storage for tt-agent-runtime in the run-directory layout: one `UserDataStore`
//! under a data root implements the run, invocation, journal, workspace and profile ports.
//!
//! Layout under the data root:
//! ```text
//! index/runs/<runId>.json                      copy of run.json (list index)
//! profiles/<profileId>.json                    profile definitions
//! chats/<workspaceId>/persistent-states/<stateId>/{manifest.json, persist/...}
//! chats/<workspaceId>/runs/<runId>/
//!   run.json manifest.json events.jsonl
//!   input/...  invocations/<invId>.json  tasks/<taskId>.json  agent-results/<invId>.json
//!   tool-args/ tool-results/ model-responses/
//!   output/ scratch/ plan/ summaries/ persist/
//!   checkpoints/cp_NNNNNN/{checkpoint.json, <snapshotted files>}
//! ```
//!
//! Durability: JSON state files are replaced atomically (temp file, sync, rename); journal
//! records are appended as whole lines and a torn last line is repaired when a journal is first
//! opened. One process owns a data root at a time: the journal's last seq and its sparse offset
//! index live in this process's memory.
//!
//! Blocking file-system work runs on tokio's blocking pool; the per-run and per-path async locks
//! are taken first and moved into that work, so a cancelled caller never leaves a half-applied
//! change behind.

mod fsutil;
mod journal;
mod layout;
mod locks;
mod profiles;
mod records;
mod runs;
mod skills;
mod workspace;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tt_domain::ids::RunId;
use tt_domain::run::AgentRun;
use tt_ports::{StorageError, StorageResult};

use crate::journal::JournalSlot;
use crate::layout::Layout;
use crate::locks::KeyedLocks;

/// How many run journals may stay open (file handle, last seq, sparse index) before idle ones
/// are closed.
const MAX_OPEN_JOURNALS: usize = 128;

/// File-system storage rooted at one data directory. Cheap to share: hold it as
/// `Arc<UserDataStore>` and hand it out as each storage port.
pub struct UserDataStore {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for UserDataStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserDataStore")
            .field("root", &self.inner.layout.root())
            .finish_non_exhaustive()
    }
}

pub(crate) struct Inner {
    pub(crate) layout: Layout,
    /// runId -> run directory, filled from `index/runs/<runId>.json` on a miss.
    run_dirs: Mutex<HashMap<RunId, PathBuf>>,
    /// One journal state per run that has been opened in this process.
    journals: Mutex<HashMap<RunId, JournalSlot>>,
    pub(crate) locks: KeyedLocks,
    pub(crate) journal_bytes_read: AtomicU64,
    /// Write-through view of each run's invocation and task records.
    pub(crate) records: records::RecordCache,
    /// Last checkpoint seq of each run that took one in this process.
    pub(crate) checkpoint_seqs: Mutex<HashMap<RunId, u64>>,
}

impl UserDataStore {
    /// Opens (creating if missing) the data root.
    pub fn open(data_root: impl Into<PathBuf>) -> StorageResult<Arc<UserDataStore>> {
        let root = data_root.into();
        fsutil::create_dir_all(&root)?;
        Ok(Arc::new(UserDataStore {
            inner: Arc::new(Inner {
                layout: Layout::new(root),
                run_dirs: Mutex::new(HashMap::new()),
                journals: Mutex::new(HashMap::new()),
                locks: KeyedLocks::default(),
                records: records::RecordCache::default(),
                checkpoint_seqs: Mutex::new(HashMap::new()),
                journal_bytes_read: AtomicU64::new(0),
            }),
        }))
    }

    /// The data root this store was opened on.
    pub fn data_root(&self) -> &Path {
        self.inner.layout.root()
    }

    /// The physical directory of a run (for diagnostics and host tooling; never model-facing).
    pub async fn run_directory(&self, run_id: &RunId) -> StorageResult<PathBuf> {
        let run_id = run_id.clone();
        self.blocking(move |inner| inner.run_dir(&run_id)).await
    }

    /// Total bytes read from journal files by this store (open scans and page reads). Lets tests
    /// prove that a page read touches only a small part of a large journal.
    #[doc(hidden)]
    pub fn journal_bytes_read(&self) -> u64 {
        self.inner.journal_bytes_read.load(Ordering::Relaxed)
    }

    /// How many run journals this store currently keeps open.
    #[doc(hidden)]
    pub fn open_journal_count(&self) -> usize {
        self.inner
            .journals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Runs blocking file-system work on tokio's blocking pool.
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
    /// The directory of an existing run, through the in-memory cache or the run index.
    pub(crate) fn run_dir(&self, run_id: &RunId) -> StorageResult<PathBuf> {
        layout::check_segment("run id", run_id.as_str())?;
        if let Some(dir) = self
            .run_dirs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(run_id)
        {
            return Ok(dir.clone());
        }
        let index_path = self.layout.index_file(run_id.as_str());
        let run: AgentRun = fsutil::read_json(&index_path)?
            .ok_or_else(|| StorageError::not_found(format!("run {run_id}")))?;
        if run.id != *run_id {
            return Err(StorageError::corrupt(
                index_path.display().to_string(),
                format!("index entry names run {}", run.id),
            ));
        }
        let dir = self
            .layout
            .run_dir(run.workspace_id.as_str(), run_id.as_str())?;
        self.remember_run_dir(run_id, dir.clone());
        Ok(dir)
    }

    pub(crate) fn remember_run_dir(&self, run_id: &RunId, dir: PathBuf) {
        self.run_dirs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(run_id.clone(), dir);
    }

    /// The journal slot of a run. Past `MAX_OPEN_JOURNALS` slots, idle ones are dropped (closing
    /// their files); a dropped journal is rescanned when next used.
    pub(crate) fn journal_slot(&self, run_id: &RunId) -> JournalSlot {
        let mut journals = self.journals.lock().unwrap_or_else(PoisonError::into_inner);
        if journals.len() >= MAX_OPEN_JOURNALS && !journals.contains_key(run_id) {
            // A slot only the table holds is neither locked nor awaited, and new users must
            // take the table lock first, which we hold: dropping it loses nothing.
            journals.retain(|_, slot| Arc::strong_count(slot) > 1);
        }
        Arc::clone(journals.entry(run_id.clone()).or_default())
    }
}
