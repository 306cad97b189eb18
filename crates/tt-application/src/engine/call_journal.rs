//! A tool call's journal: its arguments document and `tool_call_requested`, its start, and
//! its end (the result document, `tool_result_stored`, `tool_call_completed` or
//! `tool_call_failed`), written as the units `dispatch` decides, with what the agent held back
//! (`held_writes`) in front.

use serde_json::Value;
use tt_domain::event::EventLevel;
use tt_domain::event_payload as payload;
use tt_domain::ids::InvocationId;
use tt_domain::tool::{AgentToolCall, AgentToolResult, AgentToolSpec, ToolName};
use tt_ports::{RunDocument, RunWrite};

use crate::engine::context::RunContext;
use crate::engine::invocation::InvocationRuntime;
use crate::engine::records::call_file_key;
use crate::error::{ApplicationError, ApplicationResult};
use crate::events::EventSink;

/// One call on its way through `dispatch`: the name it is shown under, where its documents
/// go, and the writes not yet committed.
pub(crate) struct CallInFlight<'a> {
    pub(crate) call: &'a AgentToolCall,
    pub(crate) round: u32,
    pub(crate) invocation_id: InvocationId,
    /// The tool's canonical id, or the model's own name for one it was never offered.
    pub(crate) display_name: String,
    pub(crate) file_key: String,
    pub(crate) args_doc: RunDocument,
    /// The stored arguments document, until it is committed.
    pub(crate) args_write: Option<RunWrite>,
    /// `tool_call_requested`, until it is committed.
    pub(crate) requested: Option<payload::ToolCallRequested>,
    /// What the agent held back (the end of its previous delegation, `held_writes`) and this
    /// call's writes still to commit, in order.
    pub(crate) held: Vec<RunWrite>,
}

/// The stored arguments document, serialized without copying the arguments.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct ArgsDocument<'a> {
    call_id: &'a str,
    name: &'a str,
    invocation_id: &'a InvocationId,
    round: u32,
    arguments: StoredArguments<'a>,
}

/// The arguments as the document stores them: as given, or only their size.
#[derive(serde::Serialize)]
#[serde(untagged)]
enum StoredArguments<'a> {
    Given(&'a Value),
    Omitted { omitted: bool, bytes: u64 },
}

impl<'a> CallInFlight<'a> {
    /// The call's name resolved for display, its arguments document (oversized arguments are
    /// not stored again: the model response already holds them) and `tool_call_requested`,
    /// nothing written yet.
    pub(crate) fn new(
        inv: &InvocationRuntime,
        round: u32,
        call: &'a AgentToolCall,
        spec: Option<&AgentToolSpec>,
        argument_bytes: u64,
    ) -> ApplicationResult<Self> {
        let invocation_id = inv.invocation.id.clone();
        let display_name = spec.map_or_else(
            || {
                ToolName::from_any(&call.name)
                    .map_or_else(|| call.name.clone(), |tool| tool.canonical().to_owned())
            },
            |spec| spec.name.canonical().to_owned(),
        );
        let file_key = call_file_key(&invocation_id, round, &call.id);
        let args_doc = RunDocument::ToolArgs {
            call_file_key: file_key.clone(),
        };
        let stored_arguments =
            if argument_bytes > inv.profile.definition.limits.max_tool_argument_bytes {
                StoredArguments::Omitted {
                    omitted: true,
                    bytes: argument_bytes,
                }
            } else {
                StoredArguments::Given(&call.arguments)
            };
        // Written with `tool_call_requested`, the event that names it, as one unit.
        let args_write = RunWrite::Document {
            document: args_doc.clone(),
            body: tt_ports::SerializedDocument::new(&ArgsDocument {
                call_id: &call.id,
                name: &display_name,
                invocation_id: &invocation_id,
                round,
                arguments: stored_arguments,
            })?,
        };
        let requested = payload::ToolCallRequested {
            round,
            invocation_id: invocation_id.clone(),
            call_id: call.id.clone(),
            name: display_name.clone(),
            arguments_ref: args_doc.relative_path(),
            provider_metadata: Some(call.provider_metadata.clone()),
        };
        Ok(Self {
            call,
            round,
            invocation_id,
            display_name,
            file_key,
            args_doc,
            args_write: Some(args_write),
            requested: Some(requested),
            held: Vec::new(),
        })
    }

