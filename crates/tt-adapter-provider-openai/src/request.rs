//! Canonical request -> Chat Completions request body: messages, tools (model aliases and JSON
//! schemas), `tool_choice`, parallel tool calls and the streaming options.

use serde_json::{Map, Value, json};
use tt_domain::model::{AgentModelMessage, AgentModelRequest, ModelContentPart, ModelRole};
use tt_domain::tool::AgentToolSpec;

/// What the body needs besides the canonical request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyOptions<'a> {
    pub model: &'a str,
    pub stream: bool,
    pub max_tokens: u32,
    pub token_limit_field: crate::config::TokenLimitField,
    pub replay_reasoning_content: bool,
    pub dialect: crate::config::Dialect,
    pub unsupported_settings: tt_ports::UnsupportedSettings,
}

/// Builds the JSON body of `POST {baseUrl}/chat/completions`; a generation setting the server
/// does not take is `model.setting_unsupported`, or left out when the connection drops such
/// settings.
pub(crate) fn request_body(
    request: &AgentModelRequest,
    options: BodyOptions<'_>,
) -> Result<Value, tt_ports::ModelError> {
    let mut body = Map::new();
    body.insert("model".into(), json!(options.model));
    let messages: Vec<Value> = request
        .messages
        .iter()
        .flat_map(|message| wire_messages(message, options.replay_reasoning_content))
        .collect();
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(request.tools.iter().map(wire_tool).collect()),
        );
        body.insert("tool_choice".into(), json!(request.tool_choice));
        body.insert("parallel_tool_calls".into(), json!(true));
    }
    body.insert(
        options.token_limit_field.as_str().into(),
        json!(options.max_tokens),
    );
    crate::settings::apply(
        &mut body,
        request,
        options.dialect,
        options.unsupported_settings,
    )?;
    body.insert("stream".into(), json!(options.stream));
    if options.stream {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Ok(Value::Object(body))
}

fn wire_tool(spec: &AgentToolSpec) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": spec.model_name,
            "description": spec.description,
            "parameters": spec.input_schema,
        },
    })
}

/// One canonical message becomes one wire message, except that every tool result is a
/// `tool` message of its own.
fn wire_messages(message: &AgentModelMessage, replay_reasoning: bool) -> Vec<Value> {
    match message.role {
        // `developer` is not understood by most compatible servers; `system` is.
        ModelRole::System | ModelRole::Developer => {
            vec![json!({"role": "system", "content": plain_text(message)})]
        }
        ModelRole::User => vec![json!({"role": "user", "content": user_content(message)})],
        ModelRole::Assistant => vec![assistant_message(message, replay_reasoning)],
        ModelRole::Tool => tool_messages(message),
    }
}

/// Text parts joined, with resource references as their URIs on lines of their own.
fn plain_text(message: &AgentModelMessage) -> String {
    let mut text = String::new();
    for part in &message.parts {
        match part {
            ModelContentPart::Text { text: piece } => text.push_str(piece),
            ModelContentPart::ResourceRef { uri } => {
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(uri);
                text.push('\n');
            }
            ModelContentPart::Reasoning { .. }
            | ModelContentPart::ToolCall { .. }
            | ModelContentPart::ToolResult { .. }
            | ModelContentPart::Media { .. }
            | ModelContentPart::Native { .. } => {}
        }
    }
    text
}

/// A plain string, or content parts when the message carries media (images as data URLs).
fn user_content(message: &AgentModelMessage) -> Value {
    let has_media = message
        .parts
        .iter()
        .any(|part| matches!(part, ModelContentPart::Media { .. }));
    if !has_media {
        return json!(plain_text(message));
    }
    let parts: Vec<Value> = message
        .parts
        .iter()
        .filter_map(|part| match part {
            ModelContentPart::Text { text } => Some(json!({"type": "text", "text": text})),
            ModelContentPart::ResourceRef { uri } => Some(json!({"type": "text", "text": uri})),
            ModelContentPart::Media { mime_type, value } => {
                let url = if value.starts_with("data:") || value.contains("://") {
                    value.clone()
                } else {
                    format!("data:{mime_type};base64,{value}")
                };
                Some(json!({"type": "image_url", "image_url": {"url": url}}))
            }
            ModelContentPart::Reasoning { .. }
            | ModelContentPart::ToolCall { .. }
            | ModelContentPart::ToolResult { .. }
            | ModelContentPart::Native { .. } => None,
        })
        .collect();
    Value::Array(parts)
}

/// Arguments as the wire carries them: a JSON text. Arguments the model got wrong (not an
/// object: unparseable text kept as a string, or other JSON) are replayed as `{}`: servers such
/// as llama.cpp parse replayed arguments and refuse the whole request otherwise, and the tool
/// result that follows already tells the model what was wrong.
fn arguments_text(arguments: &Value) -> String {
    if arguments.is_object() {
        arguments.to_string()
    } else {
        "{}".to_owned()
    }
}

/// An assistant turn as it is replayed. With tool calls and no text, `content` is `null`: the
/// OpenAI reference accepts it, and so do llama.cpp's and vLLM's parsers, which only require
/// `content` when there are no tool calls.
fn assistant_message(message: &AgentModelMessage, replay_reasoning: bool) -> Value {
    let text = plain_text(message);
    let calls: Vec<Value> = message
        .tool_calls()
        .map(|call| {
            json!({
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": arguments_text(&call.arguments),
                },
            })
        })
        .collect();
    let mut wire = Map::new();
    wire.insert("role".into(), json!("assistant"));
    let content = if text.is_empty() && !calls.is_empty() {
        Value::Null
    } else {
        json!(text)
    };
    wire.insert("content".into(), content);
    if replay_reasoning {
        let reasoning = message.reasoning_content();
        if !reasoning.is_empty() {
            wire.insert("reasoning_content".into(), json!(reasoning));
        }
    }
    if !calls.is_empty() {
        wire.insert("tool_calls".into(), Value::Array(calls));
    }
    Value::Object(wire)
}

