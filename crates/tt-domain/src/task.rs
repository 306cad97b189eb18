//! Task records: one per delegation (`return_to_parent`) or handoff (`transfer_control`).
//!
//! The first terminal write wins: once a task is completed, failed or cancelled, later
//! transitions change nothing and report `changed = false`. The one exception is a task the
//! store marked `interrupted`: `resume_run` moves it back to `queued` or `running`.

use crate::error_codes;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::brief::StoredBrief;
use crate::ids::{InvocationId, ProfileId, RunId, TaskId};
use crate::time::Timestamp;
use crate::{DomainError, DomainResult};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskContinuation {
    ReturnToParent,
    TransferControl,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Queued,
    Running,
    Completed,
    Failed,
    Cancelled,
    /// The process that ran it went away before it finished; set by the store on reopen.
    Interrupted,
}

impl TaskStatus {
    pub fn is_terminal(self) -> bool {
        match self {
            TaskStatus::Completed
            | TaskStatus::Failed
            | TaskStatus::Cancelled
            | TaskStatus::Interrupted => true,
            TaskStatus::Queued | TaskStatus::Running => false,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Queued => "queued",
            TaskStatus::Running => "running",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::Interrupted => "interrupted",
        }
    }
}

/// Optional downward budget given at delegation time.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentTaskBudget {
    pub max_rounds: Option<u32>,
    pub max_tool_calls: Option<u32>,
    /// Deadline in seconds from delegation (the delegating agent's `timeoutSeconds`, else the
    /// target profile's default).
    pub timeout_seconds: Option<u64>,
    /// Seconds without model progress after which the running task is cancelled.
    pub idle_timeout_seconds: Option<u64>,
    /// Most model tokens (input + output, summed over its model calls) the task may use.
    pub max_tokens: Option<u64>,
}

/// Stored as `tasks/<id>.json`. Read through [`StoredTaskRecord`], so the brief is typed by the
/// record's continuation whatever the order of the stored keys.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", from = "StoredTaskRecord")]
pub struct AgentTaskRecord {
    pub id: TaskId,
    pub run_id: RunId,
    pub parent_invocation_id: InvocationId,
    pub child_invocation_id: InvocationId,
    pub target_profile_id: ProfileId,
    pub workspace_key: String,
    pub continuation: TaskContinuation,
    pub status: TaskStatus,
    /// The brief: a `TaskBrief` (a delegation) or a `HandoffBrief` (a handoff), by
    /// `continuation`. Shared: task records are listed often and the brief can be large.
    pub task: std::sync::Arc<StoredBrief>,
    pub budget: Option<AgentTaskBudget>,
    pub created_by_tool_call_id: Option<String>,
    pub result_ref: Option<String>,
    pub error: Option<String>,
    /// Registration order within the run, shared with the task's invocation (see
    /// `AgentInvocation::creation_seq`). 0 in records written before it existed.
    #[serde(default)]
    pub creation_seq: u64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// [`AgentTaskRecord`] as stored, its brief not yet read: the brief's type depends on
/// `continuation`, which may come after it in the stored object.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredTaskRecord {
    id: TaskId,
    run_id: RunId,
    parent_invocation_id: InvocationId,
    child_invocation_id: InvocationId,
    target_profile_id: ProfileId,
    workspace_key: String,
    continuation: TaskContinuation,
    status: TaskStatus,
    #[serde(default)]
    task: Value,
    #[serde(default)]
    budget: Option<AgentTaskBudget>,
    #[serde(default)]
    created_by_tool_call_id: Option<String>,
    #[serde(default)]
    result_ref: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    creation_seq: u64,
    created_at: Timestamp,
    updated_at: Timestamp,
}

impl From<StoredTaskRecord> for AgentTaskRecord {
    fn from(stored: StoredTaskRecord) -> Self {
        let brief = match stored.continuation {
            TaskContinuation::ReturnToParent => StoredBrief::task(stored.task),
            TaskContinuation::TransferControl => StoredBrief::handoff(stored.task),
        };
        AgentTaskRecord {
            id: stored.id,
            run_id: stored.run_id,
            parent_invocation_id: stored.parent_invocation_id,
            child_invocation_id: stored.child_invocation_id,
            target_profile_id: stored.target_profile_id,
            workspace_key: stored.workspace_key,
            continuation: stored.continuation,
            status: stored.status,
            task: brief.into(),
            budget: stored.budget,
            created_by_tool_call_id: stored.created_by_tool_call_id,
            result_ref: stored.result_ref,
            error: stored.error,
            creation_seq: stored.creation_seq,
            created_at: stored.created_at,
            updated_at: stored.updated_at,
        }
    }
}

