//! Reassembles a streamed Messages reply (`message_start`, `content_block_*`, `message_delta`,
//! `message_stop`) into final content blocks, forwarding text, thinking and tool-input
//! fragments as `ModelDelta`s. Each block is rebuilt from its own deltas, keyed by its index.

use std::collections::BTreeMap;
use tt_provider_http::exchange::StreamAccumulator;

use serde_json::{Value, json};
use tt_domain::model::{AgentModelResponse, ModelDelta};
use tt_ports::{ModelDeltaSink, ModelError};

use crate::response::{
    ReplyMeta, into_response, invalid_response, stream_error, string_field, synthesized_body,
    usage_from,
};

/// One content block while its deltas arrive.
#[derive(Debug)]
enum Block {
    Text {
        text: String,
    },
    ToolUse {
        start: Value,
        input_json: String,
    },
    /// Thinking and any other block (server tool uses too): the start object with its deltas
    /// folded in.
    Other {
        block: Value,
        input_json: String,
    },
}

impl Block {
    fn finish(self) -> Value {
        match self {
            Block::Text { text } => json!({"type": "text", "text": text}),
            Block::ToolUse {
                mut start,
                input_json,
            } => {
                if !input_json.trim().is_empty() {
                    // Unparseable input stays a string, which the runtime answers to the
                    // model as a recoverable `model.invalid_tool_call`.
                    start["input"] =
                        serde_json::from_str(&input_json).unwrap_or(Value::String(input_json));
                }
                start
            }
            Block::Other {
                mut block,
                input_json,
            } => {
                if let Ok(input) = serde_json::from_str::<Value>(&input_json) {
                    block["input"] = input;
                }
                block
            }
        }
    }
}

/// Collects one streamed reply.
#[derive(Debug, Default)]
// `pub` only to be named by the `WireFormat` impl; the module is private.
pub struct EventAccumulator {
    meta: ReplyMeta,
    input_usage: Option<Value>,
    blocks: BTreeMap<u64, Block>,
    done: bool,
}

impl EventAccumulator {
    fn start_block(&mut self, index: u64, start: Value, sink: &dyn ModelDeltaSink) {
        let block = match start.get("type").and_then(Value::as_str) {
            Some("text") => {
                let text = start
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                if !text.is_empty() {
                    sink.delta(ModelDelta::Text { text: text.clone() });
                }
                Block::Text { text }
            }
            Some("tool_use") => {
                if let (Some(id), Some(name)) = (
                    start.get("id").and_then(Value::as_str),
                    start.get("name").and_then(Value::as_str),
                ) {
                    sink.delta(ModelDelta::ToolCallStarted {
                        id: id.to_owned(),
                        name: name.to_owned(),
                    });
                }
                Block::ToolUse {
                    start,
                    input_json: String::new(),
                }
            }
            _ => Block::Other {
                block: start,
                input_json: String::new(),
            },
        };
        self.blocks.insert(index, block);
    }
}

fn block_index(event: &Value) -> Result<u64, ModelError> {
    event
        .get("index")
        .and_then(Value::as_u64)
        .ok_or_else(|| invalid_response("a content block event without an index"))
}

