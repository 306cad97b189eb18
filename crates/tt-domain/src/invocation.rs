//! An invocation: one agent's tool loop inside a run (root, delegated sub-agent, or handoff owner).

use crate::error_codes;
use serde::{Deserialize, Serialize};

use crate::ids::{InvocationId, ProfileId, RunId};
use crate::time::Timestamp;
use crate::{DomainError, DomainResult};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InvocationKind {
    Root,
    Subagent,
    Handoff,
}

impl InvocationKind {
    pub fn as_str(self) -> &'static str {
        match self {
            InvocationKind::Root => "root",
            InvocationKind::Subagent => "subagent",
            InvocationKind::Handoff => "handoff",
        }
    }

    /// Root and handoff owners may finish the run; sub-agents must return a task result.
    pub fn exit_policy(self) -> ExitPolicy {
        match self {
            InvocationKind::Root | InvocationKind::Handoff => ExitPolicy::RunFinishAllowed,
            InvocationKind::Subagent => ExitPolicy::TaskReturnRequired,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InvocationStatus {
    Created,
    Running,
    /// Parked until a person answers one of its tool calls (docs/host-api.md).
    AwaitingApproval,
    Completed,
    Failed,
    Cancelled,
    Transferred,
    /// The process that ran it went away (crash, kill, power cut) before it finished; set by
    /// the store when it reopens the data dir.
    Interrupted,
}

impl InvocationStatus {
    pub fn is_terminal(self) -> bool {
        match self {
            InvocationStatus::Completed
            | InvocationStatus::Failed
            | InvocationStatus::Cancelled
            | InvocationStatus::Transferred
            | InvocationStatus::Interrupted => true,
            InvocationStatus::Created
            | InvocationStatus::Running
            | InvocationStatus::AwaitingApproval => false,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            InvocationStatus::Created => "created",
            InvocationStatus::Running => "running",
            InvocationStatus::AwaitingApproval => "awaiting_approval",
            InvocationStatus::Completed => "completed",
            InvocationStatus::Failed => "failed",
            InvocationStatus::Cancelled => "cancelled",
            InvocationStatus::Interrupted => "interrupted",
            InvocationStatus::Transferred => "transferred",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExitPolicy {
    RunFinishAllowed,
    TaskReturnRequired,
}

impl ExitPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            ExitPolicy::RunFinishAllowed => "run_finish_allowed",
            ExitPolicy::TaskReturnRequired => "task_return_required",
        }
    }
}

/// Stored as `invocations/<id>.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInvocation {
    pub id: InvocationId,
    pub run_id: RunId,
    pub parent_invocation_id: Option<InvocationId>,
    pub profile_id: ProfileId,
    pub kind: InvocationKind,
    pub status: InvocationStatus,
    pub exit_policy: ExitPolicy,
    /// Registration order within the run (the root is 0; a delegation or handoff takes the
    /// next number for its task and invocation), so records created in the same millisecond
    /// still list in the order they were registered. 0 in records written before it existed.
    #[serde(default)]
    pub creation_seq: u64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl AgentInvocation {
    /// How a run's invocations are listed: registration order, then `createdAt`, then id
    /// (the last two only order records written before `creationSeq` existed).
    pub fn creation_order(&self) -> (u64, Timestamp, &InvocationId) {
        (self.creation_seq, self.created_at, &self.id)
    }

    pub fn new_root(run_id: RunId, profile_id: ProfileId, now: Timestamp) -> Self {
        Self {
            id: InvocationId::root(),
            run_id,
            parent_invocation_id: None,
            profile_id,
            kind: InvocationKind::Root,
            status: InvocationStatus::Created,
            exit_policy: ExitPolicy::RunFinishAllowed,
            creation_seq: 0,
            created_at: now,
            updated_at: now,
        }
    }

    /// `created -> running -> {completed, failed, cancelled, transferred, interrupted}`;
    /// `created` may also end directly in `failed`, `cancelled` or `interrupted`. Terminal
    /// statuses never change, except `interrupted -> running` when a run is resumed and
    /// `failed | cancelled -> interrupted` when a resume reopens what a run's end stopped.
    pub fn transition(&mut self, next: InvocationStatus, now: Timestamp) -> DomainResult<bool> {
        if self.status == next {
            return Ok(false);
        }
        let legal = match (self.status, next) {
            (InvocationStatus::Created, InvocationStatus::Running) => true,
            (
                InvocationStatus::Created,
                InvocationStatus::Failed
                | InvocationStatus::Cancelled
                | InvocationStatus::Interrupted,
            ) => true,
            (InvocationStatus::Running, next) => {
                next.is_terminal() || next == InvocationStatus::AwaitingApproval
            }
            (InvocationStatus::AwaitingApproval, next) => {
                next.is_terminal() || next == InvocationStatus::Running
            }
            // `resume_run` takes an interrupted agent up again, and first reopens as
            // `interrupted` the agents a failed or cancelled run's end stopped.
            (InvocationStatus::Interrupted, InvocationStatus::Running)
            | (
                InvocationStatus::Failed | InvocationStatus::Cancelled,
                InvocationStatus::Interrupted,
            ) => true,
            _ => false,
        };
        if !legal {
            return Err(DomainError::new(
                error_codes::AGENT_INVOCATION_STATUS_TRANSITION_INVALID,
                format!(
                    "invocation {} cannot move from {} to {}",
                    self.id,
                    self.status.as_str(),
                    next.as_str()
                ),
            ));
        }
        self.status = next;
        self.updated_at = now;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invocation() -> AgentInvocation {
        AgentInvocation::new_root(
            RunId::from_raw("run_x"),
            ProfileId::parse("default-writer").unwrap(),
            Timestamp::from_unix_millis(0),
        )
    }

    #[test]
    fn root_finishes_run() {
        let inv = invocation();
        assert_eq!(inv.exit_policy, ExitPolicy::RunFinishAllowed);
        assert_eq!(
            InvocationKind::Subagent.exit_policy(),
            ExitPolicy::TaskReturnRequired
        );
        assert_eq!(
            InvocationKind::Handoff.exit_policy(),
            ExitPolicy::RunFinishAllowed
        );
    }

    /// Takes a new root agent through `steps`: each the status asked for and what
    /// `transition` answers (`Some(changed)`, or `None` when it is refused).
    fn walk(steps: &[(InvocationStatus, Option<bool>)]) {
        let now = Timestamp::from_unix_millis(1);
        let mut inv = invocation();
        for (n, &(next, answer)) in steps.iter().enumerate() {
            let got = inv.transition(next, now).ok();
            assert_eq!(got, answer, "step {n}: to {}", next.as_str());
        }
    }

    #[test]
    fn an_interrupted_invocation_only_goes_back_to_running() {
        use InvocationStatus::*;
        walk(&[
            (Running, Some(true)),
            (Interrupted, Some(true)),
            (Completed, None),
            (Running, Some(true)),
            (Completed, Some(true)),
            // A completed agent is never reopened; a stopped one is, for `resume_run`.
            (Interrupted, None),
        ]);
        for stopped in [Failed, Cancelled] {
            walk(&[
                (Running, Some(true)),
                (stopped, Some(true)),
                (Interrupted, Some(true)),
            ]);
        }
    }

    #[test]
    fn lifecycle_rules() {
        use InvocationStatus::*;
        walk(&[
            (Completed, None),
            (Running, Some(true)),
            (Transferred, Some(true)),
            (Running, None),
            (Transferred, Some(false)),
        ]);
    }
}
