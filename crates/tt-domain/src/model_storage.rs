//! A model response as it is stored (`model-responses/<invocation>/round-NNN.json`): the
//! provider's raw body is kept for audit, but a long text, reasoning text or tool-call
//! argument string the canonical message already holds is not written a second time. The raw
//! body keeps its shape; such a string becomes a short note naming the message part that
//! holds it, so a 7 MB reply takes 7 MB on disk, not 14.

use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;

use crate::model::{AgentModelMessage, AgentModelResponse, ModelContentPart, ModelUsage};

/// Strings shorter than this stay in the raw body as they are: the note would save little.
pub const MIN_DEDUPLICATED_BYTES: usize = 256;

/// A borrowed view of an [`AgentModelResponse`] that serializes to the same document, except
/// that the raw body keeps no second copy of the message's long strings. It reads back as an
/// `AgentModelResponse`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredModelResponse<'a> {
    pub message: &'a AgentModelMessage,
    pub response_id: Option<&'a String>,
    pub model: Option<&'a String>,
    pub finish_reason: Option<&'a String>,
    pub usage: Option<&'a ModelUsage>,
    #[serde(skip_serializing_if = "is_null")]
    pub raw_response: Cow<'a, Value>,
}

// serde hands `skip_serializing_if` a reference to the field itself, here a `Cow`.
#[allow(clippy::ptr_arg)]
fn is_null(value: &Cow<'_, Value>) -> bool {
    value.is_null()
}

impl AgentModelResponse {
    /// This response as it is stored (see the module docs).
    pub fn for_storage(&self) -> StoredModelResponse<'_> {
        StoredModelResponse {
            message: &self.message,
            response_id: self.response_id.as_ref(),
            model: self.model.as_ref(),
            finish_reason: self.finish_reason.as_ref(),
            usage: self.usage.as_ref(),
            raw_response: match without_copies(&self.raw_response, &self.message) {
                Some(raw) => Cow::Owned(raw),
                None => Cow::Borrowed(&self.raw_response),
            },
        }
    }
}

impl AgentModelResponse {
    /// Replaces, in the raw body held in memory, each long string the message already holds
    /// with the note [`for_storage`](Self::for_storage) writes, so a response held for its
    /// turn keeps its text once. Storing it afterwards writes the same document.
    pub fn shed_raw_copies(&mut self) {
        if let Some(raw) = without_copies(&self.raw_response, &self.message) {
            self.raw_response = raw;
        }
    }
}

