//! Tool calls of a resumed agent (docs/resume.md), each stored, answered or run live
//! ([`stored_or_dispatched`]): a call answered from its stored result ([`stored_call`]), the completion events of a stored result the interrupted process did not
//! journal ([`journal_unjournaled_result`]), and, before a call that had started runs again,
//! the workspace put back as it was before it ([`before_live_call`]). Split from `dispatch`,
//! which runs calls live.

use serde_json::Value;
use tt_domain::error_codes::is_model_slip;
use tt_domain::ids::TaskId;
use tt_domain::invocation::ExitPolicy;
use tt_domain::text::sha256_hex;
use tt_domain::tool::{AgentToolCall, ToolName};
use tt_domain::tool_model::{InFlightRule, ToolId};
use tt_ports::RunDocument;

use crate::engine::call_journal::journal_call_result;
use crate::engine::context::RunContext;
use crate::engine::dispatch::{
    DispatchedCall, LoopControl, RoundCall, apply_effect, dispatch_call,
};
use crate::engine::invocation::InvocationRuntime;
use crate::engine::records::call_file_key;
use crate::error::ApplicationResult;
use crate::tools::ToolEffect;

/// The result of a call: stored for a resumed agent (journaled if the process died before
/// that), answered before it runs, or dispatched live.
pub(crate) async fn stored_or_dispatched(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    at: RoundCall<'_>,
) -> ApplicationResult<DispatchedCall> {
    let RoundCall { round, call, .. } = at;
    Ok(match stored_call(inv, round, call) {
        Some(replayed) => {
            journal_unjournaled_result(ctx, inv, round, call, &replayed).await?;
            replayed
        }
        None => match before_live_call(ctx, inv, round, call).await? {
            Some(answered) => answered,
            None => dispatch_call(ctx, inv, at).await?,
        },
    })
}

/// A call of a resumed agent answered from its stored result (docs/resume.md): nothing runs
/// and nothing is journaled, but the agent's session is brought to where the call left it:
/// call budgets (for calls that had started), model-slip count and read-state. `None` when
/// the call has no stored result, or the agent is past its stored steps.
pub(crate) fn stored_call(
    inv: &mut InvocationRuntime,
    round: u32,
    call: &AgentToolCall,
) -> Option<DispatchedCall> {
    // Only a resumed agent has stored calls: nothing is worked out for the others.
    inv.replay.as_ref()?;
    let resolved = resolved_tool(inv, &call.name);
    let ends_loop = resolved.as_ref().is_some_and(|tool| match tool {
        ToolId::Builtin(tool) => tool.facts().ends_loop,
        ToolId::External(_) => false,
    });
    let file_key = call_file_key(&inv.invocation.id, round, &call.id);
    let replay = inv.replay.as_mut()?;
    let result = replay.take_result(&file_key, ends_loop)?;
    let started = replay.was_started(&file_key);
    if started && let Some(tool) = &resolved {
        inv.session.calls_total += 1;
        *inv.session.calls_per_tool.entry(tool.clone()).or_insert(0) += 1;
    }
    match result.error_code.as_deref() {
        Some(code) if is_model_slip(code) => inv.session.consecutive_slips += 1,
        _ => inv.session.consecutive_slips = 0,
    }
    if let Some(ToolId::Builtin(tool)) = resolved {
        inv.session
            .read_state
            .replay(tool, &call.arguments, &result);
    }
    // The results a stored wait delivered: the tool does not run again, so its stored output
    // is all that says which (what it reported live, `ToolEffect::ResultsDelivered`).
    if resolved
        .as_ref()
        .is_some_and(|tool| *tool == ToolName::AgentAwait)
        && !result.is_error
    {
        inv.delivered
            .extend(delivered_by_stored_await(&result.structured));
    }
    Some(DispatchedCall {
        tool: resolved,
        result,
        control: LoopControl::Continue,
    })
}

/// The tool a call's name resolves to for this agent, as the dispatcher resolves it: one it
/// was offered (by id or by the name it sees), or a built-in it was not offered, which a
/// top-level agent is refused and a delegated agent does not know at all.
fn resolved_tool(inv: &InvocationRuntime, name: &str) -> Option<ToolId> {
    let offered = inv
        .snapshot
        .tools
        .iter()
        .find(|spec| spec.model_name == name || spec.name.canonical() == name)
        .map(|spec| spec.name.clone());
    offered.or_else(|| {
        ToolName::from_any(name)
            .filter(|_| inv.invocation.exit_policy != ExitPolicy::TaskReturnRequired)
            .map(ToolId::Builtin)
    })
}

