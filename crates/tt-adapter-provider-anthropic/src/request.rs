//! Canonical request -> Messages API body: `system`, alternating `user`/`assistant` messages of
//! content blocks (tool results grouped into one user turn), tools with `input_schema`, native
//! blocks (signed thinking) replayed unchanged, the generation settings, and the prompt-cache
//! breakpoints.

use serde_json::{Map, Value, json};
use tt_domain::model::{AgentModelMessage, AgentModelRequest, ModelContentPart, ModelRole};
use tt_domain::profile::CacheTtl;
use tt_domain::tool::{AgentToolResult, AgentToolSpec};
use tt_ports::ModelError;

use crate::response::NATIVE_PROVIDER;

/// What the body needs besides the canonical request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyOptions<'a> {
    pub model: &'a str,
    pub stream: bool,
    pub max_tokens: u32,
    /// The budget the request runs with (its settings', else the connection's).
    pub thinking_budget_tokens: Option<u32>,
    /// Marks the cache breakpoints ([`mark_cache_breakpoints`]).
    pub prompt_caching: bool,
    /// Refuse or drop a setting the API does not take.
    pub unsupported_settings: tt_ports::UnsupportedSettings,
}

/// Most `cache_control` breakpoints one request may carry (the API refuses more).
pub const MAX_CACHE_BREAKPOINTS: usize = 4;

/// Builds the JSON body of `POST {baseUrl}/v1/messages`; a generation setting the API does not
/// take is `model.setting_unsupported`.
pub(crate) fn request_body(
    request: &AgentModelRequest,
    options: BodyOptions<'_>,
) -> Result<Value, ModelError> {
    let dropped = crate::settings::check(
        &request.generation,
        options.thinking_budget_tokens,
        options.max_tokens,
        options.unsupported_settings,
    )?;
    let generation = tt_provider_http::dropped::without(&request.generation, &dropped);
    let (system, mut messages) = wire_messages(&request.messages);
    let mut tools: Vec<Value> = request.tools.iter().map(wire_tool).collect();
    let mut system = (!system.is_empty()).then(|| json!(system));
    if options.prompt_caching {
        mark_cache_breakpoints(&mut tools, &mut system, &mut messages, request.cache_ttl);
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(options.model));
    body.insert("max_tokens".into(), json!(options.max_tokens));
    if let Some(system) = system {
        body.insert("system".into(), system);
    }
    body.insert("messages".into(), Value::Array(messages));
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
        body.insert("tool_choice".into(), tool_choice(&request.tool_choice));
    }
    crate::settings::apply(&mut body, &generation, options.thinking_budget_tokens);
    body.insert("stream".into(), json!(options.stream));
    Ok(Value::Object(body))
}

/// Places `cache_control: {"type": "ephemeral"}` breakpoints (with `"ttl": "1h"` when the
/// request asks for an hour, `model.cache.ttl`; all of one request's breakpoints share it, so
/// the API's rule that longer lifetimes come first always holds), at most
/// [`MAX_CACHE_BREAKPOINTS`]: on the last tool (the tool schemas), on the system prompt (sent
/// as one text block for it), and on the last block of the last two user turns. The last user
/// turn caches this round's whole prompt for the next round; the one before is where the
/// previous round's request ended, so the next request reads the cache there even when this
/// round added more blocks than the API looks back over. The history is append-only, so each
/// breakpoint's prefix is stable.
pub(crate) fn mark_cache_breakpoints(
    tools: &mut [Value],
    system: &mut Option<Value>,
    messages: &mut [Value],
    ttl: Option<CacheTtl>,
) {
    let control = match ttl {
        Some(CacheTtl::OneHour) => json!({"type": "ephemeral", "ttl": "1h"}),
        Some(CacheTtl::ProviderDefault) | None => json!({"type": "ephemeral"}),
    };
    let mark = |block: &mut Value| {
        if let Some(block) = block.as_object_mut() {
            block.insert("cache_control".into(), control.clone());
        }
    };
    if let Some(last) = tools.last_mut() {
        mark(last);
    }
    if let Some(text) = system.as_ref().and_then(Value::as_str) {
        let mut block = json!({"type": "text", "text": text});
        mark(&mut block);
        *system = Some(json!([block]));
    }
    let user_turns = messages
        .iter_mut()
        .rev()
        .filter(|message| message.get("role").and_then(Value::as_str) == Some("user"))
        .take(2);
    for message in user_turns {
        if let Some(last) = message
            .get_mut("content")
            .and_then(Value::as_array_mut)
            .and_then(|blocks| blocks.last_mut())
        {
            mark(last);
        }
    }
}

fn wire_tool(spec: &AgentToolSpec) -> Value {
    json!({
        "name": spec.model_name,
        "description": spec.description,
        "input_schema": spec.input_schema,
    })
}

fn tool_choice(choice: &str) -> Value {
    match choice {
        "none" => json!({"type": "none"}),
        "required" | "any" => json!({"type": "any"}),
        _ => json!({"type": "auto"}),
    }
}

