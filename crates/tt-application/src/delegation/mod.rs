//! Delegation and handoff: the agent tools (`agent.list`, `agent.delegate`, `agent.await`,
//! `agent.handoff`, `task.return`), the run-scoped scheduler of background tasks, delegated
//! invocations, result injection and the markdown agents read (briefs, result capsules).

pub(crate) mod args;
pub(crate) mod child;
pub(crate) mod handoff;
pub(crate) mod rendering;
pub(crate) mod results;
pub(crate) mod scheduler;
pub(crate) mod specs;
pub(crate) mod targets;
pub(crate) mod tools;