/// The finished results a stored `agent.await` result reported as delivered: its tasks whose
/// status is `completed`, `failed` or `cancelled`.
fn delivered_by_stored_await(structured: &Value) -> impl Iterator<Item = TaskId> + '_ {
    structured
        .get("tasks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|task| {
            matches!(
                task.get("status").and_then(Value::as_str),
                Some("completed" | "failed" | "cancelled")
            )
        })
        .filter_map(|task| task.get("taskId").and_then(Value::as_str))
        .map(TaskId::from_raw)
}

/// The completion events of a replayed call whose result was stored but not journaled before
/// the interruption (`tool_result_stored`, then `tool_call_completed` / `tool_call_failed`,
/// then a write's `workspace_file_written` / `workspace_patch_applied` and checkpoint);
/// nothing for a call the journal already completed.
pub(crate) async fn journal_unjournaled_result(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    round: u32,
    call: &AgentToolCall,
    dispatched: &DispatchedCall,
) -> ApplicationResult<()> {
    let file_key = call_file_key(&inv.invocation.id, round, &call.id);
    if inv
        .replay
        .as_ref()
        .is_none_or(|replay| replay.result_journaled(&file_key))
    {
        return Ok(());
    }
    let result = &dispatched.result;
    let invocation_id = &inv.invocation.id;
    let path = RunDocument::ToolResult {
        call_file_key: file_key,
    }
    .relative_path();
    journal_call_result(ctx, round, invocation_id, (path, None), result, 0).await?;
    // The write's own events and checkpoint came after the result: journal them too.
    apply_effect(ctx, inv, stored_effect(dispatched)).await
}

/// The workspace effect a stored successful write or patch result describes.
fn stored_effect(dispatched: &DispatchedCall) -> ToolEffect {
    let result = &dispatched.result;
    let structured = &result.structured;
    let text = |field: &str| structured.get(field).and_then(Value::as_str);
    let count = |field: &str| {
        structured
            .get(field)
            .and_then(Value::as_u64)
            .and_then(|value| usize::try_from(value).ok())
            .unwrap_or(0)
    };
    let path = text("path").and_then(|path| tt_domain::workspace::WorkspacePath::parse(path).ok());
    let (Some(path), Some(sha256), false) = (path, text("sha256"), result.is_error) else {
        return ToolEffect::None;
    };
    let Some(ToolId::Builtin(tool)) = &dispatched.tool else {
        // An outside tool's long result was kept in a file by the call itself: its stored
        // result names the file, whose write the store already holds.
        return ToolEffect::None;
    };
    // Every built-in is named: a new tool that writes the workspace decides its events here.
    match tool {
        ToolName::WorkspaceWriteFile => ToolEffect::FileWritten {
            path,
            mode: if text("mode") == Some("append") {
                "append"
            } else {
                "replace"
            },
            chars: count("chars"),
            words: count("words"),
            sha256: sha256.to_owned(),
        },
        ToolName::WorkspaceApplyPatch => ToolEffect::PatchApplied {
            path,
            chars: count("chars"),
            words: count("words"),
            old_sha256: text("oldSha256").unwrap_or_default().to_owned(),
            sha256: sha256.to_owned(),
            replacements: count("replacements"),
        },
        ToolName::AgentList
        | ToolName::AgentDelegate
        | ToolName::AgentHandoff
        | ToolName::AgentAwait
        | ToolName::AgentCancelTask
        | ToolName::TaskReturn
        | ToolName::SkillList
        | ToolName::SkillSearch
        | ToolName::SkillRead
        | ToolName::WorkspaceListFiles
        | ToolName::WorkspaceSearchFiles
        | ToolName::WorkspaceReadFile
        | ToolName::WorkspaceCommit
        | ToolName::WorkspaceFinish => ToolEffect::None,
    }
}

