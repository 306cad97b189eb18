//! Messages API response -> canonical response: text blocks, `tool_use` blocks (ids kept
//! verbatim), every other block (thinking, redacted thinking, server tools) as a native part to
//! replay unchanged; usage and stop reason. Shared by whole and streamed replies.

use serde_json::{Value, json};
use tt_domain::model::{AgentModelMessage, AgentModelResponse, ModelContentPart, ModelUsage};
use tt_domain::tool::AgentToolCall;
use tt_ports::ModelError;

/// The `provider` of native parts this adapter writes and replays.
pub(crate) const NATIVE_PROVIDER: &str = "anthropic";

pub(crate) use tt_provider_http::http::invalid_response;
use tt_provider_http::http::invalid_tool_call;

/// The message-level fields of a reply.
#[derive(Debug, Clone, Default)]
pub(crate) struct ReplyMeta {
    pub id: Option<String>,
    pub model: Option<String>,
    pub stop_reason: Option<String>,
    pub usage: Option<ModelUsage>,
}

/// Turns final content blocks into the canonical response, in block order.
pub(crate) fn into_response(
    blocks: &[Value],
    meta: ReplyMeta,
    raw_response: Value,
) -> Result<AgentModelResponse, ModelError> {
    let mut parts = Vec::new();
    for (position, block) in blocks.iter().enumerate() {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let text = block
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if !text.is_empty() {
                    parts.push(ModelContentPart::Text {
                        text: text.to_owned(),
                    });
                }
            }
            Some("tool_use") => parts.push(ModelContentPart::ToolCall {
                call: tool_call(block, position + 1)?,
            }),
            Some(_) => parts.push(ModelContentPart::Native {
                provider: NATIVE_PROVIDER.to_owned(),
                value: block.clone(),
            }),
            None => {
                return Err(invalid_response(format!(
                    "content block #{} has no type",
                    position + 1
                )));
            }
        }
    }
    Ok(AgentModelResponse {
        message: AgentModelMessage::assistant(parts),
        response_id: meta.id,
        model: meta.model,
        finish_reason: meta.stop_reason,
        usage: meta.usage,
        raw_response,
    })
}

/// A `tool_use` block needs an id and a name; nothing is made up.
fn tool_call(block: &Value, position: usize) -> Result<AgentToolCall, ModelError> {
    let text = |key: &str| {
        block
            .get(key)
            .and_then(Value::as_str)
            .filter(|value| !value.is_empty())
            .map(str::to_owned)
    };
    let id = text("id")
        .ok_or_else(|| invalid_tool_call(format!("tool_use block #{position} has no id")))?;
    let name =
        text("name").ok_or_else(|| invalid_tool_call(format!("tool_use `{id}` has no name")))?;
    // An input that is not an object (or unparseable streamed input, kept as a string) passes
    // through: the runtime answers it to the model as a recoverable `model.invalid_tool_call`.
    let input = block.get("input").cloned().unwrap_or(Value::Null);
    Ok(AgentToolCall::new(id, name, input))
}

/// The API's `input_tokens` counts only the prompt tokens after the last cache breakpoint, and
/// `cache_read_input_tokens` / `cache_creation_input_tokens` the rest. [`ModelUsage`]'s
/// `input_tokens` is the whole prompt on every provider (what the window holds, and what
/// OpenAI's `prompt_tokens` counts), so it is their sum; the two cache figures are kept beside
/// it as parts of it, never counted twice.
pub(crate) fn usage_from(usage: &Value) -> Option<ModelUsage> {
    let field = |key: &str| usage.get(key).and_then(Value::as_u64);
    let input = field("input_tokens");
    let output = field("output_tokens");
    if input.is_none() && output.is_none() {
        return None;
    }
    let written = field("cache_creation_input_tokens").unwrap_or(0);
    let read = field("cache_read_input_tokens").unwrap_or(0);
    Some(ModelUsage {
        input_tokens: input.unwrap_or(0) + written + read,
        output_tokens: output.unwrap_or(0),
        cached_input_tokens: read,
        cache_write_tokens: written,
    })
}

pub(crate) fn string_field(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// Decodes a whole (non-streamed) response body.
pub(crate) fn decode_body(body: &[u8]) -> Result<AgentModelResponse, ModelError> {
    let value = tt_provider_http::http::response_json(body)?;
    let blocks = value
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| invalid_response("the response has no content array"))?;
    let meta = ReplyMeta {
        id: string_field(&value, "id"),
        model: string_field(&value, "model"),
        stop_reason: string_field(&value, "stop_reason"),
        usage: value.get("usage").and_then(usage_from),
    };
    into_response(&blocks.clone(), meta, value)
}

