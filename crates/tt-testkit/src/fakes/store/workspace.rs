//! The workspace port of `InMemoryStore`: files by logical path, implicit directories,
//! write guards, checkpoints and the `persist/` projection and promotion.
//!
//! Only the five known roots are addressable; any other first segment is `NotFound`.

use std::collections::BTreeMap;
use tt_domain::error_codes;

use async_trait::async_trait;
use tt_domain::DomainError;
use tt_domain::ids::{CheckpointId, RunId, WorkspaceId};
use tt_domain::text::sha256_hex;
use tt_domain::time::Timestamp;
use tt_domain::workspace::{
    CheckpointReason, CheckpointRecord, EntryKind, FileFingerprint, PersistSnapshot,
    PersistentChangeSet, WorkspacePath, WorkspaceRoot, WriteGuard,
};
use tt_ports::{
    FileContent, RunDocument, StorageError, StorageResult, WorkspaceEntry, WorkspaceRepository,
    WriteOutcome,
};

use super::{InMemoryStore, PersistentStateRecord, StoreOp, StoredCheckpoint};

type Files = BTreeMap<String, String>;

const PERSIST_PREFIX: &str = "persist/";

fn not_found(path: &str) -> StorageError {
    StorageError::not_found(format!("workspace path {path}"))
}

/// Rejects paths outside the five roots, which do not exist for this port.
fn require_known_root(path: &WorkspacePath) -> StorageResult<()> {
    match path.root() {
        Some(_) => Ok(()),
        None => Err(not_found(path.as_str())),
    }
}

/// A directory exists for every root and for every proper prefix of a stored file path.
fn is_directory(files: &Files, path: &str) -> bool {
    if WorkspaceRoot::from_name(path).is_some() {
        return true;
    }
    let prefix = format!("{path}/");
    files
        .range(prefix.clone()..)
        .next()
        .is_some_and(|(key, _)| key.starts_with(&prefix))
}

/// The first proper ancestor of `path` that is a file, if any (a file cannot hold children).
fn file_ancestor(files: &Files, path: &str) -> Option<String> {
    let mut prefix = String::new();
    let segments: Vec<&str> = path.split('/').collect();
    let parents = segments.len().saturating_sub(1);
    for segment in segments.into_iter().take(parents) {
        if !prefix.is_empty() {
            prefix.push('/');
        }
        prefix.push_str(segment);
        if files.contains_key(&prefix) {
            return Some(prefix);
        }
    }
    None
}

fn byte_len(text: &str) -> u64 {
    u64::try_from(text.len()).unwrap_or(u64::MAX)
}

fn fingerprint(path: &str, text: &str) -> StorageResult<FileFingerprint> {
    Ok(FileFingerprint {
        path: WorkspacePath::parse(path)?,
        sha256: sha256_hex(text.as_bytes()),
        bytes: byte_len(text),
    })
}

/// Checks that `path` may hold a file: known root, not a directory, no file as ancestor.
fn check_file_slot(files: &Files, path: &WorkspacePath) -> StorageResult<()> {
    require_known_root(path)?;
    if is_directory(files, path.as_str()) {
        return Err(StorageError::IsDirectory {
            path: path.to_string(),
        });
    }
    if let Some(ancestor) = file_ancestor(files, path.as_str()) {
        return Err(StorageError::NotADirectory { path: ancestor });
    }
    Ok(())
}

fn persist_files(files: &Files) -> impl Iterator<Item = (&String, &String)> {
    files
        .iter()
        .filter(|(path, _)| path.starts_with(PERSIST_PREFIX))
}

fn persist_error(code: tt_domain::error_codes::Code, message: String) -> StorageError {
    StorageError::Domain(DomainError::new(code, message))
}

