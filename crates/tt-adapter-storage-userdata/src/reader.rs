//! Reading the records and blobs of a run this process does not write (another process owns it,
//! or it is finished), never writing or repairing anything. A [`SegmentsView`] indexes the
//! complete lines of the record and blob segments (the latest line of each record key, the first
//! line of each blob) and extends that index by the lines appended since its last look, so a
//! lookup reads one line instead of the whole file.

use serde::de::DeserializeOwned;
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use tt_ports::{StorageError, StorageResult};

use crate::journal_index::JournalView;
use crate::layout::{BLOBS_FILE, RECORDS_FILE};
use crate::owned::{BlobHeader, BlobText, RecordHeader, RecordKind, record_value};
use crate::segment;

/// What a reader keeps of one run between calls: its journal index and its segments' indexes.
/// Only caches of the files: dropping it costs a rescan.
#[derive(Debug, Default)]
pub(crate) struct ReaderViews {
    pub(crate) journal: Mutex<JournalView>,
    pub(crate) segments: Mutex<SegmentsView>,
}

/// Where a line lives in a segment.
#[derive(Debug, Clone, Copy)]
struct Loc {
    offset: u64,
    len: usize,
}

/// The indexed part of one segment file: every complete line before `len`.
#[derive(Debug)]
struct Indexed<K> {
    /// The file's identity (device, inode) when indexed; another file (the run deleted and
    /// written again) starts the index over.
    identity: Option<(u64, u64)>,
    len: u64,
    lines: HashMap<K, Loc>,
}

impl<K> Default for Indexed<K> {
    fn default() -> Self {
        Self::fresh()
    }
}

impl<K> Indexed<K> {
    /// Opens the segment and drops the index when the file is not the one indexed (or is
    /// shorter than what was indexed). `None` when the file does not exist yet.
    fn open(&mut self, path: &Path) -> StorageResult<Option<File>> {
        let Some(file) = segment::open_for_reading(path)? else {
            *self = Self::fresh();
            return Ok(None);
        };
        let metadata = file
            .metadata()
            .map_err(|err| StorageError::io(path.display().to_string(), err))?;
        let identity = Some((metadata.dev(), metadata.ino()));
        if self.identity != identity || metadata.len() < self.len {
            *self = Self::fresh();
            self.identity = identity;
        }
        Ok(Some(file))
    }

    /// Opens the segment at `path` and indexes the complete lines appended since the last look:
    /// `add` files each line, parsed as `H`, with where it lives. `None` when the file does not
    /// exist yet.
    fn extend<H: DeserializeOwned>(
        &mut self,
        path: &Path,
        bytes_read: &AtomicU64,
        mut add: impl FnMut(&mut HashMap<K, Loc>, H, Loc),
    ) -> StorageResult<Option<File>> {
        let Some(mut file) = self.open(path)? else {
            return Ok(None);
        };
        let lines = &mut self.lines;
        let end = segment::scan(path, &mut file, self.len, bytes_read, |offset, body| {
            let header: H = serde_json::from_slice(body).map_err(|err| err.to_string())?;
            let loc = Loc {
                offset,
                len: body.len(),
            };
            add(lines, header, loc);
            Ok(())
        })?;
        self.len = end.good_len;
        Ok(Some(file))
    }

    fn fresh() -> Self {
        Self {
            identity: None,
            len: 0,
            lines: HashMap::new(),
        }
    }
}

/// Reads the line at `loc` of `file`.
fn read_line(file: &File, path: &Path, bytes_read: &AtomicU64, loc: Loc) -> StorageResult<Vec<u8>> {
    let mut body = vec![0; loc.len];
    file.read_exact_at(&mut body, loc.offset)
        .map_err(|err| StorageError::io(path.display().to_string(), err))?;
    bytes_read.fetch_add(loc.len as u64, Ordering::Relaxed);
    Ok(body)
}

/// The latest line of each record, by kind and key.
type RecordLines = HashMap<(RecordKind, String), Loc>;

/// A reader's indexes of a run's record and blob segments.
#[derive(Debug, Default)]
pub(crate) struct SegmentsView {
    records: Indexed<(RecordKind, String)>,
    blobs: Indexed<String>,
}

impl SegmentsView {
    /// The records file, its index extended by the complete lines appended since the last look.
    fn records(
        &mut self,
        dir: &Path,
        bytes_read: &AtomicU64,
    ) -> StorageResult<Option<(File, &RecordLines)>> {
        let index = &mut self.records;
        let file = index.extend(
            &dir.join(RECORDS_FILE),
            bytes_read,
            |lines, header: RecordHeader, loc| {
                // The latest line of a key wins.
                lines.insert((header.kind, header.key), loc);
            },
        )?;
        Ok(file.map(|file| (file, &index.lines)))
    }

    /// The blobs file, its index extended likewise.
    fn blobs(
        &mut self,
        dir: &Path,
        bytes_read: &AtomicU64,
    ) -> StorageResult<Option<(File, &HashMap<String, Loc>)>> {
        let index = &mut self.blobs;
        let file = index.extend(
            &dir.join(BLOBS_FILE),
            bytes_read,
            |lines, header: BlobHeader, loc| {
                // A blob is stored once; should it appear again, its first line is the one read.
                lines.entry(header.sha256).or_insert(loc);
            },
        )?;
        Ok(file.map(|file| (file, &index.lines)))
    }
}

