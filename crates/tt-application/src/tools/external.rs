//! The executor of every outside tool (the host's `host/…` tools, MCP servers' `mcp/…` tools;
//! docs/tools.md): sends the call through the `ExternalTools` port under the agent's cancel
//! token, turns what comes back into the agent's result, and keeps a result longer than the
//! inline limit (the tool's, capped by the profile's) in a run file whose head the agent reads. The dispatcher journals the
//! call like any other (arguments, result, events).

use serde_json::{Value, json};
use tt_domain::error_codes;
use tt_domain::ids::RunId;
use tt_domain::text::{char_count, word_count};
use tt_domain::tool::AgentToolSpec;
use tt_domain::tool_model::{ExternalSource, ExternalToolId};
use tt_domain::workspace::{WorkspacePath, WorkspaceRoot, WriteGuard};
use tt_ports::{
    CancellationToken, ExternalToolCall, ExternalToolOutput, ExternalTools, ToolSourceError,
    WorkspaceRepository,
};

use crate::error::{ApplicationError, ToolCallError, ToolError};
use crate::tools::{ToolEffect, ToolSuccess};

/// What an outside tool's call needs of the run.
pub(crate) struct ExternalToolEnv<'a> {
    pub tools: &'a dyn ExternalTools,
    pub workspace: &'a dyn WorkspaceRepository,
    pub run_id: &'a RunId,
    /// The areas the agent can read: a long result is kept where it can read it back.
    pub visible_roots: &'a [WorkspaceRoot],
    /// The profile's `limits.maxInlineToolResultBytes`, which caps each tool's own limit.
    pub profile_inline_limit: Option<u64>,
    pub cancel: CancellationToken,
}

/// Runs one call of `spec`, an outside tool. `call_key` is the call's stable key in the run.
pub(crate) async fn execute(
    env: ExternalToolEnv<'_>,
    spec: &AgentToolSpec,
    arguments: &Value,
    call_key: &str,
) -> Result<ToolSuccess, ToolCallError> {
    let Some(id) = spec.name.external() else {
        return Err(ApplicationError::fatal(
            error_codes::AGENT_TOOL_UNAVAILABLE,
            format!("`{}` is no outside tool", spec.name),
        )
        .into());
    };
    // The dispatcher has checked that the arguments are one object.
    let empty = serde_json::Map::new();
    let arguments = arguments.as_object().unwrap_or(&empty);
    let call = ExternalToolCall {
        run_id: env.run_id,
        tool: id,
        arguments,
        call_key,
    };
    let cancel = env.cancel.clone();
    let output = tokio::select! {
        output = env.tools.call(call, cancel.child_token()) => output,
        () = cancel.cancelled() => return Err(ApplicationError::cancelled().into()),
    };
    let output = output.map_err(|err| {
        if env.cancel.is_cancelled() {
            ToolCallError::Fatal(ApplicationError::cancelled())
        } else {
            ToolCallError::Recoverable(tool_error(err))
        }
    })?;
    let tool_limit = spec.external.as_ref().map_or(
        tt_domain::tool_model::ExternalToolFacts::DEFAULT_INLINE_RESULT_BYTES,
        |facts| facts.max_inline_result_bytes,
    );
    let limit = env
        .profile_inline_limit
        .map_or(tool_limit, |profile| profile.min(tool_limit));
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    if output.text.len() <= limit {
        return Ok(ToolSuccess::new(output.text, output.structured));
    }
    keep_long_result(&env, id, output, limit, call_key).await
}

/// The agent's error for a failed call: the source's message, with a note when the call may
/// have run (so the agent checks before calling again).
fn tool_error(err: ToolSourceError) -> ToolError {
    let message = if err.may_have_run && err.code != error_codes::TOOL_OUTCOME_UNKNOWN {
        format!(
            "{} It may still have taken effect: check before calling it again.",
            err.message.trim_end()
        )
    } else {
        err.message
    };
    ToolError {
        code: err.code,
        message,
        reason: err.reason.map(std::borrow::Cow::Owned),
    }
}