    /// Commits what is held, the arguments and `tool_call_requested` as one unit: the call
    /// does not start at once (a check failed or an approval is asked).
    pub(crate) async fn commit_requested(&mut self, ctx: &RunContext) -> ApplicationResult<()> {
        let Some(requested) = self.requested.take() else {
            return Ok(());
        };
        let requested = ctx.events.stamp(
            &ctx.run_id,
            EventSink::pending(EventLevel::Info, &requested)?,
        );
        let unit = self
            .held
            .drain(..)
            .chain(self.args_write.take())
            .chain([requested])
            .collect();
        ctx.events.commit(&ctx.run_id, unit).await?;
        Ok(())
    }

    /// Journals `tool_call_started`: with the arguments and `tool_call_requested` when they
    /// are not written yet (a call that starts at once, one unit); a delegation's start stays
    /// held to go out with its task (`held_writes`).
    pub(crate) async fn commit_started(
        &mut self,
        ctx: &RunContext,
        spec: &AgentToolSpec,
    ) -> ApplicationResult<()> {
        let started = payload::ToolCallStarted {
            round: self.round,
            invocation_id: self.invocation_id.clone(),
            call_id: self.call.id.clone(),
            name: self.display_name.clone(),
        };
        match self.requested.take() {
            Some(requested) => {
                let events = [
                    EventSink::pending(EventLevel::Info, &requested)?,
                    EventSink::pending(EventLevel::Info, &started)?,
                ]
                .map(|event| ctx.events.stamp(&ctx.run_id, event));
                self.held
                    .extend(self.args_write.take().into_iter().chain(events));
                if spec.name != ToolName::AgentDelegate {
                    ctx.events
                        .commit(&ctx.run_id, std::mem::take(&mut self.held))
                        .await?;
                }
            }
            None => {
                let started = EventSink::pending(EventLevel::Info, &started)?;
                self.held.push(ctx.events.stamp(&ctx.run_id, started));
                ctx.events
                    .commit(&ctx.run_id, std::mem::take(&mut self.held))
                    .await?;
            }
        }
        Ok(())
    }

    /// Journals the call's fatal `tool_call_failed` after what is held.
    pub(crate) async fn fail(
        &mut self,
        ctx: &RunContext,
        err: &ApplicationError,
    ) -> ApplicationResult<()> {
        let held = std::mem::take(&mut self.held);
        emit_fatal_call_failure(
            ctx,
            held,
            self.round,
            &self.invocation_id,
            &self.call.id,
            &self.display_name,
            err,
        )
        .await
    }
}

/// Writes the call's end: whatever is still held (a delegation refused before its task was
/// written) first, then the result document, `tool_result_stored` and the call's outcome, one
/// unit; a delegation's end (`holds_end`) waits instead for the agent's next commit
/// (`held_writes`).
pub(crate) async fn record_call_end(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    mut flight: CallInFlight<'_>,
    result: &AgentToolResult,
    started_at: tt_domain::time::Timestamp,
    holds_end: bool,
) -> ApplicationResult<()> {
    let result_doc = RunDocument::ToolResult {
        call_file_key: flight.file_key.clone(),
    };
    let result_write = RunWrite::Document {
        document: result_doc.clone(),
        body: tt_ports::SerializedDocument::new(result)?,
    };
    let elapsed_ms = ctx.services.clock.now().millis_since(started_at);
    flight.held.extend(call_result_unit(
        ctx,
        flight.round,
        &flight.invocation_id,
        (result_doc.relative_path(), Some(result_write)),
        result,
        elapsed_ms,
    )?);
    if holds_end {
        inv.held_writes = flight.held;
    } else {
        crate::engine::held_writes::settle(inv).await?;
        ctx.events.commit(&ctx.run_id, flight.held).await?;
    }
    tracing::debug!(
        is_error = result.is_error,
        error_code = result.error_code.as_deref(),
        elapsed_ms,
        "tool call completed"
    );
    Ok(())
}

