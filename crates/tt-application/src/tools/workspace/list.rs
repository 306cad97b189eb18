//! `workspace.list_files {path?, depth?}`: files and folders under a visible path, filtered to
//! the agent's visible roots, one path per line with folders ending in `/`.

use serde_json::{Value, json};
use tt_domain::error_codes;
use tt_domain::workspace::{EntryKind, WorkspacePath};
use tt_ports::{StorageError, WorkspaceEntry};

use super::env::{
    DEFAULT_LIST_DEPTH, MAX_LIST_DEPTH, MAX_LIST_ENTRIES, StorageOp, WorkspaceToolEnv,
    storage_failure,
};
use crate::error::{ToolCallError, ToolError};
use crate::tools::ToolSuccess;
use crate::tools::args::Args;

pub(super) async fn list_files(
    args: &Value,
    env: WorkspaceToolEnv<'_>,
) -> Result<ToolSuccess, ToolCallError> {
    let args = Args::parse(args, &["path", "depth"])?;
    let path = list_path(args.opt_str("path")?)?;
    let depth = list_depth(args.opt_i64("depth")?)?;
    if let Some(path) = &path
        && !env.policy.is_visible(path)
    {
        return Err(env.policy.not_visible_error(path).into());
    }

    let entries = match (env.repo.list(env.run_id, path.as_ref(), depth).await, &path) {
        (Ok(entries), _) => entries,
        // Listing a file answers with the file itself: it exists and is a file.
        (Err(StorageError::NotADirectory { .. }), Some(file)) => vec![WorkspaceEntry {
            path: file.clone(),
            kind: EntryKind::File,
        }],
        (Err(err), Some(path)) => return Err(storage_failure(err, path, StorageOp::List)),
        // The workspace root always exists; failing to list it is a storage fault.
        (Err(err), None) => return Err(ToolCallError::from(err)),
    };
    Ok(render(entries, env))
}

fn render(entries: Vec<WorkspaceEntry>, env: WorkspaceToolEnv<'_>) -> ToolSuccess {
    let mut visible: Vec<WorkspaceEntry> = entries
        .into_iter()
        .filter(|entry| env.policy.is_visible(&entry.path))
        .collect();
    let truncated = visible.len() > MAX_LIST_ENTRIES;
    visible.truncate(MAX_LIST_ENTRIES);

    let mut content = if visible.is_empty() {
        "No visible workspace files found.".to_owned()
    } else {
        visible
            .iter()
            .map(|entry| match entry.kind {
                EntryKind::Directory => format!("{}/", entry.path),
                EntryKind::File => entry.path.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    if truncated {
        content.push_str(&format!(
            "\n(Only the first {MAX_LIST_ENTRIES} entries are shown. List a narrower folder or use a smaller depth to see the rest.)"
        ));
    }
    let structured = json!({
        "entries": visible
            .iter()
            .map(|entry| json!({"path": entry.path, "kind": entry.kind}))
            .collect::<Vec<_>>(),
        "truncated": truncated,
    });
    ToolSuccess::new(content, structured)
}

/// An omitted, empty, `.` or `./` path is the workspace root (`None`).
fn list_path(raw: Option<&str>) -> Result<Option<WorkspacePath>, ToolError> {
    match raw.map(str::trim) {
        None | Some("" | "." | "./") => Ok(None),
        Some(raw) => Ok(Some(WorkspacePath::parse(raw)?)),
    }
}

fn list_depth(raw: Option<i64>) -> Result<u32, ToolError> {
    let Some(depth) = raw else {
        return Ok(DEFAULT_LIST_DEPTH);
    };
    if depth < 1 {
        return Err(ToolError::invalid_arguments(format!(
            "`depth` must be at least 1 (got {depth})."
        )));
    }
    match u32::try_from(depth) {
        Ok(depth) if depth <= MAX_LIST_DEPTH => Ok(depth),
        _ => Err(ToolError::new(
            error_codes::WORKSPACE_LIST_DEPTH_TOO_LARGE,
            format!(
                "`depth` can be at most {MAX_LIST_DEPTH} (got {depth}). List a subfolder to see deeper files."
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_dot_paths_mean_the_workspace_root() {
        for raw in [None, Some(""), Some("."), Some("./"), Some("  ")] {
            assert_eq!(list_path(raw).unwrap(), None, "{raw:?}");
        }
        assert_eq!(
            list_path(Some("output/./drafts"))
                .unwrap()
                .unwrap()
                .as_str(),
            "output/drafts"
        );
        assert_eq!(
            list_path(Some("../x")).unwrap_err().code,
            "workspace.invalid_path"
        );
    }

    #[test]
    fn depth_defaults_and_bounds() {
        crate::tools::workspace::testing::assert_parsed(
            list_depth,
            &[
                (None, Ok(2)),
                (Some(1), Ok(1)),
                (Some(4), Ok(4)),
                (Some(5), Err("workspace.list_depth_too_large")),
                (Some(i64::MAX), Err("workspace.list_depth_too_large")),
                (Some(0), Err("tool.invalid_arguments")),
                (Some(-3), Err("tool.invalid_arguments")),
            ],
        );
    }
}