/// A requested change of task status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskTransition {
    pub status: TaskStatus,
    pub result_ref: Option<String>,
    pub error: Option<String>,
}

impl AgentTaskRecord {
    /// How a run's tasks are listed: registration order, then `createdAt`, then id (the last
    /// two only order records written before `creationSeq` existed).
    pub fn creation_order(&self) -> (u64, Timestamp, &TaskId) {
        (self.creation_seq, self.created_at, &self.id)
    }

    /// Applies a transition. Returns `Ok(false)` when the task is already terminal (first
    /// terminal write wins) or already in that non-terminal status; errors on moving backwards.
    pub fn apply_transition(
        &mut self,
        change: &TaskTransition,
        now: Timestamp,
    ) -> DomainResult<bool> {
        // `resume_run` puts an interrupted task back in line or back to work, and first
        // reopens as `interrupted` the tasks a failed or cancelled run's end stopped; nothing
        // else leaves a terminal status.
        let resuming = self.status == TaskStatus::Interrupted
            && matches!(change.status, TaskStatus::Queued | TaskStatus::Running);
        let reopening = matches!(self.status, TaskStatus::Failed | TaskStatus::Cancelled)
            && change.status == TaskStatus::Interrupted;
        if self.status.is_terminal() && !resuming && !reopening {
            return Ok(false);
        }
        if self.status == change.status {
            return Ok(false);
        }
        if self.status == TaskStatus::Running && change.status == TaskStatus::Queued {
            return Err(DomainError::new(
                error_codes::AGENT_TASK_STATUS_TRANSITION_INVALID,
                format!("task {} cannot move from running back to queued", self.id),
            ));
        }
        self.status = change.status;
        if change.result_ref.is_some() {
            self.result_ref.clone_from(&change.result_ref);
        }
        if change.error.is_some() {
            self.error.clone_from(&change.error);
        } else if resuming {
            // The interruption note no longer describes the task.
            self.error = None;
        }
        self.updated_at = now;
        Ok(true)
    }
}