/// The area a long result is kept in: the first of scratch, summaries, plan and output the
/// agent can read.
fn result_root(visible: &[WorkspaceRoot]) -> Option<WorkspaceRoot> {
    [
        WorkspaceRoot::Scratch,
        WorkspaceRoot::Summaries,
        WorkspaceRoot::Plan,
        WorkspaceRoot::Output,
    ]
    .into_iter()
    .find(|root| visible.contains(root))
}

/// Writes a result longer than `limit` bytes to `<area>/tool-results/<tool>-<key>.md` and
/// answers with its head and the path; without an area the agent can read, the head alone,
/// saying how much was left out.
async fn keep_long_result(
    env: &ExternalToolEnv<'_>,
    id: &ExternalToolId,
    output: ExternalToolOutput,
    limit: usize,
    call_key: &str,
) -> Result<ToolSuccess, ToolCallError> {
    let head = head_of(&output.text, limit);
    let total = output.text.len();
    let Some(root) = result_root(env.visible_roots) else {
        let content = format!(
            "{head}\n\n[The result goes on: {total} bytes in all, of which the first {} are shown.]",
            head.len()
        );
        return Ok(ToolSuccess::new(content, output.structured));
    };
    let name = match id.source() {
        ExternalSource::Host { name } => name.replace('.', "-"),
        ExternalSource::Mcp { server, tool } => format!("{server}-{tool}"),
    };
    let name: String = tt_domain::tool_model::provider_safe_name(&name)
        .chars()
        .take(48)
        .collect();
    let key = call_key.strip_prefix("call_").unwrap_or(call_key);
    let key: String = key.chars().take(8).collect();
    let raw = format!("{}/tool-results/{name}-{key}.md", root.name());
    let path = WorkspacePath::parse(&raw).map_err(|err| {
        ApplicationError::fatal(
            err.code,
            format!("a long tool result's path: {}", err.message),
        )
    })?;
    let written = env
        .workspace
        .write(env.run_id, &path, &output.text, &WriteGuard::None)
        .await
        .map_err(ApplicationError::from)?;
    let content = format!(
        "{head}\n\n[The result goes on: {total} bytes in all, kept in `{path}`. Read the rest from there.]"
    );
    let structured = json!({
        "truncated": true,
        "bytes": total,
        "path": path.as_str(),
        "structured": output.structured,
    });
    Ok(ToolSuccess::new(content, structured)
        .with_refs(vec![format!("workspace:{path}")])
        .with_effect(ToolEffect::FileWritten {
            chars: char_count(&output.text),
            words: word_count(&output.text),
            sha256: written.sha256,
            path,
            mode: "replace",
        }))
}

/// The longest prefix of `text` within `limit` bytes that ends on a character boundary, cut
/// back to the last line break when there is one in its second half.
fn head_of(text: &str, limit: usize) -> &str {
    let mut end = limit.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = &text[..end];
    match head.rfind('\n') {
        Some(at) if at >= end / 2 => &head[..at],
        _ => head,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_end_on_characters_and_prefer_line_breaks() {
        assert_eq!(head_of("héllo", 2), "h");
        assert_eq!(head_of("abc\ndef\nghi", 9), "abc\ndef");
        assert_eq!(head_of("abcdefgh\nij", 10), "abcdefgh");
        assert_eq!(head_of("a\nbcdefghij", 9), "a\nbcdefgh");
        assert_eq!(head_of("short", 100), "short");
    }

    #[test]
    fn a_source_error_that_may_have_run_says_so() {
        let err = tool_error(
            ToolSourceError::new(error_codes::MCP_CALL_TIMEOUT, "The call took too long.").sent(),
        );
        assert_eq!(err.code, error_codes::MCP_CALL_TIMEOUT);
        assert!(err.message.contains("may still have taken effect"));
        let plain = tool_error(ToolSourceError::new(error_codes::MCP_TOOL_ERROR, "No."));
        assert_eq!(plain.message, "No.");
    }
}