/// Before a resumed agent runs live a call that had started but left no result, by its tool's
/// [`InFlightRule`] (docs/resume.md):
/// - `RunAgain` and `EngineHook`: nothing here (the call runs; a hook of its own decides).
/// - `RestoreWorkspace`: puts the workspace back where the call found it when its write is
///   already there, so running it again writes it once and answers as it would have. A
///   `replace` write of the same content is let through (the agent knows the file it wrote);
///   an `append` whose text already ends the file, though the file changed since its last
///   journaled write, is taken back out; so is a patch whose reversal gives back exactly the
///   version the agent knew.
/// - `OutcomeUnknown` (an outside tool not declared idempotent): the call is never sent again
///   by itself. Unless a person approves each call of it (who is then asked again, told it
///   may have run), it is answered here with `tool.outcome_unknown`, and `Some` is that
///   answer.
pub(crate) async fn before_live_call(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    round: u32,
    call: &AgentToolCall,
) -> ApplicationResult<Option<DispatchedCall>> {
    let Some(replay) = inv.replay.as_ref() else {
        return Ok(None);
    };
    let file_key = call_file_key(&inv.invocation.id, round, &call.id);
    if !replay.was_started(&file_key) {
        return Ok(None);
    }
    let Some(spec) = inv
        .snapshot
        .tools
        .iter()
        .find(|spec| spec.model_name == call.name || spec.name.canonical() == call.name)
        .cloned()
    else {
        return Ok(None);
    };
    match spec.facts().in_flight {
        InFlightRule::RunAgain | InFlightRule::EngineHook => Ok(None),
        InFlightRule::RestoreWorkspace => {
            match spec.name {
                ToolId::Builtin(ToolName::WorkspaceWriteFile) => {
                    restore_before_write(ctx, inv, call).await?
                }
                ToolId::Builtin(ToolName::WorkspaceApplyPatch) => {
                    restore_before_patch(ctx, inv, call).await?
                }
                // Only the two writes restore; a new one says how here.
                _ => {}
            }
            Ok(None)
        }
        InFlightRule::OutcomeUnknown => {
            if crate::engine::approval_gate::asks_before(inv, &spec, call) {
                return Ok(None);
            }
            answer_outcome_unknown(ctx, inv, round, &spec, call, file_key)
                .await
                .map(Some)
        }
    }
}

/// Answers a started outside call that left no result without sending it again: the agent
/// reads that it may have run (`tool.outcome_unknown`), journaled as the call's end.
async fn answer_outcome_unknown(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    round: u32,
    spec: &tt_domain::tool::AgentToolSpec,
    call: &AgentToolCall,
    file_key: String,
) -> ApplicationResult<DispatchedCall> {
    let err = crate::error::ToolError::new(
        tt_domain::error_codes::TOOL_OUTCOME_UNKNOWN,
        format!(
            "Your `{}` call was sent before the work stopped and no answer came back: it may or may not have taken effect. Check before calling it again.",
            spec.model_name
        ),
    );
    let result = crate::engine::call_checks::error_result(&call.id, spec.name.canonical(), &err);
    let document = RunDocument::ToolResult {
        call_file_key: file_key,
    };
    let write = tt_ports::RunWrite::Document {
        document: document.clone(),
        body: tt_ports::SerializedDocument::new(&result)?,
    };
    crate::engine::held_writes::flush(ctx, inv).await?;
    journal_call_result(
        ctx,
        round,
        &inv.invocation.id,
        (document.relative_path(), Some(write)),
        &result,
        0,
    )
    .await?;
    inv.session.consecutive_slips = 0;
    Ok(DispatchedCall {
        tool: Some(spec.name.clone()),
        result,
        control: LoopControl::Continue,
    })
}

/// How many places a reversed patch is tried at, at most.
const MAX_PATCH_REVERSALS: usize = 1_000;

/// The file as it was before a patch that already reached it: the patch's `new_string` put
/// back to `old_string` (everywhere for `replace_all`, else at the one place whose reversal
/// hashes to `before`, the version the agent patched). `None` when no reversal gives `before`.
fn unpatched(
    text: &str,
    old_string: &str,
    new_string: &str,
    replace_all: bool,
    before: &str,
) -> Option<String> {
    if new_string.is_empty() {
        return None;
    }
    let matches_before = |candidate: &String| sha256_hex(candidate.as_bytes()) == before;
    if replace_all {
        return Some(text.replace(new_string, old_string)).filter(matches_before);
    }
    text.match_indices(new_string)
        .take(MAX_PATCH_REVERSALS)
        .map(|(at, _)| {
            let mut candidate = String::with_capacity(text.len() + old_string.len());
            candidate.push_str(&text[..at]);
            candidate.push_str(old_string);
            candidate.push_str(&text[at + new_string.len()..]);
            candidate
        })
        .find(matches_before)
}

