//! Argument parsing for `workspace.commit` and `workspace.finish`. The tool loop drives what
//! they do (host commit handshake, run finish); this module only turns model input into typed,
//! validated arguments with the contract's error codes.

use serde_json::Value;
use tt_domain::error_codes;
use tt_domain::workspace::{WorkspaceAccessPolicy, WorkspacePath};

use crate::error::ToolError;
use crate::tools::args::Args;

/// How a commit publishes the file: replace the reply, or append to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CommitMode {
    Replace,
    Append,
}

impl CommitMode {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            CommitMode::Replace => "replace",
            CommitMode::Append => "append",
        }
    }
}

/// Validated `workspace.commit` arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommitArgs {
    pub path: WorkspacePath,
    pub mode: CommitMode,
    pub reason: Option<String>,
}

/// Parses `{path?, mode?, reason?}`. A missing or blank `path` means `default_path` (the
/// profile's message body); the path must be visible, not necessarily writable. Codes:
/// `tool.invalid_arguments` (shape, unknown keys), `workspace.invalid_path`,
/// `workspace.path_not_visible`, `workspace.commit_mode_invalid`.
pub(crate) fn parse_commit_args(
    args: &Value,
    default_path: &WorkspacePath,
    policy: &WorkspaceAccessPolicy,
) -> Result<CommitArgs, ToolError> {
    let args = Args::parse(args, &["path", "mode", "reason"])?;
    let path = match args.opt_str("path")?.filter(|raw| !raw.trim().is_empty()) {
        Some(raw) => WorkspacePath::parse(raw)?,
        None => default_path.clone(),
    };
    if !policy.is_visible(&path) {
        return Err(policy.not_visible_error(&path).into());
    }
    let mode = match args.opt_str("mode")? {
        None | Some("replace") => CommitMode::Replace,
        Some("append") => CommitMode::Append,
        Some(other) => {
            return Err(ToolError::new(
                error_codes::WORKSPACE_COMMIT_MODE_INVALID,
                format!(
                    "`{}` is not a commit mode. Use `replace` (the default) or `append`.",
                    short(other)
                ),
            ));
        }
    };
    Ok(CommitArgs {
        path,
        mode,
        reason: optional_text(&args)?,
    })
}

/// Validated `workspace.finish` arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FinishArgs {
    pub reason: Option<String>,
}

/// Parses `{reason?}`; unknown keys or a non-string reason are `tool.invalid_arguments`.
pub(crate) fn parse_finish_args(args: &Value) -> Result<FinishArgs, ToolError> {
    let args = Args::parse(args, &["reason"])?;
    Ok(FinishArgs {
        reason: optional_text(&args)?,
    })
}

/// `reason`, trimmed; blank means absent.
fn optional_text(args: &Args<'_>) -> Result<Option<String>, ToolError> {
    Ok(args
        .opt_str("reason")?
        .map(str::trim)
        .filter(|reason| !reason.is_empty())
        .map(str::to_owned))
}

/// Echoes model input in a message without letting a huge value flood it.
pub(super) fn short(raw: &str) -> String {
    const LIMIT: usize = 60;
    let (head, cut) = tt_domain::text::truncate_chars(raw, LIMIT);
    if cut {
        format!("{head}…")
    } else {
        head.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tt_domain::workspace::WorkspaceRoot;

    fn body() -> WorkspacePath {
        WorkspacePath::parse("output/main.md").unwrap()
    }

    #[test]
    fn commit_defaults_to_message_body_and_replace() {
        let parsed =
            parse_commit_args(&json!({}), &body(), &WorkspaceAccessPolicy::full()).unwrap();
        assert_eq!(
            parsed,
            CommitArgs {
                path: body(),
                mode: CommitMode::Replace,
                reason: None
            }
        );
        let parsed = parse_commit_args(
            &json!({"path": "  ", "mode": "append", "reason": "  final  "}),
            &body(),
            &WorkspaceAccessPolicy::full(),
        )
        .unwrap();
        assert_eq!(parsed.path, body());
        assert_eq!(parsed.mode.as_str(), "append");
        assert_eq!(parsed.reason.as_deref(), Some("final"));
    }

    #[test]
    fn commit_path_must_be_visible_but_not_writable() {
        let policy =
            WorkspaceAccessPolicy::new(vec![WorkspaceRoot::Output, WorkspaceRoot::Scratch], vec![]);
        let parsed =
            parse_commit_args(&json!({"path": "output/./draft.md"}), &body(), &policy).unwrap();
        assert_eq!(parsed.path.as_str(), "output/draft.md");
        let err = parse_commit_args(&json!({"path": "plan/x.md"}), &body(), &policy).unwrap_err();
        assert_eq!(err.code, "workspace.path_not_visible");
        let err = parse_commit_args(&json!({"path": "input/x.md"}), &body(), &policy).unwrap_err();
        assert_eq!(err.code, "workspace.path_not_visible");
    }

    #[test]
    fn commit_errors_carry_contract_codes() {
        let full = WorkspaceAccessPolicy::full();
        let code = |args: Value| parse_commit_args(&args, &body(), &full).unwrap_err().code;
        assert_eq!(code(json!({"path": "../x"})), "workspace.invalid_path");
        assert_eq!(
            code(json!({"mode": "merge"})),
            "workspace.commit_mode_invalid"
        );
        assert_eq!(code(json!({"mode": 3})), "tool.invalid_arguments");
        assert_eq!(code(json!({"messageId": "m"})), "tool.invalid_arguments");
        assert_eq!(code(json!("output/main.md")), "tool.invalid_arguments");
    }

    #[test]
    fn finish_accepts_only_a_reason() {
        assert_eq!(parse_finish_args(&json!({})).unwrap().reason, None);
        assert_eq!(
            parse_finish_args(&json!({"reason": "done"}))
                .unwrap()
                .reason
                .as_deref(),
            Some("done")
        );
        assert_eq!(
            parse_finish_args(&json!({"force": true})).unwrap_err().code,
            "tool.invalid_arguments"
        );
        assert_eq!(
            parse_finish_args(&json!({"reason": 1})).unwrap_err().code,
            "tool.invalid_arguments"
        );
    }
}
