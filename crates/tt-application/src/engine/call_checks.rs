//! A tool call's checks before it runs (its arguments' shape and size, the agent's call
//! budgets, an unknown name) and the result a refused call answers with; split from
//! `dispatch`, which runs them in the contract's order.

use serde_json::{Value, json};
use tt_domain::error_codes;
use tt_domain::ids::truncate_for_message;
use tt_domain::model::{AgentModelMessage, ModelContentPart};
use tt_domain::tool::{AgentToolResult, AgentToolSpec, ToolName};

use crate::engine::invocation::InvocationRuntime;
use crate::error::ToolError;

/// The result the model reads for a call that failed with a recoverable error.
pub(crate) fn error_result(call_id: &str, name: &str, err: &ToolError) -> AgentToolResult {
    AgentToolResult {
        call_id: call_id.to_owned(),
        name: name.to_owned(),
        content: err.message.clone(),
        structured: json!({"error": {"code": err.code, "message": err.message}}),
        is_error: true,
        error_code: Some(err.code.to_string()),
        error_reason: err.reason.as_deref().map(str::to_owned),
        resource_refs: Vec::new(),
    }
}

/// The size of a call's arguments in bytes: the raw text a provider could not parse, or the
/// JSON text of what it parsed.
pub(crate) fn argument_bytes(arguments: &Value) -> u64 {
    match arguments {
        Value::String(raw) => u64::try_from(raw.len()).unwrap_or(u64::MAX),
        other => {
            // Counted as it is written, not formatted into a `String` first: the same bytes
            // `to_string` would make, without the allocation and the copies.
            let mut counter = ByteCounter(0);
            match tt_domain::json_writer::write_json(&mut counter, other) {
                Ok(()) => counter.0,
                Err(_) => u64::try_from(other.to_string().len()).unwrap_or(u64::MAX),
            }
        }
    }
}

/// A writer that only counts what it is given.
struct ByteCounter(u64);

impl tt_domain::json_writer::JsonSink for ByteCounter {
    fn put(&mut self, text: &str) {
        self.0 = self
            .0
            .saturating_add(u64::try_from(text.len()).unwrap_or(u64::MAX));
    }

    fn put_ascii(&mut self, _ascii: u8) {
        self.0 = self.0.saturating_add(1);
    }
}

pub(crate) fn unknown_tool_error(inv: &InvocationRuntime, name: &str) -> ToolError {
    ToolError::new(
        error_codes::MODEL_UNKNOWN_TOOL_CALL,
        format!(
            "There is no tool named `{}`. Call one of your tools: {}.",
            truncate_for_message(name),
            inv.snapshot.model_names().join(", ")
        ),
    )
}

/// `model.invalid_tool_call` when the arguments are not one JSON object within the limit.
/// Providers pass arguments they could not parse through as a JSON string of the raw text.
pub(crate) fn arguments_error(
    alias: &str,
    arguments: &Value,
    bytes: u64,
    limit: u64,
) -> Option<ToolError> {
    let ask = "Send the arguments as one JSON object with the fields the tool describes.";
    let message = if bytes > limit {
        format!(
            "The arguments of your `{alias}` call are {bytes} bytes long; at most {limit} bytes are accepted. Send less at once, for example write a long text in parts with `{}` and `mode: \"append\"`.",
            ToolName::WorkspaceWriteFile.model_alias()
        )
    } else {
        match arguments {
            Value::Object(_) => return None,
            Value::String(raw) => {
                let why = serde_json::from_str::<Value>(raw)
                    .err()
                    .map(|err| format!(" ({err})"))
                    .unwrap_or_default();
                format!("The arguments of your `{alias}` call are not valid JSON{why}. {ask}")
            }
            other => format!(
                "The arguments of your `{alias}` call are {}, not a JSON object. {ask}",
                json_kind(other)
            ),
        }
    };
    Some(ToolError::new(
        error_codes::MODEL_INVALID_TOOL_CALL,
        message,
    ))
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The assistant message as it goes back into the conversation: arguments over the limit are
/// replaced by a short note, so one oversized call is not resent on every later turn (the
/// stored model response keeps the original).
pub(crate) fn bounded_for_history(message: &AgentModelMessage, limit: u64) -> AgentModelMessage {
    let mut message = message.clone();
    bound_for_history(&mut message, limit, &[]);
    message
}

/// [`bounded_for_history`] in place, with `sizes` the [`argument_bytes`] of the message's tool
/// calls in order when the caller has them already (each is counted here otherwise).
pub(crate) fn bound_for_history(message: &mut AgentModelMessage, limit: u64, sizes: &[u64]) {
    let mut sizes = sizes.iter();
    for part in &mut message.parts {
        if let ModelContentPart::ToolCall { call } = part {
            let bytes = sizes
                .next()
                .copied()
                .unwrap_or_else(|| argument_bytes(&call.arguments));
            if bytes > limit {
                call.arguments = Value::String(format!("[arguments omitted: {bytes} bytes]"));
            }
        }
    }
}

pub(crate) fn budget_error(inv: &InvocationRuntime, spec: &AgentToolSpec) -> Option<ToolError> {
    // The tools that end an agent's work are never refused for budget: an agent that has used
    // up its calls can still hand back its result or finish.
    if spec.facts().ends_loop {
        return None;
    }
    let budgets = &inv.snapshot.budgets;
    if inv.session.calls_total >= budgets.max_calls_per_invocation {
        return Some(ToolError::new(
            error_codes::AGENT_TOOL_BUDGET_EXHAUSTED,
            format!(
                "You have used all {} tool calls available to you. Finish with the tools that end your work.",
                budgets.max_calls_per_invocation
            ),
        ));
    }
    if let Some(limit) = budgets.max_calls_per_tool.get(&spec.name) {
        let used = inv
            .session
            .calls_per_tool
            .get(&spec.name)
            .copied()
            .unwrap_or(0);
        if used >= *limit {
            return Some(ToolError::new(
                error_codes::AGENT_TOOL_BUDGET_EXHAUSTED,
                format!(
                    "You have used all {limit} calls of `{}`; continue with other tools.",
                    spec.model_name
                ),
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_bytes_are_those_of_the_json_text() {
        let arguments =
            json!({"path": "scratch/é \"q\".md", "content": "a\nb\u{1}", "n": [1, 2.5, null]});
        assert_eq!(
            argument_bytes(&arguments),
            arguments.to_string().len() as u64
        );
        assert_eq!(argument_bytes(&Value::String("{not json".into())), 9);
    }
}
