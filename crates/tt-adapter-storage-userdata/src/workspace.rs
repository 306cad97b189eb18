//! `WorkspaceRepository` over the run directory: logical paths in the five roots, symlink-escape
//! checks, guarded atomic writes and appends under per-path locks, listings and bounded walks,
//! checkpoints (records and content-addressed blobs of the run's writer), and the `persist/`
//! projection and promotion.
//!
//! Paths are checked without canonicalizing on the hot path: the run directory's canonical form
//! is resolved once, and a logical path (already validated in memory) is walked with `lstat`;
//! only a path that really contains a symlink takes the slow, resolving check.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use tt_domain::DomainError;
use tt_domain::ids::{RunId, WorkspaceId, is_valid_storage_segment};
use tt_domain::run::AgentRun;
use tt_domain::text::sha256_hex;
use tt_domain::time::Timestamp;
use tt_domain::workspace::{
    CheckpointReason, CheckpointRecord, EntryKind, FileFingerprint, PersistSnapshot,
    PersistentChange, PersistentChangeSet, WorkspacePath, WorkspaceRoot, WriteGuard,
};
use tt_ports::{
    FileContent, RunDocument, StorageError, StorageResult, WorkspaceEntry, WorkspaceRepository,
    WriteOutcome,
};

use crate::fsutil::{
    self, is_missing, is_temp_name, read_json, temp_path_in, write_json_atomic, write_replace,
};
use crate::layout::{MANIFEST_FILE, PERSIST_DIR, RUN_FILE, join_relative};
use crate::owned::{self, CheckpointContent, CheckpointFile, OwnedRun};
use crate::written::FileStamp;
use crate::{Inner, UserDataStore};

/// Depth bound for walks that have no caller-given limit (persist copies), so a symlink loop
/// that stays inside the run directory cannot recurse forever.
const UNBOUNDED_WALK_DEPTH: u32 = 64;

fn path_lock(run_id: &RunId, path: &WorkspacePath) -> String {
    format!("path:{run_id}/{path}")
}

/// A run directory together with its canonical form, the boundary for symlink checks.
struct RunBase {
    dir: PathBuf,
    canonical: PathBuf,
}

impl RunBase {
    fn new(inner: &Inner, run_id: &RunId) -> StorageResult<Self> {
        let location = inner.run_location(run_id)?;
        match location.canonical {
            Some(canonical) => Ok(Self {
                dir: location.dir,
                canonical,
            }),
            None => Self::at(location.dir),
        }
    }

    fn at(dir: PathBuf) -> StorageResult<Self> {
        let canonical = fs::canonicalize(&dir)
            .map_err(|err| fsutil::io_error(dir.display().to_string(), &err))?;
        Ok(Self { dir, canonical })
    }

    /// The physical path of a logical path; only the five roots are addressable, and the
    /// result is checked for symlink escape.
    fn resolve(&self, path: &WorkspacePath) -> StorageResult<PathBuf> {
        if path.root().is_none() {
            return Err(StorageError::not_found(format!("workspace path {path}")));
        }
        let physical = join_relative(&self.dir, path.as_str());
        self.ensure_inside(&physical, path.as_str())?;
        Ok(physical)
    }

    /// [`RunBase::resolve`] that also says what the walk found, so a write can skip asking
    /// the file system again.
    fn resolve_walked(&self, path: &WorkspacePath) -> StorageResult<(PathBuf, Walked)> {
        if path.root().is_none() {
            return Err(StorageError::not_found(format!("workspace path {path}")));
        }
        let physical = join_relative(&self.dir, path.as_str());
        let walked = self.walk(&physical, path.as_str())?;
        Ok((physical, walked))
    }

    /// The fast path of [`ensure_inside`] for a path under this run directory: when no existing
    /// component below the run directory is a symlink (`lstat` each), the path cannot leave it.
    fn ensure_inside(&self, physical: &Path, shown: &str) -> StorageResult<()> {
        self.walk(physical, shown).map(|_| ())
    }

