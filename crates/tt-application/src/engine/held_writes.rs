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
//!
//! A step further: a delegation's unit is committed without waiting for it to be durable
//! (`EventSink::commit_chained`), so a reply's delegations go out one after the other while
//! the store commits them (on PostgreSQL, many in one batch of its group commit). The units
//! form the agent's chain: the store writes one only if every earlier one was, so a failure or
//! a crash still leaves a prefix. The agent [`settle`]s them before it writes anything else,
//! and a delegated agent starts only once its task's unit is stored.

use crate::engine::context::RunContext;
use crate::engine::invocation::InvocationRuntime;
use crate::error::ApplicationResult;

/// Commits the writes `inv` holds back, if any, as one unit, once its chained units are stored.
pub(crate) async fn flush(ctx: &RunContext, inv: &mut InvocationRuntime) -> ApplicationResult<()> {
    settle(inv).await?;
    if inv.held_writes.is_empty() {
        return Ok(());
    }
    let unit = std::mem::take(&mut inv.held_writes);
    ctx.events.commit(&ctx.run_id, unit).await?;
    Ok(())
}

/// Waits until the units `inv` committed without waiting (a reply's delegations,
/// `EventSink::commit_chained`) are stored: the last one stored means all are, since a chain's
/// unit is written only after the earlier ones. Called before anything of the agent's that is
/// not a unit of its chain is written, so the journal never holds a later write of the agent
/// without the earlier ones.
pub(crate) async fn settle(inv: &mut InvocationRuntime) -> ApplicationResult<()> {
    match inv.in_flight.take() {
        Some(durable) => durable.wait().await,
        None => Ok(()),
    }
}
