//! The canonical model IR every provider adapter speaks: requests, messages, content parts,
//! responses, usage and the per-invocation provider session.
//!
//! Tool call ids are opaque: whatever a provider sent comes back to it unchanged.

use serde::{Deserialize, Serialize};

use crate::generation::GenerationSettings;
use serde_json::Value;

use crate::ids::{InvocationId, ProfileId, RunId};
use crate::tool::{AgentToolCall, AgentToolResult, AgentToolSpec};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelRole {
    System,
    Developer,
    User,
    Assistant,
    Tool,
}

/// One part of a message.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ModelContentPart {
    Text {
        text: String,
    },
    Reasoning {
        text: Option<String>,
        #[serde(
            default,
            rename = "providerMetadata",
            skip_serializing_if = "Value::is_null"
        )]
        provider_metadata: Value,
    },
    ToolCall {
        call: AgentToolCall,
    },
    ToolResult {
        result: AgentToolResult,
    },
    Media {
        #[serde(rename = "mimeType")]
        mime_type: String,
        value: String,
    },
    ResourceRef {
        uri: String,
    },
    /// Provider-native data that must be replayed unchanged (for example signed thinking blocks).
    Native {
        provider: String,
        value: Value,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentModelMessage {
    pub role: ModelRole,
    pub parts: Vec<ModelContentPart>,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub provider_metadata: Value,
}

impl AgentModelMessage {
    pub fn text(role: ModelRole, text: impl Into<String>) -> Self {
        Self {
            role,
            parts: vec![ModelContentPart::Text { text: text.into() }],
            provider_metadata: Value::Null,
        }
    }

    /// An assistant turn of `parts`.
    pub fn assistant(parts: Vec<ModelContentPart>) -> Self {
        Self {
            role: ModelRole::Assistant,
            parts,
            provider_metadata: Value::Null,
        }
    }

    pub fn tool_result(result: AgentToolResult) -> Self {
        Self {
            role: ModelRole::Tool,
            parts: vec![ModelContentPart::ToolResult { result }],
            provider_metadata: Value::Null,
        }
    }

    /// Concatenated text parts.
    pub fn text_content(&self) -> String {
        self.parts
            .iter()
            .filter_map(|part| match part {
                ModelContentPart::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("")
    }

    /// Concatenated reasoning parts (the model's thinking, where its provider returns it).
    pub fn reasoning_content(&self) -> String {
        self.parts
            .iter()
            .filter_map(|part| match part {
                ModelContentPart::Reasoning {
                    text: Some(text), ..
                } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    pub fn tool_calls(&self) -> impl Iterator<Item = &AgentToolCall> {
        self.parts.iter().filter_map(|part| match part {
            ModelContentPart::ToolCall { call } => Some(call),
            _ => None,
        })
    }
}

/// Identifies one invocation's conversation with a provider: `sessionId = "<runId>:<invocationId>"`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderSession {
    pub session_id: String,
    pub run_id: RunId,
    pub invocation_id: InvocationId,
}

impl ProviderSession {
    pub fn new(run_id: &RunId, invocation_id: &InvocationId) -> Self {
        Self {
            session_id: [run_id.as_str(), ":", invocation_id.as_str()].concat(),
            run_id: run_id.clone(),
            invocation_id: invocation_id.clone(),
        }
    }
}

/// One model request in canonical form.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentModelRequest {
    pub session: ProviderSession,
    /// The profile of the agent this request is for (scripted models decide from it).
    pub agent_profile_id: ProfileId,
    /// Model id from the invocation's binding, if any; providers fall back to their default.
    pub model_id: Option<String>,
    /// 1-based round within the invocation.
    pub round: u32,
    pub messages: Vec<AgentModelMessage>,
    /// Shared with the invocation's frozen tool snapshot: a request never copies the schemas.
    pub tools: std::sync::Arc<[AgentToolSpec]>,
    /// Always `"auto"`.
    pub tool_choice: String,
    /// The most tokens the model may generate for this request (the profile's
    /// `model.maxOutputTokens`); providers apply their own default, or their connection's cap
    /// when it is lower.
    pub max_output_tokens: Option<u32>,
    /// Sampler settings resolved for this agent (connection, profile, prompt assembly, run
    /// request); `maxOutputTokens` is folded into `max_output_tokens` above, never set here.
    #[serde(default, skip_serializing_if = "GenerationSettings::is_empty")]
    pub generation: GenerationSettings,
    /// How long the provider should keep this request's prompt cache, when the profile asks
    /// for other than the provider's default (`model.cache.ttl`); a provider without such a
    /// setting ignores it (docs/profiles.md, "Prompt cache lifetime").
    pub cache_ttl: Option<CacheTtl>,
}

impl AgentModelRequest {
    /// Round `round` of agent `agent_profile_id` in `session` over `messages`, with nothing else
    /// of its own: no tools (the choice `auto`), the provider's default model, no output limit,
    /// generation settings or cache lifetime.
    pub fn new(
        session: ProviderSession,
        agent_profile_id: ProfileId,
        round: u32,
        messages: Vec<AgentModelMessage>,
    ) -> Self {
        Self {
            session,
            agent_profile_id,
            model_id: None,
            round,
            messages,
            tools: Vec::new().into(),
            tool_choice: "auto".to_owned(),
            max_output_tokens: None,
            generation: GenerationSettings::default(),
            cache_ttl: None,
        }
    }

    /// Number of tool results in the conversation so far.
    pub fn tool_result_count(&self) -> usize {
        self.messages
            .iter()
            .flat_map(|message| message.parts.iter())
            .filter(|part| matches!(part, ModelContentPart::ToolResult { .. }))
            .count()
    }

    /// Number of assistant turns already in the conversation.
    pub fn assistant_turn_count(&self) -> usize {
        self.messages
            .iter()
            .filter(|message| message.role == ModelRole::Assistant)
            .count()
    }
}

/// Token usage of one model call.
///
/// `input_tokens` counts the whole prompt, including the part the provider served from its
/// prompt cache (`cached_input_tokens`) and the part it wrote to it (`cache_write_tokens`), so
/// budgets and totals compare across providers whatever they cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelUsage {
    /// Every prompt token of the call, cached or not (OpenAI `prompt_tokens`; Anthropic
    /// `input_tokens` + `cache_read_input_tokens` + `cache_creation_input_tokens`). The two
    /// cache figures below are parts of it: the uncached, unwritten rest is
    /// `input_tokens - cached_input_tokens - cache_write_tokens`.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's cache (Anthropic `cache_read_input_tokens`,
    /// OpenAI `prompt_tokens_details.cached_tokens`, llama.cpp `timings.cache_n`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input_tokens: u64,
    /// Prompt tokens written to the provider's cache (Anthropic `cache_creation_input_tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
}

impl ModelUsage {
    /// Usage with no cache figures.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
            ..Self::default()
        }
    }
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// One model response in canonical form.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentModelResponse {
    /// The assistant message, with tool calls and native parts, to replay on the next turn.
    pub message: AgentModelMessage,
    pub response_id: Option<String>,
    pub model: Option<String>,
    pub finish_reason: Option<String>,
    pub usage: Option<ModelUsage>,
    /// The provider's raw response body, for audit.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub raw_response: Value,
}

impl AgentModelResponse {
    pub fn tool_calls(&self) -> Vec<AgentToolCall> {
        self.message.tool_calls().cloned().collect()
    }

    pub fn text(&self) -> String {
        self.message.text_content()
    }

    pub fn reasoning_text(&self) -> String {
        self.message.reasoning_content()
    }
}

/// A piece of a response while it streams in. Fragments are forwarded as they arrive; the
/// complete response returned at the end is what gets stored and acted on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum ModelDelta {
    /// Assistant text.
    Text { text: String },
    /// Reasoning / thinking text.
    Reasoning { text: String },
    /// A tool call began (its id and name are known).
    ToolCallStarted { id: String, name: String },
    /// More of a tool call's JSON arguments (raw text, in order).
    ToolCallArguments { id: String, fragment: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_id_joins_run_and_invocation() {
        let session = ProviderSession::new(&RunId::from_raw("run_a"), &InvocationId::root());
        assert_eq!(session.session_id, "run_a:inv_root");
    }

    #[test]
    fn parts_are_tagged_by_type() {
        let part = ModelContentPart::Text { text: "hi".into() };
        assert_eq!(
            serde_json::to_string(&part).unwrap(),
            r#"{"type":"text","text":"hi"}"#
        );
        let native = ModelContentPart::Native {
            provider: "anthropic".into(),
            value: Value::Null,
        };
        assert!(
            serde_json::to_string(&native)
                .unwrap()
                .starts_with(r#"{"type":"native""#)
        );
    }
}

/// How long a provider keeps a prompt cache entry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CacheTtl {
    /// Whatever the provider keeps by default (Anthropic: five minutes).
    #[default]
    #[serde(rename = "default")]
    ProviderDefault,
    /// One hour, where the provider offers it (Anthropic's `ttl: "1h"`).
    #[serde(rename = "1h")]
    OneHour,
}

impl CacheTtl {
    /// The profile spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ProviderDefault => "default",
            Self::OneHour => "1h",
        }
    }

    /// The lifetime a profile spells `name`, if any.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::ProviderDefault, Self::OneHour]
            .into_iter()
            .find(|ttl| ttl.as_str() == name)
    }

    /// `None` for the provider's default: requests carry only a lifetime that differs from it.
    pub fn requested(self) -> Option<Self> {
        (self != Self::ProviderDefault).then_some(self)
    }
}
