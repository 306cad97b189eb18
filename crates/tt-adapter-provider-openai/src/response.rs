//! Chat Completions response -> canonical response: text, `reasoning_content`, tool calls (ids
//! kept verbatim, never invented), usage and finish reason. Shared by whole and streamed replies.

use serde_json::{Value, json};
use tt_domain::model::{AgentModelMessage, AgentModelResponse, ModelContentPart, ModelUsage};
use tt_domain::tool::AgentToolCall;
use tt_ports::ModelError;

pub(crate) use tt_provider_http::http::invalid_response;
use tt_provider_http::http::invalid_tool_call;

/// A tool call as the wire described it, before validation.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RawToolCall {
    pub id: Option<String>,
    pub name: Option<String>,
    /// The arguments: a JSON text (the standard) or, from lenient servers, an object.
    pub arguments: RawArguments,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RawArguments {
    Text(String),
    Json(Value),
}

impl Default for RawArguments {
    fn default() -> Self {
        Self::Text(String::new())
    }
}

impl RawToolCall {
    /// Validates one call. A missing id or name is `model.invalid_tool_call`; empty arguments
    /// mean `{}`. Arguments that are not valid JSON pass through as a JSON string of the raw
    /// text, and JSON that is not an object passes through as it is: the runtime answers those
    /// to the model as a recoverable `model.invalid_tool_call`, so one slip does not end the
    /// turn.
    pub(crate) fn into_call(self, position: usize) -> Result<AgentToolCall, ModelError> {
        let id = self
            .id
            .filter(|id| !id.is_empty())
            .ok_or_else(|| invalid_tool_call(format!("tool call #{position} has no id")))?;
        let name = self
            .name
            .filter(|name| !name.is_empty())
            .ok_or_else(|| invalid_tool_call(format!("tool call `{id}` has no function name")))?;
        let arguments = match self.arguments {
            RawArguments::Text(text) if text.trim().is_empty() => json!({}),
            RawArguments::Text(text) => serde_json::from_str(&text).unwrap_or(Value::String(text)),
            RawArguments::Json(value) => value,
        };
        Ok(AgentToolCall::new(id, name, arguments))
    }
}

/// Everything a reply carried, whole or reassembled from a stream.
#[derive(Debug, Clone, Default)]
pub(crate) struct ReplyParts {
    pub id: Option<String>,
    pub model: Option<String>,
    pub reasoning: String,
    pub text: String,
    pub tool_calls: Vec<RawToolCall>,
    pub finish_reason: Option<String>,
    pub usage: Option<ModelUsage>,
}

impl ReplyParts {
    /// The canonical response: reasoning, then text, then tool calls in wire order.
    pub(crate) fn into_response(
        self,
        raw_response: Value,
    ) -> Result<AgentModelResponse, ModelError> {
        let mut parts = Vec::new();
        if !self.reasoning.is_empty() {
            parts.push(ModelContentPart::Reasoning {
                text: Some(self.reasoning),
                provider_metadata: Value::Null,
            });
        }
        if !self.text.is_empty() {
            parts.push(ModelContentPart::Text { text: self.text });
        }
        for (position, raw) in self.tool_calls.into_iter().enumerate() {
            parts.push(ModelContentPart::ToolCall {
                call: raw.into_call(position + 1)?,
            });
        }
        Ok(AgentModelResponse {
            message: AgentModelMessage::assistant(parts),
            response_id: self.id,
            model: self.model,
            finish_reason: self.finish_reason,
            usage: self.usage,
            raw_response,
        })
    }
}

/// Usage from a response body or a stream chunk: `usage.prompt_tokens` counts the whole prompt;
/// the cached part is `usage.prompt_tokens_details.cached_tokens` (OpenAI, vLLM) or, where the
/// server reports none, llama.cpp's `timings.cache_n` beside `usage`.
pub(crate) fn usage_from(body: &Value) -> Option<ModelUsage> {
    let usage = body.get("usage").filter(|usage| !usage.is_null())?;
    let input = usage.get("prompt_tokens").and_then(Value::as_u64);
    let output = usage.get("completion_tokens").and_then(Value::as_u64);
    if input.is_none() && output.is_none() {
        return None;
    }
    let cached = usage
        .pointer("/prompt_tokens_details/cached_tokens")
        .and_then(Value::as_u64)
        .or_else(|| body.pointer("/timings/cache_n").and_then(Value::as_u64))
        .unwrap_or(0);
    Some(ModelUsage {
        input_tokens: input.unwrap_or(0),
        output_tokens: output.unwrap_or(0),
        cached_input_tokens: cached,
        cache_write_tokens: 0,
    })
}

