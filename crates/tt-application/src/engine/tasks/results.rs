//! Reading delegated results back for the agent that delegated them: capsule entries from task
//! records and their result documents, the `agent.await` task views, and the automatic
//! injection of results the agent has not seen yet.

use serde_json::{Value, json};
use tt_domain::error_codes;
use tt_domain::event::RunEventType;
use tt_domain::ids::{InvocationId, TaskId};
use tt_domain::task::{AgentTaskRecord, TaskContinuation, TaskStatus};
use tt_domain::tool::ToolName;
use tt_ports::RunDocument;

use crate::delegation::failure_text::failure_for_reader;
use crate::delegation::rendering::{CapsuleEntry, ReaderState, render_injected_results};
use crate::engine::context::{RunContext, RunScheduler};
use crate::engine::invocation::InvocationRuntime;
use crate::error::{ApplicationError, ApplicationResult};
use crate::journal_read::JournalPages;

/// The two fields of a result document a capsule shows; the rest (the runtime's ids, the
/// summary's file) is skipped unparsed.
#[derive(serde::Deserialize)]
struct ResultHead {
    #[serde(default)]
    summary: Option<Value>,
    #[serde(default)]
    result: Option<Value>,
}

/// The result document of a task, if it returned one, read as its [`ResultHead`]: what a
/// capsule entry needs, without building the whole document. An unreadable document, or one
/// that is not a JSON object, is fatal.
async fn result_head(
    ctx: &RunContext,
    task: &AgentTaskRecord,
) -> ApplicationResult<Option<ResultHead>> {
    if task.result_ref.is_none() {
        return Ok(None);
    }
    let invalid = |message: String| {
        ApplicationError::fatal(
            error_codes::AGENT_AWAIT_RESULT_INVALID,
            format!("result of task {}: {message}", task.id),
        )
    };
    let document = ctx
        .services
        .runs
        .read_serialized_document(
            &ctx.run_id,
            &RunDocument::AgentResult(task.child_invocation_id.clone()),
        )
        .await
        .map_err(|err| invalid(err.to_string()))?;
    let Some(document) = document else {
        return Ok(None);
    };
    if !document.as_str().starts_with('{') {
        return Err(ApplicationError::fatal(
            error_codes::AGENT_AWAIT_RESULT_INVALID,
            format!("result of task {} is not a JSON object", task.id),
        ));
    }
    serde_json::from_str(document.as_str())
        .map(Some)
        .map_err(|err| invalid(err.to_string()))
}

/// A capsule entry for a task (a waiting one shows its place in `scheduler`'s line).
pub(crate) async fn capsule_entry(
    ctx: &RunContext,
    scheduler: &RunScheduler,
    task: &AgentTaskRecord,
) -> ApplicationResult<CapsuleEntry> {
    let kept = match task.result_ref {
        Some(_) => ctx.take_returned(&task.child_invocation_id),
        None => None,
    };
    let (summary, result) = match kept {
        Some(kept) => (Some(kept.summary), Some(kept.result)),
        None => match result_head(ctx, task).await? {
            Some(head) => (
                head.summary.and_then(|summary| match summary {
                    Value::String(text) => Some(text),
                    _ => None,
                }),
                head.result,
            ),
            None => (None, None),
        },
    };
    Ok(CapsuleEntry {
        agent_id: task.target_profile_id.to_string(),
        task_id: task.id.to_string(),
        status: task.status,
        // A failure reads as its class; a stop keeps its reason (written for agents).
        error: match task.status {
            TaskStatus::Failed => task.error.as_deref().map(failure_for_reader),
            _ => task.error.clone(),
        },
        summary,
        result,
        // A task stopped before it could return (cancelled, or past its token budget): what it
        // wrote is all there is of its work.
        written: if stopped_early(task) {
            Some(written_in_sub_tree(ctx, task).await?)
        } else {
            None
        },
        queue_position: match task.status {
            TaskStatus::Queued => scheduler.queue_position(task),
            _ => None,
        },
    })
}