fn lock(view: &Mutex<SegmentsView>) -> std::sync::MutexGuard<'_, SegmentsView> {
    view.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The latest value of one record, `None` when there is none.
pub(crate) fn record<T: DeserializeOwned>(
    dir: &Path,
    view: &Mutex<SegmentsView>,
    bytes_read: &AtomicU64,
    kind: RecordKind,
    key: &str,
) -> StorageResult<Option<T>> {
    let mut view = lock(view);
    let Some((file, lines)) = view.records(dir, bytes_read)? else {
        return Ok(None);
    };
    let Some(loc) = lines.get(&(kind, key.to_owned())).copied() else {
        return Ok(None);
    };
    drop(view);
    let body = read_line(&file, &dir.join(RECORDS_FILE), bytes_read, loc)?;
    record_value(&body)
        .map(Some)
        .map_err(|err| StorageError::corrupt(format!("record {key}"), err))
}

/// The latest value of every record of `kind`, in no particular order.
pub(crate) fn records<T: DeserializeOwned>(
    dir: &Path,
    view: &Mutex<SegmentsView>,
    bytes_read: &AtomicU64,
    kind: RecordKind,
) -> StorageResult<Vec<T>> {
    let mut view = lock(view);
    let Some((file, lines)) = view.records(dir, bytes_read)? else {
        return Ok(Vec::new());
    };
    let mut wanted: Vec<(String, Loc)> = lines
        .iter()
        .filter(|((line_kind, _), _)| *line_kind == kind)
        .map(|((_, key), loc)| (key.clone(), *loc))
        .collect();
    drop(view);
    // In file order: one forward pass over the file.
    wanted.sort_by_key(|(_, loc)| loc.offset);
    let path = dir.join(RECORDS_FILE);
    wanted
        .into_iter()
        .map(|(key, loc)| {
            let body = read_line(&file, &path, bytes_read, loc)?;
            record_value(&body).map_err(|err| StorageError::corrupt(format!("record {key}"), err))
        })
        .collect()
}

/// The text of the blob with `sha256`, `None` when the run stored none.
pub(crate) fn blob(
    dir: &Path,
    view: &Mutex<SegmentsView>,
    bytes_read: &AtomicU64,
    sha256: &str,
) -> StorageResult<Option<String>> {
    let mut view = lock(view);
    let Some((file, lines)) = view.blobs(dir, bytes_read)? else {
        return Ok(None);
    };
    let Some(loc) = lines.get(sha256).copied() else {
        return Ok(None);
    };
    drop(view);
    let path = dir.join(BLOBS_FILE);
    let body = read_line(&file, &path, bytes_read, loc)?;
    let blob: BlobText = serde_json::from_slice(&body)
        .map_err(|err| StorageError::corrupt(path.display().to_string(), err.to_string()))?;
    Ok(Some(blob.text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn line(kind: &str, key: &str, value: u64) -> String {
        format!("{{\"kind\":\"{kind}\",\"key\":\"{key}\",\"value\":{{\"n\":{value}}}}}\n")
    }

    fn n(dir: &Path, view: &Mutex<SegmentsView>, key: &str) -> Option<u64> {
        record::<Value>(dir, view, &AtomicU64::new(0), RecordKind::Document, key)
            .unwrap()
            .and_then(|value| value.get("n").and_then(Value::as_u64))
    }

    #[test]
    fn the_index_follows_appends_and_reads_only_the_new_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(RECORDS_FILE);
        let view = Mutex::new(SegmentsView::default());
        assert_eq!(n(dir.path(), &view, "a"), None);
        let first = line("document", "a", 1) + &line("task", "a", 9);
        std::fs::write(&path, &first).unwrap();
        assert_eq!(n(dir.path(), &view, "a"), Some(1));
        // A later line of the key wins; a line still being written is not read.
        let more = line("document", "a", 2);
        let all = first.clone() + &more + "{\"kind\":\"doc";
        std::fs::write(&path, &all).unwrap();
        let counter = AtomicU64::new(0);
        let got: Option<Value> =
            record(dir.path(), &view, &counter, RecordKind::Document, "a").unwrap();
        assert_eq!(got.unwrap()["n"], 2);
        // The lines already indexed were not read again.
        let read = counter.load(Ordering::Relaxed);
        assert!(read < (first.len() + more.len()) as u64, "{read}");
        let tasks: Vec<Value> =
            records(dir.path(), &view, &AtomicU64::new(0), RecordKind::Task).unwrap();
        assert_eq!(tasks, [serde_json::json!({"n": 9})]);
    }

    #[test]
    fn a_file_written_again_is_indexed_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(RECORDS_FILE);
        let view = Mutex::new(SegmentsView::default());
        std::fs::write(&path, line("document", "a", 1) + &line("document", "b", 1)).unwrap();
        assert_eq!(n(dir.path(), &view, "b"), Some(1));
        std::fs::remove_file(&path).unwrap();
        assert_eq!(n(dir.path(), &view, "b"), None);
        std::fs::write(&path, line("document", "a", 3)).unwrap();
        assert_eq!(n(dir.path(), &view, "a"), Some(3));
        assert_eq!(n(dir.path(), &view, "b"), None);
    }
}
