//! `task.return`, the delegated agent's last call, below the engine: it validates the result
//! and writes the result document and the summary file on narrow inputs ([`TaskReturnEnv`]),
//! and hands back a [`WrittenReturn`]. The engine settles the task (its final status, the
//! journal, waking the delegating agent) in `engine::tasks::tools::task_return`.

use serde_json::json;
use tt_domain::error_codes;
use tt_domain::ids::RunId;
use tt_domain::invocation::{AgentInvocation, ExitPolicy};
use tt_domain::task::AgentTaskRecord;
use tt_domain::task_result::{
    AgentTaskResultDocument, TASK_RESULT_KIND, TaskResultRuntime, TaskResultStatus,
    summary_path_for,
};
use tt_domain::text::{char_count, word_count};
use tt_domain::tool::{AgentToolCall, ToolName};
use tt_domain::workspace::{WorkspaceAccessPolicy, WorkspacePath, WriteGuard};
use tt_ports::{
    AgentInvocationRepository, AgentRunRepository, RunDocument, SerializedDocument, StorageError,
    WorkspaceRepository,
};

use crate::delegation::args::{TaskReturnArgs, parse_task_return_args};
use crate::delegation::rendering::render_summary_file;
use crate::error::{ApplicationError, ToolCallError, ToolError};
use crate::tools::ToolSuccess;

/// What `task.return` recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TaskReturned {
    pub status: TaskResultStatus,
    pub result_ref: String,
    pub summary_chars: usize,
    pub summary_words: usize,
}

/// What `task.return` reads and writes: the run's task records, its documents and workspace,
/// and the returning agent with the areas it can see.
pub(crate) struct TaskReturnEnv<'a> {
    pub run_id: &'a RunId,
    pub invocations: &'a dyn AgentInvocationRepository,
    pub runs: &'a dyn AgentRunRepository,
    pub workspace: &'a dyn WorkspaceRepository,
    pub invocation: &'a AgentInvocation,
    pub policy: &'a WorkspaceAccessPolicy,
}

/// A result written, for the engine to settle: the task to move to the status the result
/// names, the answer the agent reads, and what its loop records.
#[derive(Debug)]
pub(crate) struct WrittenReturn {
    pub task: AgentTaskRecord,
    pub summary_ref: String,
    pub success: ToolSuccess,
    pub returned: TaskReturned,
    /// What the document says of the result, for the capsule that shows it.
    pub result: ReturnedResult,
    /// The length of the result document.
    pub document_bytes: usize,
}

/// The two fields of a result document a capsule shows: its `summary` and its `result`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ReturnedResult {
    pub summary: String,
    pub result: serde_json::Value,
}

/// `task.return`: validates, then writes the result document and the summary file. Moving the
/// task to its final status is the engine's, which is why the result comes back as a
/// [`WrittenReturn`].
pub(crate) async fn write_task_return(
    env: &TaskReturnEnv<'_>,
    call: &AgentToolCall,
) -> Result<WrittenReturn, ToolCallError> {
    if env.invocation.exit_policy != ExitPolicy::TaskReturnRequired {
        return Err(ToolError::new(
            error_codes::AGENT_TASK_RETURN_DENIED,
            "You are not working on a delegated task.",
        )
        .into());
    }
    let args = parse_task_return_args(&call.arguments)?;
    let owned: Vec<AgentTaskRecord> = env
        .invocations
        .list_tasks_by_child(env.run_id, &env.invocation.id)
        .await?;
    let task = the_one_task(owned, env.invocation)?;
    if task.status.is_terminal() {
        return Err(already_finished());
    }
    let normalized = normalized_result(env, &args)?;
    let status_text = args.status.as_str();
    let summary_ref = summary_path_for(&task.workspace_key);
    let result_ref = RunDocument::AgentResult(env.invocation.id.clone()).relative_path();
    let document = AgentTaskResultDocument {
        schema_version: 1,
        kind: TASK_RESULT_KIND.to_owned(),
        status: args.status,
        summary: args.summary.clone(),
        summary_ref: summary_ref.clone(),
        result: normalized,
        runtime: TaskResultRuntime {
            task_id: task.id.clone(),
            run_id: env.run_id.clone(),
            parent_invocation_id: task.parent_invocation_id.clone(),
            child_invocation_id: env.invocation.id.clone(),
            target_profile_id: task.target_profile_id.clone(),
            workspace_key: task.workspace_key.clone(),
        },
    };
    // Serialized as it is: no `Value` tree of the document is built.
    let serialized = SerializedDocument::new(&document).map_err(|err| {
        ApplicationError::fatal(
            error_codes::AGENT_TASK_RETURN_RESULT_SERIALIZE_FAILED,
            err.to_string(),
        )
    })?;
    env.runs
        .write_serialized_document(
            env.run_id,
            &RunDocument::AgentResult(env.invocation.id.clone()),
            &serialized,
        )
        .await?;
    let summary_path = WorkspacePath::parse(&summary_ref)?;
    env.workspace
        .write(
            env.run_id,
            &summary_path,
            &render_summary_file(task.id.as_str(), status_text, &args.summary),
            &WriteGuard::None,
        )
        .await
        .map_err(|err: StorageError| ToolCallError::Fatal(err.into()))?;
    let content = format!(
        "Your {status_text} result was handed back. Your task is complete; make no further tool calls."
    );
    let success = ToolSuccess::new(
        content,
        json!({"status": status_text, "summaryRef": summary_ref}),
    )
    .with_refs(vec![format!("workspace:{summary_ref}")]);
    Ok(WrittenReturn {
        task,
        summary_ref,
        success,
        returned: TaskReturned {
            status: args.status,
            result_ref,
            summary_chars: char_count(&args.summary),
            summary_words: word_count(&args.summary),
        },
        result: ReturnedResult {
            summary: document.summary,
            result: document.result,
        },
        document_bytes: serialized.as_str().len(),
    })
}

