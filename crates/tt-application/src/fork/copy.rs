//! Building a branch: the source's journal up to the cut copied into a new run of the same
//! chat, the records that journal names (stored model responses, tool arguments and results,
//! agent results, invocations and tasks with their status at the cut), and the workspace as the
//! source's checkpoints held it then. The branch is left `interrupted` at the cut, exactly as a
//! run whose process died there, so the resume path continues it.

use serde_json::{Value, json};
use std::sync::Arc;
use tt_domain::error_codes;
use tt_domain::event::{AgentRunEvent, EventLevel, NewRunEvent, RunEventType};
use tt_domain::event_payload as payload;
use tt_domain::ids::{EventId, InvocationId, RunId};
use tt_domain::invocation::InvocationStatus;
use tt_domain::run::{AgentRun, AgentRunStatus, ForkedFrom};
use tt_domain::task::TaskStatus;
use tt_domain::workspace::{WorkspacePath, WriteGuard};
use tt_ports::RunDocument;

use super::CutState;
use crate::error::{ApplicationError, ApplicationResult};
use crate::events::EventSink;
use crate::services::RuntimeServices;

/// What a task or agent left unfinished at the cut says in its record.
const CUT_MESSAGE: &str = "the run was branched before this finished; the branch continues it";

fn unavailable(message: String) -> ApplicationError {
    ApplicationError::fatal(error_codes::AGENT_FORK_SOURCE_UNAVAILABLE, message)
}

/// Copies the source's events `1..=cut` into `branch`: same types, payloads and times, fresh
/// event ids, the branch's run id where a payload names the source's, and `forkedFrom` on
/// `run_created`. The store must give each copy the seq it had in the source.
pub(crate) async fn copy_events(
    services: &RuntimeServices,
    events: &[AgentRunEvent],
    branch: &AgentRun,
    forked_from: &ForkedFrom,
) -> ApplicationResult<()> {
    for event in events
        .iter()
        .take_while(|event| event.seq <= forked_from.seq)
    {
        let event_type = event.event_type.clone();
        if !event_type.is_known() {
            return Err(unavailable(format!(
                "event {} of run {} has a type this runtime does not know (`{}`)",
                event.seq, forked_from.run_id, event.event_type
            )));
        };
        let mut payload = event.payload.clone();
        if let Some(object) = payload.as_object_mut() {
            if object.get("runId").and_then(Value::as_str) == Some(forked_from.run_id.as_str()) {
                object.insert("runId".to_owned(), json!(branch.id));
            }
            if event_type == RunEventType::RunCreated {
                object.insert("forkedFrom".to_owned(), json!(forked_from));
            }
        }
        let stored = services
            .journal
            .append(NewRunEvent {
                id: EventId::generate(services.ids.next_token()),
                run_id: branch.id.clone(),
                timestamp: event.timestamp,
                level: event.level,
                event_type,
                payload: payload.into(),
            })
            .await?;
        if stored.seq != event.seq {
            return Err(ApplicationError::fatal(
                error_codes::AGENT_INTERNAL_ERROR,
                format!(
                    "the branch's copy of event {} was journaled as {}",
                    event.seq, stored.seq
                ),
            ));
        }
    }
    Ok(())
}

