//! Group commit. Writes land in the page cache at once; a background flusher thread makes them
//! durable with one `fdatasync` per dirty segment file, either when somebody waits at a
//! durability point or at most [`FLUSH_INTERVAL`] after the write. Every agent of a run that
//! waits while a flush is running shares the next one. When the last flush served more than
//! one waiter (agents are reaching durability points concurrently) and cost the disk something
//! (at least [`FREE_FLUSH`]), the next flush waits until [`GROUP_COMMIT_WINDOW`] after it, so
//! everyone arriving in the window shares it; a lone durability point (a small run, a quiet
//! spell) is flushed at once, and so is every one on a file system whose syncs are free (tmpfs),
//! where a window would only keep the agents waiting.

use std::fs::File;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tt_ports::{StorageError, StorageResult};

use crate::{faults, fsutil};

/// Longest time a write stays only in the page cache when nobody waits for it.
pub(crate) const FLUSH_INTERVAL: Duration = Duration::from_millis(100);

/// Shortest time between two flushes while waiters keep arriving and flushes cost the disk
/// something. 3 ms measured best of 1, 3 and 10 ms in the 256-agent fan-out on ext4 (a
/// narrower one syncs more often than the disk keeps up with, a wider one keeps the agents
/// waiting); docs/benchmarks.md, 7 December 2026.
pub(crate) const GROUP_COMMIT_WINDOW: Duration = Duration::from_millis(3);

/// A flush that took less than this cost the disk nothing (the page cache of tmpfs): the next
/// one does not wait for a window to fill. A disk's `fdatasync` takes 0.1 ms and more.
pub(crate) const FREE_FLUSH: Duration = Duration::from_micros(50);

/// What a run's flushes have reached.
#[derive(Debug, Clone, Default)]
pub(crate) struct SyncProgress {
    /// Every write numbered up to this one is on stable storage.
    pub(crate) synced: u64,
    /// The first failed `fdatasync`; sticky, since the kernel may have dropped the dirty pages.
    pub(crate) error: Option<String>,
}

/// One segment file of a run as the flusher sees it.
struct SyncFile {
    file: Arc<File>,
    what: String,
    dirty: AtomicBool,
}

/// The durability state of one open run: its segment files, a counter of writes, and how far
/// flushes have got.
pub(crate) struct RunSync {
    files: Vec<SyncFile>,
    written: AtomicU64,
    progress: watch::Sender<SyncProgress>,
    /// Serializes flushes of this run (the flusher's and a closing owner's).
    flushing: Mutex<()>,
}

impl RunSync {
    pub(crate) fn new(files: Vec<(Arc<File>, String)>) -> Self {
        Self {
            files: files
                .into_iter()
                .map(|(file, what)| SyncFile {
                    file,
                    what,
                    dirty: AtomicBool::new(false),
                })
                .collect(),
            written: AtomicU64::new(0),
            progress: watch::Sender::new(SyncProgress::default()),
            flushing: Mutex::new(()),
        }
    }

    /// Records that file number `index` was written (after the write returned).
    pub(crate) fn mark_written(&self, index: usize) {
        if let Some(file) = self.files.get(index) {
            file.dirty.store(true, Ordering::Release);
        }
        self.written.fetch_add(1, Ordering::AcqRel);
    }

    fn is_dirty(&self) -> bool {
        self.written.load(Ordering::Acquire) > self.progress.borrow().synced
    }

    /// Flushes every file written since the last flush, then publishes the new mark. Blocking.
    pub(crate) fn flush(&self) -> StorageResult<()> {
        let _flushing = self.flushing.lock().unwrap_or_else(PoisonError::into_inner);
        let target = self.written.load(Ordering::Acquire);
        {
            let progress = self.progress.borrow();
            if let Some(error) = &progress.error {
                return Err(StorageError::Io {
                    what: "run files".to_owned(),
                    message: error.clone(),
                });
            }
            if progress.synced >= target {
                return Ok(());
            }
        }
        for file in &self.files {
            // Clear before syncing: a write that lands after the clear marks the file again
            // and is covered by the next flush.
            if file.dirty.swap(false, Ordering::AcqRel) {
                let synced = match faults::hit(std::path::Path::new(&file.what), faults::Op::Sync) {
                    Some(_) => Err(faults::injected_error()),
                    None => file.file.sync_data(),
                };
                if let Err(err) = synced {
                    let message = format!("{}: {err}", file.what);
                    self.progress
                        .send_modify(|progress| progress.error = Some(message.clone()));
                    return Err(StorageError::Io {
                        what: file.what.clone(),
                        message: err.to_string(),
                    });
                }
                fsutil::note_fsync();
            }
        }
        self.progress.send_modify(|progress| {
            progress.synced = progress.synced.max(target);
        });
        Ok(())
    }
}

