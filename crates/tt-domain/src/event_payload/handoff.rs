//! Handoff of the run to another agent.

use serde::{Deserialize, Serialize};

use crate::ids::{InvocationId, ProfileId, TaskId};

/// `agent_handoff_requested`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentHandoffRequested {
    pub source_invocation_id: InvocationId,
    /// The agent id as the model asked for it: journaled before it is checked, so it may name
    /// no agent, or not even be a valid id.
    pub target_profile_id: String,
    pub pending_task_policy: String,
}

/// `agent_handoff_accepted`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentHandoffAccepted {
    pub task_id: TaskId,
    pub source_invocation_id: InvocationId,
    pub new_invocation_id: InvocationId,
    pub target_profile_id: ProfileId,
    pub workspace_key: String,
}
