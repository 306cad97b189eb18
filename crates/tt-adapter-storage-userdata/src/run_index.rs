//! The two indexes that keep a start and a listing independent of how many runs a data dir
//! holds (docs/storage.md, "The run indexes"):
//!
//! - `index/unfinished/<runId>`: one marker per run that may be unfinished, holding its
//!   workspace id. Written (synced) before a run's record can say it is unfinished, removed only
//!   after its record says it ended; recovery reads only these. `index/unfinished/.complete`
//!   says the markers were built from a scan of every run; without it (a data dir written
//!   before the index, or an index deleted or damaged) the next writer scans every run and
//!   writes the markers again.
//! - `index/runs.log`: one line per run created, `<createdAt ms> <runId> <workspaceId>`, in the
//!   order they were created, after a header line; a listing reads it backwards from its end.
//!   Appends take a shared `flock` on `index/runs.log.lock`, a rebuild the exclusive one, so a
//!   rebuild never drops a line appended while it scanned. Without the header (missing, or only
//!   appended to since it went missing) readers list from a scan and the next writer rebuilds.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

use tt_domain::ids::{RunId, is_valid_storage_segment};
use tt_ports::{StorageError, StorageResult};

use crate::fsutil;
use crate::layout::Layout;

/// The first line of a complete run log.
const LOG_HEADER: &str = "tt-run-log 1";
/// The marker that says the unfinished index was built from a scan of every run.
const COMPLETE_MARKER: &str = ".complete";
/// How far back from its end the run log is read first: about 30 lines, a page of `tt-agent
/// runs` and the lines that settle it, so the first page parses no more of a long log than an
/// empty data dir's.
const FIRST_CHUNK: u64 = 4 * 1024;
/// The most read at a time: each chunk doubles the one before, up to this.
const MAX_CHUNK: u64 = 64 * 1024;
/// How much earlier than the line before it a line's creation time may be: a run's line is
/// appended right after its record is stamped, so lines are in creation order up to the time
/// between the stamp and the append (two processes creating runs at once). A listing reads on
/// until the lines it has not read are older than this (docs/storage.md).
pub(crate) const LOG_SLACK_MS: i64 = 60_000;

pub(crate) fn unfinished_dir(layout: &Layout) -> PathBuf {
    layout.root().join("index").join("unfinished")
}

fn log_path(layout: &Layout) -> PathBuf {
    layout.root().join("index").join("runs.log")
}

fn log_lock_path(layout: &Layout) -> PathBuf {
    layout.root().join("index").join("runs.log.lock")
}

/// Marks `run_id` as maybe unfinished, durably (before any record of it can say so).
pub(crate) fn mark_unfinished(
    layout: &Layout,
    run_id: &RunId,
    workspace_id: &str,
) -> StorageResult<()> {
    let dir = unfinished_dir(layout);
    fsutil::create_dir_all(&dir)?;
    fsutil::write_atomic(&dir.join(run_id.as_str()), workspace_id.as_bytes())
}

/// Whether `run_id` has its marker.
pub(crate) fn is_marked(layout: &Layout, run_id: &RunId) -> bool {
    unfinished_dir(layout).join(run_id.as_str()).is_file()
}

/// Removes the marker of a run whose record says it ended (a missing marker is fine).
pub(crate) fn clear_unfinished(layout: &Layout, run_id: &RunId) -> StorageResult<()> {
    let path = unfinished_dir(layout).join(run_id.as_str());
    match fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(err) if fsutil::is_missing(&err) => Ok(()),
        Err(err) => Err(StorageError::io(path.display().to_string(), err)),
    }
}

/// A marked run: its id and the workspace id its marker names (`None` when unreadable).
pub(crate) struct Marked {
    pub(crate) run_id: RunId,
    pub(crate) workspace_id: Option<String>,
}

/// The marked runs, or `None` when the index is not known complete (it must be rebuilt).
pub(crate) fn marked_runs(layout: &Layout) -> StorageResult<Option<Vec<Marked>>> {
    let dir = unfinished_dir(layout);
    if !dir.join(COMPLETE_MARKER).is_file() {
        return Ok(None);
    }
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(err) if fsutil::is_missing(&err) => return Ok(None),
        Err(err) => return Err(StorageError::io(dir.display().to_string(), err)),
    };
    let mut marked = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str().filter(|name| is_valid_storage_segment(name)) else {
            continue;
        };
        let workspace_id = fs::read_to_string(entry.path())
            .ok()
            .filter(|text| is_valid_storage_segment(text));
        marked.push(Marked {
            run_id: RunId::from_raw(name),
            workspace_id,
        });
    }
    marked.sort_by(|a, b| a.run_id.cmp(&b.run_id));
    Ok(Some(marked))
}

/// Records that every unfinished run has its marker (after a scan wrote them).
pub(crate) fn mark_complete(layout: &Layout) -> StorageResult<()> {
    let dir = unfinished_dir(layout);
    fsutil::create_dir_all(&dir)?;
    fsutil::write_atomic(&dir.join(COMPLETE_MARKER), b"")
}

/// One line of the run log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogEntry {
    pub(crate) created_ms: i64,
    pub(crate) run_id: RunId,
    pub(crate) workspace_id: String,
}

impl LogEntry {
    fn line(&self) -> String {
        format!(
            "{} {} {}\n",
            self.created_ms, self.run_id, self.workspace_id
        )
    }

