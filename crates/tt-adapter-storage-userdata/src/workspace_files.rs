//! Where the workspace's files are on disk and how they are touched safely: a run's base
//! directory (`RunBase`) and the walk that checks a logical path never leaves it through a
//! symlink, listings and bounded walks, reading, and replacing a file (temp file, then rename).
//! Split from `workspace`, which implements the port on top of these.

use std::ffi::OsStr;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use tt_domain::ids::RunId;
use tt_domain::text::sha256_hex;
use tt_domain::workspace::{EntryKind, FileFingerprint, WorkspacePath};
use tt_ports::{StorageError, StorageResult, WorkspaceEntry};

use crate::Inner;
use crate::fsutil::{self, is_missing, is_temp_name, write_replace};
use crate::layout::join_relative;

pub(crate) fn path_lock(run_id: &RunId, path: &WorkspacePath) -> String {
    ["path:", run_id.as_str(), "/", path.as_str()].concat()
}

/// The segments of a workspace path as [`join_relative`] joins them (a parsed path has no
/// `.` or `..` segment, so they are the components of the joined path below the run).
fn segments(path: &WorkspacePath) -> impl Iterator<Item = &OsStr> {
    path.as_str()
        .split('/')
        .filter(|segment| !segment.is_empty())
        .map(OsStr::new)
}

/// A run directory together with its canonical form, the boundary for symlink checks.
pub(crate) struct RunBase {
    pub(crate) dir: PathBuf,
    pub(crate) canonical: PathBuf,
}

impl RunBase {
    pub(crate) fn new(inner: &Inner, run_id: &RunId) -> StorageResult<Self> {
        let location = inner.run_location(run_id)?;
        match location.canonical {
            Some(canonical) => Ok(Self {
                dir: location.dir,
                canonical,
            }),
            None => Self::at(location.dir),
        }
    }

    pub(crate) fn at(dir: PathBuf) -> StorageResult<Self> {
        let canonical = fs::canonicalize(&dir)
            .map_err(|err| fsutil::io_error(dir.display().to_string(), &err))?;
        Ok(Self { dir, canonical })
    }

    /// The physical path of a logical path; only the five roots are addressable, and the
    /// result is checked for symlink escape.
    pub(crate) fn resolve(&self, path: &WorkspacePath) -> StorageResult<PathBuf> {
        if path.root().is_none() {
            return Err(StorageError::not_found(format!("workspace path {path}")));
        }
        let physical = join_relative(&self.dir, path.as_str());
        self.walk_below(&physical, segments(path), path.as_str())?;
        Ok(physical)
    }

    /// [`RunBase::resolve`] that also says what the walk found, so a write can skip asking
    /// the file system again.
    pub(crate) fn resolve_walked(&self, path: &WorkspacePath) -> StorageResult<(PathBuf, Walked)> {
        if path.root().is_none() {
            return Err(StorageError::not_found(format!("workspace path {path}")));
        }
        let physical = join_relative(&self.dir, path.as_str());
        let walked = self.walk_below(&physical, segments(path), path.as_str())?;
        Ok((physical, walked))
    }

    /// The fast path of [`ensure_inside`] for a path under this run directory: when no existing
    /// component below the run directory is a symlink (`lstat` each), the path cannot leave it.
    pub(crate) fn ensure_inside(&self, physical: &Path, shown: &str) -> StorageResult<()> {
        self.walk(physical, shown).map(|_| ())
    }

    /// [`RunBase::ensure_inside`], keeping what the `lstat`s showed.
    pub(crate) fn walk(&self, physical: &Path, shown: &str) -> StorageResult<Walked> {
        let Ok(relative) = physical.strip_prefix(&self.dir) else {
            ensure_inside(&self.canonical, physical, shown)?;
            return Ok(Walked::default());
        };
        let components = relative.components().map(|component| component.as_os_str());
        self.walk_below(physical, components, shown)
    }

    /// [`RunBase::walk`] of `physical`, which is this run directory joined with `components`
    /// (a workspace path's segments are known without parsing `physical` again).
    fn walk_below<'a>(
        &self,
        physical: &Path,
        components: impl Iterator<Item = &'a OsStr>,
        shown: &str,
    ) -> StorageResult<Walked> {
        let mut walked = self.dir.clone();
        let mut components = components.peekable();
        let mut parents_are_dirs = true;
        while let Some(component) = components.next() {
            let last = components.peek().is_none();
            walked.push(component);
            match fs::symlink_metadata(&walked) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    ensure_inside(&self.canonical, physical, shown)?;
                    return Ok(Walked::default());
                }
                Ok(meta) if last => {
                    return Ok(Walked {
                        parents_ready: parents_are_dirs,
                        leaf: Some(meta),
                    });
                }
                Ok(meta) => parents_are_dirs &= meta.is_dir(),
                // Nothing below a missing component exists, so nothing there can be a link.
                Err(err) if is_missing(&err) => {
                    return Ok(Walked {
                        parents_ready: last && parents_are_dirs,
                        leaf: None,
                    });
                }
                Err(err) => return Err(StorageError::io(shown.to_owned(), err)),
            }
        }
        Ok(Walked::default())
    }
}