/// The result as the agent gave it, with each artifact path checked (visible to the agent) and
/// written in its normalized form.
fn normalized_result(
    env: &TaskReturnEnv<'_>,
    args: &TaskReturnArgs,
) -> Result<serde_json::Value, ToolCallError> {
    let mut normalized = args.normalized.clone();
    for (index, artifact) in args.artifacts.iter().enumerate() {
        let path = WorkspacePath::parse(&artifact.path)?;
        if !env.policy.is_visible(&path) {
            return Err(ToolError::new(
                error_codes::WORKSPACE_PATH_NOT_VISIBLE,
                format!(
                    "Artifact path `{path}` is outside the areas you can see. Call `{}` again with artifact paths under: {}.",
                    ToolName::TaskReturn.model_alias(),
                    env.policy.visible_root_names().iter().map(|root| format!("`{root}/`")).collect::<Vec<_>>().join(", ")
                ),
            )
            .into());
        }
        if let Some(slot) = normalized
            .get_mut("artifacts")
            .and_then(|items| items.get_mut(index))
        {
            slot["path"] = json!(path);
        }
    }
    Ok(normalized)
}

/// The one task the agent works on: none or several is a broken invariant.
fn the_one_task(
    mut owned: Vec<AgentTaskRecord>,
    invocation: &AgentInvocation,
) -> Result<AgentTaskRecord, ToolCallError> {
    let (code, text) = match owned.len() {
        1 => return Ok(owned.remove(0)),
        0 => (error_codes::AGENT_TASK_RECORD_MISSING, "no task for"),
        _ => (
            error_codes::AGENT_DUPLICATE_TASK_RECORD,
            "several tasks for",
        ),
    };
    Err(ApplicationError::fatal(code, format!("{text} {}", invocation.id)).into())
}