/// `<agentId>`, then `<agentId>-002`, `-003`, … for repeats within a run (delegate and handoff
/// tasks share the namespace).
pub fn next_workspace_key<'a>(agent_id: &str, used: impl IntoIterator<Item = &'a str>) -> String {
    let used: std::collections::HashSet<&str> = used.into_iter().collect();
    if !used.contains(agent_id) {
        return agent_id.to_owned();
    }
    (2u32..)
        .map(|n| format!("{agent_id}-{n:03}"))
        .find(|candidate| !used.contains(candidate.as_str()))
        .unwrap_or_else(|| agent_id.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task() -> AgentTaskRecord {
        AgentTaskRecord {
            id: TaskId::from_raw("task_1"),
            run_id: RunId::from_raw("run_1"),
            parent_invocation_id: InvocationId::root(),
            child_invocation_id: InvocationId::from_raw("inv_1"),
            target_profile_id: ProfileId::parse("critic").unwrap(),
            workspace_key: "critic".into(),
            continuation: TaskContinuation::ReturnToParent,
            status: TaskStatus::Queued,
            task: StoredBrief::default().into(),
            budget: None,
            created_by_tool_call_id: None,
            result_ref: None,
            error: None,
            creation_seq: 0,
            created_at: Timestamp::from_unix_millis(0),
            updated_at: Timestamp::from_unix_millis(0),
        }
    }

    fn to(status: TaskStatus) -> TaskTransition {
        TaskTransition {
            status,
            result_ref: None,
            error: None,
        }
    }

    #[test]
    fn only_resume_takes_an_interrupted_task_back() {
        let now = Timestamp::from_unix_millis(5);
        let mut t = task();
        let interrupted = TaskTransition {
            status: TaskStatus::Interrupted,
            result_ref: None,
            error: Some("gone".into()),
        };
        assert!(t.apply_transition(&interrupted, now).unwrap());
        assert!(!t.apply_transition(&to(TaskStatus::Completed), now).unwrap());
        assert!(!t.apply_transition(&to(TaskStatus::Cancelled), now).unwrap());
        assert!(t.apply_transition(&to(TaskStatus::Running), now).unwrap());
        assert_eq!(t.status, TaskStatus::Running);
        assert_eq!(t.error, None);
        assert!(t.apply_transition(&to(TaskStatus::Completed), now).unwrap());
        let mut waiting = task();
        assert!(waiting.apply_transition(&interrupted, now).unwrap());
        assert!(
            waiting
                .apply_transition(&to(TaskStatus::Queued), now)
                .unwrap()
        );
        assert_eq!(waiting.status, TaskStatus::Queued);
    }

    #[test]
    fn a_stored_record_reads_its_brief_by_its_continuation_and_writes_it_back_the_same() {
        // `task` before `continuation`, as a store may order the keys.
        let stored = serde_json::json!({
            "id": "task_1", "runId": "run_1", "parentInvocationId": "root",
            "childInvocationId": "inv_1", "targetProfileId": "editor", "workspaceKey": "editor",
            "task": {"objective": "Publish.", "contextSummary": "Drafted."},
            "continuation": "transfer_control", "status": "queued",
            "creationSeq": 2, "createdAt": "2026-12-05T00:00:00Z",
            "updatedAt": "2026-12-05T00:00:00Z"
        });
        let record: AgentTaskRecord = serde_json::from_value(stored.clone()).unwrap();
        assert!(matches!(
            &*record.task,
            StoredBrief::Handoff(brief) if brief.context_summary.as_deref() == Some("Drafted.")
        ));
        let written = serde_json::to_value(&record).unwrap();
        assert_eq!(written["task"], stored["task"]);
        let again: AgentTaskRecord = serde_json::from_value(written).unwrap();
        assert_eq!(again, record);

        let mut delegated = stored.clone();
        delegated["continuation"] = "return_to_parent".into();
        delegated["task"] = serde_json::json!({"objective": "Check.", "tone": "dry"});
        let record: AgentTaskRecord = serde_json::from_value(delegated).unwrap();
        assert!(matches!(&*record.task, StoredBrief::Task(brief) if brief.extra["tone"] == "dry"));

        let mut unread = stored;
        unread["task"] = serde_json::json!(["finish it"]);
        let record: AgentTaskRecord = serde_json::from_value(unread).unwrap();
        assert_eq!(
            *record.task,
            StoredBrief::Unread(serde_json::json!(["finish it"]))
        );
    }

    #[test]
    fn first_terminal_write_wins() {
        let now = Timestamp::from_unix_millis(5);
        let mut t = task();
        assert!(t.apply_transition(&to(TaskStatus::Running), now).unwrap());
        assert!(
            t.apply_transition(
                &TaskTransition {
                    status: TaskStatus::Cancelled,
                    result_ref: None,
                    error: Some("stopped".into())
                },
                now
            )
            .unwrap()
        );
        assert!(!t.apply_transition(&to(TaskStatus::Completed), now).unwrap());
        assert_eq!(t.status, TaskStatus::Cancelled);
        assert_eq!(t.error.as_deref(), Some("stopped"));
    }

    #[test]
    fn a_stopped_task_reopens_as_interrupted_but_a_completed_one_never_does() {
        let now = Timestamp::from_unix_millis(5);
        let interrupted = TaskTransition {
            status: TaskStatus::Interrupted,
            result_ref: None,
            error: Some("the run stopped".into()),
        };
        for ended in [TaskStatus::Cancelled, TaskStatus::Failed] {
            let mut t = task();
            t.apply_transition(&to(ended), now).unwrap();
            assert!(t.apply_transition(&interrupted, now).unwrap());
            assert!(t.apply_transition(&to(TaskStatus::Running), now).unwrap());
        }
        let mut done = task();
        done.apply_transition(&to(TaskStatus::Completed), now)
            .unwrap();
        assert!(!done.apply_transition(&interrupted, now).unwrap());
        assert_eq!(done.status, TaskStatus::Completed);
    }

    #[test]
    fn cannot_requeue_running_task() {
        let now = Timestamp::from_unix_millis(5);
        let mut t = task();
        t.apply_transition(&to(TaskStatus::Running), now).unwrap();
        assert!(t.apply_transition(&to(TaskStatus::Queued), now).is_err());
    }

    #[test]
    fn workspace_keys_use_agent_id_then_numbered_suffixes() {
        assert_eq!(next_workspace_key("critic", []), "critic");
        assert_eq!(next_workspace_key("critic", ["critic"]), "critic-002");
        assert_eq!(
            next_workspace_key("critic", ["critic", "critic-002"]),
            "critic-003"
        );
        assert_eq!(next_workspace_key("critic", ["other"]), "critic");
    }
}