fn tool_messages(message: &AgentModelMessage) -> Vec<Value> {
    message
        .parts
        .iter()
        .filter_map(|part| match part {
            ModelContentPart::ToolResult { result } => Some(json!({
                "role": "tool",
                "tool_call_id": result.call_id,
                "content": result.to_model_payload(),
            })),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tt_domain::ids::{InvocationId, ProfileId, RunId};
    use tt_domain::model::ProviderSession;
    use tt_domain::tool::{AgentToolCall, AgentToolResult};

    #[test]
    fn arguments_the_model_got_wrong_are_replayed_as_an_empty_object() {
        assert_eq!(arguments_text(&json!("{\"path\": ")), "{}");
        assert_eq!(arguments_text(&json!({"a": 1})), "{\"a\":1}");
        assert_eq!(arguments_text(&json!([1])), "{}");
    }

    fn request(messages: Vec<AgentModelMessage>) -> AgentModelRequest {
        AgentModelRequest::new(
            ProviderSession::new(&RunId::from_raw("run_a"), &InvocationId::root()),
            ProfileId::parse("writer").unwrap(),
            1,
            messages,
        )
    }

    fn options(stream: bool) -> BodyOptions<'static> {
        BodyOptions {
            model: "m",
            stream,
            max_tokens: 64,
            token_limit_field: crate::config::TokenLimitField::MaxTokens,
            replay_reasoning_content: true,
            dialect: crate::config::Dialect::Compatible,
            unsupported_settings: tt_ports::UnsupportedSettings::Refuse,
        }
    }

    #[test]
    fn openai_itself_gets_max_completion_tokens_and_compatible_servers_max_tokens() {
        use crate::config::{OpenAiConfig, TokenLimitField};
        for (url, field) in [
            (
                "https://api.openai.com/v1",
                TokenLimitField::MaxCompletionTokens,
            ),
            (
                "https://API.OpenAI.com:443/v1",
                TokenLimitField::MaxCompletionTokens,
            ),
            ("http://127.0.0.1:8080/v1", TokenLimitField::MaxTokens),
            (
                "https://api.openai.com.example.net/v1",
                TokenLimitField::MaxTokens,
            ),
            ("https://openrouter.ai/api/v1", TokenLimitField::MaxTokens),
        ] {
            assert_eq!(OpenAiConfig::new(url).token_limit_field, field, "{url}");
        }
        let config = OpenAiConfig::new("http://127.0.0.1:8080/v1")
            .with_token_limit_field(TokenLimitField::MaxCompletionTokens);
        assert_eq!(
            config.token_limit_field,
            TokenLimitField::MaxCompletionTokens
        );
        let body = request_body(
            &request(vec![AgentModelMessage::text(ModelRole::User, "hi")]),
            BodyOptions {
                token_limit_field: TokenLimitField::MaxCompletionTokens,
                ..options(false)
            },
        )
        .unwrap();
        assert_eq!(body["max_completion_tokens"], json!(64));
        assert!(body.get("max_tokens").is_none());
    }

    #[test]
    fn no_tools_means_no_tool_fields_and_stream_options_only_when_streaming() {
        let body = request_body(
            &request(vec![AgentModelMessage::text(
                ModelRole::Developer,
                "be brief",
            )]),
            options(true),
        )
        .unwrap();
        assert_eq!(
            body,
            json!({
                "model": "m",
                "messages": [{"role": "system", "content": "be brief"}],
                "max_tokens": 64,
                "cache_prompt": true,
                "stream": true,
                "stream_options": {"include_usage": true},
            })
        );
    }

    #[test]
    fn assistant_replay_with_reasoning_media_and_tool_results() {
        let assistant = AgentModelMessage {
            role: ModelRole::Assistant,
            parts: vec![
                ModelContentPart::Reasoning {
                    text: Some("thinking".into()),
                    provider_metadata: Value::Null,
                },
                ModelContentPart::ToolCall {
                    call: AgentToolCall::new(
                        "c1",
                        "workspace_read_file",
                        json!({"path": "output/a.md"}),
                    ),
                },
            ],
            provider_metadata: Value::Null,
        };
        let user = AgentModelMessage {
            role: ModelRole::User,
            parts: vec![
                ModelContentPart::Text {
                    text: "look".into(),
                },
                ModelContentPart::Media {
                    mime_type: "image/png".into(),
                    value: "AAAA".into(),
                },
            ],
            provider_metadata: Value::Null,
        };
        let result = AgentModelMessage::tool_result(AgentToolResult {
            call_id: "c1".into(),
            name: "workspace.read_file".into(),
            content: "text".into(),
            structured: Value::Null,
            is_error: false,
            error_code: None,
            error_reason: None,
            resource_refs: vec![],
        });
        let body = request_body(&request(vec![user, assistant, result]), options(false)).unwrap();
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                ]},
                {"role": "assistant", "content": null, "reasoning_content": "thinking", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "workspace_read_file", "arguments": "{\"path\":\"output/a.md\"}"}},
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "{\"ok\":true,\"content\":\"text\",\"structured\":null,\"errorCode\":null,\"resourceRefs\":[]}"},
            ])
        );
    }
}