/// `agent.task_already_finished`: the task ended (cancelled, timed out) before its result.
pub(crate) fn already_finished() -> ToolCallError {
    ToolError::new(
        error_codes::AGENT_TASK_ALREADY_FINISHED,
        "This task has already ended; your result can no longer be recorded.",
    )
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use std::sync::Arc;
    use tt_domain::ids::{InvocationId, ProfileId};
    use tt_domain::invocation::{InvocationKind, InvocationStatus};
    use tt_domain::task::TaskStatus;
    use tt_domain::time::Timestamp;
    use tt_domain::workspace::WorkspaceRoot;
    use tt_testkit::fakes::InMemoryStore;

    /// A run with one running delegated task, and the agent working on it, which sees output,
    /// summaries and scratch.
    async fn delegated_agent() -> (Arc<InMemoryStore>, RunId, AgentInvocation, AgentTaskRecord) {
        let (store, run_id) = tt_testkit::contract::store_with_run("run_return").await;
        let at = Timestamp::from_unix_millis(0);
        let agent = AgentInvocation {
            id: InvocationId::from_raw("inv_helper"),
            run_id: run_id.clone(),
            parent_invocation_id: Some(InvocationId::from_raw("inv_root")),
            profile_id: ProfileId::parse("helper").unwrap(),
            kind: InvocationKind::Subagent,
            status: InvocationStatus::Running,
            exit_policy: ExitPolicy::TaskReturnRequired,
            creation_seq: 1,
            created_at: at,
            updated_at: at,
        };
        let task = AgentTaskRecord {
            run_id: run_id.clone(),
            child_invocation_id: agent.id.clone(),
            target_profile_id: agent.profile_id.clone(),
            workspace_key: "helper-1".to_owned(),
            created_at: at,
            updated_at: at,
            ..crate::delegation::testing::task_record("task_1", "inv_root", TaskStatus::Running)
        };
        store.create_task(&task).await.unwrap();
        (store, run_id, agent, task)
    }

    /// `task_return` with `arguments`, as `agent` working in `run_id` with [`policy`].
    async fn return_as(
        store: &InMemoryStore,
        run_id: &RunId,
        agent: &AgentInvocation,
        arguments: Value,
    ) -> Result<WrittenReturn, ToolCallError> {
        let policy = policy();
        let env = TaskReturnEnv {
            run_id,
            invocations: store,
            runs: store,
            workspace: store,
            invocation: agent,
            policy: &policy,
        };
        write_task_return(&env, &call(arguments)).await
    }

    fn call(arguments: Value) -> AgentToolCall {
        AgentToolCall::new("call_1", "task_return", arguments)
    }

    fn policy() -> WorkspaceAccessPolicy {
        WorkspaceAccessPolicy::new(
            vec![
                WorkspaceRoot::Output,
                WorkspaceRoot::Summaries,
                WorkspaceRoot::Scratch,
            ],
            vec![WorkspaceRoot::Scratch],
        )
    }

    #[tokio::test]
    async fn writes_the_result_and_summary_and_leaves_settling_the_task_to_the_engine() {
        let (store, run_id, agent, task) = delegated_agent().await;
        let written = return_as(
            &store,
            &run_id,
            &agent,
            json!({"summary": "The scene holds.", "artifacts": [
                {"path": "scratch/notes.md", "kind": "notes", "role": "evidence"}
            ]}),
        )
        .await
        .unwrap();

        assert_eq!(written.task.id, task.id);
        assert_eq!(written.returned.status.task_status(), TaskStatus::Completed);
        assert_eq!(written.summary_ref, "summaries/helper-1-result.md");
        assert_eq!(written.returned.status, TaskResultStatus::Completed);
        assert_eq!(written.success.structured["status"], "completed");
        let summary = store
            .file_text(&run_id, "summaries/helper-1-result.md")
            .unwrap();
        assert!(summary.contains("The scene holds."), "{summary}");
        let document = store
            .read_document(&run_id, &RunDocument::AgentResult(agent.id.clone()))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            document["result"]["artifacts"][0]["path"],
            "scratch/notes.md"
        );
        assert_eq!(document["runtime"]["taskId"], "task_1");
        // What the capsule shows without reading the document back is what the document says.
        assert_eq!(
            written.result,
            ReturnedResult {
                summary: document["summary"].as_str().unwrap().to_owned(),
                result: document["result"].clone(),
            }
        );
        // The task is the engine's to settle: still running here.
        let stored = store.load_task(&run_id, &task.id).await.unwrap();
        assert_eq!(stored.status, TaskStatus::Running);
    }

    #[tokio::test]
    async fn refuses_an_artifact_the_agent_cannot_see_and_writes_nothing() {
        let (store, run_id, agent, _) = delegated_agent().await;
        let refused = return_as(
            &store,
            &run_id,
            &agent,
            json!({"summary": "Done.", "artifacts": [
                {"path": "persist/lore.md", "kind": "notes", "role": "evidence"}
            ]}),
        )
        .await;

        match refused {
            Err(ToolCallError::Recoverable(error)) => {
                assert_eq!(error.code, "workspace.path_not_visible");
            }
            other => panic!("expected a recoverable refusal, got {other:?}"),
        }
        assert_eq!(
            store.file_text(&run_id, "summaries/helper-1-result.md"),
            None
        );
        let document = store
            .read_document(&run_id, &RunDocument::AgentResult(agent.id.clone()))
            .await
            .unwrap();
        assert_eq!(document, None);
    }
}
