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