/// Cancelled, or ended by its token budget.
fn stopped_early(task: &AgentTaskRecord) -> bool {
    task.status == TaskStatus::Cancelled
        || (task.status == TaskStatus::Failed
            && task
                .error
                .as_deref()
                .and_then(tt_domain::error::split_error_code)
                .is_some_and(|(code, _)| code == error_codes::AGENT_TASK_BUDGET_EXHAUSTED))
}

/// What a stopped task's agent wrote, then what the agents of the tasks it delegated (at any
/// depth, in registration order) wrote: they were stopped with it, so this is where the
/// partial work of the whole branch shows. A plain worker costs one indexed lookup more.
async fn written_in_sub_tree(
    ctx: &RunContext,
    task: &AgentTaskRecord,
) -> ApplicationResult<Vec<String>> {
    let mut paths = written_by(ctx, &task.child_invocation_id).await?;
    let mut seen = std::collections::HashSet::from([task.child_invocation_id.clone()]);
    let mut frontier = std::collections::VecDeque::from([task.child_invocation_id.clone()]);
    while let Some(parent) = frontier.pop_front() {
        let delegated = ctx
            .services
            .invocations
            .list_tasks_by_parent(&ctx.run_id, &parent)
            .await?;
        for below in delegated {
            if below.continuation != TaskContinuation::ReturnToParent
                || !seen.insert(below.child_invocation_id.clone())
            {
                continue;
            }
            for path in written_by(ctx, &below.child_invocation_id).await? {
                if !paths.contains(&path) {
                    paths.push(path);
                }
            }
            frontier.push_back(below.child_invocation_id);
        }
    }
    Ok(paths)
}

/// The workspace files an agent wrote or patched, in first-write order, from its journal
/// events. Read only for a stopped task, when its capsule is rendered.
pub(crate) async fn written_by(
    ctx: &RunContext,
    invocation: &InvocationId,
) -> ApplicationResult<Vec<String>> {
    let mut paths: Vec<String> = Vec::new();
    let mut pages = JournalPages::new(ctx.services.journal.as_ref(), &ctx.run_id)
        .of_invocation(invocation.to_string());
    while let Some(page) = pages.next().await? {
        for event in &page {
            let wrote = matches!(
                event.event_type,
                RunEventType::WorkspaceFileWritten | RunEventType::WorkspacePatchApplied
            );
            if wrote
                && event.payload.get("invocationId").and_then(Value::as_str)
                    == Some(invocation.as_str())
                && let Some(path) = event.payload.get("path").and_then(Value::as_str)
                && !paths.iter().any(|seen| seen == path)
            {
                paths.push(path.to_owned());
            }
        }
    }
    Ok(paths)
}

/// `AwaitTaskView` of a task: status, error and the useful parts of its result.
pub(crate) fn await_view(entry: &CapsuleEntry) -> Value {
    let mut view = json!({"taskId": entry.task_id, "agentId": entry.agent_id, "status": entry.status.as_str()});
    if let Some(error) = &entry.error {
        view["error"] = json!(error);
    }
    if let Some(summary) = &entry.summary {
        view["summary"] = json!(summary);
    }
    if let Some(position) = entry.queue_position {
        view["queuePosition"] = json!(position);
    }
    if let Some(result) = &entry.result {
        for key in [
            "confidence",
            "artifacts",
            "findings",
            "warnings",
            "suggestedNextActions",
        ] {
            if let Some(value) = result.get(key).filter(|value| !value.is_null()) {
                view[key] = value.clone();
            }
        }
        if let Some(questions) = result
            .get("questionsForCaller")
            .or_else(|| result.get("questionsForParent"))
            .filter(|v| !v.is_null())
        {
            view["questionsForCaller"] = questions.clone();
        }
    }
    view
}

/// What the reading agent can do next, for the continuation hint.
pub(crate) fn reader_state(ctx: &RunContext, inv: &InvocationRuntime) -> ReaderState {
    let offered = |tool: ToolName| {
        inv.snapshot
            .offers(tool)
            .then(|| tool.model_alias().to_owned())
    };
    ReaderState {
        foreground: inv.snapshot.presentation == tt_domain::run::Presentation::Foreground,
        commit_tool: offered(ToolName::WorkspaceCommit),
        finish_tool: offered(ToolName::WorkspaceFinish),
        commit_count: ctx.commit_count(),
    }
}

