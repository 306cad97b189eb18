//! Reassembles a streamed Chat Completions reply (`chat.completion.chunk` events) into the
//! complete response, forwarding text, reasoning and tool-call fragments as `ModelDelta`s.
//! Tool calls are keyed by their `index`; their argument fragments are concatenated exactly.

use std::collections::BTreeMap;
use tt_provider_http::exchange::StreamAccumulator;

use serde_json::{Value, json};
use tt_domain::model::{AgentModelResponse, ModelDelta};
use tt_ports::{ModelDeltaSink, ModelError};

use crate::response::{
    RawArguments, RawToolCall, ReplyParts, invalid_response, reasoning_field, string_field,
    usage_from,
};

/// One tool call while its fragments arrive.
#[derive(Debug, Default)]
struct PendingCall {
    id: Option<String>,
    name: Option<String>,
    arguments: String,
    /// `ToolCallStarted` was forwarded (needs both id and name).
    announced: bool,
}

/// Collects one streamed reply.
#[derive(Debug, Default)]
// `pub` only to be named by the `WireFormat` impl; the module is private.
pub struct ChunkAccumulator {
    parts: ReplyParts,
    calls: BTreeMap<u64, PendingCall>,
    done: bool,
}

impl ChunkAccumulator {
    fn push_call_fragment(&mut self, position: usize, fragment: &Value, sink: &dyn ModelDeltaSink) {
        // Servers that omit `index` send one call per chunk entry, in order.
        let index = fragment
            .get("index")
            .and_then(Value::as_u64)
            .unwrap_or(position as u64);
        let call = self.calls.entry(index).or_default();
        if call.id.is_none() {
            call.id = string_field(fragment, "id").filter(|id| !id.is_empty());
        }
        let function = fragment.get("function");
        if call.name.is_none() {
            call.name = function
                .and_then(|function| string_field(function, "name"))
                .filter(|name| !name.is_empty());
        }
        let piece = function
            .and_then(|function| function.get("arguments"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        call.arguments.push_str(piece);
        match (&call.id, &call.name, call.announced) {
            (Some(id), Some(name), false) => {
                call.announced = true;
                sink.delta(ModelDelta::ToolCallStarted {
                    id: id.clone(),
                    name: name.clone(),
                });
                if !call.arguments.is_empty() {
                    sink.delta(ModelDelta::ToolCallArguments {
                        id: id.clone(),
                        fragment: call.arguments.clone(),
                    });
                }
            }
            (Some(id), Some(_), true) if !piece.is_empty() => {
                sink.delta(ModelDelta::ToolCallArguments {
                    id: id.clone(),
                    fragment: piece.to_owned(),
                });
            }
            _ => {}
        }
    }

    /// The reply in the shape of a non-streamed body, kept as the audit `raw_response`.
    fn synthesized_body(&self) -> Value {
        let parts = &self.parts;
        let calls: Vec<Value> = parts
            .tool_calls
            .iter()
            .map(|call| {
                let arguments = match &call.arguments {
                    RawArguments::Text(text) => json!(text),
                    RawArguments::Json(value) => value.clone(),
                };
                json!({"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments}})
            })
            .collect();
        let mut message = json!({
            "role": "assistant",
            "content": if parts.text.is_empty() { Value::Null } else { json!(parts.text) },
        });
        if !parts.reasoning.is_empty() {
            message["reasoning_content"] = json!(parts.reasoning);
        }
        if !calls.is_empty() {
            message["tool_calls"] = Value::Array(calls);
        }
        json!({
            "id": parts.id,
            "object": "chat.completion",
            "model": parts.model,
            "streamed": true,
            "choices": [{"index": 0, "message": message, "finish_reason": parts.finish_reason}],
            "usage": parts.usage.map(|usage| {
                let mut value = json!({
                    "prompt_tokens": usage.input_tokens,
                    "completion_tokens": usage.output_tokens,
                });
                if usage.cached_input_tokens > 0 {
                    value["prompt_tokens_details"] = json!({"cached_tokens": usage.cached_input_tokens});
                }
                value
            }),
        })
    }
}

impl StreamAccumulator for ChunkAccumulator {
    /// Handles one SSE `data` payload.
    fn push(&mut self, data: &str, sink: &dyn ModelDeltaSink) -> Result<(), ModelError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|err| invalid_response(format!("a stream chunk is not JSON: {err}")))?;
        if let Some(error) = chunk.get("error").filter(|error| !error.is_null()) {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .or_else(|| error.as_str())
                .unwrap_or("the stream reported an error");
            return Err(ModelError::Transient {
                message: format!("the provider failed mid-stream: {message}"),
            });
        }
        if self.parts.id.is_none() {
            self.parts.id = string_field(&chunk, "id");
        }
        if self.parts.model.is_none() {
            self.parts.model = string_field(&chunk, "model");
        }
        if let Some(usage) = usage_from(&chunk) {
            self.parts.usage = Some(usage);
        }
        // llama.cpp may send its `timings` in a chunk of their own, after the usage.
        if let (Some(usage), Some(cache_n)) = (
            self.parts.usage.as_mut(),
            chunk.pointer("/timings/cache_n").and_then(Value::as_u64),
        ) && usage.cached_input_tokens == 0
        {
            usage.cached_input_tokens = cache_n;
        }
        let Some(choice) = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|choices| {
                choices
                    .iter()
                    .find(|choice| choice.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
            })
        else {
            return Ok(());
        };
        if let Some(reason) = string_field(choice, "finish_reason") {
            self.parts.finish_reason = Some(reason);
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(());
        };
        if let Some(reasoning) = reasoning_field(delta).filter(|text| !text.is_empty()) {
            self.parts.reasoning.push_str(reasoning);
            sink.delta(ModelDelta::Reasoning {
                text: reasoning.to_owned(),
            });
        }
        if let Some(text) = delta
            .get("content")
            .and_then(Value::as_str)
            .filter(|text| !text.is_empty())
        {
            self.parts.text.push_str(text);
            sink.delta(ModelDelta::Text {
                text: text.to_owned(),
            });
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for (position, fragment) in calls.iter().enumerate() {
                self.push_call_fragment(position, fragment, sink);
            }
        }
        Ok(())
    }

    /// `[DONE]` was seen.
    fn is_done(&self) -> bool {
        self.done
    }

    /// The stream ended. Without `[DONE]` or a finish reason the reply was cut short, which is
    /// transient.
    fn finish(mut self) -> Result<AgentModelResponse, ModelError> {
        if !self.done && self.parts.finish_reason.is_none() {
            return Err(ModelError::Transient {
                message: "the response stream ended before it was complete".to_owned(),
            });
        }
        self.parts.tool_calls = std::mem::take(&mut self.calls)
            .into_values()
            .map(|call| RawToolCall {
                id: call.id,
                name: call.name,
                arguments: RawArguments::Text(call.arguments),
            })
            .collect();
        let raw = self.synthesized_body();
        self.parts.into_response(raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tt_provider_http::test_fixtures::Deltas;

    #[test]
    fn fragments_are_reassembled_by_index_even_when_the_id_comes_late() {
        let sink = Deltas::default();
        let mut acc = ChunkAccumulator::default();
        let chunks = [
            json!({"id": "x", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi"}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "function": {"name": "b", "arguments": "{\"q\""}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "A", "type": "function", "function": {"name": "a", "arguments": ""}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "id": "B", "function": {"arguments": ":1}"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}),
        ];
        for chunk in &chunks {
            acc.push(&chunk.to_string(), &sink).unwrap();
        }
        acc.push("[DONE]", &sink).unwrap();
        let response = acc.finish().unwrap();
        let calls = response.tool_calls();
        assert_eq!(
            (calls[0].id.as_str(), &calls[0].arguments),
            ("A", &json!({}))
        );
        assert_eq!(
            (calls[1].id.as_str(), &calls[1].arguments),
            ("B", &json!({"q": 1}))
        );
        assert_eq!(
            sink.take(),
            vec![
                ModelDelta::Text { text: "Hi".into() },
                ModelDelta::ToolCallStarted {
                    id: "A".into(),
                    name: "a".into()
                },
                ModelDelta::ToolCallStarted {
                    id: "B".into(),
                    name: "b".into()
                },
                ModelDelta::ToolCallArguments {
                    id: "B".into(),
                    fragment: "{\"q\":1}".into()
                },
            ]
        );
        assert_eq!(response.usage.unwrap().output_tokens, 2);
    }

    #[test]
    fn a_stream_cut_short_is_transient() {
        let sink = Deltas::default();
        let mut acc = ChunkAccumulator::default();
        acc.push(
            r#"{"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#,
            &sink,
        )
        .unwrap();
        assert!(matches!(acc.finish(), Err(ModelError::Transient { .. })));
    }
}
