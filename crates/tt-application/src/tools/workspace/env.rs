//! What every workspace tool shares: its limits, what a call may touch
//! (`WorkspaceToolEnv`), and how a storage failure becomes a tool error. Its own module so the
//! tools use it without using the module that dispatches to them.

use tt_domain::error_codes;
use tt_domain::ids::RunId;
use tt_domain::workspace::{WorkspaceAccessPolicy, WorkspacePath};
use tt_ports::{StorageError, WorkspaceRepository};

use super::ReadState;
use crate::error::{ApplicationError, ToolCallError, ToolError};

/// Depth of `workspace.list_files` when `depth` is omitted.
pub(crate) const DEFAULT_LIST_DEPTH: u32 = 2;
/// Largest accepted `depth` of `workspace.list_files`.
pub(crate) const MAX_LIST_DEPTH: u32 = 4;
/// Entries returned by one listing; more sets `truncated`.
pub(crate) const MAX_LIST_ENTRIES: usize = 200;
/// Largest file (in UTF-8 bytes) a read without a range returns.
pub(crate) const MAX_READ_BYTES: usize = 256 * 1024;
/// Most lines one read returns (whole file or line range).
pub(crate) const MAX_READ_LINES: usize = 1200;
/// Most characters a ranged read returns.
pub(crate) const MAX_PARTIAL_READ_CHARS: usize = 80_000;
/// Passages `workspace.search_files` returns when `limit` is omitted.
pub(crate) const DEFAULT_SEARCH_LIMIT: usize = 20;
/// Largest accepted search `limit`.
pub(crate) const MAX_SEARCH_LIMIT: usize = 50;
/// Context lines around a search match when `context_lines` is omitted.
pub(crate) const DEFAULT_SEARCH_CONTEXT_LINES: usize = 2;
/// Largest accepted `context_lines`.
pub(crate) const MAX_SEARCH_CONTEXT_LINES: usize = 5;
/// How deep search walks below a root.
pub(crate) const MAX_SEARCH_DEPTH: u32 = 8;
/// How many files one search looks at.
pub(crate) const MAX_SEARCH_FILES: usize = 1000;

/// What a workspace tool call may touch: the run's files, the agent's roots and its read-state.
pub(crate) struct WorkspaceToolEnv<'a> {
    pub repo: &'a dyn WorkspaceRepository,
    pub run_id: &'a RunId,
    pub policy: &'a WorkspaceAccessPolicy,
    pub read_state: &'a mut ReadState,
}

/// Which operation met a storage failure; decides which failures the model can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StorageOp {
    List,
    Read,
    Write,
    Patch,
}

/// Maps a storage failure to a recoverable, coded tool error where the model can fix the cause
/// (missing file, folder instead of file, file changed underneath), and fails fast otherwise
/// (I/O, corrupt data, symlink escape). Guard conflicts of replace writes are mapped by the
/// write tool itself, which knows the session's read-state.
pub(super) fn storage_failure(
    err: StorageError,
    path: &WorkspacePath,
    op: StorageOp,
) -> ToolCallError {
    match err {
        StorageError::NotFound { .. } | StorageError::NotADirectory { .. } => match op {
            StorageOp::List => ToolError::new(
                error_codes::WORKSPACE_PATH_NOT_FOUND,
                format!(
                    "`{path}` does not exist. List a folder that exists, or omit `path` to list everything you can see."
                ),
            )
            .into(),
            StorageOp::Read | StorageOp::Patch => file_not_found(path).into(),
            StorageOp::Write => ToolError::new(
                error_codes::WORKSPACE_PATH_NOT_FOUND,
                format!(
                    "`{path}` cannot be created because part of it is an existing file, not a folder. Choose another path."
                ),
            )
            .into(),
        },
        StorageError::IsDirectory { .. } => path_is_directory(path).into(),
        StorageError::GuardFileExists { .. }
        | StorageError::GuardFileMissing { .. }
        | StorageError::GuardShaMismatch { .. } => match op {
            StorageOp::Patch => ToolError::new(
                error_codes::WORKSPACE_PATCH_STALE_FILE,
                format!(
                    "`{path}` changed while you were patching it. Read it again with `workspace_read_file`, then patch."
                ),
            )
            .into(),
            StorageOp::List | StorageOp::Read | StorageOp::Write => ToolError::new(
                error_codes::WORKSPACE_WRITE_STALE_FILE,
                format!(
                    "`{path}` changed since you last read it. Read it again with `workspace_read_file`, then write."
                ),
            )
            .into(),
        },
        StorageError::AlreadyExists { .. }
        | StorageError::SymlinkEscape { .. }
        | StorageError::Locked { .. }
        | StorageError::ReadOnly { .. }
        | StorageError::Domain(_)
        | StorageError::Corrupt { .. }
        | StorageError::Io { .. }
        | StorageError::Other(_) => ToolCallError::Fatal(ApplicationError::Storage(err)),
    }
}

pub(super) fn file_not_found(path: &WorkspacePath) -> ToolError {
    ToolError::new(
        error_codes::WORKSPACE_FILE_NOT_FOUND,
        format!("`{path}` does not exist. Use `workspace_list_files` to see which files exist."),
    )
}

pub(super) fn path_is_directory(path: &WorkspacePath) -> ToolError {
    ToolError::new(
        error_codes::WORKSPACE_PATH_IS_DIRECTORY,
        format!(
            "`{path}` is a folder, not a file. Use `workspace_list_files` to see what it contains."
        ),
    )
}

/// `workspace:<path>`, the resource reference of a whole file.
pub(super) fn file_ref(path: &WorkspacePath) -> String {
    format!("workspace:{path}")
}