fn apply_delta(block: &mut Block, delta: &Value, sink: &dyn ModelDeltaSink) {
    let piece = |key: &str| {
        delta
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    match (block, delta.get("type").and_then(Value::as_str)) {
        (Block::Text { text }, Some("text_delta")) => {
            let fragment = piece("text");
            text.push_str(&fragment);
            if !fragment.is_empty() {
                sink.delta(ModelDelta::Text { text: fragment });
            }
        }
        (Block::ToolUse { start, input_json }, Some("input_json_delta")) => {
            let fragment = piece("partial_json");
            input_json.push_str(&fragment);
            if let Some(id) = start.get("id").and_then(Value::as_str)
                && !fragment.is_empty()
            {
                sink.delta(ModelDelta::ToolCallArguments {
                    id: id.to_owned(),
                    fragment,
                });
            }
        }
        (Block::Other { input_json, .. }, Some("input_json_delta")) => {
            input_json.push_str(&piece("partial_json"));
        }
        (Block::Other { block, .. }, Some("thinking_delta")) => {
            let fragment = piece("thinking");
            append_field(block, "thinking", &fragment);
            if !fragment.is_empty() {
                sink.delta(ModelDelta::Reasoning { text: fragment });
            }
        }
        (Block::Other { block, .. }, Some("signature_delta")) => {
            append_field(block, "signature", &piece("signature"));
        }
        // Citations and delta kinds added later do not change what is replayed.
        _ => {}
    }
}

fn append_field(block: &mut Value, key: &str, fragment: &str) {
    let mut text = block
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    text.push_str(fragment);
    block[key] = Value::String(text);
}

impl StreamAccumulator for EventAccumulator {
    /// Handles one SSE `data` payload.
    fn push(&mut self, data: &str, sink: &dyn ModelDeltaSink) -> Result<(), ModelError> {
        let event: Value = serde_json::from_str(data)
            .map_err(|err| invalid_response(format!("a stream event is not JSON: {err}")))?;
        match event.get("type").and_then(Value::as_str) {
            Some("message_start") => {
                let message = event.get("message").cloned().unwrap_or(Value::Null);
                self.meta.id = string_field(&message, "id");
                self.meta.model = string_field(&message, "model");
                if let Some(usage) = message.get("usage") {
                    self.input_usage = Some(usage.clone());
                    self.meta.usage = usage_from(usage);
                }
            }
            Some("content_block_start") => {
                let index = block_index(&event)?;
                let start = event
                    .get("content_block")
                    .filter(|block| block.is_object())
                    .cloned()
                    .ok_or_else(|| invalid_response("content_block_start without a block"))?;
                self.start_block(index, start, sink);
            }
            Some("content_block_delta") => {
                let index = block_index(&event)?;
                let delta = event.get("delta").cloned().unwrap_or(Value::Null);
                let block = self.blocks.get_mut(&index).ok_or_else(|| {
                    invalid_response(format!("a delta for block {index}, which never started"))
                })?;
                apply_delta(block, &delta, sink);
            }
            Some("message_delta") => {
                if let Some(reason) = event
                    .get("delta")
                    .and_then(|delta| string_field(delta, "stop_reason"))
                {
                    self.meta.stop_reason = Some(reason);
                }
                if let Some(usage) = event.get("usage") {
                    // Output counts are cumulative; input counts, when repeated, are too.
                    let mut merged = self.input_usage.clone().unwrap_or_else(|| json!({}));
                    if let (Some(target), Some(update)) =
                        (merged.as_object_mut(), usage.as_object())
                    {
                        for (key, value) in update {
                            target.insert(key.clone(), value.clone());
                        }
                    }
                    self.meta.usage = usage_from(&merged);
                    self.input_usage = Some(merged);
                }
            }
            Some("message_stop") => self.done = true,
            Some("error") => {
                return Err(stream_error(event.get("error").unwrap_or(&Value::Null)));
            }
            // `ping`, `content_block_stop` and event types added later carry nothing we need.
            _ => {}
        }
        Ok(())
    }

    /// `message_stop` was seen.
    fn is_done(&self) -> bool {
        self.done
    }

    /// The stream ended. Without `message_stop` the reply was cut short, which is transient.
    fn finish(self) -> Result<AgentModelResponse, ModelError> {
        if !self.done {
            return Err(ModelError::Transient {
                message: "the response stream ended before message_stop".to_owned(),
            });
        }
        let blocks: Vec<Value> = self.blocks.into_values().map(Block::finish).collect();
        let raw = synthesized_body(&blocks, &self.meta);
        into_response(&blocks, self.meta, raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tt_provider_http::test_fixtures::Deltas;

    #[test]
    fn server_tool_blocks_keep_their_streamed_input() {
        let sink = Deltas::default();
        let mut acc = EventAccumulator::default();
        for event in [
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\": \"tide"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"s\"}"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"message_stop"}"#,
        ] {
            acc.push(event, &sink).unwrap();
        }
        let response = acc.finish().unwrap();
        assert_eq!(
            response.message.parts,
            vec![tt_domain::model::ModelContentPart::Native {
                provider: "anthropic".into(),
                value: json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "tides"}}),
            }]
        );
        assert!(sink.take().is_empty());
    }

    #[test]
    fn a_delta_before_its_block_is_invalid_and_a_cut_stream_is_transient() {
        let sink = Deltas::default();
        let mut acc = EventAccumulator::default();
        let error = acc
            .push(
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}"#,
                &sink,
            )
            .unwrap_err();
        assert_eq!(error.code(), "model.upstream_invalid_response");
        let mut acc = EventAccumulator::default();
        acc.push(
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            &sink,
        )
        .unwrap();
        assert!(matches!(acc.finish(), Err(ModelError::Transient { .. })));
    }
}