/// What [`RunBase::walk`] saw of a path under the run directory.
#[derive(Debug, Default)]
pub(crate) struct Walked {
    /// Every parent of the path exists as a real directory (none is a symlink), and `leaf`
    /// is the path's own state. When false, nothing is known.
    pub(crate) parents_ready: bool,
    /// The path's `lstat` (not a symlink), or `None` when it is missing.
    pub(crate) leaf: Option<fs::Metadata>,
}

impl Walked {
    /// The kind of the path when the walk knows it for sure, as [`entry_kind`] would say.
    pub(crate) fn known_kind(&self) -> Option<Option<EntryKind>> {
        if !self.parents_ready {
            return None;
        }
        Some(self.leaf.as_ref().and_then(|meta| {
            if meta.is_dir() {
                Some(EntryKind::Directory)
            } else if meta.is_file() {
                Some(EntryKind::File)
            } else {
                None
            }
        }))
    }
}

/// Refuses `physical` when the deepest existing ancestor (itself included) resolves outside
/// `boundary`. A dangling symlink is refused too: writing through it would create its target.
pub(crate) fn ensure_inside(boundary: &Path, physical: &Path, shown: &str) -> StorageResult<()> {
    let escape = || StorageError::SymlinkEscape {
        path: shown.to_owned(),
    };
    let mut candidate = physical;
    loop {
        match fs::canonicalize(candidate) {
            Ok(real) => {
                return if real.starts_with(boundary) {
                    Ok(())
                } else {
                    Err(escape())
                };
            }
            Err(err) if is_missing(&err) => {
                if fs::symlink_metadata(candidate).is_ok_and(|meta| meta.file_type().is_symlink()) {
                    return Err(escape());
                }
                match candidate.parent() {
                    Some(parent) => candidate = parent,
                    None => return Err(escape()),
                }
            }
            Err(err) => return Err(StorageError::io(shown.to_owned(), err)),
        }
    }
}

/// The kind of an existing entry after following a symlink that stays inside `boundary`;
/// `None` when missing or neither file nor directory.
pub(crate) fn entry_kind(
    boundary: &Path,
    physical: &Path,
    shown: &str,
) -> StorageResult<Option<EntryKind>> {
    let meta = match fs::symlink_metadata(physical) {
        Ok(meta) => meta,
        Err(err) if is_missing(&err) => return Ok(None),
        Err(err) => return Err(StorageError::io(shown.to_owned(), err)),
    };
    let meta = if meta.file_type().is_symlink() {
        ensure_inside(boundary, physical, shown)?;
        match fs::metadata(physical) {
            Ok(meta) => meta,
            Err(err) if is_missing(&err) => return Ok(None),
            Err(err) => return Err(StorageError::io(shown.to_owned(), err)),
        }
    } else {
        meta
    };
    Ok(if meta.is_dir() {
        Some(EntryKind::Directory)
    } else if meta.is_file() {
        Some(EntryKind::File)
    } else {
        None
    })
}

/// The entries of a directory as (logical path, physical path, kind), temp files and names that
/// cannot be logical path segments skipped, in no particular order.
pub(crate) fn dir_entries(
    boundary: &Path,
    logical: &WorkspacePath,
    physical: &Path,
) -> StorageResult<Vec<(WorkspacePath, PathBuf, EntryKind)>> {
    let shown = logical.as_str();
    let entries = fs::read_dir(physical).map_err(|err| fsutil::io_error(shown, &err))?;
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|err| StorageError::io(shown.to_owned(), err))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if is_temp_name(name) || name.contains('\\') {
            continue;
        }
        let Ok(child) = logical.join(name) else {
            continue;
        };
        let child_physical = entry.path();
        if let Some(kind) = entry_kind(boundary, &child_physical, child.as_str())? {
            out.push((child, child_physical, kind));
        }
    }
    Ok(out)
}

/// Entries under `physical` down to `depth` levels, unsorted.
pub(crate) fn collect_listing(
    boundary: &Path,
    logical: &WorkspacePath,
    physical: &Path,
    depth: u32,
    out: &mut Vec<WorkspaceEntry>,
) -> StorageResult<()> {
    for (child, child_physical, kind) in dir_entries(boundary, logical, physical)? {
        if kind == EntryKind::Directory && depth > 1 {
            collect_listing(boundary, &child, &child_physical, depth - 1, out)?;
        }
        out.push(WorkspaceEntry { path: child, kind });
    }
    Ok(())
}