async fn restore_before_patch(
    ctx: &RunContext,
    inv: &InvocationRuntime,
    call: &AgentToolCall,
) -> ApplicationResult<()> {
    let text = |field: &str| call.arguments.get(field).and_then(Value::as_str);
    let (Some(raw_path), Some(old_string), Some(new_string)) =
        (text("path"), text("old_string"), text("new_string"))
    else {
        return Ok(());
    };
    let replace_all = call.arguments.get("replace_all").and_then(Value::as_bool) == Some(true);
    let Ok(path) = tt_domain::workspace::WorkspacePath::parse(raw_path) else {
        return Ok(());
    };
    let Some(before) = inv.session.read_state.known_version(&path) else {
        return Ok(());
    };
    let Ok(current) = ctx.services.workspace.read(&ctx.run_id, &path).await else {
        return Ok(());
    };
    if current.sha256 == before {
        return Ok(());
    }
    if let Some(original) = unpatched(&current.text, old_string, new_string, replace_all, before) {
        ctx.services
            .workspace
            .write(
                &ctx.run_id,
                &path,
                &original,
                &tt_domain::workspace::WriteGuard::MustMatchSha256(current.sha256.clone()),
            )
            .await?;
    }
    Ok(())
}

async fn restore_before_write(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    call: &AgentToolCall,
) -> ApplicationResult<()> {
    let Some(replay) = inv.replay.as_ref() else {
        return Ok(());
    };
    let (Some(raw_path), Some(content)) = (
        call.arguments.get("path").and_then(Value::as_str),
        call.arguments.get("content").and_then(Value::as_str),
    ) else {
        return Ok(());
    };
    let Ok(path) = tt_domain::workspace::WorkspacePath::parse(raw_path) else {
        return Ok(());
    };
    let last_written = replay.last_written(&path).map(str::to_owned);
    let current = match ctx.services.workspace.read(&ctx.run_id, &path).await {
        Ok(file) => file,
        Err(_) => return Ok(()),
    };
    let append = call.arguments.get("mode").and_then(Value::as_str) == Some("append");
    if !append {
        if current.sha256 == sha256_hex(content.as_bytes()) {
            inv.session.read_state.know_written(&path, &current.sha256);
        }
        return Ok(());
    }
    if last_written.as_deref() != Some(current.sha256.as_str())
        && let Some(before) = current.text.strip_suffix(content)
    {
        ctx.services
            .workspace
            .write(
                &ctx.run_id,
                &path,
                before,
                &tt_domain::workspace::WriteGuard::MustMatchSha256(current.sha256.clone()),
            )
            .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_that_reached_the_file_is_reversed_only_to_the_version_it_patched() {
        let before = "one two one\n";
        let sha = sha256_hex(before.as_bytes());
        // The second `one` was patched: only its reversal gives the version the agent knew.
        let after = "one two three\n";
        assert_eq!(
            unpatched(after, "one", "three", false, &sha).as_deref(),
            Some(before)
        );
        // `new_string` also occurs elsewhere: the reversal that hashes right is chosen.
        let before = "b a\n";
        let after = "b b\n";
        let sha = sha256_hex(before.as_bytes());
        assert_eq!(
            unpatched(after, "a", "b", false, &sha).as_deref(),
            Some(before)
        );
        let all_before = "x y x\n";
        assert_eq!(
            unpatched(
                "z y z\n",
                "x",
                "z",
                true,
                &sha256_hex(all_before.as_bytes())
            )
            .as_deref(),
            Some(all_before)
        );
        // No reversal gives that version (someone else changed the file): left alone.
        assert_eq!(unpatched("q y z\n", "x", "z", false, &sha), None);
        // A deletion cannot be placed back.
        assert_eq!(unpatched("y\n", "x ", "", false, &sha), None);
    }
}
