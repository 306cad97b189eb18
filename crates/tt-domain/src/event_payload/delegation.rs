//! Delegation: tasks, waits, results and budgets.

use serde::{Deserialize, Serialize};

use crate::ids::{InvocationId, ProfileId, TaskId};
use crate::task::{AgentTaskRecord, TaskContinuation, TaskStatus};

/// `agent_delegate_started`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentDelegateStarted {
    pub task_id: TaskId,
    pub parent_invocation_id: InvocationId,
    pub child_invocation_id: InvocationId,
    pub target_profile_id: ProfileId,
    pub workspace_key: String,
    /// `fork` for a task started in fork mode (its agent reads the delegating agent's
    /// conversation first); absent for a task started from its brief alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

/// `agent_task_registered`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentTaskRegistered {
    pub task_id: TaskId,
    pub parent_invocation_id: InvocationId,
    pub child_invocation_id: InvocationId,
    pub target_profile_id: ProfileId,
    pub workspace_key: String,
    pub continuation: TaskContinuation,
    pub status: TaskStatus,
    /// The task's short name for lists of agents ([`crate::brief::StoredBrief::label`]):
    /// absent in journals written before it existed and for a brief that does not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

macro_rules! task_status_payloads {
    ($($name:ident => $doc:literal,)*) => {$(
        #[doc = $doc]
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            pub task_id: TaskId,
            pub parent_invocation_id: InvocationId,
            pub child_invocation_id: InvocationId,
            pub target_profile_id: ProfileId,
            pub status: TaskStatus,
            pub result_ref: Option<String>,
            pub error: Option<String>,
        }

        impl $name {
            /// The event of `task`, as its record holds it now.
            pub fn of(task: &AgentTaskRecord) -> Self {
                Self {
                    task_id: task.id.clone(),
                    parent_invocation_id: task.parent_invocation_id.clone(),
                    child_invocation_id: task.child_invocation_id.clone(),
                    target_profile_id: task.target_profile_id.clone(),
                    status: task.status,
                    result_ref: task.result_ref.clone(),
                    error: task.error.clone(),
                }
            }
        }
    )*};
}

task_status_payloads! {
    AgentTaskStarted => "`agent_task_started`.",
    AgentTaskCompleted => "`agent_task_completed`.",
    AgentTaskFailed => "`agent_task_failed`.",
    AgentTaskInterrupted => "`agent_task_interrupted`.",
    AgentTaskResumed => "`agent_task_resumed`: an interrupted task is queued or running again (`resume_run`).",
}

/// `agent_task_queued`: the task waits for a free slot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentTaskQueued {
    pub task_id: TaskId,
    pub parent_invocation_id: InvocationId,
    pub child_invocation_id: InvocationId,
    pub target_profile_id: ProfileId,
    pub status: TaskStatus,
    pub result_ref: Option<String>,
    pub error: Option<String>,
    /// Its place in the delegating agent's line (1 = next to start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_position: Option<u64>,
}

/// `agent_task_cancelled`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentTaskCancelled {
    pub task_id: TaskId,
    pub parent_invocation_id: InvocationId,
    pub child_invocation_id: InvocationId,
    pub target_profile_id: ProfileId,
    pub status: TaskStatus,
    pub result_ref: Option<String>,
    pub error: Option<String>,
    /// Why it was stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Who stopped it: the cancelling agent's invocation id, `host`, `runtime` or `deadline`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// `agent_child_invocation_failed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentChildInvocationFailed {
    pub task_id: TaskId,
    pub child_invocation_id: InvocationId,
    pub parent_invocation_id: InvocationId,
    pub message: String,
}

/// `agent_await_started`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentAwaitStarted {
    pub parent_invocation_id: InvocationId,
    pub mode: String,
    pub task_ids: Vec<TaskId>,
    pub timeout_ms: u64,
}

/// `agent_await_completed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentAwaitCompleted {
    pub parent_invocation_id: InvocationId,
    pub mode: String,
    pub timed_out: bool,
    pub task_count: u64,
    pub delivered_task_ids: Vec<TaskId>,
}

/// `agent_results_injected`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentResultsInjected {
    pub invocation_id: InvocationId,
    pub task_ids: Vec<TaskId>,
    pub task_count: u64,
}

/// `task_return_recorded`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskReturnRecorded {
    pub invocation_id: InvocationId,
    pub status: TaskStatus,
    pub result_ref: String,
    pub summary_chars: u64,
    pub summary_words: u64,
}

/// `task_return_graded`: the return gate's answer to one `task.return` call
/// (docs/delegation.md, "The return gate").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskReturnGraded {
    /// The returning agent.
    pub invocation_id: InvocationId,
    pub task_id: TaskId,
    pub round: u32,
    /// The `task.return` call graded.
    pub call_id: String,
    pub grader_profile_id: ProfileId,
    /// 1 for the task's first grading, then 2, …
    pub attempt: u32,
    /// The grader's answer (`accept`, `revise`, `reject`); absent when the gradings had used
    /// their token budget and none was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// The grader's notes or reason.
    pub notes: String,
    /// What the runtime did: `accepted`, `sentBack` (the notes went back to the agent),
    /// `rejected` (the task failed), `stood` or `failed` (revisions or budget spent).
    pub outcome: String,
    /// The grading's model tokens (input, output).
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// `task_return_completed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskReturnCompleted {
    pub task_id: TaskId,
    pub parent_invocation_id: InvocationId,
    pub child_invocation_id: InvocationId,
    pub status: TaskStatus,
    pub result_ref: String,
    pub summary_ref: String,
}
