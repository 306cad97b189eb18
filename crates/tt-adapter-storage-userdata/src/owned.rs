//! A run this process writes: its OS lock, its three append-only segment files (journal,
//! records, blobs) and the in-memory indexes over them. All writes to a run go through its one
//! `OwnedRun`, in order, under one short mutex; nothing on this path walks a directory or
//! resolves a path.

use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tt_domain::event::{AgentRunEvent, NewRunEvent, RecordedEvent};
use tt_domain::ids::{CheckpointId, InvocationId, RunId, TaskId};
use tt_domain::invocation::AgentInvocation;
use tt_domain::task::{AgentTaskRecord, TaskContinuation, TaskStatus, TaskTransition};
use tt_domain::text::sha256_hex;
use tt_domain::time::Timestamp;
use tt_domain::workspace::{CheckpointReason, CheckpointRecord, FileFingerprint, WorkspacePath};
use tt_ports::{StorageError, StorageResult, TaskTransitionOutcome};

use crate::durability::RunSync;
use crate::fast_map::FastMap;
use crate::fsutil::{self, is_temp_name};
use crate::journal_index::JournalIndex;
use crate::layout::{BLOBS_FILE, EVENTS_FILE, LOCK_FILE, RECORDS_FILE};
use crate::segment::Segment;
use crate::written::{Known, WrittenFiles};

/// Positions of the segment files in the run's [`RunSync`].
const JOURNAL: usize = 0;
const RECORDS: usize = 1;
const BLOBS: usize = 2;

/// The kinds of record kept in `records.jsonl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RecordKind {
    Document,
    Task,
    Invocation,
    Checkpoint,
}

/// One line of `records.jsonl`: the latest line of a key wins.
#[derive(Serialize)]
struct RecordLine<'a, T: Serialize> {
    kind: RecordKind,
    key: &'a str,
    value: &'a T,
}

/// A record line with its value left unparsed.
#[derive(Deserialize)]
pub(crate) struct RecordHeader {
    pub(crate) kind: RecordKind,
    pub(crate) key: String,
    #[allow(dead_code)] // parsed only to prove the line is whole
    value: IgnoredAny,
}

#[derive(Deserialize)]
struct RecordValue<T> {
    value: T,
}

/// One line of `blobs.jsonl`: a file's content, stored once per sha256.
#[derive(Serialize)]
struct BlobLine<'a> {
    sha256: &'a str,
    text: &'a str,
}

#[derive(Deserialize)]
pub(crate) struct BlobHeader {
    pub(crate) sha256: String,
    #[allow(dead_code)] // parsed only to prove the line is whole
    text: IgnoredAny,
}

#[derive(Deserialize)]
pub(crate) struct BlobText {
    pub(crate) text: String,
}

/// Where a line lives in a segment.
#[derive(Debug, Clone, Copy)]
struct Loc {
    offset: u64,
    len: usize,
}

/// Parses the value of a record line.
pub(crate) fn record_value<T: DeserializeOwned>(body: &[u8]) -> Result<T, String> {
    serde_json::from_slice::<RecordValue<T>>(body)
        .map(|line| line.value)
        .map_err(|err| err.to_string())
}

fn line_of<T: Serialize>(value: &T) -> StorageResult<Vec<u8>> {
    let mut line = Vec::with_capacity(512);
    tt_domain::json_writer::write_json(&mut line, value)
        .map_err(|err| StorageError::Other(format!("cannot serialize a record: {err}")))?;
    line.push(b'\n');
    Ok(line)
}

/// A record line, serialized before the run's lock is taken.
fn record_line<T: Serialize>(kind: RecordKind, key: &str, value: &T) -> StorageResult<Vec<u8>> {
    line_of(&RecordLine { kind, key, value })
}

/// The line [`record_line`] makes of a document record, from the value's compact JSON text.
fn document_line(key: &str, json: &str) -> StorageResult<Vec<u8>> {
    let mut line = Vec::with_capacity(json.len() + key.len() + 48);
    line.extend_from_slice(b"{\"kind\":\"document\",\"key\":");
    tt_domain::json_writer::write_json(&mut line, key)
        .map_err(|err| StorageError::Other(format!("cannot serialize a record: {err}")))?;
    line.extend_from_slice(b",\"value\":");
    line.extend_from_slice(json.as_bytes());
    line.extend_from_slice(b"}\n");
    Ok(line)
}