/// Journals `tool_result_stored` and then `tool_call_completed`, or `tool_call_failed` for a
/// recoverable error that goes back to the model. The result names its call and tool. The
/// result document is at `result_path`; `result_write`, when given, writes it first, in the
/// same unit as the two events (`EventSink::commit`).
pub(crate) async fn journal_call_result(
    ctx: &RunContext,
    round: u32,
    invocation_id: &InvocationId,
    result_record: (String, Option<RunWrite>),
    result: &AgentToolResult,
    elapsed_ms: u64,
) -> ApplicationResult<()> {
    let unit = call_result_unit(ctx, round, invocation_id, result_record, result, elapsed_ms)?;
    ctx.events.commit(&ctx.run_id, unit).await?;
    Ok(())
}

/// The unit that ends a call: its result document (when given), `tool_result_stored`, and
/// `tool_call_completed` or `tool_call_failed`.
fn call_result_unit(
    ctx: &RunContext,
    round: u32,
    invocation_id: &InvocationId,
    (result_path, result_write): (String, Option<RunWrite>),
    result: &AgentToolResult,
    elapsed_ms: u64,
) -> ApplicationResult<Vec<RunWrite>> {
    let stored = payload::ToolResultStored {
        round,
        invocation_id: invocation_id.clone(),
        call_id: result.call_id.clone(),
        path: result_path,
    };
    // Both events in one unit with the document: written one right after the other.
    let stored = EventSink::pending(EventLevel::Info, &stored)?;
    let outcome = if result.is_error {
        let failed = payload::ToolCallFailed {
            round,
            invocation_id: invocation_id.clone(),
            call_id: result.call_id.clone(),
            name: result.name.clone(),
            is_error: true,
            error_code: result.error_code.clone().unwrap_or_default(),
            error_reason: result.error_reason.clone(),
            message: result.content.clone(),
            elapsed_ms: Some(elapsed_ms),
            resource_refs: Some(result.resource_refs.clone()),
            fatal: None,
        };
        EventSink::pending(EventLevel::Warn, &failed)?
    } else {
        let completed = payload::ToolCallCompleted {
            round,
            invocation_id: invocation_id.clone(),
            call_id: result.call_id.clone(),
            name: result.name.clone(),
            is_error: false,
            error_code: result.error_code.clone(),
            message: None,
            elapsed_ms,
            resource_refs: result.resource_refs.clone(),
        };
        EventSink::pending(EventLevel::Info, &completed)?
    };
    let events = [stored, outcome].map(|event| ctx.events.stamp(&ctx.run_id, event));
    Ok(result_write.into_iter().chain(events).collect())
}

/// Journals the `tool_call_failed` (with `fatal: true`) of a call whose error ends the agent.
pub(crate) async fn emit_fatal_call_failure(
    ctx: &RunContext,
    mut held: Vec<RunWrite>,
    round: u32,
    invocation_id: &InvocationId,
    call_id: &str,
    name: &str,
    err: &ApplicationError,
) -> ApplicationResult<()> {
    let failed = payload::ToolCallFailed {
        round,
        invocation_id: invocation_id.clone(),
        call_id: call_id.to_owned(),
        name: name.to_owned(),
        is_error: true,
        error_code: err.code().to_string(),
        error_reason: None,
        message: err.to_string(),
        elapsed_ms: None,
        resource_refs: None,
        fatal: Some(true),
    };
    // After what the agent held back (`held_writes`), if anything.
    held.push(
        ctx.events
            .stamp(&ctx.run_id, EventSink::pending(EventLevel::Error, &failed)?),
    );
    ctx.events.commit(&ctx.run_id, held).await?;
    Ok(())
}