/// The leading system/developer messages become `system`; everything else becomes user or
/// assistant turns of content blocks, with consecutive turns of one role merged (so parallel
/// tool results travel together in one user message, as the API requires).
fn wire_messages(messages: &[AgentModelMessage]) -> (String, Vec<Value>) {
    let mut system: Vec<String> = Vec::new();
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    let mut leading = true;
    for message in messages {
        let (role, blocks) = match message.role {
            ModelRole::System | ModelRole::Developer if leading => {
                let text = message.text_content();
                if !text.is_empty() {
                    system.push(text);
                }
                continue;
            }
            // A later instruction stays where it was, as user text.
            ModelRole::System | ModelRole::Developer | ModelRole::User | ModelRole::Tool => {
                ("user", user_blocks(message))
            }
            ModelRole::Assistant => ("assistant", assistant_blocks(message)),
        };
        leading = false;
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    let messages = turns
        .into_iter()
        .map(|(role, blocks)| json!({"role": role, "content": blocks}))
        .collect();
    (system.join("\n\n"), messages)
}

fn user_blocks(message: &AgentModelMessage) -> Vec<Value> {
    message
        .parts
        .iter()
        .filter_map(|part| match part {
            ModelContentPart::Text { text } if text.is_empty() => None,
            ModelContentPart::Text { text } => Some(json!({"type": "text", "text": text})),
            ModelContentPart::ResourceRef { uri } => Some(json!({"type": "text", "text": uri})),
            ModelContentPart::Media { mime_type, value } => Some(image_block(mime_type, value)),
            ModelContentPart::ToolResult { result } => Some(tool_result_block(result)),
            ModelContentPart::Native { provider, value } if provider == NATIVE_PROVIDER => {
                Some(value.clone())
            }
            ModelContentPart::Native { .. }
            | ModelContentPart::Reasoning { .. }
            | ModelContentPart::ToolCall { .. } => None,
        })
        .collect()
}

/// Parts in their original order: native blocks (thinking with its signature) verbatim, text,
/// tool uses with their ids. Reasoning parts carry no signature, so they cannot be replayed.
fn assistant_blocks(message: &AgentModelMessage) -> Vec<Value> {
    message
        .parts
        .iter()
        .filter_map(|part| match part {
            ModelContentPart::Native { provider, value } if provider == NATIVE_PROVIDER => {
                Some(value.clone())
            }
            ModelContentPart::Text { text } if text.is_empty() => None,
            ModelContentPart::Text { text } => Some(json!({"type": "text", "text": text})),
            ModelContentPart::ToolCall { call } => Some(json!({
                "type": "tool_use",
                "id": call.id,
                "name": call.name,
                // The API only accepts an object; arguments the model got wrong (answered
                // with a recoverable error) are replayed as an empty one.
                "input": if call.arguments.is_object() { call.arguments.clone() } else { json!({}) },
            })),
            ModelContentPart::Native { .. }
            | ModelContentPart::Reasoning { .. }
            | ModelContentPart::ToolResult { .. }
            | ModelContentPart::Media { .. }
            | ModelContentPart::ResourceRef { .. } => None,
        })
        .collect()
}

fn tool_result_block(result: &AgentToolResult) -> Value {
    let mut block = json!({
        "type": "tool_result",
        "tool_use_id": result.call_id,
        "content": result.to_model_payload(),
    });
    if result.is_error {
        block["is_error"] = json!(true);
    }
    block
}

fn image_block(mime_type: &str, value: &str) -> Value {
    if value.contains("://") {
        json!({"type": "image", "source": {"type": "url", "url": value}})
    } else {
        json!({"type": "image", "source": {"type": "base64", "media_type": mime_type, "data": value}})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_messages_lead_later_ones_stay_in_place_and_roles_merge() {
        let messages = vec![
            AgentModelMessage::text(ModelRole::System, "Rule one."),
            AgentModelMessage::text(ModelRole::Developer, "Rule two."),
            AgentModelMessage::text(ModelRole::Assistant, "Earlier reply."),
            AgentModelMessage::text(ModelRole::User, "Hi."),
            AgentModelMessage::text(ModelRole::System, "Reminder."),
            AgentModelMessage::text(ModelRole::User, ""),
        ];
        let (system, wire) = wire_messages(&messages);
        assert_eq!(system, "Rule one.\n\nRule two.");
        assert_eq!(
            Value::Array(wire),
            json!([
                {"role": "assistant", "content": [{"type": "text", "text": "Earlier reply."}]},
                {"role": "user", "content": [{"type": "text", "text": "Hi."}, {"type": "text", "text": "Reminder."}]},
            ])
        );
    }

    #[test]
    fn tool_use_input_that_is_not_an_object_is_replayed_as_an_empty_one() {
        let call = |arguments: Value| AgentModelMessage {
            role: ModelRole::Assistant,
            parts: vec![ModelContentPart::ToolCall {
                call: tt_domain::tool::AgentToolCall::new(
                    "toolu_1",
                    "workspace_read_file",
                    arguments,
                ),
            }],
            provider_metadata: Value::Null,
        };
        for (arguments, replayed) in [
            (json!("{\"path\": "), json!({})),
            (json!([1]), json!({})),
            (
                json!({"path": "output/a.md"}),
                json!({"path": "output/a.md"}),
            ),
        ] {
            let blocks = assistant_blocks(&call(arguments));
            assert_eq!(blocks[0]["input"], replayed);
        }
    }

    #[test]
    fn tool_choice_maps_to_block_form() {
        assert_eq!(tool_choice("auto"), json!({"type": "auto"}));
        assert_eq!(tool_choice("required"), json!({"type": "any"}));
        assert_eq!(tool_choice("none"), json!({"type": "none"}));
    }
}