impl InMemoryStore {
    /// Replaces the file at `path` (after the fault `op`, if one is injected) with what `next`
    /// makes of its previous text and that text's hash; the write's outcome.
    fn replace_file(
        &self,
        op: StoreOp,
        run_id: &RunId,
        path: &WorkspacePath,
        next: impl FnOnce(Option<&str>, Option<&str>) -> StorageResult<String>,
    ) -> StorageResult<WriteOutcome> {
        let mut state = self.lock();
        state.check_fault(op)?;
        let files = &mut state.run_mut(run_id)?.files;
        check_file_slot(files, path)?;
        let previous = files.get(path.as_str()).map(String::as_str);
        let previous_sha256 = previous.map(|text| sha256_hex(text.as_bytes()));
        let text = next(previous, previous_sha256.as_deref())?;
        let outcome = WriteOutcome {
            previous_sha256,
            sha256: sha256_hex(text.as_bytes()),
            bytes: byte_len(&text),
        };
        files.insert(path.as_str().to_owned(), text);
        Ok(outcome)
    }
}

#[async_trait]
impl WorkspaceRepository for InMemoryStore {
    async fn list(
        &self,
        run_id: &RunId,
        path: Option<&WorkspacePath>,
        depth: u32,
    ) -> StorageResult<Vec<WorkspaceEntry>> {
        let state = self.lock();
        let files = &state.run(run_id)?.files;
        // Depth 0 would list nothing; treat it as "direct children".
        let depth = usize::try_from(depth.max(1)).unwrap_or(usize::MAX);
        let mut entries: BTreeMap<String, EntryKind> = BTreeMap::new();
        let base = match path {
            None => {
                // The roots are level 1 below the workspace root and always exist.
                for root in WorkspaceRoot::ALL {
                    entries.insert(root.name().to_owned(), EntryKind::Directory);
                }
                None
            }
            Some(path) => {
                require_known_root(path)?;
                if files.contains_key(path.as_str()) {
                    return Err(StorageError::NotADirectory {
                        path: path.to_string(),
                    });
                }
                if !is_directory(files, path.as_str()) {
                    return Err(not_found(path.as_str()));
                }
                Some(path.as_str())
            }
        };
        for key in files.keys() {
            let relative = match base {
                None => key.as_str(),
                Some(base) => match key
                    .strip_prefix(base)
                    .and_then(|rest| rest.strip_prefix('/'))
                {
                    Some(rest) => rest,
                    None => continue,
                },
            };
            let segments: Vec<&str> = relative.split('/').collect();
            let mut prefix = base.map(str::to_owned).unwrap_or_default();
            for (index, segment) in segments.iter().enumerate().take(depth) {
                if !prefix.is_empty() {
                    prefix.push('/');
                }
                prefix.push_str(segment);
                let kind = if index + 1 == segments.len() {
                    EntryKind::File
                } else {
                    EntryKind::Directory
                };
                entries.insert(prefix.clone(), kind);
            }
        }
        entries
            .into_iter()
            .map(|(path, kind)| {
                Ok(WorkspaceEntry {
                    path: WorkspacePath::parse(&path)?,
                    kind,
                })
            })
            .collect()
    }

    async fn read(&self, run_id: &RunId, path: &WorkspacePath) -> StorageResult<FileContent> {
        let mut state = self.lock();
        state.check_fault(StoreOp::WorkspaceRead)?;
        let files = &state.run(run_id)?.files;
        require_known_root(path)?;
        match files.get(path.as_str()) {
            Some(text) => Ok(FileContent {
                text: text.clone(),
                sha256: sha256_hex(text.as_bytes()),
            }),
            None if is_directory(files, path.as_str()) => Err(StorageError::IsDirectory {
                path: path.to_string(),
            }),
            None => Err(not_found(path.as_str())),
        }
    }

    async fn sha256(&self, run_id: &RunId, path: &WorkspacePath) -> StorageResult<Option<String>> {
        let state = self.lock();
        let files = &state.run(run_id)?.files;
        require_known_root(path)?;
        match files.get(path.as_str()) {
            Some(text) => Ok(Some(sha256_hex(text.as_bytes()))),
            None if is_directory(files, path.as_str()) => Err(StorageError::IsDirectory {
                path: path.to_string(),
            }),
            None => Ok(None),
        }
    }