pub(crate) fn string_field(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// `reasoning_content` (llama.cpp, DeepSeek, vLLM) or `reasoning` (some other servers).
pub(crate) fn reasoning_field(value: &Value) -> Option<&str> {
    value
        .get("reasoning_content")
        .and_then(Value::as_str)
        .or_else(|| value.get("reasoning").and_then(Value::as_str))
}

/// Decodes a whole (non-streamed) response body.
pub(crate) fn decode_body(body: &[u8]) -> Result<AgentModelResponse, ModelError> {
    let value = tt_provider_http::http::response_json(body)?;
    let choice = value
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|choices| choices.first())
        .ok_or_else(|| invalid_response("the response has no choices"))?;
    let message = choice
        .get("message")
        .filter(|message| message.is_object())
        .ok_or_else(|| invalid_response("the response's first choice has no message"))?;
    let tool_calls = match message.get("tool_calls") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(calls)) => calls.iter().map(raw_call).collect(),
        Some(_) => {
            return Err(invalid_tool_call("`tool_calls` is not an array".to_owned()));
        }
    };
    let parts = ReplyParts {
        id: string_field(&value, "id"),
        model: string_field(&value, "model"),
        reasoning: reasoning_field(message).unwrap_or_default().to_owned(),
        text: message
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        tool_calls,
        finish_reason: string_field(choice, "finish_reason"),
        usage: usage_from(&value),
    };
    parts.into_response(value)
}

fn raw_call(call: &Value) -> RawToolCall {
    let function = call.get("function");
    let arguments = match function.and_then(|function| function.get("arguments")) {
        None | Some(Value::Null) => RawArguments::default(),
        Some(Value::String(text)) => RawArguments::Text(text.clone()),
        Some(other) => RawArguments::Json(other.clone()),
    };
    RawToolCall {
        id: string_field(call, "id"),
        name: function.and_then(|function| string_field(function, "name")),
        arguments,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_text_reasoning_calls_and_usage() {
        let body = json!({
            "id": "chatcmpl-1", "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "Sure.", "reasoning_content": "hmm",
                "tool_calls": [
                    {"id": "call_A", "type": "function", "function": {"name": "agent_list", "arguments": ""}},
                    {"id": "call_B", "type": "function", "function": {"name": "workspace_read_file", "arguments": {"path": "output/x.md"}}}
                ]}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}
        });
        let response = decode_body(body.to_string().as_bytes()).unwrap();
        assert_eq!(response.text(), "Sure.");
        assert_eq!(response.reasoning_text(), "hmm");
        let calls = response.tool_calls();
        assert_eq!(calls[0].id, "call_A");
        assert_eq!(calls[0].arguments, json!({}));
        assert_eq!(calls[1].arguments, json!({"path": "output/x.md"}));
        assert_eq!(response.usage, Some(ModelUsage::new(10, 3)));
        assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(response.response_id.as_deref(), Some("chatcmpl-1"));
    }

    #[test]
    fn bad_bodies_and_bad_calls_are_classified() {
        let code = |body: &[u8]| match decode_body(body) {
            Err(ModelError::InvalidResponse { code, .. }) => code,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            code(b"<html>"),
            tt_domain::error_codes::MODEL_UPSTREAM_INVALID_RESPONSE
        );
        assert_eq!(
            code(br#"{"choices": []}"#),
            tt_domain::error_codes::MODEL_UPSTREAM_INVALID_RESPONSE
        );
        let with_call = |call: Value| {
            json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [call]}}]})
                .to_string()
        };
        for call in [
            json!({"type": "function", "function": {"name": "agent_list", "arguments": "{}"}}),
            json!({"id": "", "type": "function", "function": {"name": "agent_list", "arguments": "{}"}}),
            json!({"id": "c", "type": "function", "function": {"arguments": "{}"}}),
        ] {
            assert_eq!(
                code(with_call(call).as_bytes()),
                tt_domain::error_codes::MODEL_INVALID_TOOL_CALL
            );
        }
        // Bad arguments pass through for the runtime to answer as a recoverable slip.
        for (arguments, expected) in [("{\"a\":", json!("{\"a\":")), ("[1]", json!([1]))] {
            let call = json!({"id": "c", "type": "function", "function": {"name": "agent_list", "arguments": arguments}});
            let response = decode_body(with_call(call).as_bytes()).unwrap();
            assert_eq!(response.tool_calls()[0].arguments, expected);
        }
    }
}
