//! The agent tools as the engine executes them (`agent.list`, `agent.delegate`, `agent.await`,
//! `agent.handoff`, `task.return`): admission, target resolution and task creation (`targets`),
//! what an agent sees of its tasks' results (`results`), handoff (`handoff`). They act on the
//! run (journal, task records, the scheduler), so they live in the engine; their arguments,
//! specs and rendering sit below it in `crate::delegation`.

pub(crate) mod handoff;
pub(crate) mod results;
pub(crate) mod targets;
pub(crate) mod tools;