    fn parse(line: &[u8]) -> Option<LogEntry> {
        let text = std::str::from_utf8(line).ok()?;
        let mut parts = text.split(' ');
        let created_ms = parts.next()?.parse().ok()?;
        let run_id = parts.next().filter(|id| is_valid_storage_segment(id))?;
        let workspace_id = parts.next().filter(|id| is_valid_storage_segment(id))?;
        parts.next().is_none().then(|| LogEntry {
            created_ms,
            run_id: RunId::from_raw(run_id),
            workspace_id: workspace_id.to_owned(),
        })
    }
}

fn open_lock(layout: &Layout) -> StorageResult<File> {
    let path = log_lock_path(layout);
    if let Some(index) = path.parent() {
        fsutil::create_dir_all(index)?;
    }
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|err| StorageError::io(path.display().to_string(), err))
}

/// Appends a created run's line (one `write` under the shared lock; a log that is missing is
/// started without its header, which the next writer's rebuild adds).
pub(crate) fn append_created(layout: &Layout, entry: &LogEntry) -> StorageResult<()> {
    let path = log_path(layout);
    let io = |err: io::Error| StorageError::io(path.display().to_string(), err);
    let lock = open_lock(layout)?;
    lock.lock_shared().map_err(io)?;
    let mut log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(io)?;
    log.write_all(entry.line().as_bytes()).map_err(io)
}

/// Whether the log is complete (starts with its header).
pub(crate) fn log_is_complete(layout: &Layout) -> bool {
    let mut head = [0u8; LOG_HEADER.len() + 1];
    File::open(log_path(layout))
        .and_then(|mut file| file.read_exact(&mut head))
        .is_ok_and(|()| head.starts_with(LOG_HEADER.as_bytes()) && head.ends_with(b"\n"))
}

/// Rewrites the log from `scanned` (every run a scan found) and the lines already in it, under
/// the exclusive lock, oldest first, each run once.
pub(crate) fn rebuild_log(layout: &Layout, mut scanned: Vec<LogEntry>) -> StorageResult<()> {
    let path = log_path(layout);
    let io = |err: io::Error| StorageError::io(path.display().to_string(), err);
    let lock = open_lock(layout)?;
    lock.lock().map_err(io)?;
    if let Some(existing) = fsutil::read_bytes(&path)? {
        scanned.extend(
            existing
                .split(|byte| *byte == b'\n')
                .filter_map(LogEntry::parse),
        );
    }
    scanned.sort_by(|a, b| (a.created_ms, &a.run_id).cmp(&(b.created_ms, &b.run_id)));
    let mut seen = std::collections::HashSet::new();
    let mut text = format!("{LOG_HEADER}\n");
    for entry in scanned {
        if seen.insert(entry.run_id.clone()) {
            text.push_str(&entry.line());
        }
    }
    fsutil::write_atomic(&path, text.as_bytes())
}

/// The run log read backwards from its end, a chunk at a time.
pub(crate) struct LogTail {
    file: File,
    /// Bytes before this offset are not read yet.
    pos: u64,
    /// The start of a line cut by the last chunk read.
    carry: Vec<u8>,
    /// How much the next chunk reads.
    chunk: u64,
}

impl LogTail {
    /// `None` when the log is missing or not complete.
    pub(crate) fn open(layout: &Layout) -> StorageResult<Option<LogTail>> {
        if !log_is_complete(layout) {
            return Ok(None);
        }
        let path = log_path(layout);
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(err) if fsutil::is_missing(&err) => return Ok(None),
            Err(err) => return Err(StorageError::io(path.display().to_string(), err)),
        };
        let pos = file
            .metadata()
            .map_err(|err| StorageError::io(path.display().to_string(), err))?
            .len();
        Ok(Some(LogTail {
            file,
            pos,
            carry: Vec::new(),
            chunk: FIRST_CHUNK,
        }))
    }

    /// The next lines going backwards, newest first; `None` once the whole log was read. A
    /// line cut short at the end (a torn append) or unparsable is skipped.
    pub(crate) fn next_chunk(&mut self) -> StorageResult<Option<Vec<LogEntry>>> {
        if self.pos == 0 && self.carry.is_empty() {
            return Ok(None);
        }
        let start = self.pos.saturating_sub(self.chunk);
        self.chunk = (self.chunk * 2).min(MAX_CHUNK);
        let mut bytes = vec![0u8; usize::try_from(self.pos - start).unwrap_or(0)];
        self.file
            .seek(SeekFrom::Start(start))
            .and_then(|_| self.file.read_exact(&mut bytes))
            .map_err(|err| StorageError::io("index/runs.log", err))?;
        self.pos = start;
        bytes.append(&mut self.carry);
        let mut lines: Vec<&[u8]> = bytes.split(|byte| *byte == b'\n').collect();
        // The first piece may be the end of a line that starts in an earlier chunk.
        let first = if start > 0 && !lines.is_empty() {
            lines.remove(0).to_vec()
        } else {
            Vec::new()
        };
        let entries = lines
            .iter()
            .rev()
            .filter_map(|line| LogEntry::parse(line))
            .collect();
        self.carry = first;
        Ok(Some(entries))
    }
}

/// Where a run's directory is, from a log line or a marker: `chats/<workspaceId>/runs/<runId>`.
pub(crate) fn run_dir_of(layout: &Layout, workspace_id: &str, run_id: &RunId) -> Option<PathBuf> {
    layout.run_dir(workspace_id, run_id.as_str()).ok()
}
