//! `AgentRunRepository::watch_runs` on the file store: the runs other processes sharing the
//! data dir create or change, found by polling, since nothing crosses processes on its own.
//!
//! Every [`POLL`] the watch stats the run index directory (`index/runs`): a run created, or a
//! record saved (its index copy replaced by an atomic rename), changes the directory's mtime,
//! and only then are the index copies stat'ed (one `stat` each) to find which. For [`SETTLE`]
//! after the watch saw the mtime move, the directory is scanned at every poll, since two writes
//! within one tick of the file system's clock leave one mtime (each copy is stamped by mtime,
//! length and inode, and a rename gives a new inode). A run's stored record keeps only its meaningful
//! statuses (a live run's status is in its journal), so the journals of the live runs seen
//! (not ended in their index copy) are stat'ed too, at most every [`JOURNAL_EVERY`]: one that
//! grew is a change (its status, tokens and cost may have moved). An idle data dir costs one
//! `stat` per poll, a live run of another process one more per second. Runs this store writes
//! itself are left out: their changes reach the runtime through its own events.

use async_trait::async_trait;
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};
use tokio::time::Instant;
use tt_domain::ids::RunId;
use tt_domain::run::AgentRun;
use tt_ports::{RunChange, RunWatch};

use crate::Inner;
use crate::fsutil;
use crate::layout::EVENTS_FILE;

/// How often the index directory is looked at: the longest a new run of another process
/// waits to be seen.
pub(crate) const POLL: Duration = Duration::from_millis(250);
/// How often the journals of other processes' live runs are looked at.
pub(crate) const JOURNAL_EVERY: Duration = Duration::from_secs(1);
/// A directory seen to change this recently is scanned again at each poll.
const SETTLE: Duration = Duration::from_secs(2);

/// An index copy as last stat'ed: mtime, length, inode.
type Stamp = (Option<SystemTime>, u64, u64);

/// What the watch knows of one run.
struct Seen {
    stamp: Stamp,
    /// The run's journal and its length, while its index copy says it has not ended.
    journal: Option<(PathBuf, u64)>,
}

/// The file store's [`RunWatch`].
pub(crate) struct FileRunWatch {
    inner: Weak<Inner>,
    index_dir: PathBuf,
    dir_stamp: Option<SystemTime>,
    /// When this watch last saw the directory's mtime move.
    dir_changed_at: Option<Instant>,
    runs: HashMap<RunId, Seen>,
    queue: VecDeque<RunId>,
    next_poll: Instant,
    next_journals: Instant,
}

fn stamp_of(metadata: &std::fs::Metadata) -> Stamp {
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(metadata);
    #[cfg(not(unix))]
    let inode = 0;
    (metadata.modified().ok(), metadata.len(), inode)
}

fn file_len(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).map_or(0, |metadata| metadata.len())
}

impl FileRunWatch {
    /// A watch whose starting point is the index as it is now: only what changes from here on
    /// is reported.
    pub(crate) fn new(inner: &Arc<Inner>) -> Self {
        let now = Instant::now();
        let mut watch = Self {
            inner: Arc::downgrade(inner),
            index_dir: inner.layout.index_runs_dir(),
            dir_stamp: None,
            dir_changed_at: None,
            runs: HashMap::new(),
            queue: VecDeque::new(),
            next_poll: now + POLL,
            next_journals: now + JOURNAL_EVERY,
        };
        watch.dir_stamp = watch.index_dir_stamp();
        watch.scan_index(inner, false);
        watch
    }

    fn index_dir_stamp(&self) -> Option<SystemTime> {
        std::fs::metadata(&self.index_dir)
            .and_then(|metadata| metadata.modified())
            .ok()
    }

    fn poll(&mut self, inner: &Inner) {
        let dir_stamp = self.index_dir_stamp();
        if dir_stamp != self.dir_stamp {
            self.dir_stamp = dir_stamp;
            self.dir_changed_at = Some(Instant::now());
        }
        let settled = self.dir_changed_at.is_none_or(|at| at.elapsed() > SETTLE);
        if !settled {
            self.scan_index(inner, true);
        }
        if Instant::now() >= self.next_journals {
            self.next_journals = Instant::now() + JOURNAL_EVERY;
            self.check_journals(inner);
        }
    }

    /// Stats every index copy; a new or replaced one is read (for its journal) and, with
    /// `report`, reported.
    fn scan_index(&mut self, inner: &Inner, report: bool) {
        let stems = fsutil::json_file_stems(&self.index_dir).unwrap_or_default();
        let mut present = HashSet::with_capacity(stems.len());
        for stem in stems {
            if !tt_domain::ids::is_valid_storage_segment(&stem) {
                continue;
            }
            let run_id = RunId::from_raw(&stem);
            let path = self.index_dir.join(format!("{stem}.json"));
            let Ok(metadata) = std::fs::metadata(&path) else {
                continue;
            };
            let stamp = stamp_of(&metadata);
            present.insert(run_id.clone());
            if self
                .runs
                .get(&run_id)
                .is_some_and(|seen| seen.stamp == stamp)
            {
                continue;
            }
            let journal = fsutil::read_json::<AgentRun>(&path)
                .ok()
                .flatten()
                .filter(|run| !run.status.is_terminal())
                .and_then(|run| {
                    inner
                        .layout
                        .run_dir(run.workspace_id.as_str(), run.id.as_str())
                        .ok()
                })
                .map(|dir| {
                    let journal = dir.join(EVENTS_FILE);
                    let len = file_len(&journal);
                    (journal, len)
                });
            self.runs.insert(run_id.clone(), Seen { stamp, journal });
            if report {
                self.report(inner, run_id);
            }
        }
        self.runs.retain(|run_id, _| present.contains(run_id));
    }

    /// Reports each live run whose journal grew.
    fn check_journals(&mut self, inner: &Inner) {
        let mut grown = Vec::new();
        for (run_id, seen) in &mut self.runs {
            let Some((journal, len)) = &mut seen.journal else {
                continue;
            };
            let now = file_len(journal);
            if now != *len {
                *len = now;
                grown.push(run_id.clone());
            }
        }
        for run_id in grown {
            self.report(inner, run_id);
        }
    }

    fn report(&mut self, inner: &Inner, run_id: RunId) {
        if !inner.is_owned(&run_id) && !self.queue.contains(&run_id) {
            self.queue.push_back(run_id);
        }
    }
}

#[async_trait]
impl RunWatch for FileRunWatch {
    async fn next(&mut self) -> Option<RunChange> {
        loop {
            if let Some(run_id) = self.queue.pop_front() {
                return Some(RunChange::Changed(run_id));
            }
            // `next_poll` is kept across calls, so a call dropped while it waits (a `select!`
            // that took another branch) does not push the poll back.
            tokio::time::sleep_until(self.next_poll).await;
            self.next_poll = Instant::now() + POLL;
            let inner = self.inner.upgrade()?;
            self.poll(&inner);
        }
    }
}
