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
use tt_domain::error_codes;
use tt_domain::ids::{CheckpointId, RunId, WorkspaceId};
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

use crate::fsutil::{self, read_json, temp_path_in, write_json_atomic};
use crate::layout::{MANIFEST_FILE, PERSIST_DIR, RUN_FILE, join_relative};
use crate::owned::{self, CheckpointContent, CheckpointFile, OwnedRun};
use crate::workspace_files::*;
use crate::written::FileStamp;
use crate::{Inner, UserDataStore};

/// Depth bound for walks that have no caller-given limit (persist copies), so a symlink loop
/// that stays inside the run directory cannot recurse forever.
const UNBOUNDED_WALK_DEPTH: u32 = 64;

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

fn persist_error(code: tt_domain::error_codes::Code, message: String) -> StorageError {
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
        tt_ports::store_inputs::check_persistent_state_id(state_id)?;
        let state_dir = inner
            .layout
            .states_dir(run.workspace_id.as_str())?
            .join(state_id);
        let missing = || {
            persist_error(
                error_codes::AGENT_PERSISTENT_STATE_ROOT_MISSING,
                format!("persistent state {state_id} does not exist in this conversation"),
            )
        };
        let header: StateManifestHeader = match read_json(&state_dir.join(MANIFEST_FILE)) {
            Ok(Some(header)) => header,
            Ok(None) => return Err(missing()),
            Err(StorageError::Corrupt { message, .. }) => {
                return Err(persist_error(
                    error_codes::AGENT_PERSISTENT_STATE_ROOT_INVALID,
                    format!("persistent state {state_id} has an unreadable manifest: {message}"),
                ));
            }
            Err(other) => return Err(other),
        };
        if header.state_id != state_id {
            return Err(persist_error(
                error_codes::AGENT_PERSISTENT_STATE_MANIFEST_MISMATCH,
                format!(
                    "persistent state {state_id} has a manifest for state {}",
                    header.state_id
                ),
            ));
        }
        if header.workspace_id != run.workspace_id.as_str() {
            return Err(persist_error(
                error_codes::AGENT_PERSISTENT_STATE_WORKSPACE_MISMATCH,
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
            error_codes::AGENT_PERSISTENT_STATE_EXISTS,
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
            fsutil::write_new_synced(&staged, &bytes)?;
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

impl UserDataStore {
    /// The run's writer and the lock of `path`, held for a write of the file: only the run's
    /// writer writes its files, one write of a path at a time.
    async fn writing(
        &self,
        run_id: &RunId,
        path: &WorkspacePath,
    ) -> StorageResult<(std::sync::Arc<OwnedRun>, tokio::sync::OwnedMutexGuard<()>)> {
        let owned = self.inner.owned_run(run_id)?;
        let lock = self.inner.locks.lock(path_lock(run_id, path)).await;
        Ok((owned, lock))
    }
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
        let (owned, _lock) = self.writing(run_id, path).await?;
        let base = RunBase::new(&self.inner, run_id)?;
        let (physical, walked) = base.resolve_walked(path)?;
        let previous = current_sha256_walked(&base, Some(&owned), &physical, path, &walked)?;
        guard
            .check(previous.as_deref())
            .map_err(|violation| StorageError::guard(path, violation))?;
        let sha256 = sha256_hex(content.as_bytes());
        let bytes = content.len() as u64;
        // Updated under the path lock, so the cache follows the writes of a path in order.
        match replace_file_walked(&base, &physical, path, content.as_bytes(), &walked) {
            Ok(meta) => {
                owned.written().record(
                    path,
                    FileStamp::of(&meta),
                    sha256.clone(),
                    content.to_owned(),
                );
            }
            Err(err) => {
                owned.written().forget(path);
                return Err(err);
            }
        }
        Ok(WriteOutcome {
            previous_sha256: previous,
            sha256,
            bytes,
        })
    }

    async fn append(
        &self,
        run_id: &RunId,
        path: &WorkspacePath,
        content: &str,
    ) -> StorageResult<WriteOutcome> {
        let (owned, _lock) = self.writing(run_id, path).await?;
        let base = RunBase::new(&self.inner, run_id)?;
        let physical = base.resolve(path)?;
        let previous = current_bytes(&base, &physical, path)?;
        let previous_sha256 = previous.as_deref().map(sha256_hex);
        let mut bytes = previous.unwrap_or_default();
        bytes.extend_from_slice(content.as_bytes());
        let written = replace_file(&base, &physical, path, &bytes);
        let sha256 = sha256_hex(&bytes);
        let len = bytes.len() as u64;
        let mut cache = owned.written();
        match (written, String::from_utf8(bytes)) {
            (Ok(meta), Ok(text)) => {
                cache.record(path, FileStamp::of(&meta), sha256.clone(), text);
            }
            (Ok(_), Err(_)) => cache.forget(path),
            (Err(err), _) => {
                cache.forget(path);
                return Err(err);
            }
        }
        Ok(WriteOutcome {
            previous_sha256,
            sha256,
            bytes: len,
        })
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

    async fn chat_head(&self, workspace_id: &WorkspaceId) -> StorageResult<Option<RunId>> {
        crate::chat_head::chat_head(&self.inner.layout, workspace_id)
    }

    async fn swap_chat_head(
        &self,
        workspace_id: &WorkspaceId,
        expected: Option<&RunId>,
        run_id: &RunId,
    ) -> StorageResult<bool> {
        // Only the process that writes the run may make it the head.
        self.inner.owned_run(run_id)?;
        crate::chat_head::swap_chat_head(&self.inner.layout, workspace_id, expected, run_id)
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

    async fn checkpoint_record(
        &self,
        run_id: &RunId,
        id: &CheckpointId,
    ) -> StorageResult<Option<CheckpointRecord>> {
        self.checkpoint(run_id, id.as_str())
    }

    async fn checkpoint_blob(&self, run_id: &RunId, sha256: &str) -> StorageResult<Option<String>> {
        self.blob_text(run_id, sha256)
    }
}
