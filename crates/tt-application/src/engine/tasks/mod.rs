//! `tasks`: the run's delegated tasks as the engine sees them. It is not called `delegation`
//! so that name means one thing: the tool family below the engine. Here are the agent tools
//! that start agents or wait for them, as the engine executes them (`agent.delegate`,
//! `agent.await`, `agent.handoff`): target resolution and task creation (`targets`; the run's
//! workspace keys it hands out are in `engine::workspace_keys`, below the run context), what an agent sees of its tasks' results
//! (`results`), handoff (`handoff`); and
//! the engine's side of the agent tools that run below it (`agent.list`, `agent.cancel_task`,
//! `task.return`, in `tools`). They act on the run (journal, task records, the scheduler), so
//! they live in the engine; the tools' arguments, policy, specs and rendering, and the tools
//! that need only narrow inputs, sit below it in `crate::delegation`.

pub(crate) mod handoff;
pub(crate) mod results;
pub(crate) mod targets;
pub(crate) mod tools;
