//! The model-visible workspace files of a run, addressed by logical path, plus checkpoints and
//! the `persist/` projection. Access policy (which roots an agent may see or write) is the
//! application's job; this port enforces only path safety and write guards.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tt_domain::ids::{CheckpointId, RunId, WorkspaceId};
use tt_domain::time::Timestamp;
use tt_domain::workspace::{
    CheckpointReason, CheckpointRecord, EntryKind, PersistSnapshot, PersistentChangeSet,
    WorkspacePath, WorkspaceRoot, WriteGuard,
};

use crate::error::StorageResult;

/// One listed entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceEntry {
    pub path: WorkspacePath,
    pub kind: EntryKind,
}

/// A file's text and fingerprint. Workspace files are UTF-8 text; other bytes are
/// `StorageError::Corrupt`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileContent {
    pub text: String,
    pub sha256: String,
}

/// The state of a file after a write or append.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteOutcome {
    /// sha256 before the write, `None` when the file was created.
    pub previous_sha256: Option<String>,
    pub sha256: String,
    pub bytes: u64,
}

#[async_trait]
pub trait WorkspaceRepository: Send + Sync {
    /// Lists entries under `path` (`None` = the workspace root, which lists the roots
    /// themselves) down to `depth` levels (1 = direct children), sorted by path. Only the known
    /// roots are ever listed. `NotFound` when `path` does not exist; `NotADirectory` for a file.
    async fn list(
        &self,
        run_id: &RunId,
        path: Option<&WorkspacePath>,
        depth: u32,
    ) -> StorageResult<Vec<WorkspaceEntry>>;

    /// Reads a file. `NotFound` / `IsDirectory` as appropriate.
    async fn read(&self, run_id: &RunId, path: &WorkspacePath) -> StorageResult<FileContent>;

    /// sha256 of a file, `None` when missing. `IsDirectory` for a directory.
    async fn sha256(&self, run_id: &RunId, path: &WorkspacePath) -> StorageResult<Option<String>>;

    /// Writes `content` atomically under `guard` (checked and applied under one per-path lock).
    async fn write(
        &self,
        run_id: &RunId,
        path: &WorkspacePath,
        content: &str,
        guard: &WriteGuard,
    ) -> StorageResult<WriteOutcome>;

    /// Appends `content` exactly as given, creating the file if missing; atomic per path.
    async fn append(
        &self,
        run_id: &RunId,
        path: &WorkspacePath,
        content: &str,
    ) -> StorageResult<WriteOutcome>;

    /// Snapshots `paths` into the next checkpoint (`cp_NNNNNN`), serialized per run.
    async fn create_checkpoint(
        &self,
        run_id: &RunId,
        reason: CheckpointReason,
        event_seq: u64,
        paths: &[WorkspacePath],
        created_at: Timestamp,
    ) -> StorageResult<CheckpointRecord>;

    /// Copies the base state's `persist/` into the run (when given) and records the snapshot.
    async fn init_persist_projection(
        &self,
        run_id: &RunId,
        base_state_id: Option<&str>,
    ) -> StorageResult<PersistSnapshot>;

    /// Compares the run's `persist/` with `snapshot` and, when anything changed, writes a new
    /// immutable state `persistent-states/<runId>/` atomically. A file deleted since the
    /// snapshot is `agent.persistent_delete_unsupported`.
    async fn promote_persist(
        &self,
        run_id: &RunId,
        snapshot: &PersistSnapshot,
        created_at: Timestamp,
    ) -> StorageResult<PersistentChangeSet>;

    /// The state `run_id` promoted (`persistent-states/<runId>/`) with the changes it recorded,
    /// or `None` when it has not promoted one: a run resumed after its promotion reads it back
    /// instead of promoting twice.
    async fn promoted_state(&self, run_id: &RunId) -> StorageResult<Option<PersistentChangeSet>>;

    /// The run whose promoted state is the conversation's head (the one-writer rule of
    /// docs/storage.md, "One writer per conversation"): the last run of the conversation
    /// `workspace_id` that took it with [`Self::swap_chat_head`]; `None` before any did.
    async fn chat_head(&self, workspace_id: &WorkspaceId) -> StorageResult<Option<RunId>>;

    /// Makes `run_id` the head of the conversation `workspace_id` if the head still is
    /// `expected` (`None`: no run holds it yet), as one atomic compare-and-swap that every
    /// store instance on the same data (other processes, other hosts) sees in one order:
    /// of several runs swapping from the same head, exactly one gets `true`. `false` when the
    /// head is another run. Idempotent: `true` when the head already is `run_id`.
    async fn swap_chat_head(
        &self,
        workspace_id: &WorkspaceId,
        expected: Option<&RunId>,
        run_id: &RunId,
    ) -> StorageResult<bool>;

    /// All files under the given roots (recursively, at most `max_files`), for search.
    async fn walk_files(
        &self,
        run_id: &RunId,
        roots: &[WorkspaceRoot],
        max_depth: u32,
        max_files: usize,
    ) -> StorageResult<Vec<WorkspacePath>>;

    /// Checkpoint `id` of run `run_id` as [`create_checkpoint`](Self::create_checkpoint)
    /// recorded it, from any process and without the run's lock; `None` when the run has no
    /// such checkpoint (`checkpoints/<id>` of `read_record`, docs/storage.md).
    async fn checkpoint_record(
        &self,
        run_id: &RunId,
        id: &CheckpointId,
    ) -> StorageResult<Option<CheckpointRecord>>;

    /// The text of a file version one of `run_id`'s checkpoints stored, by its sha256, from
    /// any process and without the run's lock; `None` when no checkpoint of the run stored it.
    /// Branching a run (docs/branching.md) rebuilds the branch's workspace from it. The
    /// default keeps no contents and answers `None` (branching then needs the source's current
    /// file to still hold that version).
    async fn checkpoint_blob(&self, run_id: &RunId, sha256: &str) -> StorageResult<Option<String>> {
        let _ = (run_id, sha256);
        Ok(None)
    }
}