/// Files under `physical`, in lexicographic order of their logical paths, at most `max_files`,
/// at most `max_depth` levels below `logical` (1 = direct children).
pub(crate) fn collect_files_sorted(
    boundary: &Path,
    logical: &WorkspacePath,
    physical: &Path,
    max_depth: u32,
    max_files: usize,
    out: &mut Vec<(WorkspacePath, PathBuf)>,
) -> StorageResult<()> {
    if max_depth == 0 || out.len() >= max_files {
        return Ok(());
    }
    let mut entries = dir_entries(boundary, logical, physical)?;
    // A directory sorts as `name/`, so visiting entries in this order yields full paths in
    // lexicographic order and the walk can stop as soon as it has enough files.
    let sort_key = |(path, _, kind): &(WorkspacePath, PathBuf, EntryKind)| {
        let name = path.file_name().to_owned();
        match kind {
            EntryKind::Directory => name + "/",
            EntryKind::File => name,
        }
    };
    entries.sort_by_cached_key(sort_key);
    for (child, child_physical, kind) in entries {
        if out.len() >= max_files {
            break;
        }
        match kind {
            EntryKind::File => out.push((child, child_physical)),
            EntryKind::Directory => collect_files_sorted(
                boundary,
                &child,
                &child_physical,
                max_depth - 1,
                max_files,
                out,
            )?,
        }
    }
    Ok(())
}

/// All files under the `persist/` directory found in `base_dir` (a run dir or a state dir), with
/// their logical `persist/...` paths, sorted.
pub(crate) fn read_file_bytes(physical: &Path, path: &WorkspacePath) -> StorageResult<Vec<u8>> {
    fs::read(physical).map_err(|err| fsutil::io_error(format!("workspace file {path}"), &err))
}

pub(crate) fn fingerprint(path: &WorkspacePath, bytes: &[u8]) -> FileFingerprint {
    FileFingerprint {
        path: path.clone(),
        sha256: sha256_hex(bytes),
        bytes: bytes.len() as u64,
    }
}

/// The current bytes of a file, `None` when missing; `IsDirectory` for a directory.
pub(crate) fn current_bytes(
    base: &RunBase,
    physical: &Path,
    path: &WorkspacePath,
) -> StorageResult<Option<Vec<u8>>> {
    current_bytes_walked(base, physical, path, &Walked::default())
}

/// [`current_bytes`] with what the path's walk already saw.
pub(crate) fn current_bytes_walked(
    base: &RunBase,
    physical: &Path,
    path: &WorkspacePath,
    walked: &Walked,
) -> StorageResult<Option<Vec<u8>>> {
    let kind = match walked.known_kind() {
        Some(kind) => kind,
        None => entry_kind(&base.canonical, physical, path.as_str())?,
    };
    match kind {
        None => Ok(None),
        Some(EntryKind::Directory) => Err(StorageError::IsDirectory {
            path: path.to_string(),
        }),
        Some(EntryKind::File) => read_file_bytes(physical, path).map(Some),
    }
}

/// Creates the parent directories of a workspace file, mapping "a parent is a file".
pub(crate) fn create_parents(physical: &Path, path: &WorkspacePath) -> StorageResult<()> {
    let Some(parent) = physical.parent() else {
        return Ok(());
    };
    fs::create_dir_all(parent).map_err(|err| match err.kind() {
        io::ErrorKind::NotADirectory | io::ErrorKind::AlreadyExists => {
            StorageError::NotADirectory {
                path: path.to_string(),
            }
        }
        _ => StorageError::io(path.to_string(), err),
    })
}

pub(crate) fn replace_file(
    base: &RunBase,
    physical: &Path,
    path: &WorkspacePath,
    bytes: &[u8],
) -> StorageResult<fs::Metadata> {
    replace_file_walked(base, physical, path, bytes, &Walked::default())
}

/// [`replace_file`] with what the path's walk saw: when its parents were all real
/// directories, there is nothing to create and nothing new to check. Returns the new file's
/// metadata.
pub(crate) fn replace_file_walked(
    base: &RunBase,
    physical: &Path,
    path: &WorkspacePath,
    bytes: &[u8],
    walked: &Walked,
) -> StorageResult<fs::Metadata> {
    if !walked.parents_ready {
        create_parents(physical, path)?;
        // Parents may have been created just now: check again before the file lands.
        base.ensure_inside(physical, path.as_str())?;
    }
    // Temp file and rename: a crash leaves the old or the new file. Not synced here: its
    // content reaches stable storage through the checkpoint blob that follows every write.
    write_replace(physical, bytes).map_err(|err| StorageError::io(path.to_string(), err))
}