/// Writes the branch's id over every `runId` in `value` that names the source.
fn rename_run(value: &mut Value, source: &RunId, branch: &RunId) {
    match value {
        Value::Object(object) => {
            for (key, item) in object.iter_mut() {
                if key == "runId" && item.as_str() == Some(source.as_str()) {
                    *item = json!(branch);
                } else {
                    rename_run(item, source, branch);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                rename_run(item, source, branch);
            }
        }
        _ => {}
    }
}

async fn copy_document(
    services: &RuntimeServices,
    source: &RunId,
    branch: &RunId,
    document: &RunDocument,
) -> ApplicationResult<Option<Value>> {
    let Some(mut value) = services.runs.read_document(source, document).await? else {
        return Ok(None);
    };
    rename_run(&mut value, source, branch);
    services
        .runs
        .write_document(branch, document, &value)
        .await?;
    Ok(Some(value))
}

/// Replaces the user's request (the last user message of the run's input) in the branch's
/// copy of `input/prompt_snapshot.json`; appends it when the input has none.
pub(crate) async fn edit_user_request(
    services: &RuntimeServices,
    branch: &RunId,
    text: &str,
) -> ApplicationResult<()> {
    use crate::prompt_input::{PromptMessage, PromptRole, PromptSnapshot};
    let document = RunDocument::PromptSnapshot;
    let Some(value) = services.runs.read_document(branch, &document).await? else {
        return Err(ApplicationError::fatal(
            error_codes::AGENT_FORK_SOURCE_UNAVAILABLE,
            "the source run has no input/prompt_snapshot.json to edit",
        ));
    };
    let mut snapshot: PromptSnapshot = serde_json::from_value(value).map_err(|err| {
        ApplicationError::fatal(
            error_codes::AGENT_FORK_SOURCE_UNAVAILABLE,
            format!("the source run's input/prompt_snapshot.json is unreadable: {err}"),
        )
    })?;
    match snapshot
        .messages
        .iter_mut()
        .rev()
        .find(|message| message.role == PromptRole::User)
    {
        Some(message) => message.content = text.to_owned(),
        None => snapshot.messages.push(PromptMessage {
            role: PromptRole::User,
            content: text.to_owned(),
        }),
    }
    let value = serde_json::to_value(&snapshot).map_err(|err| {
        ApplicationError::fatal(
            error_codes::AGENT_INTERNAL_ERROR,
            format!("prompt snapshot: {err}"),
        )
    })?;
    services
        .runs
        .write_document(branch, &document, &value)
        .await?;
    Ok(())
}

/// Copies the run's input documents and every record the journal up to the cut names.
pub(crate) async fn copy_documents(
    services: &RuntimeServices,
    source: &RunId,
    branch: &RunId,
    state: &CutState,
) -> ApplicationResult<()> {
    let mut documents = vec![
        RunDocument::PromptSnapshot,
        RunDocument::ResolvedProfile,
        RunDocument::PersistSnapshot,
    ];
    for id in state.invocations.keys() {
        documents.extend([
            RunDocument::InvocationToolSnapshot(id.clone()),
            RunDocument::InvocationResolvedSkills(id.clone()),
            RunDocument::InvocationPromptSnapshot(id.clone()),
            RunDocument::InvocationPromptAssembly(id.clone()),
            RunDocument::InvocationForkPrefix(id.clone()),
        ]);
    }
    documents.extend(state.responses.iter().map(|(invocation_id, round)| {
        RunDocument::ModelResponse {
            invocation_id: invocation_id.clone(),
            round: *round,
        }
    }));
    documents.extend(state.call_args.iter().map(|key| RunDocument::ToolArgs {
        call_file_key: key.clone(),
    }));
    documents.extend(
        state
            .call_results
            .iter()
            .map(|key| RunDocument::ToolResult {
                call_file_key: key.clone(),
            }),
    );
    for document in &documents {
        copy_document(services, source, branch, document).await?;
    }
    // Files written without a checkpoint: each returned agent's result summary, rendered
    // again from its stored result, and tool outputs saved aside, from their stored results.
    for invocation in &state.returned {
        let document = RunDocument::AgentResult(invocation.clone());
        let Some(result) = copy_document(services, source, branch, &document).await? else {
            continue;
        };
        let text = |name: &str| result.get(name).and_then(Value::as_str).unwrap_or_default();
        let task_id = result
            .get("runtime")
            .and_then(|runtime| runtime.get("taskId"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let path = WorkspacePath::parse(text("summaryRef"))?;
        let summary = crate::delegation::rendering::render_summary_file(
            task_id,
            text("status"),
            text("summary"),
        );
        services
            .workspace
            .write(branch, &path, &summary, &WriteGuard::None)
            .await?;
    }
    for (path, key, sha256) in &state.saved_outputs {
        let document = RunDocument::ToolResult {
            call_file_key: key.clone(),
        };
        let content = services
            .runs
            .read_document(source, &document)
            .await?
            .and_then(|result| {
                result
                    .get("content")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .filter(|content| tt_domain::text::sha256_hex(content.as_bytes()) == *sha256);
        if let Some(content) = content {
            services
                .workspace
                .write(
                    branch,
                    &WorkspacePath::parse(path)?,
                    &content,
                    &WriteGuard::None,
                )
                .await?;
        }
    }
    Ok(())
}

/// Writes the branch's invocations and tasks as they stood at the cut; what was unfinished
/// then is `interrupted` (with `agent_task_interrupted` / `agent_invocation_interrupted`, as
/// a store journals for a run whose owner died). Tasks registered after the cut are left out.
/// Returns the delegated agents whose results the branch keeps.
pub(crate) async fn copy_records(
    services: &RuntimeServices,
    events: &EventSink,
    source: &RunId,
    branch: &RunId,
    state: &CutState,
) -> ApplicationResult<()> {
    let now = services.clock.now();
    let mut tasks = services.invocations.list_tasks(source).await?;
    tasks.retain(|task| state.tasks.contains_key(&task.id));
    let mut interrupted_tasks = Vec::new();
    for mut task in tasks {
        let status = state.tasks.get(&task.id).copied().unwrap_or(task.status);
        task.run_id = branch.clone();
        if !matches!(status, TaskStatus::Completed) {
            task.result_ref = None;
        }
        if status.is_terminal() {
            task.status = status;
        } else {
            task.status = TaskStatus::Interrupted;
            task.error = Some(CUT_MESSAGE.to_owned());
            task.updated_at = now;
            interrupted_tasks.push(task.clone());
        }
        if status == TaskStatus::Interrupted {
            task.error = Some(CUT_MESSAGE.to_owned());
        }
        services.invocations.create_task(&task).await?;
    }
    let mut invocations = services.invocations.list_invocations(source).await?;
    invocations.retain(|invocation| state.invocations.contains_key(&invocation.id));
    let mut interrupted_invocations = Vec::new();
    for mut invocation in invocations {
        let status = state
            .invocations
            .get(&invocation.id)
            .copied()
            .unwrap_or(invocation.status);
        invocation.run_id = branch.clone();
        if status.is_terminal() {
            invocation.status = status;
        } else {
            invocation.status = InvocationStatus::Interrupted;
            invocation.updated_at = now;
            interrupted_invocations.push(invocation.clone());
        }
        services.invocations.save_invocation(&invocation).await?;
    }
    for task in interrupted_tasks {
        events
            .record(
                branch,
                EventLevel::Warn,
                &payload::AgentTaskInterrupted::of(&task),
            )
            .await?;
    }
    for invocation in interrupted_invocations {
        events
            .record(
                branch,
                EventLevel::Warn,
                &payload::AgentInvocationInterrupted::of(&invocation),
            )
            .await?;
    }
    Ok(())
}

/// Puts the workspace back as it was at the cut: the `persist/` the source started from, then
/// every file version the source's checkpoints held then, read from the source's checkpoint
/// blobs (or from the source's file, when it still holds that version).
pub(crate) async fn copy_workspace(
    services: &RuntimeServices,
    source: &AgentRun,
    branch: &RunId,
    state: &CutState,
) -> ApplicationResult<()> {
    services
        .workspace
        .init_persist_projection(branch, source.persist_base_state_id.as_deref())
        .await?;
    for (path, sha256) in &state.files {
        let logical = WorkspacePath::parse(path)?;
        let text = match services
            .workspace
            .checkpoint_blob(&source.id, sha256)
            .await?
        {
            Some(text) => text,
            None => match services.workspace.read(&source.id, &logical).await {
                Ok(file) if file.sha256 == *sha256 => file.text,
                _ => {
                    return Err(unavailable(format!(
                        "the store keeps no copy of `{path}` as it was at the fork point \
                         (sha256 {sha256})"
                    )));
                }
            },
        };
        services
            .workspace
            .write(branch, &logical, &text, &WriteGuard::None)
            .await?;
    }
    Ok(())
}

/// Ends the branch's copied history as an interrupted run's: `run_interrupted` naming the cut,
/// then the changes' guidance as a note the foreground agent has not read yet.
pub(crate) async fn close_at_cut(
    events: &Arc<EventSink>,
    branch: &RunId,
    state: &CutState,
    cut: u64,
    guidance: Option<&str>,
) -> ApplicationResult<()> {
    events
        .record(
            branch,
            EventLevel::Warn,
            &payload::RunInterrupted {
                reason: "forked".to_owned(),
                last_seq: cut,
                previous_status: state.status.unwrap_or(AgentRunStatus::Created),
            },
        )
        .await?;
    if let Some(text) = guidance {
        let chars = tt_domain::text::char_count(text) as u64;
        events
            .record_in(
                branch,
                EventLevel::Info,
                &payload::UserGuidanceSubmitted {
                    guidance_id: format!("guidance_{:06}", state.guidance_submitted + 1),
                    client_guidance_id: None,
                    text: text.to_owned(),
                    chars,
                    words: tt_domain::text::word_count(text) as u64,
                    pending_count: state.guidance_pending + 1,
                    pending_chars: chars,
                    status: "pending".to_owned(),
                },
                &InvocationId::root(),
            )
            .await?;
    }
    Ok(())
}
