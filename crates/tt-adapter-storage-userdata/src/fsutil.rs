//! Small file-system helpers shared by every repository of the store: atomic replacement
//! (temp file + sync + rename), JSON state files, and mapping `std::io` errors to `StorageError`.

use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use tt_ports::StorageError;

use crate::StorageResult;
use crate::faults;

/// Prefix of every temporary file or directory the store creates; listings skip these names.
pub(crate) const TEMP_PREFIX: &str = ".tt-tmp-";

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Every `fsync`/`fdatasync` the store has made in this process (a benchmark figure).
static FSYNCS: AtomicU64 = AtomicU64::new(0);

pub(crate) fn note_fsync() {
    FSYNCS.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn fsync_count() -> u64 {
    FSYNCS.load(Ordering::Relaxed)
}

/// A fresh temporary name in `dir` (unique within this process, and across processes by pid).
pub(crate) fn temp_path_in(dir: &Path) -> PathBuf {
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let (mut pid, mut count) = (itoa::Buffer::new(), itoa::Buffer::new());
    dir.join(
        [
            TEMP_PREFIX,
            pid.format(std::process::id()),
            "-",
            count.format(n),
        ]
        .concat(),
    )
}

pub(crate) fn is_temp_name(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX)
}

/// Whether the process that made temp file `name` is gone (its pid is in the name). Where
/// process liveness cannot be read (no `/proc`), nothing counts as gone.
fn temp_owner_gone(name: &str) -> bool {
    let Some(pid) = name
        .strip_prefix(TEMP_PREFIX)
        .and_then(|rest| rest.split('-').next())
        .and_then(|pid| pid.parse::<u32>().ok())
    else {
        return false;
    };
    pid != std::process::id()
        && Path::new("/proc/self").exists()
        && !Path::new("/proc").join(pid.to_string()).exists()
}

/// Removes the temp files and directories in `dir` (not below it) whose process is gone.
pub(crate) fn remove_stale_temp_entries(dir: &Path) -> StorageResult<()> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if is_missing(&err) => return Ok(()),
        Err(err) => return Err(StorageError::io(dir.display().to_string(), err)),
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !is_temp_name(name) || !temp_owner_gone(name) {
            continue;
        }
        let path = entry.path();
        let result = if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
        result.map_err(|err| StorageError::io(path.display().to_string(), err))?;
    }
    Ok(())
}

/// Maps an I/O error: a missing file becomes `NotFound { what }`, everything else `Io`.
pub(crate) fn io_error(what: impl Into<String>, err: &io::Error) -> StorageError {
    let what = what.into();
    match err.kind() {
        io::ErrorKind::NotFound => StorageError::NotFound { what },
        _ => StorageError::io(what, err),
    }
}

/// Replaces `path` with `bytes` atomically: write a temp file in the same directory, sync it,
/// then rename it over the target. The temp file is removed on failure.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> StorageResult<()> {
    replace_via_temp(path, bytes, true, false)
        .map(|_| ())
        .map_err(|err| StorageError::io(path.display().to_string(), err))
}

/// Writes a new file (an error when `path` exists) and waits for its bytes to reach the disk.
pub(crate) fn write_new_synced(path: &Path, bytes: &[u8]) -> StorageResult<()> {
    let what = || path.display().to_string();
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|err| StorageError::io(what(), err))?;
    io::Write::write_all(&mut file, bytes)
        .and_then(|()| file.sync_all())
        .map_err(|err| StorageError::io(what(), err))?;
    note_fsync();
    Ok(())
}

/// Replaces `path` with `bytes` by temp file and rename, without waiting for the disk: a crash
/// of the process leaves the old or the new file; durability comes from the run's segments.
/// Returns the new file's metadata, taken from the open handle before the rename (a rename
/// keeps the inode and the modification time).
pub(crate) fn write_replace(path: &Path, bytes: &[u8]) -> io::Result<fs::Metadata> {
    replace_via_temp(path, bytes, false, true)?
        .ok_or_else(|| io::Error::other("the new file's metadata is missing"))
}

fn replace_via_temp(
    path: &Path,
    bytes: &[u8],
    sync: bool,
    stat: bool,
) -> io::Result<Option<fs::Metadata>> {
    let dir = path.parent().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "the path has no parent directory",
        )
    })?;
    let temp = temp_path_in(dir);
    let result = (|| -> io::Result<Option<fs::Metadata>> {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        let fault = faults::hit(path, faults::Op::Replace);
        if let Some(faults::Fault::TornWrite | faults::Fault::TornWriteNoRollback) = fault {
            file.write_all(&bytes[..bytes.len() / 2])?;
            return Err(faults::injected_error());
        }
        file.write_all(bytes)?;
        if sync {
            file.sync_all()?;
            note_fsync();
        }
        let meta = if stat { Some(file.metadata()?) } else { None };
        drop(file);
        if fault == Some(faults::Fault::Fails) {
            return Err(faults::injected_error());
        }
        fs::rename(&temp, path)?;
        Ok(meta)
    })();
    if result.is_err() {
        // Best effort: the temp file is garbage either way, and the original error matters.
        let _ = fs::remove_file(&temp);
    }
    result
}

/// Serializes `value` as pretty JSON and replaces `path` atomically.
pub(crate) fn write_json_atomic<T: Serialize + ?Sized>(
    path: &Path,
    value: &T,
) -> StorageResult<()> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|err| {
        StorageError::Other(format!("cannot serialize {}: {err}", path.display()))
    })?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

