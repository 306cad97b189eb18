//! Fork mode (`agent.delegate` with `mode: "fork"`; docs/delegation.md, "Fork mode"): a task
//! whose agent starts from its delegating agent's conversation, so a provider's prompt cache
//! covers what the two share.
//!
//! - When a reply asks for a task in fork mode, the loop keeps the messages it had just sent
//!   ([`push_reply`]); `agent.delegate` stores them, with the tool specs it sent beside them,
//!   for the new agent ([`store_prefix`], `input/invocations/<id>/fork_prefix.json`) before the
//!   task is registered, so a resumed or branched run finds the same prefix; the new agent's
//!   start reads it back (`crate::engine::fork_prefix`).
//! - The new agent's requests repeat those messages and those tool specs byte for byte, then
//!   its note and brief (one user message). Its policy is its own profile's all the same: the
//!   dispatcher admits only the tools of its own frozen snapshot (any other is an unknown
//!   tool), within its roots and budgets; the note tells it which of the listed tools are its.
//! - Its answer without a tool call is its `task.return` ([`calls_of`]): the delegating
//!   agent's tool list has no `task_return`, and adding one would change the prefix.
//! - Once its history holds a call of one of its own tools the list lacks (that `task_return`,
//!   sent back by a return gate, or a tool of its own it called by name), the tool's spec is
//!   added at the end of the list ([`declare_own_calls`]): a request whose history calls a tool
//!   it does not declare is refused by some wires. The requests before keep the prefix byte for
//!   byte; the first one after it is read without the cache, and the cache follows the longer
//!   list from then on.

use serde::Serialize;
use serde_json::{Value, json};
use std::sync::Arc;
use tt_domain::error_codes;
use tt_domain::ids::InvocationId;
use tt_domain::model::{AgentModelMessage, AgentModelResponse, ModelContentPart};
use tt_domain::tool::{AgentToolCall, AgentToolSpec, ToolName};
use tt_ports::{RunDocument, SerializedDocument};

use crate::engine::context::RunContext;
use crate::engine::invocation::InvocationRuntime;
use crate::error::{ApplicationError, ApplicationResult};

/// `crate::engine::fork_prefix::ForkPrefix` borrowed, for writing it without a copy.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PrefixRef<'a> {
    messages: &'a [AgentModelMessage],
    tools: &'a [AgentToolSpec],
}

/// Whether `call` asks for a task in fork mode.
fn asks_fork(call: &AgentToolCall) -> bool {
    call.name == ToolName::AgentDelegate.model_alias()
        && call.arguments.get("mode").and_then(Value::as_str) == Some("fork")
}

/// Adds the model's reply (as history keeps it) to `messages`: moved there, not copied. When
/// one of its `calls` (its tool calls, in order) asks for a task in fork mode, the messages as
/// they were sent are kept first, for that task; nothing is copied otherwise. Answers each
/// call's [`argument_bytes`](crate::engine::call_checks::argument_bytes), counted once for
/// the history and the call's checks.
pub(crate) fn push_reply(
    inv: &mut InvocationRuntime,
    calls: &[AgentToolCall],
    messages: &mut Vec<AgentModelMessage>,
    mut reply: AgentModelMessage,
) -> Vec<u64> {
    let sizes: Vec<u64> = calls
        .iter()
        .map(|call| crate::engine::call_checks::argument_bytes(&call.arguments))
        .collect();
    let forks = calls.iter().any(asks_fork);
    inv.sent_messages = forks.then(|| Arc::new(messages.clone()));
    inv.sent_tools = forks.then(|| inv.request_tools());
    crate::engine::call_checks::bound_for_history(
        &mut reply,
        inv.profile.definition.limits.max_tool_argument_bytes,
        &sizes,
    );
    messages.push(reply);
    declare_own_calls(inv, calls);
    sizes
}

/// For an agent started in fork mode: adds to the tools its requests list, at the end, each
/// tool of its own that `calls` (now in its history) call and the list does not declare.
fn declare_own_calls(inv: &mut InvocationRuntime, calls: &[AgentToolCall]) {
    let Some(offered) = inv.offered_tools.as_ref() else {
        return;
    };
    let mut tools: Option<Vec<AgentToolSpec>> = None;
    for call in calls {
        let listed = tools.as_deref().unwrap_or(offered);
        if listed.iter().any(|spec| spec.model_name == call.name) {
            continue;
        }
        if let Some(own) = inv
            .snapshot
            .tools
            .iter()
            .find(|spec| spec.model_name == call.name)
        {
            tools
                .get_or_insert_with(|| offered.to_vec())
                .push(own.clone());
        }
    }
    if let Some(tools) = tools {
        inv.offered_tools = Some(tools.into());
    }
}

/// The tool calls of `response`. For an agent started in fork mode, an answer without a tool
/// call but with text is its `task.return` with that text as its summary: the call is added to
/// the reply, so its history and journal show it like any other call, and its id is made from
/// the round, so a resumed agent replays the same call.
pub(crate) fn calls_of(
    inv: &InvocationRuntime,
    round: u32,
    response: &mut AgentModelResponse,
) -> Vec<AgentToolCall> {
    let calls = response.tool_calls();
    if !calls.is_empty() || inv.offered_tools.is_none() {
        return calls;
    }
    let text = response.text();
    let summary = text.trim();
    if summary.is_empty() {
        return calls;
    }
    let call = AgentToolCall::new(
        format!("fork_return_{round}"),
        ToolName::TaskReturn.model_alias().to_owned(),
        json!({"summary": summary}),
    );
    response
        .message
        .parts
        .push(ModelContentPart::ToolCall { call: call.clone() });
    vec![call]
}

/// Stores, for `child`, the prefix `inv` sent in the request whose reply asked for it
/// (before the task that brings `child` in is registered).
pub(crate) async fn store_prefix(
    ctx: &RunContext,
    inv: &InvocationRuntime,
    child: &InvocationId,
) -> ApplicationResult<()> {
    let Some(messages) = inv.sent_messages.as_ref() else {
        return Err(ApplicationError::fatal(
            error_codes::AGENT_INTERNAL_ERROR,
            "a task in fork mode was asked for without the messages that asked for it",
        ));
    };
    // The tools of the request that asked for it, as sent.
    let tools = inv
        .sent_tools
        .clone()
        .unwrap_or_else(|| inv.request_tools());
    let prefix = PrefixRef {
        messages,
        tools: &tools,
    };
    ctx.services
        .runs
        .write_serialized_document(
            &ctx.run_id,
            &RunDocument::InvocationForkPrefix(child.clone()),
            &SerializedDocument::new(&prefix)?,
        )
        .await?;
    Ok(())
}
