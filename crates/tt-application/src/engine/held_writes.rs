//! Writes an agent holds back to commit with its next unit (`InvocationRuntime::held_writes`).
//!
//! A delegation writes three units one after another: the call's start (arguments,
//! `tool_call_requested`, `tool_call_started`), the new agent and task with their events, and
//! the call's end (result, `tool_result_stored`, `tool_call_completed`). Each commit waits for
//! the store (on PostgreSQL a round trip and a WAL flush), and a lead delegating a reply's
//! tasks does nothing else meanwhile. So the dispatcher joins them: the call's start goes out
//! with the new task's unit, and the call's end is held until the agent's next unit, which is
//! the next delegation's one commit when the reply has more.
//!
//! Why this keeps a resume exact: held writes only join *later* writes of the same agent, in
//! the agent's own order, so whatever a crash or cancel leaves in the journal is still a prefix
//! of what the agent wrote, a state a crash between two commits already leaves (docs/resume.md
//! says how each is resumed). Nothing of the agent that is not in the journal's unit is written
//! in between (a delegation's work is its unit), and the held writes are committed before
//! anything else: the next call's first commit, a workspace write, the next model call, a
//! journaled injection of results, the loop's end.

use crate::engine::context::RunContext;
use crate::engine::invocation::InvocationRuntime;
use crate::error::ApplicationResult;

/// Commits the writes `inv` holds back, if any, as one unit.
pub(crate) async fn flush(ctx: &RunContext, inv: &mut InvocationRuntime) -> ApplicationResult<()> {
    if inv.held_writes.is_empty() {
        return Ok(());
    }
    let unit = std::mem::take(&mut inv.held_writes);
    ctx.events.commit(&ctx.run_id, unit).await?;
    Ok(())
}
