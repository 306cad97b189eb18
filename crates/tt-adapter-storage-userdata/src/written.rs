//! What this process last wrote to each workspace file of a run it owns: the file's stamp, its
//! sha256 and, until a checkpoint has stored it, its text. Every workspace write is followed by
//! a checkpoint of that file; reading the file back and hashing it again was about 4% of a
//! fan-out's CPU. A checkpoint, the write guard and `sha256` use an entry only while the file
//! on disk is still the one written (same device, inode, length and modification time, as one
//! `lstat` shows); anything else, such as a file another process replaced or edited, is read
//! and hashed the ordinary way.

use crate::fast_map::FastMap;
use std::fs;
use std::time::SystemTime;
use tt_domain::workspace::WorkspacePath;

/// How many bytes of written text the cache keeps at most, for files no checkpoint has taken
/// yet; past it a write keeps only the stamp and sha256 (its checkpoint then reads the file).
const MAX_PENDING_TEXT_BYTES: usize = 4 * 1024 * 1024;

/// Identifies one version of a file: a replaced file has a new inode, an edited one a new
/// length or modification time. Only on Unix, where the inode is known; elsewhere nothing is
/// cached and every file is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileStamp {
    len: u64,
    modified: SystemTime,
    dev: u64,
    ino: u64,
}

impl FileStamp {
    /// The stamp of a regular file's metadata (from `lstat` or the open handle).
    #[cfg(unix)]
    pub(crate) fn of(meta: &fs::Metadata) -> Option<Self> {
        use std::os::unix::fs::MetadataExt;
        if !meta.is_file() {
            return None;
        }
        Some(Self {
            len: meta.len(),
            modified: meta.modified().ok()?,
            dev: meta.dev(),
            ino: meta.ino(),
        })
    }

    #[cfg(not(unix))]
    pub(crate) fn of(_meta: &fs::Metadata) -> Option<Self> {
        None
    }
}

#[derive(Debug)]
struct Written {
    stamp: FileStamp,
    sha256: String,
    /// The content, until a checkpoint has taken it for its blob.
    text: Option<String>,
}

/// What a checkpoint can take from the cache for a file that is still as written.
#[derive(Debug)]
pub(crate) struct Known {
    pub(crate) sha256: String,
    pub(crate) bytes: u64,
    /// `None` once an earlier checkpoint took it (its blob is stored) or when the text was
    /// over the cache's budget.
    pub(crate) text: Option<String>,
}

/// The per-run cache (one per [`crate::owned::OwnedRun`]).
#[derive(Debug, Default)]
pub(crate) struct WrittenFiles {
    files: FastMap<WorkspacePath, Written>,
    pending_text_bytes: usize,
}

impl WrittenFiles {
    /// Records a write of `text` (hash `sha256`) whose file now has `stamp`.
    pub(crate) fn record(
        &mut self,
        path: &WorkspacePath,
        stamp: Option<FileStamp>,
        sha256: String,
        text: String,
    ) {
        self.forget(path);
        let Some(stamp) = stamp else {
            return;
        };
        let text = (self.pending_text_bytes + text.len() <= MAX_PENDING_TEXT_BYTES).then_some(text);
        self.pending_text_bytes += text.as_ref().map_or(0, String::len);
        self.files.insert(
            path.clone(),
            Written {
                stamp,
                sha256,
                text,
            },
        );
    }

    /// Drops what is known of `path` (a write failed half-way, or wrote something unknown).
    pub(crate) fn forget(&mut self, path: &WorkspacePath) {
        if let Some(old) = self.files.remove(path) {
            self.pending_text_bytes -= old.text.as_ref().map_or(0, String::len);
        }
    }

    /// The sha256 of `path` when the file on disk (`current`, its `lstat`) is the one written.
    pub(crate) fn sha256(&self, path: &WorkspacePath, current: &fs::Metadata) -> Option<String> {
        let written = self.files.get(path)?;
        (Some(&written.stamp) == FileStamp::of(current).as_ref()).then(|| written.sha256.clone())
    }