use crate::event_line::EventLine;

struct RunFiles {
    journal: Segment,
    journal_index: JournalIndex,
    records: Segment,
    documents: FastMap<String, Loc>,
    checkpoints: BTreeMap<String, Loc>,
    tasks: BTreeMap<TaskId, AgentTaskRecord>,
    /// Task ids by parent and by child invocation (a task's parent and child never change).
    tasks_by_parent: FastMap<InvocationId, Vec<TaskId>>,
    tasks_by_child: FastMap<InvocationId, Vec<TaskId>>,
    /// How many tasks each invocation delegated (`ReturnToParent`; a continuation never
    /// changes), so `agent.delegate`'s budget check is O(1).
    delegations_by_parent: FastMap<InvocationId, u64>,
    /// Every task's workspace key (it never changes either).
    workspace_keys: std::collections::BTreeSet<String>,
    invocations: BTreeMap<InvocationId, AgentInvocation>,
    blobs: Segment,
    blob_locs: FastMap<String, Loc>,
}

impl RunFiles {
    /// Keeps `task` as the latest record of its id, indexing a new id by parent and child.
    fn insert_task(&mut self, task: AgentTaskRecord) {
        if !self.tasks.contains_key(&task.id) {
            self.tasks_by_parent
                .entry(task.parent_invocation_id.clone())
                .or_default()
                .push(task.id.clone());
            self.tasks_by_child
                .entry(task.child_invocation_id.clone())
                .or_default()
                .push(task.id.clone());
            self.workspace_keys.insert(task.workspace_key.clone());
            if task.continuation == TaskContinuation::ReturnToParent {
                *self
                    .delegations_by_parent
                    .entry(task.parent_invocation_id.clone())
                    .or_default() += 1;
            }
        }
        self.tasks.insert(task.id.clone(), task);
    }

    /// The tasks with the given ids, in creation order (`AgentTaskRecord::creation_order`).
    fn tasks_among(&self, ids: Option<&Vec<TaskId>>) -> Vec<AgentTaskRecord> {
        let mut found: Vec<AgentTaskRecord> = ids
            .into_iter()
            .flatten()
            .filter_map(|id| self.tasks.get(id).cloned())
            .collect();
        found.sort_by(|a, b| a.creation_order().cmp(&b.creation_order()));
        found
    }
}

/// The single writer of one run in this process.
pub(crate) struct OwnedRun {
    pub(crate) run_id: RunId,
    pub(crate) dir: PathBuf,
    files: Mutex<RunFiles>,
    pub(crate) sync: Arc<RunSync>,
    /// Set once the stored run record is terminal: the run is closed (its lock released) when
    /// nobody is using it and another run opens.
    pub(crate) finished: std::sync::atomic::AtomicBool,
    /// What this process last wrote to each workspace file (checkpoints take it from here).
    written: Mutex<WrittenFiles>,
    /// Holding the open, locked file is what makes this process the owner.
    _lock: File,
}

/// One file of a checkpoint: its path and its content as read, or as the cache knows it.
pub(crate) struct CheckpointFile {
    pub(crate) path: WorkspacePath,
    pub(crate) content: CheckpointContent,
}

pub(crate) enum CheckpointContent {
    /// Read from the file just now.
    Read(String),
    /// The file is still as this process wrote it; its text is here unless its blob is stored.
    Known(Known),
}

/// How often taking a run's lock is retried (1 ms apart) before it counts as held.
const LOCK_ATTEMPTS: u32 = 5;

