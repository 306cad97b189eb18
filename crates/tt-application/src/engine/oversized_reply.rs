//! A reply with more tool calls than the agent may make in all (`tools.maxCallsPerRun`) can
//! never succeed: it is a model slip answered once, before any call runs, instead of being
//! executed call by call until the budget refuses the rest (which left an agent that could no
//! longer write or publish, resending the whole reply on every later turn).
//!
//! The agent's history keeps the first few calls of that reply, each answered with the same
//! recoverable error, so its next request is small and every call it shows has its result.
//! A resumed agent replays the same stored reply through the same rule.

use tt_domain::model::{AgentModelMessage, AgentModelResponse, ModelContentPart};

use crate::engine::invocation::InvocationRuntime;
use crate::error::{ApplicationError, ApplicationResult, ToolError};

/// The code of the slip.
pub(crate) const TOO_MANY_CALLS: tt_domain::error_codes::Code =
    tt_domain::error_codes::MODEL_TOO_MANY_TOOL_CALLS;

/// Calls of the refused reply kept in the agent's history.
const KEPT_CALLS: usize = 4;

/// `None` when the reply's calls fit the agent's budget; otherwise the messages that answer
/// it (the shortened reply, then one error result per kept call), or the fatal error once the
/// slips in a row pass `limits.maxConsecutiveSlips`.
pub(crate) fn refuse_if_oversized(
    inv: &mut InvocationRuntime,
    response: &AgentModelResponse,
    call_count: usize,
) -> ApplicationResult<Option<Vec<AgentModelMessage>>> {
    let allowed = inv.snapshot.budgets.max_calls_per_invocation as usize;
    if call_count <= allowed {
        return Ok(None);
    }
    let message = refusal(call_count, allowed);
    inv.session.consecutive_slips += 1;
    let limits = inv.profile.definition.limits;
    if inv.session.consecutive_slips > limits.max_consecutive_slips {
        return Err(ApplicationError::fatal(
            TOO_MANY_CALLS,
            format!(
                "{message} (the model slipped {} times in a row; limits.maxConsecutiveSlips is {})",
                inv.session.consecutive_slips, limits.max_consecutive_slips
            ),
        ));
    }
    let mut reply = crate::engine::call_checks::bounded_for_history(
        &response.message,
        limits.max_tool_argument_bytes,
    );
    let mut kept = 0;
    reply.parts.retain(|part| match part {
        ModelContentPart::ToolCall { .. } => {
            kept += 1;
            kept <= KEPT_CALLS
        }
        _ => true,
    });
    let mut messages = Vec::with_capacity(1 + KEPT_CALLS);
    let refused = ToolError::new(TOO_MANY_CALLS, message);
    let answers: Vec<AgentModelMessage> = reply
        .tool_calls()
        .map(|call| {
            AgentModelMessage::tool_result(crate::engine::call_checks::error_result(
                &call.id, &call.name, &refused,
            ))
        })
        .collect();
    messages.push(reply);
    messages.extend(answers);
    Ok(Some(messages))
}

/// What the agent reads for each kept call of a refused reply.
fn refusal(call_count: usize, allowed: usize) -> String {
    format!(
        "Your reply asked for {call_count} tool calls, more than the {allowed} you may make in all, so none of them ran. Go one step at a time, with a few calls per reply."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_agent_reads_when_its_reply_has_too_many_calls() {
        insta::assert_snapshot!(
            refusal(10_000, 80),
            @"Your reply asked for 10000 tool calls, more than the 80 you may make in all, so none of them ran. Go one step at a time, with a few calls per reply."
        );
    }
}