    /// For a checkpoint: the sha256, size and (once) the text of `path` when the file on disk
    /// (`current`) is the one written.
    pub(crate) fn take(&mut self, path: &WorkspacePath, current: &fs::Metadata) -> Option<Known> {
        let stamp = FileStamp::of(current)?;
        let written = self.files.get_mut(path)?;
        if written.stamp != stamp {
            return None;
        }
        let text = written.text.take();
        self.pending_text_bytes -= text.as_ref().map_or(0, String::len);
        Some(Known {
            sha256: written.sha256.clone(),
            bytes: stamp.len,
            text,
        })
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::io::Write;

    // Fixtures of this module's tests (`cfg(all(test, unix))`, which clippy's test exemption
    // does not see): failing loudly is their job.
    #[allow(clippy::unwrap_used)]
    fn path(text: &str) -> WorkspacePath {
        WorkspacePath::parse(text).unwrap()
    }

    /// A temporary dir holding `a.md` with `text`: the dir, the file and its metadata.
    #[allow(clippy::unwrap_used)]
    fn one_file(text: &str) -> (tempfile::TempDir, std::path::PathBuf, std::fs::Metadata) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.md");
        std::fs::write(&file, text).unwrap();
        let meta = std::fs::symlink_metadata(&file).unwrap();
        (dir, file, meta)
    }

    #[test]
    fn an_entry_serves_only_the_file_it_was_written_as() {
        let (dir, file, meta) = one_file("one");
        let mut cache = WrittenFiles::default();
        let logical = path("output/a.md");
        cache.record(
            &logical,
            FileStamp::of(&meta),
            "sha-one".into(),
            "one".into(),
        );
        assert_eq!(cache.sha256(&logical, &meta).as_deref(), Some("sha-one"));

        let known = cache.take(&logical, &meta).unwrap();
        assert_eq!((known.sha256.as_str(), known.bytes), ("sha-one", 3));
        assert_eq!(known.text.as_deref(), Some("one"));
        // The text goes to one checkpoint; later ones find its blob stored.
        let again = cache.take(&logical, &meta).unwrap();
        assert_eq!(again.text, None);
        assert_eq!(cache.pending_text_bytes, 0);

        // Edited in place by someone else: longer, so the stamp differs.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .and_then(|mut handle| handle.write_all(b" and two"))
            .unwrap();
        let edited = std::fs::symlink_metadata(&file).unwrap();
        assert_eq!(cache.sha256(&logical, &edited), None);
        assert!(cache.take(&logical, &edited).is_none());

        // Replaced by another file of the same length: another inode.
        let other = dir.path().join("b.md");
        std::fs::write(&other, "one and two").unwrap();
        std::fs::rename(&other, &file).unwrap();
        let replaced = std::fs::symlink_metadata(&file).unwrap();
        assert_eq!(replaced.len(), edited.len());
        assert_eq!(cache.sha256(&logical, &replaced), None);
        assert_eq!(cache.sha256(&path("output/b.md"), &meta), None);
    }

    #[test]
    fn pending_text_stays_within_its_budget() {
        let (_dir, _file, meta) = one_file("x");
        let mut cache = WrittenFiles::default();
        let big = "x".repeat(MAX_PENDING_TEXT_BYTES / 2 + 1);
        cache.record(
            &path("output/1.md"),
            FileStamp::of(&meta),
            "s1".into(),
            big.clone(),
        );
        cache.record(
            &path("output/2.md"),
            FileStamp::of(&meta),
            "s2".into(),
            big.clone(),
        );
        assert_eq!(cache.pending_text_bytes, big.len());
        let second = cache.take(&path("output/2.md"), &meta).unwrap();
        assert_eq!((second.sha256.as_str(), second.text), ("s2", None));
        // Rewriting a path releases its earlier text.
        cache.record(
            &path("output/1.md"),
            FileStamp::of(&meta),
            "s3".into(),
            "small".into(),
        );
        assert_eq!(cache.pending_text_bytes, "small".len());
        cache.forget(&path("output/1.md"));
        assert_eq!(cache.pending_text_bytes, 0);
    }
}