/// Takes the run's OS lock, or says which process holds it.
pub(crate) fn acquire_lock(run_id: &RunId, dir: &Path) -> StorageResult<File> {
    let path = dir.join(LOCK_FILE);
    let what = || path.display().to_string();
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|err| StorageError::io(what(), err))?;
    // A reader probing whether the run has a live owner holds a shared lock for a few
    // microseconds; a handful of quick retries tell that apart from a real owner.
    let mut attempts = 0;
    let locked = loop {
        match file.try_lock() {
            Err(TryLockError::WouldBlock) if attempts < LOCK_ATTEMPTS => {
                attempts += 1;
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            other => break other,
        }
    };
    match locked {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut text = String::new();
            // The pid is informative only; an unreadable one still means "locked".
            let _ = file.read_to_string(&mut text);
            return Err(StorageError::Locked {
                what: format!("run {run_id}"),
                owner_pid: text.trim().parse().ok(),
            });
        }
        Err(TryLockError::Error(err)) => return Err(StorageError::io(what(), err)),
    }
    file.set_len(0)
        .and_then(|()| file.write_all(format!("{}\n", std::process::id()).as_bytes()))
        .map_err(|err| StorageError::io(what(), err))?;
    Ok(file)
}

/// Whether some live process holds the run's lock (a reader's question; it never creates the
/// lock file). A run without a lock file has no owner.
pub(crate) fn has_live_owner(dir: &Path) -> bool {
    let Ok(file) = File::open(dir.join(LOCK_FILE)) else {
        return false;
    };
    match file.try_lock_shared() {
        Ok(()) => {
            // Dropping the handle releases the probe at once.
            false
        }
        Err(TryLockError::WouldBlock) => true,
        Err(TryLockError::Error(_)) => false,
    }
}

/// Removes temp files and directories a crash left anywhere under the run directory.
fn remove_temp_entries(dir: &Path) -> StorageResult<()> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if fsutil::is_missing(&err) => return Ok(()),
        Err(err) => return Err(StorageError::io(dir.display().to_string(), err)),
    };
    for entry in entries {
        let entry = entry.map_err(|err| StorageError::io(dir.display().to_string(), err))?;
        let path = entry.path();
        let kind = entry
            .file_type()
            .map_err(|err| StorageError::io(path.display().to_string(), err))?;
        let temp = entry.file_name().to_str().is_some_and(is_temp_name);
        let result = match (temp, kind.is_dir()) {
            (true, true) => fs::remove_dir_all(&path),
            (true, false) => fs::remove_file(&path),
            // Symlinks are never followed: `file_type` does not follow them.
            (false, true) => {
                remove_temp_entries(&path)?;
                Ok(())
            }
            (false, false) => Ok(()),
        };
        result.map_err(|err| StorageError::io(path.display().to_string(), err))?;
    }
    Ok(())
}