#[derive(Default)]
struct Queue {
    waiting: Vec<Arc<RunSync>>,
    /// Durability points that asked for a flush since the last batch was taken.
    waiters: u64,
    open: Vec<Weak<RunSync>>,
    shutdown: bool,
    /// The flusher sleeps until there is work (not while it lets a group commit window fill):
    /// only then does a durability point wake it. Waking it in the window only made it check
    /// the clock and sleep again, a thread hand-off per durability point for nothing.
    idle: bool,
}

struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
}

/// The store's flusher thread.
pub(crate) struct Flusher {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Flusher {
    pub(crate) fn start() -> StorageResult<Self> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
        });
        let worker = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("tt-store-flusher".to_owned())
            .spawn(move || flusher_loop(&worker))
            .map_err(|err| StorageError::io("the store's flusher thread", err))?;
        Ok(Self {
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Registers an open run for the periodic flush.
    pub(crate) fn register(&self, run: &Arc<RunSync>) {
        let mut queue = self.lock();
        queue.open.retain(|weak| weak.strong_count() > 0);
        queue.open.push(Arc::downgrade(run));
    }

    /// Waits until everything `run` had written when this was called is on stable storage.
    pub(crate) async fn durable(&self, run: &Arc<RunSync>) -> StorageResult<()> {
        let target = run.written.load(Ordering::Acquire);
        let mut progress = run.progress.subscribe();
        if progress.borrow().synced >= target {
            return Ok(());
        }
        let wake = {
            let mut queue = self.lock();
            queue.waiters += 1;
            if !queue.waiting.iter().any(|queued| Arc::ptr_eq(queued, run)) {
                queue.waiting.push(Arc::clone(run));
            }
            // A flusher that is not idle takes the queue when its flush or window ends.
            std::mem::take(&mut queue.idle)
        };
        if wake {
            self.shared.wake.notify_one();
        }
        let reached = progress
            .wait_for(|progress| progress.synced >= target || progress.error.is_some())
            .await
            .map_err(|_| StorageError::Other("the store's flusher stopped".to_owned()))?;
        match &reached.error {
            Some(error) if reached.synced < target => Err(StorageError::Io {
                what: "run files".to_owned(),
                message: error.clone(),
            }),
            _ => Ok(()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.shared
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Flusher {
    fn drop(&mut self) {
        self.lock().shutdown = true;
        self.shared.wake.notify_one();
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(thread) = thread {
            // The flusher ends after a last flush of every open run.
            let _ = thread.join();
        }
    }
}

fn flusher_loop(shared: &Shared) {
    // When the last flush served several waiters, and when it happened.
    let mut last_shared_flush: Option<Instant> = None;
    loop {
        // `served`: how many waiters the flush being made serves.
        let (batch, served, shutdown) = {
            let mut queue = shared.queue.lock().unwrap_or_else(PoisonError::into_inner);
            if queue.waiting.is_empty() && !queue.shutdown {
                queue.idle = true;
                let (next, _) = shared
                    .wake
                    .wait_timeout(queue, FLUSH_INTERVAL)
                    .unwrap_or_else(PoisonError::into_inner);
                queue = next;
                queue.idle = false;
            }
            // Right after a flush, let the window fill: everyone who arrives in it shares the
            // next flush.
            while !queue.shutdown
                && let Some(wait) = last_shared_flush
                    .map(|at| GROUP_COMMIT_WINDOW.saturating_sub(at.elapsed()))
                    .filter(|wait| !wait.is_zero())
            {
                let (next, _) = shared
                    .wake
                    .wait_timeout(queue, wait)
                    .unwrap_or_else(PoisonError::into_inner);
                queue = next;
            }
            let mut batch = std::mem::take(&mut queue.waiting);
            let served = std::mem::take(&mut queue.waiters);
            queue.open.retain(|weak| weak.strong_count() > 0);
            // Runs nobody waits for are flushed on the interval (and at shutdown).
            for run in queue.open.iter().filter_map(Weak::upgrade) {
                if run.is_dirty() && !batch.iter().any(|queued| Arc::ptr_eq(queued, &run)) {
                    batch.push(run);
                }
            }
            (batch, served, queue.shutdown)
        };
        let started = Instant::now();
        for run in batch {
            // A failure is published to the run's waiters; the flusher carries on with others.
            let _ = run.flush();
        }
        last_shared_flush = (served > 1 && started.elapsed() >= FREE_FLUSH).then_some(started);
        if shutdown {
            return;
        }
    }
}