/// An `error` object (HTTP error body or stream `error` event) classified by its `type`.
pub(crate) fn stream_error(error: &Value) -> ModelError {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("the provider reported an error")
        .to_owned();
    match error.get("type").and_then(Value::as_str) {
        Some("rate_limit_error") => ModelError::RateLimited {
            message,
            retry_after_ms: None,
        },
        Some("overloaded_error" | "api_error" | "timeout_error") | None => {
            ModelError::Transient { message }
        }
        Some(_) => {
            let body = json!({ "error": error }).to_string();
            tt_provider_http::http::context_overflow(body.as_bytes(), &message).unwrap_or(
                ModelError::Rejected {
                    status: None,
                    message,
                },
            )
        }
    }
}

/// A non-streamed body in the API's shape, used as the audit record of a streamed reply.
pub(crate) fn synthesized_body(blocks: &[Value], meta: &ReplyMeta) -> Value {
    json!({
        "id": meta.id,
        "type": "message",
        "role": "assistant",
        "model": meta.model,
        "content": blocks,
        "stop_reason": meta.stop_reason,
        "usage": meta.usage.map(|usage| json!({
            "input_tokens": usage
                .input_tokens
                .saturating_sub(usage.cached_input_tokens)
                .saturating_sub(usage.cache_write_tokens),
            "cache_creation_input_tokens": usage.cache_write_tokens,
            "cache_read_input_tokens": usage.cached_input_tokens,
            "output_tokens": usage.output_tokens,
        })),
        "streamed": true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_become_parts_in_order() {
        let body = json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [
                {"type": "thinking", "thinking": "Let me see.", "signature": "sig=="},
                {"type": "text", "text": "On it."},
                {"type": "tool_use", "id": "toolu_1", "name": "agent_list", "input": {}},
                {"type": "redacted_thinking", "data": "opaque"},
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 10, "cache_read_input_tokens": 5, "output_tokens": 7},
        });
        let response = decode_body(body.to_string().as_bytes()).unwrap();
        let parts = &response.message.parts;
        assert!(
            matches!(&parts[0], ModelContentPart::Native { provider, value }
            if provider == "anthropic" && value["signature"] == "sig==")
        );
        assert_eq!(
            parts[1],
            ModelContentPart::Text {
                text: "On it.".into()
            }
        );
        assert_eq!(response.tool_calls()[0].id, "toolu_1");
        assert!(
            matches!(&parts[3], ModelContentPart::Native { value, .. } if value["data"] == "opaque")
        );
        let usage = response.usage.unwrap();
        assert_eq!(
            (
                usage.input_tokens,
                usage.output_tokens,
                usage.cached_input_tokens
            ),
            (15, 7, 5)
        );
        assert_eq!(response.finish_reason.as_deref(), Some("tool_use"));
    }

    #[test]
    fn bad_tool_use_blocks_are_invalid_tool_calls() {
        for block in [
            json!({"type": "tool_use", "name": "agent_list", "input": {}}),
            json!({"type": "tool_use", "id": "t", "input": {}}),
        ] {
            let body = json!({"content": [block]}).to_string();
            match decode_body(body.as_bytes()) {
                Err(ModelError::InvalidResponse { code, .. }) => {
                    assert_eq!(code, tt_domain::error_codes::MODEL_INVALID_TOOL_CALL)
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn non_object_input_passes_through_for_the_runtime_to_answer() {
        let block = json!({"type": "tool_use", "id": "t", "name": "agent_list", "input": "{"});
        let body = json!({"content": [block]}).to_string();
        let response = decode_body(body.as_bytes()).unwrap();
        assert_eq!(response.tool_calls()[0].arguments, json!("{"));
    }

    #[test]
    fn stream_errors_are_classified_by_type() {
        assert!(matches!(
            stream_error(&json!({"type": "overloaded_error", "message": "Overloaded"})),
            ModelError::Transient { .. }
        ));
        assert!(matches!(
            stream_error(&json!({"type": "rate_limit_error", "message": "slow"})),
            ModelError::RateLimited { .. }
        ));
        assert!(matches!(
            stream_error(&json!({"type": "invalid_request_error", "message": "bad"})),
            ModelError::Rejected { status: None, .. }
        ));
        assert_eq!(
            stream_error(&json!({"type": "invalid_request_error",
                "message": "prompt is too long: 210000 tokens > 200000 maximum"})),
            ModelError::ContextOverflow {
                message: "prompt is too long: 210000 tokens > 200000 maximum".into(),
                prompt_tokens: Some(210_000),
                window_tokens: Some(200_000),
            }
        );
    }
}
