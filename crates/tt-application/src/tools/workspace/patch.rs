//! `workspace.apply_patch {path, old_string, new_string, replace_all?}`: exact replacement in a
//! file the agent has read, checked in the contract's order (§2.6) and written guarded by the
//! version it was checked against, with the read-state updated as the contract says.

use serde_json::{Value, json};
use tt_domain::error_codes;
use tt_domain::text::{char_count, word_count};
use tt_domain::workspace::{WorkspacePath, WriteGuard};

use super::env::{StorageOp, WorkspaceToolEnv, file_ref, storage_failure};
use super::read_state::FileKnowledge;
use crate::error::{ToolCallError, ToolError};
use crate::tools::args::Args;
use crate::tools::{ToolEffect, ToolSuccess};

/// The arguments of one patch.
struct Patch<'a> {
    path: WorkspacePath,
    old_string: &'a str,
    new_string: &'a str,
    replace_all: bool,
}

pub(super) async fn apply_patch(
    args: &Value,
    mut env: WorkspaceToolEnv<'_>,
) -> Result<ToolSuccess, ToolCallError> {
    let args = Args::parse(args, &["path", "old_string", "new_string", "replace_all"])?;
    let patch = Patch {
        path: WorkspacePath::parse(args.req_str("path")?)?,
        old_string: args.req_str("old_string")?,
        new_string: args.req_str("new_string")?,
        replace_all: args.opt_bool("replace_all")?.unwrap_or(false),
    };
    let path = &patch.path;
    let known = check_before_reading(&patch, &mut env)?;
    let partial = !known.full;

    let current = env
        .repo
        .read(env.run_id, path)
        .await
        .map_err(|err| storage_failure(err, path, StorageOp::Patch))?;
    if current.sha256 != known.sha256 {
        if partial {
            env.read_state.require_full_reread(path);
        }
        return Err(stale(path, partial).into());
    }
    check_matches(&patch, &mut env, &current.text, partial)?;

    let (old_string, new_string) = (patch.old_string, patch.new_string);
    let (new_text, replacements) = if patch.replace_all {
        (
            current.text.replace(old_string, new_string),
            current.text.matches(old_string).count(),
        )
    } else {
        (current.text.replacen(old_string, new_string, 1), 1)
    };
    let outcome = match env
        .repo
        .write(
            env.run_id,
            path,
            &new_text,
            &WriteGuard::MustMatchSha256(current.sha256.clone()),
        )
        .await
    {
        Ok(outcome) => outcome,
        Err(err) => {
            let failure = storage_failure(err, path, StorageOp::Patch);
            if partial && matches!(&failure, ToolCallError::Recoverable(_)) {
                env.read_state.require_full_reread(path);
            }
            return Err(failure);
        }
    };
    env.read_state
        .record_patch(path, old_string, new_string, &new_text, &outcome.sha256);
    Ok(patched(
        patch.path,
        &new_text,
        replacements,
        current.sha256,
        outcome.sha256,
    ))
}

/// The checks that need no read of the file: writable, a real change, and a file the agent
/// has read (all of it, when the patch needs all of it). What the agent knows of the file.
fn check_before_reading(
    patch: &Patch<'_>,
    env: &mut WorkspaceToolEnv<'_>,
) -> Result<FileKnowledge, ToolCallError> {
    let Patch {
        path,
        old_string,
        new_string,
        replace_all,
    } = patch;
    if !env.policy.is_writable(path) {
        return Err(env.policy.not_writable_error(path).into());
    }
    if old_string.is_empty() {
        return Err(ToolError::new(
            error_codes::WORKSPACE_PATCH_EMPTY_OLD_STRING,
            "`old_string` is empty. Copy the exact text to replace from the file; to add text at the end, use `workspace_write_file` with `mode: \"append\"`.",
        )
        .into());
    }
    if old_string == new_string {
        return Err(ToolError::new(
            error_codes::WORKSPACE_PATCH_NO_CHANGE,
            "`old_string` and `new_string` are identical, so the patch would change nothing.",
        )
        .into());
    }
    let Some(known) = env.read_state.get(path).cloned() else {
        return Err(ToolError::new(
            error_codes::WORKSPACE_PATCH_REQUIRES_READ,
            format!("Read `{path}` with `workspace_read_file` before patching it."),
        )
        .into());
    };
    if known.reread_required {
        return Err(
            requires_full_read(path, "an earlier patch based on part of it did not apply").into(),
        );
    }
    let partial = !known.full;
    if partial && *replace_all {
        env.read_state.require_full_reread(path);
        return Err(requires_full_read(
            path,
            "`replace_all` needs the whole file and you have read only part of it",
        )
        .into());
    }
    if partial && !known.has_seen(old_string) {
        env.read_state.require_full_reread(path);
        return Err(requires_full_read(
            path,
            "`old_string` is not inside the part of it you have read",
        )
        .into());
    }
    Ok(known)
}