    async fn write(
        &self,
        run_id: &RunId,
        path: &WorkspacePath,
        content: &str,
        guard: &WriteGuard,
    ) -> StorageResult<WriteOutcome> {
        self.replace_file(
            StoreOp::WorkspaceWrite,
            run_id,
            path,
            |_, previous_sha256| {
                guard
                    .check(previous_sha256)
                    .map_err(|violation| StorageError::guard(path, violation))?;
                Ok(content.to_owned())
            },
        )
    }

    async fn append(
        &self,
        run_id: &RunId,
        path: &WorkspacePath,
        content: &str,
    ) -> StorageResult<WriteOutcome> {
        self.replace_file(StoreOp::WorkspaceAppend, run_id, path, |previous, _| {
            Ok(format!("{}{content}", previous.unwrap_or_default()))
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
        let mut state = self.lock();
        state.check_fault(StoreOp::CreateCheckpoint)?;
        let run = state.run_mut(run_id)?;
        let seq = u64::try_from(run.checkpoints.len())
            .unwrap_or(u64::MAX)
            .saturating_add(1);
        let mut captured: Files = BTreeMap::new();
        let mut fingerprints = Vec::new();
        for path in paths {
            if captured.contains_key(path.as_str()) {
                continue;
            }
            // Only files that exist are recorded; directories and missing paths are skipped.
            if let Some(text) = run.files.get(path.as_str()) {
                fingerprints.push(fingerprint(path.as_str(), text)?);
                captured.insert(path.as_str().to_owned(), text.clone());
            }
        }
        let record = CheckpointRecord {
            id: CheckpointId::from_seq(seq),
            seq,
            run_id: run_id.clone(),
            created_at,
            reason,
            event_seq,
            files: fingerprints,
        };
        run.checkpoints.push(StoredCheckpoint {
            record: record.clone(),
            files: captured,
        });
        Ok(record)
    }

    async fn init_persist_projection(
        &self,
        run_id: &RunId,
        base_state_id: Option<&str>,
    ) -> StorageResult<PersistSnapshot> {
        let mut guard = self.lock();
        let state = &mut *guard;
        state.check_fault(StoreOp::InitPersistProjection)?;
        let workspace_id = state.run(run_id)?.run.workspace_id.as_str().to_owned();
        let base_files = match base_state_id {
            None => Files::new(),
            Some(base) => {
                tt_ports::store_inputs::check_persistent_state_id(base)?;
                let record = state
                    .persistent_states
                    .get(&(workspace_id.clone(), base.to_owned()))
                    .ok_or_else(|| {
                        persist_error(
                            error_codes::AGENT_PERSISTENT_STATE_ROOT_MISSING,
                            format!(
                                "persistent state `{base}` does not exist in workspace {workspace_id}"
                            ),
                        )
                    })?;
                record.files.clone()
            }
        };
        let run = state.run_mut(run_id)?;
        run.files.extend(base_files);
        let files = persist_files(&run.files)
            .map(|(path, text)| fingerprint(path, text))
            .collect::<StorageResult<Vec<_>>>()?;
        let snapshot = PersistSnapshot {
            base_state_id: base_state_id.map(str::to_owned),
            files,
        };
        let value = serde_json::to_value(&snapshot)
            .map_err(|err| StorageError::corrupt("input/persist_snapshot.json", err))?;
        run.documents.insert(RunDocument::PersistSnapshot, value);
        Ok(snapshot)
    }

    async fn promote_persist(
        &self,
        run_id: &RunId,
        snapshot: &PersistSnapshot,
        created_at: Timestamp,
    ) -> StorageResult<PersistentChangeSet> {
        let mut guard = self.lock();
        let state = &mut *guard;
        state.check_fault(StoreOp::PromotePersist)?;
        let run = state.run(run_id)?;
        let current: Files = persist_files(&run.files)
            .map(|(path, text)| (path.clone(), text.clone()))
            .collect();
        let prints = current
            .iter()
            .map(|(path, text)| {
                Ok(FileFingerprint {
                    path: WorkspacePath::parse(path)?,
                    sha256: sha256_hex(text.as_bytes()),
                    bytes: byte_len(text),
                })
            })
            .collect::<StorageResult<Vec<_>>>()?;
        let changes = snapshot.changes_to(&prints)?;
        let state_id = run_id.as_str().to_owned();
        let key = (run.run.workspace_id.as_str().to_owned(), state_id.clone());
        if state.persistent_states.contains_key(&key) {
            return Err(persist_error(
                error_codes::AGENT_PERSISTENT_STATE_EXISTS,
                format!("persistent state `{state_id}` already exists"),
            ));
        }
        // Zero changes still promote, so the chain of states stays linear.
        let record = PersistentStateRecord {
            state_id: state_id.clone(),
            base_state_id: snapshot.base_state_id.clone(),
            run_id: Some(run_id.clone()),
            files: current,
            changes: changes.clone(),
            created_at: Some(created_at),
        };
        state.persistent_states.insert(key, record);
        Ok(PersistentChangeSet {
            state_id,
            base_state_id: snapshot.base_state_id.clone(),
            changes,
        })
    }

    async fn promoted_state(&self, run_id: &RunId) -> StorageResult<Option<PersistentChangeSet>> {
        let state = self.lock();
        let run = state.run(run_id)?;
        let key = (
            run.run.workspace_id.as_str().to_owned(),
            run_id.as_str().to_owned(),
        );
        Ok(state
            .persistent_states
            .get(&key)
            .map(|record| PersistentChangeSet {
                state_id: record.state_id.clone(),
                base_state_id: record.base_state_id.clone(),
                changes: record.changes.clone(),
            }))
    }

    async fn chat_head(&self, workspace_id: &WorkspaceId) -> StorageResult<Option<RunId>> {
        Ok(self.lock().chat_heads.get(workspace_id.as_str()).cloned())
    }

    async fn swap_chat_head(
        &self,
        workspace_id: &WorkspaceId,
        expected: Option<&RunId>,
        run_id: &RunId,
    ) -> StorageResult<bool> {
        let mut state = self.lock();
        let head = state.chat_heads.get(workspace_id.as_str());
        if head == Some(run_id) {
            return Ok(true);
        }
        if head != expected {
            return Ok(false);
        }
        state
            .chat_heads
            .insert(workspace_id.as_str().to_owned(), run_id.clone());
        Ok(true)
    }

    async fn walk_files(
        &self,
        run_id: &RunId,
        roots: &[WorkspaceRoot],
        max_depth: u32,
        max_files: usize,
    ) -> StorageResult<Vec<WorkspacePath>> {
        let state = self.lock();
        let files = &state.run(run_id)?.files;
        let max_depth = usize::try_from(max_depth).unwrap_or(usize::MAX);
        let mut found = Vec::new();
        for key in files.keys() {
            if found.len() >= max_files {
                break;
            }
            let path = WorkspacePath::parse(key)?;
            let in_roots = path.root().is_some_and(|root| roots.contains(&root));
            // Depth counts segments below the root: `output/a.md` is depth 1.
            let depth = path.segments().count().saturating_sub(1);
            if in_roots && depth <= max_depth {
                found.push(path);
            }
        }
        Ok(found)
    }

    async fn checkpoint_record(
        &self,
        run_id: &RunId,
        id: &CheckpointId,
    ) -> StorageResult<Option<CheckpointRecord>> {
        let state = self.lock();
        Ok(state
            .run(run_id)?
            .checkpoints
            .iter()
            .find(|checkpoint| checkpoint.record.id == *id)
            .map(|checkpoint| checkpoint.record.clone()))
    }

    async fn checkpoint_blob(&self, run_id: &RunId, sha256: &str) -> StorageResult<Option<String>> {
        let state = self.lock();
        Ok(state
            .run(run_id)?
            .checkpoints
            .iter()
            .flat_map(|checkpoint| checkpoint.files.values())
            .find(|text| tt_domain::text::sha256_hex(text.as_bytes()) == sha256)
            .cloned())
    }
}