impl OwnedRun {
    /// Becomes the owner of the run in `dir`: takes its lock, removes temp files left by a
    /// crash (not for a run just created), and opens and scans its segments, cutting torn tails.
    pub(crate) fn open(
        run_id: RunId,
        dir: PathBuf,
        fresh: bool,
        bytes_read: &AtomicU64,
    ) -> StorageResult<Self> {
        let lock = acquire_lock(&run_id, &dir)?;
        if !fresh {
            remove_temp_entries(&dir)?;
        }

        let mut journal_index = JournalIndex::default();
        let journal = Segment::open_owned(dir.join(EVENTS_FILE), bytes_read, |offset, body| {
            let event: AgentRunEvent =
                serde_json::from_slice(body).map_err(|err| err.to_string())?;
            journal_index.observe(event.seq, offset)
        })?;
        journal_index.len = journal.len();

        let mut documents = FastMap::default();
        let mut checkpoints = BTreeMap::new();
        let mut tasks: BTreeMap<TaskId, AgentTaskRecord> = BTreeMap::new();
        let mut invocations = BTreeMap::new();
        let records = Segment::open_owned(dir.join(RECORDS_FILE), bytes_read, |offset, body| {
            let header: RecordHeader =
                serde_json::from_slice(body).map_err(|err| err.to_string())?;
            let loc = Loc {
                offset,
                len: body.len(),
            };
            match header.kind {
                RecordKind::Document => {
                    documents.insert(header.key, loc);
                }
                RecordKind::Checkpoint => {
                    checkpoints.insert(header.key, loc);
                }
                RecordKind::Task => {
                    let task: AgentTaskRecord = record_value(body)?;
                    tasks.insert(task.id.clone(), task);
                }
                RecordKind::Invocation => {
                    let invocation: AgentInvocation = record_value(body)?;
                    invocations.insert(invocation.id.clone(), invocation);
                }
            }
            Ok(())
        })?;

        let mut blob_locs = FastMap::default();
        let blobs = Segment::open_owned(dir.join(BLOBS_FILE), bytes_read, |offset, body| {
            let header: BlobHeader = serde_json::from_slice(body).map_err(|err| err.to_string())?;
            blob_locs.insert(
                header.sha256,
                Loc {
                    offset,
                    len: body.len(),
                },
            );
            Ok(())
        })?;

        let sync = Arc::new(RunSync::new(vec![
            (journal.sync_handle(), journal.path().display().to_string()),
            (records.sync_handle(), records.path().display().to_string()),
            (blobs.sync_handle(), blobs.path().display().to_string()),
        ]));
        if fresh {
            // The new segment files' directory entries must survive a power cut too.
            sync_dir(&dir)?;
        }
        let mut files = RunFiles {
            journal,
            journal_index,
            records,
            documents,
            checkpoints,
            tasks_by_parent: FastMap::default(),
            tasks_by_child: FastMap::default(),
            delegations_by_parent: FastMap::default(),
            workspace_keys: std::collections::BTreeSet::new(),
            tasks: BTreeMap::new(),
            invocations,
            blobs,
            blob_locs,
        };
        for task in tasks.into_values() {
            files.insert_task(task);
        }
        Ok(Self {
            run_id,
            dir,
            files: Mutex::new(files),
            sync,
            finished: std::sync::atomic::AtomicBool::new(false),
            written: Mutex::new(WrittenFiles::default()),
            _lock: lock,
        })
    }