/// The tasks this agent delegated, in creation order.
pub(crate) async fn delegated_by(
    ctx: &RunContext,
    inv: &InvocationRuntime,
) -> ApplicationResult<Vec<AgentTaskRecord>> {
    let mut tasks: Vec<AgentTaskRecord> = ctx
        .services
        .invocations
        .list_tasks_by_parent(&ctx.run_id, &inv.invocation.id)
        .await?
        .into_iter()
        .filter(|task| task.continuation == TaskContinuation::ReturnToParent)
        .collect();
    // Delegation order: `creationSeq`, the run's registration number, breaks the ties of tasks
    // delegated in the same millisecond. Records written before it existed carry 0 there: a
    // waiting one then sorts by its place in the line, after the tasks that started (which
    // were delegated before it).
    // Each key is computed once: a queue position is a lookup in the scheduler's line.
    // A task still `queued` but not in the line was admitted and is starting: it sorts with
    // the started ones (its record turns `running` a moment later).
    tasks.sort_by_cached_key(|task| {
        let rank = match task.status {
            TaskStatus::Queued => inv.scheduler.queue_position(task).unwrap_or(0),
            _ => 0,
        };
        (task.creation_seq, task.created_at, rank, task.id.clone())
    });
    Ok(tasks)
}

/// The message to add after a tool round: finished results this agent has not seen yet, or
/// `None`. Marks them delivered.
pub(crate) async fn take_injection(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
) -> ApplicationResult<Option<String>> {
    let fresh: Vec<AgentTaskRecord> = delegated_by(ctx, inv)
        .await?
        .into_iter()
        .filter(|task| task.status.is_terminal() && !inv.delivered.contains(&task.id))
        .collect();
    if fresh.is_empty() {
        return Ok(None);
    }
    let mut entries = Vec::with_capacity(fresh.len());
    for task in &fresh {
        entries.push(capsule_entry(ctx, &inv.scheduler, task).await?);
    }
    let task_ids: Vec<TaskId> = fresh.into_iter().map(|task| task.id).collect();
    let injected = tt_domain::event_payload::AgentResultsInjected {
        invocation_id: inv.invocation.id.clone(),
        task_count: task_ids.len() as u64,
        task_ids: task_ids.clone(),
    };
    ctx.events
        .record(&ctx.run_id, tt_domain::event::EventLevel::Info, &injected)
        .await?;
    inv.delivered.extend(task_ids);
    Ok(Some(render_injected_results(
        &entries,
        &reader_state(ctx, inv),
    )))
}

/// The injection a resumed agent had after a replayed round: the results of `tasks` rendered
/// again (their records are final) as they were when the run had `commits` confirmed
/// commits, marked delivered, not journaled again.
pub(crate) async fn replay_injection(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    tasks: &[TaskId],
    commits: usize,
) -> ApplicationResult<Option<String>> {
    if tasks.is_empty() {
        return Ok(None);
    }
    let mut entries = Vec::with_capacity(tasks.len());
    for task_id in tasks {
        let task = ctx
            .services
            .invocations
            .load_task(&ctx.run_id, task_id)
            .await?;
        entries.push(capsule_entry(ctx, &inv.scheduler, &task).await?);
    }
    inv.delivered.extend(tasks.iter().cloned());
    let reader = ReaderState {
        commit_count: commits,
        ..reader_state(ctx, inv)
    };
    Ok(Some(render_injected_results(&entries, &reader)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_head_reads_the_summary_and_the_result_and_skips_the_rest() {
        let head: ResultHead = serde_json::from_str(
            r#"{"schemaVersion":1,"summary":"Done.","result":{"findings":[1]},"runtime":{"taskId":"t"}}"#,
        )
        .unwrap();
        assert_eq!(head.summary, Some(Value::String("Done.".into())));
        assert_eq!(head.result, Some(json!({"findings": [1]})));
        let bare: ResultHead = serde_json::from_str(r#"{"summary":3}"#).unwrap();
        assert_eq!((bare.summary, bare.result), (Some(json!(3)), None));
    }
}
