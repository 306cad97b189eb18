//! Delegation and handoff, the parts that need no running agent: `agent.list`,
//! `agent.cancel_task` and the writing half of `task.return` on narrow inputs (`list`,
//! `cancel`, `task_return`), the arguments of the agent tools (`agent.list`, `agent.delegate`,
//! `agent.await`, `agent.handoff`, `task.return`) and their parsing, their model-facing specs, the delegation policy (`policy`: who may delegate
//! or hand off to whom), and the markdown agents read (briefs, result capsules, hints, the note of an agent started in fork mode, the return gate's texts). Executing those tools, the task scheduler and the delegated worker are the
//! engine's (`crate::engine::tasks`, `crate::engine::scheduler`, `crate::engine::child`).

pub(crate) mod args;
pub(crate) mod cancel;
pub(crate) mod failure_text;
pub(crate) mod fork_note;
pub(crate) mod list;
pub(crate) mod policy;
pub(crate) mod rendering;
pub(crate) mod return_gate_text;
pub(crate) mod specs;
pub(crate) mod task_return;

/// What the delegation unit tests build their records from.
#[cfg(test)]
pub(crate) mod testing {
    use tt_domain::ids::{InvocationId, ProfileId, RunId, TaskId};
    use tt_domain::task::{AgentTaskRecord, TaskContinuation, TaskStatus};
    use tt_domain::time::Timestamp;

    /// A task `id` of run `run_1` that `parent` delegated to a `helper` working as `inv_{id}`,
    /// in `status`, created at time 0.
    pub(crate) fn task_record(id: &str, parent: &str, status: TaskStatus) -> AgentTaskRecord {
        AgentTaskRecord {
            id: TaskId::from_raw(id),
            run_id: RunId::from_raw("run_1"),
            parent_invocation_id: InvocationId::from_raw(parent),
            child_invocation_id: InvocationId::from_raw(format!("inv_{id}")),
            target_profile_id: ProfileId::parse("helper").unwrap(),
            workspace_key: id.to_owned(),
            continuation: TaskContinuation::ReturnToParent,
            status,
            task: Default::default(),
            budget: None,
            created_by_tool_call_id: None,
            result_ref: None,
            error: None,
            creation_seq: 1,
            created_at: Timestamp::from_unix_millis(0),
            updated_at: Timestamp::from_unix_millis(0),
        }
    }
}
