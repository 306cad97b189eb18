//! `workspace.write_file {path, content, mode?}`: replace a whole file (guarded: an existing
//! file must have been read at its current version) or append to it (unguarded, creates the
//! file). Never echoes the content back.

use serde_json::{Value, json};
use tt_domain::error_codes;
use tt_domain::text::{char_count, word_count};
use tt_domain::workspace::{WorkspacePath, WriteGuard};
use tt_ports::StorageError;

use super::commit_finish_args::short;
use super::env::{StorageOp, WorkspaceToolEnv, file_ref, path_is_directory, storage_failure};
use crate::error::{ToolCallError, ToolError};
use crate::tools::args::Args;
use crate::tools::{ToolEffect, ToolSuccess};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WriteMode {
    Replace,
    Append,
}

impl WriteMode {
    fn as_str(self) -> &'static str {
        match self {
            WriteMode::Replace => "replace",
            WriteMode::Append => "append",
        }
    }
}

pub(super) async fn write_file(
    args: &Value,
    mut env: WorkspaceToolEnv<'_>,
) -> Result<ToolSuccess, ToolCallError> {
    let args = Args::parse(args, &["path", "content", "mode"])?;
    let path = WorkspacePath::parse(args.req_str("path")?)?;
    let content = args.req_str("content")?;
    let mode = match args.opt_str("mode")? {
        None | Some("replace") => WriteMode::Replace,
        Some("append") => WriteMode::Append,
        Some(other) => {
            return Err(ToolError::new(
                error_codes::WORKSPACE_WRITE_MODE_INVALID,
                format!(
                    "`{}` is not a write mode. Use `replace` (the default) to write the whole file or `append` to add to its end.",
                    short(other)
                ),
            )
            .into());
        }
    };
    if !env.policy.is_writable(&path) {
        return Err(env.policy.not_writable_error(&path).into());
    }

    let sha256 = match mode {
        WriteMode::Replace => replace(&path, content, &mut env).await?,
        WriteMode::Append => {
            let outcome = env
                .repo
                .append(env.run_id, &path, content)
                .await
                .map_err(|err| storage_failure(err, &path, StorageOp::Write))?;
            env.read_state.record_append(
                &path,
                outcome.previous_sha256.as_deref(),
                &outcome.sha256,
            );
            outcome.sha256
        }
    };

    let chars = char_count(content);
    let words = word_count(content);
    let verb = match mode {
        WriteMode::Replace => "Wrote",
        WriteMode::Append => "Appended",
    };
    let structured = json!({
        "path": path,
        "mode": mode.as_str(),
        "chars": chars,
        "words": words,
        "sha256": sha256,
    });
    Ok(ToolSuccess::new(
        format!("{verb} {chars} chars / {words} words to {path}."),
        structured,
    )
    .with_refs(vec![file_ref(&path)])
    .with_effect(ToolEffect::FileWritten {
        path,
        mode: mode.as_str(),
        chars,
        words,
        sha256,
    }))
}

/// Replaces the whole file. An existing file must have been read (whole or in part) at its
/// current version; a new file is created only if it still does not exist at write time.
async fn replace(
    path: &WorkspacePath,
    content: &str,
    env: &mut WorkspaceToolEnv<'_>,
) -> Result<String, ToolCallError> {
    // A file this agent never read may only be created: the write's own guard checks that it
    // does not exist (an existing one is `GuardFileExists`, "read it first"), so no separate
    // look at the file comes before it.
    let guard = match env.read_state.get(path) {
        None => WriteGuard::MustNotExist,
        Some(_) => {
            let current = env
                .repo
                .sha256(env.run_id, path)
                .await
                .map_err(|err| storage_failure(err, path, StorageOp::Write))?;
            match (current, env.read_state.get(path)) {
                (None, _) => WriteGuard::MustNotExist,
                (Some(current), Some(known)) if known.sha256 != current => {
                    return Err(stale(path).into());
                }
                (Some(current), _) => WriteGuard::MustMatchSha256(current),
            }
        }
    };
    let outcome = match env.repo.write(env.run_id, path, content, &guard).await {
        Ok(outcome) => outcome,
        // Someone created the file between the check and the write: it was never read.
        Err(StorageError::GuardFileExists { .. }) => return Err(requires_read(path).into()),
        Err(StorageError::GuardShaMismatch { .. } | StorageError::GuardFileMissing { .. }) => {
            return Err(stale(path).into());
        }
        Err(StorageError::IsDirectory { .. }) => return Err(path_is_directory(path).into()),
        Err(err) => return Err(storage_failure(err, path, StorageOp::Write)),
    };
    env.read_state.record_full(path, &outcome.sha256);
    Ok(outcome.sha256)
}

fn requires_read(path: &WorkspacePath) -> ToolError {
    ToolError::new(
        error_codes::WORKSPACE_WRITE_REQUIRES_READ,
        format!(
            "`{path}` already exists and you have not read it. Read it with `workspace_read_file` first, then write again, or use `mode: \"append\"` to add to its end."
        ),
    )
}

fn stale(path: &WorkspacePath) -> ToolError {
    ToolError::new(
        error_codes::WORKSPACE_WRITE_STALE_FILE,
        format!(
            "`{path}` changed since you last read it. Read it again with `workspace_read_file`, then write."
        ),
    )
}