/// What a long string of the raw body may repeat: a part's text, or a tool call's arguments.
enum Held<'a> {
    Text(&'a str),
    Arguments(&'a Value),
}

/// The long strings the message holds, each with the path of the part that holds it.
fn held_strings(message: &AgentModelMessage) -> Vec<(Held<'_>, String)> {
    let mut held = Vec::new();
    for (index, part) in message.parts.iter().enumerate() {
        match part {
            ModelContentPart::Text { text } if text.len() >= MIN_DEDUPLICATED_BYTES => {
                held.push((Held::Text(text), format!("message.parts[{index}].text")));
            }
            ModelContentPart::Reasoning {
                text: Some(text), ..
            } if text.len() >= MIN_DEDUPLICATED_BYTES => {
                held.push((Held::Text(text), format!("message.parts[{index}].text")));
            }
            ModelContentPart::ToolCall { call } if call.arguments.is_object() => {
                held.push((
                    Held::Arguments(&call.arguments),
                    format!("message.parts[{index}].call.arguments"),
                ));
            }
            _ => {}
        }
    }
    held
}

/// The raw body with each long string the message holds replaced by a note; `None` when
/// nothing was replaced (the raw body is stored as it is).
fn without_copies(raw: &Value, message: &AgentModelMessage) -> Option<Value> {
    if raw.is_null() {
        return None;
    }
    let held = held_strings(message);
    if held.is_empty() {
        return None;
    }
    // Most replies repeat nothing long: look before copying the body.
    if !has_copy(raw, &held) {
        return None;
    }
    let mut copy = raw.clone();
    replace_copies(&mut copy, &held);
    Some(copy)
}

/// Whether some long string of `value` is one of `held`.
fn has_copy(value: &Value, held: &[(Held<'_>, String)]) -> bool {
    match value {
        Value::String(text) => {
            text.len() >= MIN_DEDUPLICATED_BYTES && held.iter().any(|(held, _)| repeats(held, text))
        }
        Value::Array(items) => items.iter().any(|item| has_copy(item, held)),
        Value::Object(fields) => fields.values().any(|field| has_copy(field, held)),
        _ => false,
    }
}

/// Replaces, in place, every long string of `value` that one of `held` repeats.
fn replace_copies(value: &mut Value, held: &[(Held<'_>, String)]) {
    match value {
        Value::String(text) if text.len() >= MIN_DEDUPLICATED_BYTES => {
            if let Some((_, path)) = held.iter().find(|(held, _)| repeats(held, text)) {
                *text = format!("(the same {} bytes as {path})", text.len());
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| replace_copies(item, held)),
        Value::Object(fields) => fields
            .values_mut()
            .for_each(|field| replace_copies(field, held)),
        _ => {}
    }
}

fn repeats(held: &Held<'_>, text: &str) -> bool {
    match held {
        Held::Text(held) => *held == text,
        // A provider sends arguments as a JSON string; the message holds them parsed.
        Held::Arguments(arguments) => {
            text.trim_start().starts_with('{')
                && serde_json::from_str::<Value>(text).is_ok_and(|parsed| parsed == **arguments)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ModelRole;
    use crate::tool::AgentToolCall;
    use serde_json::json;

    fn response(text: &str, arguments: Value, raw: Value) -> AgentModelResponse {
        AgentModelResponse {
            message: AgentModelMessage {
                role: ModelRole::Assistant,
                parts: vec![
                    ModelContentPart::Text { text: text.into() },
                    ModelContentPart::ToolCall {
                        call: AgentToolCall::new("c1", "workspace_write_file", arguments),
                    },
                ],
                provider_metadata: Value::Null,
            },
            response_id: Some("r1".into()),
            model: Some("m".into()),
            finish_reason: Some("tool_calls".into()),
            usage: None,
            raw_response: raw,
        }
    }

    #[test]
    fn long_strings_the_message_holds_are_stored_once_and_the_document_reads_back() {
        let text = "a".repeat(1000);
        let content = "b".repeat(5000);
        let arguments = json!({"path": "output/main.md", "content": content});
        let arguments_text = serde_json::to_string(&arguments).unwrap();
        let raw = json!({
            "id": "r1",
            "choices": [{"message": {
                "content": text,
                "tool_calls": [{"id": "c1", "function": {
                    "name": "workspace_write_file",
                    "arguments": arguments_text,
                }}],
            }}],
            "usage": {"prompt_tokens": 7},
        });
        let response = response(&text, arguments, raw);
        let stored = serde_json::to_string(&response.for_storage()).unwrap();
        // Each long string is written once.
        assert_eq!(stored.matches(&text).count(), 1);
        assert_eq!(stored.matches(&content).count(), 1);
        let back: AgentModelResponse = serde_json::from_str(&stored).unwrap();
        assert_eq!(back.message, response.message);
        assert_eq!(back.usage, response.usage);
        assert_eq!(back.response_id, response.response_id);
        assert_eq!(
            back.raw_response["choices"][0]["message"]["content"],
            "(the same 1000 bytes as message.parts[0].text)"
        );
        assert_eq!(
            back.raw_response["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
            format!(
                "(the same {} bytes as message.parts[1].call.arguments)",
                arguments_text.len()
            )
        );
        // What the message does not hold stays.
        assert_eq!(back.raw_response["usage"]["prompt_tokens"], 7);
        assert_eq!(back.raw_response["id"], "r1");

        // Shed in memory first, the response stores the same document.
        let mut held = response.clone();
        held.shed_raw_copies();
        assert_eq!(held.raw_response, back.raw_response);
        assert_eq!(serde_json::to_string(&held.for_storage()).unwrap(), stored);
    }

    #[test]
    fn short_strings_and_strings_the_message_does_not_hold_stay_as_they_are() {
        let other = "c".repeat(2000);
        let raw = json!({"choices": [{"message": {"content": "short", "refusal": other}}]});
        let response = response("short", json!({"path": "x"}), raw.clone());
        let stored: AgentModelResponse =
            serde_json::from_str(&serde_json::to_string(&response.for_storage()).unwrap()).unwrap();
        assert_eq!(stored.raw_response, raw);
        assert!(matches!(
            response.for_storage().raw_response,
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn the_stored_view_serializes_like_the_response_when_nothing_repeats() {
        let response = response("hi", json!({}), Value::Null);
        assert_eq!(
            serde_json::to_value(response.for_storage()).unwrap(),
            serde_json::to_value(&response).unwrap()
        );
    }
}
