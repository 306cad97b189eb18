//! Delegation and handoff: the agent tools (`agent.list`, `agent.delegate`, `agent.await`,
//! `agent.handoff`, `task.return`), the run-scoped scheduler of background tasks, delegated
//! invocations, result injection and the markdown agents read (briefs, result capsules).

pub mod args;
pub mod child;
pub mod handoff;
pub mod rendering;
pub mod results;
pub mod scheduler;
pub mod specs;
pub mod targets;
pub mod tools;
