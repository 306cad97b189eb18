//! Builders for `AgentModelResponse`s in tests: an assistant message with a text part and/or
//! `ToolCall` parts, ids kept verbatim.

use serde_json::Value;
use tt_domain::model::{AgentModelMessage, AgentModelResponse, ModelContentPart};
use tt_domain::tool::AgentToolCall;

/// The model name the builders put on responses.
pub const FAKE_MODEL_NAME: &str = "fake-model";

/// A text-only answer (no tool calls): `finish_reason` `stop`.
pub fn text(text: &str) -> AgentModelResponse {
    text_and_tool_calls(text, Vec::new())
}

/// Tool calls only, each `(call id, tool name as the model calls it, arguments)`.
pub fn tool_calls(calls: Vec<(&str, &str, Value)>) -> AgentModelResponse {
    text_and_tool_calls("", calls)
}

/// One tool call.
pub fn tool_call(id: &str, name: &str, arguments: Value) -> AgentModelResponse {
    tool_calls(vec![(id, name, arguments)])
}

/// Assistant text (omitted when empty) followed by tool calls; `finish_reason` is
/// `tool_calls` when there are calls, else `stop`.
pub fn text_and_tool_calls(text: &str, calls: Vec<(&str, &str, Value)>) -> AgentModelResponse {
    let has_calls = !calls.is_empty();
    let mut parts = Vec::new();
    if !text.is_empty() {
        parts.push(ModelContentPart::Text {
            text: text.to_owned(),
        });
    }
    parts.extend(
        calls
            .into_iter()
            .map(|(id, name, arguments)| ModelContentPart::ToolCall {
                call: AgentToolCall::new(id.to_owned(), name.to_owned(), arguments),
            }),
    );
    AgentModelResponse {
        message: AgentModelMessage::assistant(parts),
        response_id: None,
        model: Some(FAKE_MODEL_NAME.to_owned()),
        finish_reason: Some(if has_calls { "tool_calls" } else { "stop" }.to_owned()),
        usage: None,
        raw_response: Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tt_domain::model::ModelRole;

    #[test]
    fn builds_assistant_messages_with_text_and_calls() {
        let response = text_and_tool_calls(
            "Writing now.",
            vec![(
                "call_1",
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "hi"}),
            )],
        );
        assert_eq!(response.message.role, ModelRole::Assistant);
        assert_eq!(response.text(), "Writing now.");
        let calls = response.tool_calls();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].id, "call_1");
        assert_eq!(calls[0].name, "workspace_write_file");
        assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));

        let plain = text("done");
        assert!(plain.tool_calls().is_empty());
        assert_eq!(plain.finish_reason.as_deref(), Some("stop"));

        let only_calls = tool_call("c", "workspace_finish", json!({}));
        assert_eq!(only_calls.message.parts.len(), 1);
        assert_eq!(only_calls.text(), "");
    }
}