/// Reads and parses a JSON file; `Ok(None)` when it does not exist, `Corrupt` when it does not
/// parse.
pub(crate) fn read_json<T: DeserializeOwned>(path: &Path) -> StorageResult<Option<T>> {
    let bytes = match read_bytes(path)? {
        Some(bytes) => bytes,
        None => return Ok(None),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|err| StorageError::corrupt(path.display().to_string(), err))
}

/// Reads a file's bytes; `Ok(None)` when it (or a parent) does not exist.
pub(crate) fn read_bytes(path: &Path) -> StorageResult<Option<Vec<u8>>> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(err) if is_missing(&err) => Ok(None),
        Err(err) => Err(StorageError::io(path.display().to_string(), err)),
    }
}

/// True for errors that mean "no such file": missing entry, or a parent that is a file.
pub(crate) fn is_missing(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// Creates `dir` and its parents.
pub(crate) fn create_dir_all(dir: &Path) -> StorageResult<()> {
    fs::create_dir_all(dir).map_err(|err| StorageError::io(dir.display().to_string(), err))
}

/// Names of the regular `*.json` files in `dir` (temp files skipped), sorted; empty when the
/// directory does not exist.
pub(crate) fn json_file_stems(dir: &Path) -> StorageResult<Vec<String>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if is_missing(&err) => return Ok(Vec::new()),
        Err(err) => return Err(StorageError::io(dir.display().to_string(), err)),
    };
    let mut stems = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|err| StorageError::io(dir.display().to_string(), err))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if is_temp_name(name) {
            continue;
        }
        if let Some(stem) = name.strip_suffix(".json") {
            stems.push(stem.to_owned());
        }
    }
    stems.sort();
    Ok(stems)
}

/// A reader that adds every byte it hands out to a shared counter.
pub(crate) struct CountingReader<'a, R> {
    pub(crate) inner: R,
    pub(crate) counter: &'a AtomicU64,
}

impl<R: Read> Read for CountingReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counter
            .fetch_add(u64::try_from(n).unwrap_or(u64::MAX), Ordering::Relaxed);
        Ok(n)
    }
}

/// `len` bytes of `file` from `start` on, buffered `capacity` bytes at a time, every byte read
/// added to `counter`; a failed seek is an I/O error on `path`.
pub(crate) fn counted_reader_from<'a, F: Read + io::Seek>(
    path: &Path,
    mut file: F,
    (start, len): (u64, u64),
    capacity: usize,
    counter: &'a AtomicU64,
) -> StorageResult<io::BufReader<CountingReader<'a, io::Take<F>>>> {
    file.seek(io::SeekFrom::Start(start))
        .map_err(|err| StorageError::io(path.display().to_string(), err))?;
    Ok(io::BufReader::with_capacity(
        capacity,
        CountingReader {
            inner: file.take(len),
            counter,
        },
    ))
}

/// Reads the next line of `reader` into `line` (replacing what it held), its `\n` included when
/// it has one; 0 at the end. A failed read is an I/O error on `path`.
pub(crate) fn next_line(
    reader: &mut impl io::BufRead,
    line: &mut Vec<u8>,
    path: &Path,
) -> StorageResult<usize> {
    line.clear();
    reader
        .read_until(b'\n', line)
        .map_err(|err| StorageError::io(path.display().to_string(), err))
}

/// The last `max` bytes of a file, starting at its first whole line in that range; `None` when
/// it cannot be read.
pub(crate) fn read_tail(path: &Path, max: u64) -> Option<Vec<u8>> {
    let (start, mut tail) = read_last_bytes(path, max)?;
    if start > 0 {
        let first_end = tail.iter().position(|byte| *byte == b'\n')?;
        tail.drain(..=first_end);
    }
    Some(tail)
}

/// The last `max` bytes of a file as they are (the first line may be cut), with the offset they
/// start at; `None` when it cannot be read.
pub(crate) fn read_last_bytes(path: &Path, max: u64) -> Option<(u64, Vec<u8>)> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let start = len.saturating_sub(max);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut tail = Vec::new();
    file.take(len - start).read_to_end(&mut tail).ok()?;
    Some((start, tail))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_writes_replace_and_leave_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        write_json_atomic(&path, &serde_json::json!({"v": 1})).unwrap();
        write_json_atomic(&path, &serde_json::json!({"v": 2})).unwrap();
        assert_eq!(
            read_json::<serde_json::Value>(&path).unwrap(),
            Some(serde_json::json!({"v": 2}))
        );
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, ["state.json"]);
        assert_eq!(json_file_stems(dir.path()).unwrap(), ["state"]);
        assert_eq!(
            read_json::<serde_json::Value>(&dir.path().join("none.json")).unwrap(),
            None
        );
    }

    #[test]
    fn unparsable_json_is_corrupt_and_temp_files_are_not_listed() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("bad.json"), b"{").unwrap();
        fs::write(temp_path_in(dir.path()), b"{}").unwrap();
        let err = read_json::<serde_json::Value>(&dir.path().join("bad.json")).unwrap_err();
        assert_eq!(err.code(), "agent.storage_corrupt");
        assert_eq!(json_file_stems(dir.path()).unwrap(), ["bad"]);
    }
}