    /// The cache of written workspace files (see [`crate::written`]); taken under a file's
    /// path lock by writes, never while holding [`OwnedRun::files`].
    pub(crate) fn written(&self) -> MutexGuard<'_, WrittenFiles> {
        self.written.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The run's files, held for one `write` at most, so a waiter spins first (`spin_lock`).
    fn files(&self) -> MutexGuard<'_, RunFiles> {
        // A panic while holding the lock cannot leave half a line: appends roll back.
        crate::spin_lock::lock(&self.files)
    }

    // ---- journal ----

    /// Appends one event with the next seq. The event is serialized before the run's lock is
    /// taken; under the lock only its seq is put in front and the line written.
    pub(crate) fn append_event(&self, event: NewRunEvent) -> StorageResult<RecordedEvent> {
        let mut stored = self.append_events(vec![event])?;
        stored
            .pop()
            .ok_or_else(|| StorageError::Other("an append stored no event".to_owned()))
    }

    /// Appends `events` in order under one hold of the run's files, so their seqs follow one
    /// another whatever else appends meanwhile (`RunJournal::append_all`), as one `write` of
    /// their lines: all of them are appended or, on an error, none.
    pub(crate) fn append_events(
        &self,
        events: Vec<NewRunEvent>,
    ) -> StorageResult<Vec<RecordedEvent>> {
        if events.is_empty() {
            return Ok(Vec::new());
        }
        let mut lines = Vec::with_capacity(events.len());
        for event in &events {
            lines.push(EventLine::new(event)?);
        }
        let mut files = self.files();
        let first_seq = files.journal_index.last_seq + 1;
        // Each line's place in the write and its length: one line is written as it is, several
        // joined (one copy, one system call instead of one per line).
        let mut spans = Vec::with_capacity(lines.len());
        let offset = match lines.as_mut_slice() {
            [line] => {
                let line = line.with_seq(first_seq);
                spans.push((0, line.len()));
                files.journal.append(line)?
            }
            many => {
                let mut joined = Vec::with_capacity(many.iter().map(EventLine::max_len).sum());
                for (seq, line) in (first_seq..).zip(many.iter_mut()) {
                    let line = line.with_seq(seq);
                    spans.push((joined.len(), line.len()));
                    joined.extend_from_slice(line);
                }
                files.journal.append(&joined)?
            }
        };
        for (seq, (start, len)) in (first_seq..).zip(&spans) {
            files
                .journal_index
                .observe_append(seq, offset + *start as u64, *len as u64);
        }
        drop(files);
        self.sync.mark_written(JOURNAL);
        Ok((first_seq..)
            .zip(events)
            .map(|(seq, event)| event.with_seq(seq))
            .collect())
    }

    /// Plans something from the journal's path and index as they are now (a page read then
    /// runs without the lock).
    pub(crate) fn with_journal<T>(&self, plan: impl FnOnce(&Path, &JournalIndex) -> T) -> T {
        let files = self.files();
        plan(files.journal.path(), &files.journal_index)
    }

    pub(crate) fn last_seq(&self) -> u64 {
        self.files().journal_index.last_seq
    }

    // ---- records ----

    fn append_record<T: Serialize>(
        files: &mut RunFiles,
        kind: RecordKind,
        key: &str,
        value: &T,
    ) -> StorageResult<Loc> {
        Self::append_line(files, &record_line(kind, key, value)?)
    }

    fn append_line(files: &mut RunFiles, line: &[u8]) -> StorageResult<Loc> {
        let offset = files.records.append(line)?;
        Ok(Loc {
            offset,
            len: line.len() - 1,
        })
    }

    pub(crate) fn put_document(&self, key: &str, value: &Value) -> StorageResult<()> {
        self.append_document(key, &record_line(RecordKind::Document, key, value)?)
    }

    /// [`OwnedRun::put_document`] for a value already serialized as compact JSON (one line):
    /// the same record line, `{"kind":"document","key":…,"value":…}`, with the text as value.
    pub(crate) fn put_serialized_document(&self, key: &str, json: &str) -> StorageResult<()> {
        self.append_document(key, &document_line(key, json)?)
    }

    /// Appends the record `line` of document `key` and makes it the document's latest.
    fn append_document(&self, key: &str, line: &[u8]) -> StorageResult<()> {
        let mut files = self.files();
        let loc = Self::append_line(&mut files, line)?;
        files.documents.insert(key.to_owned(), loc);
        drop(files);
        self.sync.mark_written(RECORDS);
        Ok(())
    }

    pub(crate) fn document<T: DeserializeOwned>(&self, key: &str) -> StorageResult<Option<T>> {
        self.stored_record(
            |files| files.documents.get(key).copied(),
            || format!("record {key}"),
        )
    }

    /// The record of `records.jsonl` that `pick` locates (none when it locates none), parsed;
    /// `Corrupt` naming `what()` when it does not parse.
    fn stored_record<T: DeserializeOwned>(
        &self,
        pick: impl FnOnce(&RunFiles) -> Option<Loc>,
        what: impl FnOnce() -> String,
    ) -> StorageResult<Option<T>> {
        let files = self.files();
        let Some(loc) = pick(&files) else {
            return Ok(None);
        };
        let body = files.records.read_at(loc.offset, loc.len)?;
        drop(files);
        record_value(&body)
            .map(Some)
            .map_err(|err| StorageError::corrupt(what(), err))
    }

    pub(crate) fn save_invocation(&self, invocation: &AgentInvocation) -> StorageResult<()> {
        let line = record_line(RecordKind::Invocation, invocation.id.as_str(), invocation)?;
        let mut files = self.files();
        Self::append_line(&mut files, &line)?;
        files
            .invocations
            .insert(invocation.id.clone(), invocation.clone());
        drop(files);
        self.sync.mark_written(RECORDS);
        Ok(())
    }

    pub(crate) fn invocation(&self, id: &InvocationId) -> Option<AgentInvocation> {
        self.files().invocations.get(id).cloned()
    }

    /// In creation order (`creationSeq`, then `createdAt`, then id).
    pub(crate) fn invocations(&self) -> Vec<AgentInvocation> {
        let mut all: Vec<AgentInvocation> = self.files().invocations.values().cloned().collect();
        all.sort_by(|a, b| a.creation_order().cmp(&b.creation_order()));
        all
    }

    pub(crate) fn create_task(&self, task: &AgentTaskRecord) -> StorageResult<()> {
        let line = record_line(RecordKind::Task, task.id.as_str(), task)?;
        let mut files = self.files();
        if files.tasks.contains_key(&task.id) {
            return Err(StorageError::AlreadyExists {
                what: format!("task {}", task.id),
            });
        }
        Self::append_line(&mut files, &line)?;
        files.insert_task(task.clone());
        drop(files);
        self.sync.mark_written(RECORDS);
        Ok(())
    }

    pub(crate) fn task(&self, id: &TaskId) -> Option<AgentTaskRecord> {
        self.files().tasks.get(id).cloned()
    }

    pub(crate) fn task_status(&self, id: &TaskId) -> Option<TaskStatus> {
        self.files().tasks.get(id).map(|task| task.status)
    }

    /// In creation order (`creationSeq`, then `createdAt`, then id).
    pub(crate) fn tasks(&self) -> Vec<AgentTaskRecord> {
        let mut all: Vec<AgentTaskRecord> = self.files().tasks.values().cloned().collect();
        all.sort_by(|a, b| a.creation_order().cmp(&b.creation_order()));
        all
    }

    pub(crate) fn tasks_by_parent(&self, parent: &InvocationId) -> Vec<AgentTaskRecord> {
        let files = self.files();
        files.tasks_among(files.tasks_by_parent.get(parent))
    }

    /// How many tasks `parent` delegated (`ReturnToParent`).
    pub(crate) fn delegations_by_parent(&self, parent: &InvocationId) -> u64 {
        self.files()
            .delegations_by_parent
            .get(parent)
            .copied()
            .unwrap_or(0)
    }

    /// Workspace keys that are `base` or start with `base-`.
    pub(crate) fn workspace_keys_like(&self, base: &str) -> Vec<String> {
        let prefix = format!("{base}-");
        self.files()
            .workspace_keys
            .range(base.to_owned()..)
            .take_while(|key| key.starts_with(base))
            .filter(|key| key.as_str() == base || key.starts_with(&prefix))
            .cloned()
            .collect()
    }

    pub(crate) fn tasks_by_child(&self, child: &InvocationId) -> Vec<AgentTaskRecord> {
        let files = self.files();
        files.tasks_among(files.tasks_by_child.get(child))
    }

    /// Load, apply and record under the run's one lock: exactly one terminal write can win.
    pub(crate) fn transition_task(
        &self,
        id: &TaskId,
        transition: &TaskTransition,
        now: Timestamp,
    ) -> StorageResult<TaskTransitionOutcome> {
        let mut files = self.files();
        let mut task = files
            .tasks
            .get(id)
            .cloned()
            .ok_or_else(|| StorageError::not_found(format!("task {id}")))?;
        let changed = task.apply_transition(transition, now)?;
        if changed {
            Self::append_record(&mut files, RecordKind::Task, id.as_str(), &task)?;
            files.tasks.insert(id.clone(), task.clone());
            drop(files);
            self.sync.mark_written(RECORDS);
        }
        Ok(TaskTransitionOutcome { task, changed })
    }

    // ---- checkpoints and blobs ----

    /// Whether a blob of this content is stored (blobs are never removed).
    pub(crate) fn has_blob(&self, sha256: &str) -> bool {
        self.files().blob_locs.contains_key(sha256)
    }

    /// Records a checkpoint of `contents`: each content is stored once per run. A
    /// [`CheckpointContent::Known`] without text must name a stored blob.
    pub(crate) fn add_checkpoint(
        &self,
        reason: CheckpointReason,
        event_seq: u64,
        contents: Vec<CheckpointFile>,
        created_at: Timestamp,
    ) -> StorageResult<CheckpointRecord> {
        let mut fingerprints = Vec::with_capacity(contents.len());
        let mut files = self.files();
        let mut wrote_blob = false;
        for CheckpointFile { path, content } in contents {
            let (sha256, bytes, text) = match content {
                CheckpointContent::Read(text) => {
                    (sha256_hex(text.as_bytes()), text.len() as u64, Some(text))
                }
                CheckpointContent::Known(known) => (known.sha256, known.bytes, known.text),
            };
            if !files.blob_locs.contains_key(&sha256) {
                let Some(text) = text else {
                    return Err(StorageError::Other(format!(
                        "checkpoint of {path}: the content {sha256} is neither stored nor given"
                    )));
                };
                let line = line_of(&BlobLine {
                    sha256: &sha256,
                    text: &text,
                })?;
                let offset = files.blobs.append(&line)?;
                files.blob_locs.insert(
                    sha256.clone(),
                    Loc {
                        offset,
                        len: line.len() - 1,
                    },
                );
                wrote_blob = true;
            }
            fingerprints.push(FileFingerprint {
                path,
                sha256,
                bytes,
            });
        }
        let seq = files.checkpoints.len() as u64 + 1;
        let record = CheckpointRecord {
            id: CheckpointId::from_seq(seq),
            seq,
            run_id: self.run_id.clone(),
            created_at,
            reason,
            event_seq,
            files: fingerprints,
        };
        let key = record.id.as_str().to_owned();
        let loc = Self::append_record(&mut files, RecordKind::Checkpoint, &key, &record)?;
        files.checkpoints.insert(key, loc);
        drop(files);
        if wrote_blob {
            self.sync.mark_written(BLOBS);
        }
        self.sync.mark_written(RECORDS);
        Ok(record)
    }

    pub(crate) fn checkpoint(&self, id: &str) -> StorageResult<Option<CheckpointRecord>> {
        self.stored_record(
            |files| files.checkpoints.get(id).copied(),
            || format!("checkpoint {id}"),
        )
    }

    pub(crate) fn blob(&self, sha256: &str) -> StorageResult<Option<String>> {
        let files = self.files();
        let Some(loc) = files.blob_locs.get(sha256).copied() else {
            return Ok(None);
        };
        let body = files.blobs.read_at(loc.offset, loc.len)?;
        drop(files);
        serde_json::from_slice::<BlobText>(&body)
            .map(|blob| Some(blob.text))
            .map_err(|err| StorageError::corrupt(format!("blob {sha256}"), err))
    }
}