    /// [`RunBase::ensure_inside`], keeping what the `lstat`s showed.
    fn walk(&self, physical: &Path, shown: &str) -> StorageResult<Walked> {
        let Ok(relative) = physical.strip_prefix(&self.dir) else {
            ensure_inside(&self.canonical, physical, shown)?;
            return Ok(Walked::default());
        };
        let mut walked = self.dir.clone();
        let mut components = relative.components().peekable();
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
struct Walked {
    /// Every parent of the path exists as a real directory (none is a symlink), and `leaf`
    /// is the path's own state. When false, nothing is known.
    parents_ready: bool,
    /// The path's `lstat` (not a symlink), or `None` when it is missing.
    leaf: Option<fs::Metadata>,
}

impl Walked {
    /// The kind of the path when the walk knows it for sure, as [`entry_kind`] would say.
    fn known_kind(&self) -> Option<Option<EntryKind>> {
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
fn ensure_inside(boundary: &Path, physical: &Path, shown: &str) -> StorageResult<()> {
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
fn entry_kind(boundary: &Path, physical: &Path, shown: &str) -> StorageResult<Option<EntryKind>> {
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
fn dir_entries(
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
fn collect_listing(
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
fn collect_files_sorted(
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
fn persist_files(base_dir: &Path) -> StorageResult<Vec<(WorkspacePath, PathBuf)>> {
    let boundary = fs::canonicalize(base_dir)
        .map_err(|err| fsutil::io_error(base_dir.display().to_string(), &err))?;
    let root = WorkspaceRoot::Persist.path();
    let physical = base_dir.join(PERSIST_DIR);
    let mut files = Vec::new();
    match entry_kind(&boundary, &physical, root.as_str())? {
        Some(EntryKind::Directory) => collect_files_sorted(
            &boundary,
            &root,
            &physical,
            UNBOUNDED_WALK_DEPTH,
            usize::MAX,
            &mut files,
        )?,
        Some(EntryKind::File) => {
            return Err(StorageError::NotADirectory {
                path: root.to_string(),
            });
        }
        None => {}
    }
    Ok(files)
}

fn read_file_bytes(physical: &Path, path: &WorkspacePath) -> StorageResult<Vec<u8>> {
    fs::read(physical).map_err(|err| fsutil::io_error(format!("workspace file {path}"), &err))
}

fn fingerprint(path: &WorkspacePath, bytes: &[u8]) -> FileFingerprint {
    FileFingerprint {
        path: path.clone(),
        sha256: sha256_hex(bytes),
        bytes: bytes.len() as u64,
    }
}

/// The current bytes of a file, `None` when missing; `IsDirectory` for a directory.
fn current_bytes(
    base: &RunBase,
    physical: &Path,
    path: &WorkspacePath,
) -> StorageResult<Option<Vec<u8>>> {
    current_bytes_walked(base, physical, path, &Walked::default())
}

/// [`current_bytes`] with what the path's walk already saw.
fn current_bytes_walked(
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
fn create_parents(physical: &Path, path: &WorkspacePath) -> StorageResult<()> {
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

fn replace_file(
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
fn replace_file_walked(
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

fn persist_error(code: &'static str, message: String) -> StorageError {
    StorageError::Domain(DomainError::new(code, message))
}

/// The part of a state manifest checked when projecting a state into a run.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StateManifestHeader {
    state_id: String,
    workspace_id: String,
}

/// The part of a state manifest that says what its promotion changed.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StateManifestChanges {
    state_id: String,
    #[serde(default)]
    base_state_id: Option<String>,
    changes: Vec<PersistentChange>,
}

/// `persistent-states/<stateId>/manifest.json`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StateManifest<'a> {
    version: u32,
    state_id: &'a str,
    run_id: &'a RunId,
    workspace_id: &'a WorkspaceId,
    stable_chat_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    base_state_id: Option<&'a str>,
    created_at: Timestamp,
    files: &'a [FileFingerprint],
    changes: &'a [PersistentChange],
}

fn load_run_record(run_dir: &Path, run_id: &RunId) -> StorageResult<AgentRun> {
    read_json(&run_dir.join(RUN_FILE))?
        .ok_or_else(|| StorageError::not_found(format!("run {run_id}")))
}

fn init_persist_sync(
    inner: &Inner,
    run_id: &RunId,
    base_state_id: Option<&str>,
) -> StorageResult<PersistSnapshot> {
    let base = RunBase::new(inner, run_id)?;
    let run = load_run_record(&base.dir, run_id)?;
    let persist_root = WorkspaceRoot::Persist.path();
    let run_persist = base.resolve(&persist_root)?;
    fsutil::create_dir_all(&run_persist)?;

    if let Some(state_id) = base_state_id {
        if !is_valid_storage_segment(state_id) {
            return Err(persist_error(
                "agent.persistent_state_root_invalid",
                format!("persistent state id `{state_id}` is not a valid storage segment"),
            ));
        }
        let state_dir = inner
            .layout
            .states_dir(run.workspace_id.as_str())?
            .join(state_id);
        let missing = || {
            persist_error(
                "agent.persistent_state_root_missing",
                format!("persistent state {state_id} does not exist in this conversation"),
            )
        };
        let header: StateManifestHeader = match read_json(&state_dir.join(MANIFEST_FILE)) {
            Ok(Some(header)) => header,
            Ok(None) => return Err(missing()),
            Err(StorageError::Corrupt { message, .. }) => {
                return Err(persist_error(
                    "agent.persistent_state_root_invalid",
                    format!("persistent state {state_id} has an unreadable manifest: {message}"),
                ));
            }
            Err(other) => return Err(other),
        };
        if header.state_id != state_id {
            return Err(persist_error(
                "agent.persistent_state_manifest_mismatch",
                format!(
                    "persistent state {state_id} has a manifest for state {}",
                    header.state_id
                ),
            ));
        }
        if header.workspace_id != run.workspace_id.as_str() {
            return Err(persist_error(
                "agent.persistent_state_workspace_mismatch",
                format!(
                    "persistent state {state_id} belongs to workspace {}, not {}",
                    header.workspace_id, run.workspace_id
                ),
            ));
        }
        if !state_dir.join(PERSIST_DIR).is_dir() {
            return Err(missing());
        }
        for (path, physical) in persist_files(&state_dir)? {
            let bytes = read_file_bytes(&physical, &path)?;
            let target = base.resolve(&path)?;
            replace_file(&base, &target, &path, &bytes)?;
        }
    }

    let mut files = Vec::new();
    for (path, physical) in persist_files(&base.dir)? {
        files.push(fingerprint(&path, &read_file_bytes(&physical, &path)?));
    }
    let snapshot = PersistSnapshot {
        base_state_id: base_state_id.map(str::to_owned),
        files,
    };
    let snapshot_path = join_relative(&base.dir, &RunDocument::PersistSnapshot.relative_path());
    if let Some(parent) = snapshot_path.parent() {
        fsutil::create_dir_all(parent)?;
    }
    write_json_atomic(&snapshot_path, &snapshot)?;
    Ok(snapshot)
}

fn promote_persist_sync(
    inner: &Inner,
    run_id: &RunId,
    snapshot: &PersistSnapshot,
    created_at: Timestamp,
) -> StorageResult<PersistentChangeSet> {
    let base = RunBase::new(inner, run_id)?;
    let run = load_run_record(&base.dir, run_id)?;
    let current = persist_files(&base.dir)?;

    snapshot.check_no_deletions(current.iter().map(|(path, _)| path))?;

    let states_dir = inner.layout.states_dir(run.workspace_id.as_str())?;
    let target = states_dir.join(run_id.as_str());
    let exists = || {
        persist_error(
            "agent.persistent_state_exists",
            format!("persistent state {run_id} already exists"),
        )
    };
    if fs::symlink_metadata(&target).is_ok() {
        return Err(exists());
    }
    fsutil::create_dir_all(&states_dir)?;
    let staging = temp_path_in(&states_dir);
    let result = (|| -> StorageResult<PersistentChangeSet> {
        fsutil::create_dir_all(&staging.join(PERSIST_DIR))?;
        let mut files = Vec::with_capacity(current.len());
        for (path, physical) in &current {
            let bytes = read_file_bytes(physical, path)?;
            let print = fingerprint(path, &bytes);
            let staged = join_relative(&staging, path.as_str());
            if let Some(parent) = staged.parent() {
                fsutil::create_dir_all(parent)?;
            }
            write_synced(&staged, &bytes)?;
            files.push(print);
        }
        let changes = snapshot.changes_to(&files)?;
        let manifest = StateManifest {
            version: 1,
            state_id: run_id.as_str(),
            run_id,
            workspace_id: &run.workspace_id,
            stable_chat_id: &run.stable_chat_id,
            base_state_id: snapshot.base_state_id.as_deref(),
            created_at,
            files: &files,
            changes: &changes,
        };
        write_json_atomic(&staging.join(MANIFEST_FILE), &manifest)?;
        owned::sync_dir(&staging.join(PERSIST_DIR))?;
        owned::sync_dir(&staging)?;
        fs::rename(&staging, &target).map_err(|err| match err.kind() {
            io::ErrorKind::AlreadyExists | io::ErrorKind::DirectoryNotEmpty => exists(),
            _ => StorageError::io(target.display().to_string(), err),
        })?;
        Ok(PersistentChangeSet {
            state_id: run_id.as_str().to_owned(),
            base_state_id: snapshot.base_state_id.clone(),
            changes,
        })
    })();
    if result.is_err() {
        // Best effort: the staging directory is never visible as a state.
        let _ = fs::remove_dir_all(&staging);
    }
    result
}

/// The state `run_id` promoted, read back from its manifest.
fn promoted_state_sync(
    inner: &Inner,
    run_id: &RunId,
) -> StorageResult<Option<PersistentChangeSet>> {
    let base = RunBase::new(inner, run_id)?;
    let run = load_run_record(&base.dir, run_id)?;
    let manifest = inner
        .layout
        .states_dir(run.workspace_id.as_str())?
        .join(run_id.as_str())
        .join(MANIFEST_FILE);
    let Some(stored) = read_json::<StateManifestChanges>(&manifest)? else {
        return Ok(None);
    };
    Ok(Some(PersistentChangeSet {
        state_id: stored.state_id,
        base_state_id: stored.base_state_id,
        changes: stored.changes,
    }))
}

/// Writes a new file and waits for its bytes to reach the disk (promoted states are durable).
fn write_synced(path: &Path, bytes: &[u8]) -> StorageResult<()> {
    let what = || path.display().to_string();
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|err| StorageError::io(what(), err))?;
    std::io::Write::write_all(&mut file, bytes)
        .and_then(|()| file.sync_all())
        .map_err(|err| StorageError::io(what(), err))?;
    fsutil::note_fsync();
    Ok(())
}

/// The sha256 of a file as the path's walk found it: from the cache of written files when the
/// file is still the one this process wrote, else read and hashed.
fn current_sha256_walked(
    base: &RunBase,
    owned: Option<&OwnedRun>,
    physical: &Path,
    path: &WorkspacePath,
    walked: &Walked,
) -> StorageResult<Option<String>> {
    if let (Some(owned), true, Some(leaf)) = (owned, walked.parents_ready, walked.leaf.as_ref())
        && let Some(sha256) = owned.written().sha256(path, leaf)
    {
        return Ok(Some(sha256));
    }
    Ok(current_bytes_walked(base, physical, path, walked)?.map(|bytes| sha256_hex(&bytes)))
}

fn checkpoint_contents(
    inner: &Inner,
    owned: &OwnedRun,
    run_id: &RunId,
    paths: &[WorkspacePath],
) -> StorageResult<Vec<CheckpointFile>> {
    let mut base = None;
    let mut seen = BTreeSet::new();
    let mut contents = Vec::new();
    for path in paths {
        if !seen.insert(path) {
            continue;
        }
        // The file this process just wrote needs no walk, no read and no hash: one `lstat`
        // shows whether it is still that file (a symlink or anything else is not).
        if path.root().is_some()
            && let Ok(meta) = fs::symlink_metadata(join_relative(&owned.dir, path.as_str()))
            && let Some(known) = owned.written().take(path, &meta)
            && (known.text.is_some() || owned.has_blob(&known.sha256))
        {
            contents.push(CheckpointFile {
                path: path.clone(),
                content: CheckpointContent::Known(known),
            });
            continue;
        }
        let base = match &mut base {
            Some(base) => base,
            None => base.insert(RunBase::new(inner, run_id)?),
        };
        let (physical, walked) = base.resolve_walked(path)?;
        let kind = match walked.known_kind() {
            Some(kind) => kind,
            None => entry_kind(&base.canonical, &physical, path.as_str())?,
        };
        let Some(EntryKind::File) = kind else {
            continue;
        };
        let text = String::from_utf8(read_file_bytes(&physical, path)?).map_err(|_| {
            StorageError::corrupt(format!("workspace file {path}"), "not UTF-8 text")
        })?;
        contents.push(CheckpointFile {
            path: path.clone(),
            content: CheckpointContent::Read(text),
        });
    }
    Ok(contents)
}

#[async_trait]
impl WorkspaceRepository for UserDataStore {
    async fn list(
        &self,
        run_id: &RunId,
        path: Option<&WorkspacePath>,
        depth: u32,
    ) -> StorageResult<Vec<WorkspaceEntry>> {
        let run_id = run_id.clone();
        let path = path.cloned();
        let depth = depth.max(1);
        {
            let inner: &Inner = &self.inner;
            let base = RunBase::new(inner, &run_id)?;
            let mut out = Vec::new();
            match path {
                None => {
                    for root in WorkspaceRoot::ALL {
                        let logical = root.path();
                        let physical = base.resolve(&logical)?;
                        if entry_kind(&base.canonical, &physical, logical.as_str())?
                            == Some(EntryKind::Directory)
                        {
                            if depth > 1 {
                                collect_listing(
                                    &base.canonical,
                                    &logical,
                                    &physical,
                                    depth - 1,
                                    &mut out,
                                )?;
                            }
                            out.push(WorkspaceEntry {
                                path: logical,
                                kind: EntryKind::Directory,
                            });
                        }
                    }
                }
                Some(path) => {
                    let physical = base.resolve(&path)?;
                    match entry_kind(&base.canonical, &physical, path.as_str())? {
                        None => {
                            return Err(StorageError::not_found(format!("workspace path {path}")));
                        }
                        Some(EntryKind::File) => {
                            return Err(StorageError::NotADirectory {
                                path: path.to_string(),
                            });
                        }
                        Some(EntryKind::Directory) => {
                            collect_listing(&base.canonical, &path, &physical, depth, &mut out)?;
                        }
                    }
                }
            }
            out.sort_by(|a, b| a.path.cmp(&b.path));
            Ok(out)
        }
    }

    async fn read(&self, run_id: &RunId, path: &WorkspacePath) -> StorageResult<FileContent> {
        let run_id = run_id.clone();
        let path = path.clone();
        {
            let inner: &Inner = &self.inner;
            let base = RunBase::new(inner, &run_id)?;
            let physical = base.resolve(&path)?;
            let bytes = current_bytes(&base, &physical, &path)?
                .ok_or_else(|| StorageError::not_found(format!("workspace file {path}")))?;
            let sha256 = sha256_hex(&bytes);
            let text = String::from_utf8(bytes).map_err(|_| {
                StorageError::corrupt(format!("workspace file {path}"), "not UTF-8 text")
            })?;
            Ok(FileContent { text, sha256 })
        }
    }

    async fn sha256(&self, run_id: &RunId, path: &WorkspacePath) -> StorageResult<Option<String>> {
        let run_id = run_id.clone();
        let path = path.clone();
        {
            let inner: &Inner = &self.inner;
            let base = RunBase::new(inner, &run_id)?;
            let (physical, walked) = base.resolve_walked(&path)?;
            let owned = inner.open_owned_run(&run_id);
            current_sha256_walked(&base, owned.as_deref(), &physical, &path, &walked)
        }
    }

    async fn write(
        &self,
        run_id: &RunId,
        path: &WorkspacePath,
        content: &str,
        guard: &WriteGuard,
    ) -> StorageResult<WriteOutcome> {
        // Only the run's writer writes its files.
        let owned = self.inner.owned_run(run_id)?;
        let lock = self.inner.locks.lock(path_lock(run_id, path)).await;
        let run_id = run_id.clone();
        let path = path.clone();
        let content = content.to_owned();
        let guard = guard.clone();
        {
            let inner: &Inner = &self.inner;
            let _lock = lock;
            let base = RunBase::new(inner, &run_id)?;
            let (physical, walked) = base.resolve_walked(&path)?;
            let previous = current_sha256_walked(&base, Some(&owned), &physical, &path, &walked)?;
            guard
                .check(previous.as_deref())
                .map_err(|violation| StorageError::guard(&path, violation))?;
            let sha256 = sha256_hex(content.as_bytes());
            let bytes = content.len() as u64;
            // Updated under the path lock, so the cache follows the writes of a path in order.
            match replace_file_walked(&base, &physical, &path, content.as_bytes(), &walked) {
                Ok(meta) => {
                    owned
                        .written()
                        .record(&path, FileStamp::of(&meta), sha256.clone(), content);
                }
                Err(err) => {
                    owned.written().forget(&path);
                    return Err(err);
                }
            }
            Ok(WriteOutcome {
                previous_sha256: previous,
                sha256,
                bytes,
            })
        }
    }

    async fn append(
        &self,
        run_id: &RunId,
        path: &WorkspacePath,
        content: &str,
    ) -> StorageResult<WriteOutcome> {
        let owned = self.inner.owned_run(run_id)?;
        let lock = self.inner.locks.lock(path_lock(run_id, path)).await;
        let run_id = run_id.clone();
        let path = path.clone();
        let content = content.to_owned();
        {
            let inner: &Inner = &self.inner;
            let _lock = lock;
            let base = RunBase::new(inner, &run_id)?;
            let physical = base.resolve(&path)?;
            let previous = current_bytes(&base, &physical, &path)?;
            let previous_sha256 = previous.as_deref().map(sha256_hex);
            let mut bytes = previous.unwrap_or_default();
            bytes.extend_from_slice(content.as_bytes());
            let written = replace_file(&base, &physical, &path, &bytes);
            let sha256 = sha256_hex(&bytes);
            let len = bytes.len() as u64;
            let mut cache = owned.written();
            match (written, String::from_utf8(bytes)) {
                (Ok(meta), Ok(text)) => {
                    cache.record(&path, FileStamp::of(&meta), sha256.clone(), text);
                }
                (Ok(_), Err(_)) => cache.forget(&path),
                (Err(err), _) => {
                    cache.forget(&path);
                    return Err(err);
                }
            }
            Ok(WriteOutcome {
                previous_sha256,
                sha256,
                bytes: len,
            })
        }
    }

    async fn create_checkpoint(
        &self,
        run_id: &RunId,
        reason: CheckpointReason,
        event_seq: u64,
        paths: &[WorkspacePath],
        created_at: Timestamp,
    ) -> StorageResult<CheckpointRecord> {
        let owned = self.inner.owned_run(run_id)?;
        let contents = checkpoint_contents(&self.inner, &owned, run_id, paths)?;
        owned.add_checkpoint(reason, event_seq, contents, created_at)
    }

    async fn init_persist_projection(
        &self,
        run_id: &RunId,
        base_state_id: Option<&str>,
    ) -> StorageResult<PersistSnapshot> {
        self.inner.owned_run(run_id)?;
        let lock = self.inner.locks.lock(format!("persist:{run_id}")).await;
        let run_id = run_id.clone();
        let base_state_id = base_state_id.map(str::to_owned);
        {
            let inner: &Inner = &self.inner;
            let _lock = lock;
            init_persist_sync(inner, &run_id, base_state_id.as_deref())
        }
    }

    async fn promote_persist(
        &self,
        run_id: &RunId,
        snapshot: &PersistSnapshot,
        created_at: Timestamp,
    ) -> StorageResult<PersistentChangeSet> {
        let owned = self.inner.owned_run(run_id)?;
        let lock = self.inner.locks.lock(format!("persist:{run_id}")).await;
        let changes = promote_persist_sync(&self.inner, run_id, snapshot, created_at)?;
        drop(lock);
        // Promotion is a durability point for the run's records too.
        self.inner.durable(&owned).await?;
        Ok(changes)
    }

    async fn promoted_state(&self, run_id: &RunId) -> StorageResult<Option<PersistentChangeSet>> {
        promoted_state_sync(&self.inner, run_id)
    }

    async fn walk_files(
        &self,
        run_id: &RunId,
        roots: &[WorkspaceRoot],
        max_depth: u32,
        max_files: usize,
    ) -> StorageResult<Vec<WorkspacePath>> {
        let run_id = run_id.clone();
        let mut roots = roots.to_vec();
        roots.sort_by_key(|root| root.name());
        roots.dedup();
        {
            let inner: &Inner = &self.inner;
            let base = RunBase::new(inner, &run_id)?;
            let mut files = Vec::new();
            for root in roots {
                if files.len() >= max_files {
                    break;
                }
                let logical = root.path();
                let physical = base.resolve(&logical)?;
                if entry_kind(&base.canonical, &physical, logical.as_str())?
                    == Some(EntryKind::Directory)
                {
                    collect_files_sorted(
                        &base.canonical,
                        &logical,
                        &physical,
                        max_depth,
                        max_files,
                        &mut files,
                    )?;
                }
            }
            Ok(files.into_iter().map(|(path, _)| path).collect())
        }
    }

    async fn checkpoint_blob(&self, run_id: &RunId, sha256: &str) -> StorageResult<Option<String>> {
        self.blob_text(run_id, sha256)
    }
}
