//! The task result document written by `task.return` to `agent-results/<invocationId>.json`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::{InvocationId, ProfileId, RunId, TaskId};
use crate::task::TaskStatus;

pub const TASK_RESULT_KIND: &str = "tauritavern.agentTaskResult";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskResultStatus {
    Completed,
    Failed,
}

impl TaskResultStatus {
    /// The wire name (`completed`, `failed`).
    pub fn as_str(self) -> &'static str {
        match self {
            TaskResultStatus::Completed => "completed",
            TaskResultStatus::Failed => "failed",
        }
    }

    /// The status the task ends with.
    pub fn task_status(self) -> TaskStatus {
        match self {
            TaskResultStatus::Completed => TaskStatus::Completed,
            TaskResultStatus::Failed => TaskStatus::Failed,
        }
    }
}

/// Where a result came from, for audit; never shown to a model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskResultRuntime {
    pub task_id: TaskId,
    pub run_id: RunId,
    pub parent_invocation_id: InvocationId,
    pub child_invocation_id: InvocationId,
    pub target_profile_id: ProfileId,
    pub workspace_key: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentTaskResultDocument {
    pub schema_version: u32,
    pub kind: String,
    pub status: TaskResultStatus,
    pub summary: String,
    pub summary_ref: String,
    /// The normalized `task.return` arguments (including summary and status).
    pub result: Value,
    pub runtime: TaskResultRuntime,
}

/// `summaries/<workspaceKey>-result.md`.
pub fn summary_path_for(workspace_key: &str) -> String {
    format!("summaries/{workspace_key}-result.md")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_result_summary_path_is_flat_and_stable() {
        assert_eq!(
            summary_path_for("scene-critic-002"),
            "summaries/scene-critic-002-result.md"
        );
    }
}