/// Makes a directory's entries durable (new files in it survive a power cut).
pub(crate) fn sync_dir(dir: &Path) -> StorageResult<()> {
    File::open(dir)
        .and_then(|handle| handle.sync_all())
        .map_err(|err| StorageError::io(dir.display().to_string(), err))?;
    fsutil::note_fsync();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tt_domain::event::{EventLevel, RunEventType};
    use tt_domain::ids::EventId;

    #[test]
    fn a_serialized_document_line_is_the_record_line_of_its_value() {
        let value = json!({"b": 1, "a": "x\n\"y\"", "c": [null, 2.5, {"é": true}]});
        let key = "tool-args/call_\"odd\".json";
        let json_text = serde_json::to_string(&value).unwrap();
        assert_eq!(
            document_line(key, &json_text).unwrap(),
            record_line(RecordKind::Document, key, &value).unwrap()
        );
    }

    #[test]
    fn an_event_line_is_the_event_serialized_whole() {
        let event = NewRunEvent {
            id: EventId::from_raw("evt_1"),
            run_id: RunId::from_raw("run_1"),
            timestamp: Timestamp::from_unix_millis(1_764_677_944_123),
            level: EventLevel::Warn,
            event_type: RunEventType::ToolCallStarted,
            payload: json!({"b": 1, "a": "x\n\"y\"", "eventScope": {"invocationId": "inv_root"}})
                .into(),
        };
        for seq in [1, 9, 10, 42, 1_000_000, u64::MAX] {
            let mut line = EventLine::new(&event).unwrap();
            let mut whole = serde_json::to_vec(&event.clone().with_seq(seq)).unwrap();
            whole.push(b'\n');
            assert_eq!(
                String::from_utf8(line.with_seq(seq).to_vec()).unwrap(),
                String::from_utf8(whole).unwrap()
            );
        }
    }
}