/// `old_string` must occur in the file's `text`, once unless `replace_all`. An agent that read
/// only `partial`ly must read all of it before trying again.
fn check_matches(
    patch: &Patch<'_>,
    env: &mut WorkspaceToolEnv<'_>,
    text: &str,
    partial: bool,
) -> Result<(), ToolCallError> {
    let path = &patch.path;
    let occurrences = count_occurrences(text, patch.old_string);
    let mismatch = |env: &mut WorkspaceToolEnv<'_>, code, what: String, next: [&str; 2]| {
        if partial {
            env.read_state.require_full_reread(path);
        }
        let next = if partial { next[0] } else { next[1] };
        Err(ToolError::new(code, format!("{what} {next}")).into())
    };
    if occurrences == 0 {
        return mismatch(
            env,
            error_codes::WORKSPACE_PATCH_OLD_STRING_NOT_FOUND,
            format!("`old_string` was not found in `{path}`."),
            [
                "Read the whole file with `workspace_read_file` (no range), then copy the text exactly.",
                "It must match exactly, including spaces, line breaks and capitalization; copy it from the file.",
            ],
        );
    }
    if occurrences > 1 && !patch.replace_all {
        return mismatch(
            env,
            error_codes::WORKSPACE_PATCH_OLD_STRING_NOT_UNIQUE,
            format!("`old_string` occurs {occurrences} times in `{path}`."),
            [
                "Read the whole file with `workspace_read_file` (no range), then include more surrounding text so it matches exactly once.",
                "Include more surrounding text so it matches exactly once, or set `replace_all` to true to change every occurrence.",
            ],
        );
    }
    Ok(())
}

/// What the agent is told of an applied patch that left `path` with `new_text`.
fn patched(
    path: WorkspacePath,
    new_text: &str,
    replacements: usize,
    old_sha256: String,
    sha256: String,
) -> ToolSuccess {
    let chars = char_count(new_text);
    let words = word_count(new_text);
    let plural = if replacements == 1 { "" } else { "s" };
    let content = format!(
        "Patched {path} with {replacements} replacement{plural}; the file now has {chars} chars / {words} words."
    );
    let structured = json!({
        "path": path,
        "chars": chars,
        "words": words,
        "oldSha256": old_sha256,
        "sha256": sha256,
        "replacements": replacements,
    });
    ToolSuccess::new(content, structured)
        .with_refs(vec![file_ref(&path)])
        .with_effect(ToolEffect::PatchApplied {
            path,
            chars,
            words,
            old_sha256,
            sha256,
            replacements,
        })
}

fn requires_full_read(path: &WorkspacePath, why: &str) -> ToolError {
    ToolError::new(
        error_codes::WORKSPACE_PATCH_REQUIRES_FULL_READ,
        format!(
            "Read the whole of `{path}` with `workspace_read_file` (no range) before patching it: {why}."
        ),
    )
}

fn stale(path: &WorkspacePath, partial: bool) -> ToolError {
    let how = if partial {
        "Read the whole file again with `workspace_read_file` (no range), then patch."
    } else {
        "Read it again with `workspace_read_file`, then patch."
    };
    ToolError::new(
        error_codes::WORKSPACE_PATCH_STALE_FILE,
        format!("`{path}` changed since you last read it. {how}"),
    )
}

/// Occurrences of `needle` in `haystack`, overlapping ones included, so that `aa` in `aaa` is
/// not mistaken for a unique match.
fn count_occurrences(haystack: &str, needle: &str) -> usize {
    let Some(step) = needle.chars().next().map(char::len_utf8) else {
        return 0;
    };
    let mut count = 0;
    let mut from = 0;
    while let Some(found) = haystack.get(from..).and_then(|rest| rest.find(needle)) {
        count += 1;
        from += found + step;
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn occurrences_include_overlaps() {
        assert_eq!(count_occurrences("aaa", "aa"), 2);
        assert_eq!(count_occurrences("abcabc", "abc"), 2);
        assert_eq!(count_occurrences("abc", "x"), 0);
        assert_eq!(count_occurrences("ééé", "éé"), 2);
        assert_eq!(count_occurrences("abc", ""), 0);
    }
}
