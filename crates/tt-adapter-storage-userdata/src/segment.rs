//! Append-only JSON-lines files (the journal and the record and blob segments of a run): one
//! whole line per append, scanned once when the owner opens them (a torn tail left by a crash or
//! power cut is cut away), and read by other processes only up to their last complete line.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use tt_ports::{StorageError, StorageResult};

use crate::faults::{self, Fault, Op};
use crate::fsutil;

/// An open segment file of a run this process owns. Appends go to the end as one `write` of
/// whole lines (one, or several joined); `len` is the end of the last complete line.
pub(crate) struct Segment {
    path: PathBuf,
    /// Shared with the flusher, which syncs through the same descriptor.
    file: Arc<File>,
    len: u64,
    /// Set when a failed append could not be undone: the file may end in part of a line,
    /// which later appends would follow, so they are refused. The next open of the run cuts
    /// the torn tail.
    end_unknown: bool,
}

/// How a scan ended.
pub(crate) struct ScanEnd {
    /// Bytes up to and including the last good line.
    pub(crate) good_len: u64,
    /// The file's length when the scan started.
    pub(crate) file_len: u64,
}

impl Segment {
    /// Opens (creating if missing) a segment for its owner: every complete line is handed to
    /// `visit` with its byte offset; a cut-off last line, or a last line `visit` cannot parse,
    /// is truncated away (a write the crash interrupted). An unparsable line before the end is
    /// an error, never skipped.
    pub(crate) fn open_owned(
        path: PathBuf,
        bytes_read: &AtomicU64,
        visit: impl FnMut(u64, &[u8]) -> Result<(), String>,
    ) -> StorageResult<Self> {
        let what = || path.display().to_string();
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(|err| StorageError::io(what(), err))?;
        let end = scan(&path, &mut file, 0, bytes_read, visit)?;
        if end.good_len < end.file_len {
            file.set_len(end.good_len)
                .and_then(|()| file.sync_data())
                .map_err(|err| StorageError::io(what(), err))?;
        }
        Ok(Self {
            path,
            file: Arc::new(file),
            len: end.good_len,
            end_unknown: false,
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The end of the last complete line.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Appends one line (which must end with `\n`) and returns its offset. A failed write is
    /// rolled back so the file never keeps half a line.
    pub(crate) fn append(&mut self, line: &[u8]) -> StorageResult<u64> {
        let what = || self.path.display().to_string();
        if self.end_unknown {
            return Err(StorageError::io(
                what(),
                std::io::Error::other(
                    "an earlier write to this file failed and could not be undone; \
                     the run must be opened again",
                ),
            ));
        }
        let offset = self.len;
        let fault = faults::hit(&self.path, Op::Append);
        let written = match fault {
            None => (&*self.file).write_all(line),
            Some(_) => (&*self.file)
                .write_all(&line[..line.len() / 2])
                .and_then(|()| Err(faults::injected_error())),
        };
        if let Err(err) = written {
            let rolled_back =
                fault != Some(Fault::TornWriteNoRollback) && self.file.set_len(offset).is_ok();
            if !rolled_back {
                self.end_unknown = true;
            }
            return Err(StorageError::io(what(), err));
        }
        self.len += line.len() as u64;
        Ok(offset)
    }

    /// Reads `len` bytes at `offset` (a line this segment wrote).
    pub(crate) fn read_at(&self, offset: u64, len: usize) -> StorageResult<Vec<u8>> {
        let mut buf = vec![0; len];
        self.file
            .read_exact_at(&mut buf, offset)
            .map_err(|err| StorageError::io(self.path.display().to_string(), err))?;
        Ok(buf)
    }

    /// The file, for the flusher's `fdatasync`.
    pub(crate) fn sync_handle(&self) -> Arc<File> {
        Arc::clone(&self.file)
    }
}

/// Scans the complete lines of `file` from `start`, handing each non-blank one to `visit`. A
/// last line with no newline (a write in flight, or cut short) or one `visit` cannot parse ends
/// the scan as torn: the owner cuts it away, a reader just stops before it.
pub(crate) fn scan(
    path: &Path,
    file: &mut File,
    start: u64,
    bytes_read: &AtomicU64,
    mut visit: impl FnMut(u64, &[u8]) -> Result<(), String>,
) -> StorageResult<ScanEnd> {
    let what = || path.display().to_string();
    let file_len = file
        .metadata()
        .map_err(|err| StorageError::io(what(), err))?
        .len();
    let mut reader = fsutil::counted_reader_from(
        path,
        &mut *file,
        (start, file_len.saturating_sub(start)),
        64 * 1024,
        bytes_read,
    )?;
    let mut good_len = start;
    let mut line = Vec::new();
    loop {
        let n = fsutil::next_line(&mut reader, &mut line, path)?;
        if n == 0 {
            break;
        }
        let Some(body) = line.strip_suffix(b"\n") else {
            // No newline yet: a write in flight (reader) or cut short (owner).
            break;
        };
        if !body.iter().all(u8::is_ascii_whitespace)
            && let Err(message) = visit(good_len, body)
        {
            let at_end = reader
                .fill_buf()
                .map_err(|err| StorageError::io(what(), err))?
                .is_empty();
            if at_end {
                // A complete but unparsable last line is a torn write too.
                break;
            }
            return Err(StorageError::corrupt(
                what(),
                format!("line at byte {good_len}: {message}"),
            ));
        }
        good_len += n as u64;
    }
    Ok(ScanEnd { good_len, file_len })
}

/// Opens a segment for reading by a process that does not own the run; `Ok(None)` when the file
/// does not exist yet.
pub(crate) fn open_for_reading(path: &Path) -> StorageResult<Option<File>> {
    match File::open(path) {
        Ok(file) => Ok(Some(file)),
        Err(err) if crate::fsutil::is_missing(&err) => Ok(None),
        Err(err) => Err(StorageError::io(path.display().to_string(), err)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_json(_: u64, body: &[u8]) -> Result<(), String> {
        serde_json::from_slice::<serde_json::Value>(body)
            .map(drop)
            .map_err(|err| err.to_string())
    }

    /// A temporary `seg.jsonl` holding `bytes` (kept while the `TempDir` lives).
    fn segment_file(bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg.jsonl");
        std::fs::write(&path, bytes).unwrap();
        (dir, path)
    }

    #[test]
    fn owners_cut_torn_tails_and_readers_stop_before_them() {
        let (_dir, path) = segment_file(b"{\"a\":1}\n{\"b\":2}\n{\"c\":");
        let counter = AtomicU64::new(0);

        let mut reader = File::open(&path).unwrap();
        let end = scan(&path, &mut reader, 0, &counter, parse_json).unwrap();
        assert_eq!((end.good_len, end.file_len), (16, 21));

        let mut offsets = Vec::new();
        let mut segment = Segment::open_owned(path.clone(), &counter, |offset, body| {
            offsets.push(offset);
            parse_json(offset, body)
        })
        .unwrap();
        assert_eq!(offsets, [0, 8]);
        assert_eq!(segment.len(), 16);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 16);
        let at = segment.append(b"{\"d\":4}\n").unwrap();
        assert_eq!(at, 16);
        assert_eq!(segment.read_at(at, 7).unwrap(), b"{\"d\":4}");
    }

    #[test]
    fn an_unparsable_line_before_the_end_is_corrupt() {
        let (_dir, path) = segment_file(b"{\"a\":1}\nnot json\n{\"b\":2}\n");
        let counter = AtomicU64::new(0);
        let err = Segment::open_owned(path.clone(), &counter, parse_json)
            .err()
            .unwrap();
        assert_eq!(err.code(), "agent.storage_corrupt");
        // A bad complete last line is torn: a reader stops before it, the owner cuts it.
        std::fs::write(&path, b"{\"a\":1}\nnot json\n").unwrap();
        let mut reader = File::open(&path).unwrap();
        assert_eq!(
            scan(&path, &mut reader, 0, &counter, parse_json)
                .unwrap()
                .good_len,
            8
        );
        let segment = Segment::open_owned(path, &counter, parse_json).unwrap();
        assert_eq!(segment.len(), 8);
    }
}
