//! The content of model calls in the OpenTelemetry GenAI conventions' message format, for an
//! export with content capture on (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`,
//! docs/observability.md): messages of `role` (`system`, `user`, `assistant`, `tool`) and
//! `parts` (`text` with `content`, `reasoning` with `content`, `tool_call` with `id`, `name`
//! and `arguments`, `tool_call_response` with `id` and `response`); an answer also carries its
//! `finish_reason`. Built from an agent's conversation (`AgentRunService::agent_conversation`),
//! so a call's input is the conversation as stored before that call, before any trimming the
//! request itself made.

use serde_json::{Value, json};
use std::collections::BTreeMap;
use tt_domain::model::AgentModelResponse;

use super::{AgentConversation, ConversationEntry};

fn text_part(text: &str) -> Value {
    json!({"type": "text", "content": text})
}

fn message(role: &str, parts: Vec<Value>) -> Value {
    json!({"role": role, "parts": parts})
}

/// An answer's parts: its reasoning, its text and its tool calls.
fn answer_parts(text: &str, reasoning: &str, calls: impl Iterator<Item = Value>) -> Vec<Value> {
    let mut parts = Vec::new();
    if !reasoning.is_empty() {
        parts.push(json!({"type": "reasoning", "content": reasoning}));
    }
    if !text.is_empty() {
        parts.push(text_part(text));
    }
    parts.extend(calls);
    parts
}

/// `gen_ai.output.messages` of a stored answer.
pub(crate) fn output_messages(response: &AgentModelResponse) -> Value {
    let calls = response.tool_calls().into_iter().map(|call| {
        json!({"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments})
    });
    let parts = answer_parts(&response.text(), &response.reasoning_text(), calls);
    let finish = match response.finish_reason.as_deref() {
        Some("tool_calls") => "tool_call",
        Some(other) => other,
        None if response.tool_calls().is_empty() => "stop",
        None => "tool_call",
    };
    json!([{"role": "assistant", "parts": parts, "finish_reason": finish}])
}

/// What one agent's conversation gives its calls: the system instructions, and the input
/// messages of each round's request.
pub(crate) struct AgentContent {
    pub(crate) system_instructions: Option<Value>,
    pub(crate) inputs: BTreeMap<u64, Value>,
}

/// The messages a conversation entry adds to later requests (`None`: nothing the model reads
/// as a message).
fn entry_message(entry: &ConversationEntry) -> Option<Value> {
    match entry {
        ConversationEntry::Brief { text } | ConversationEntry::Guidance { text, .. } => {
            Some(message("user", vec![text_part(text)]))
        }
        ConversationEntry::History { role, text } => Some(message(role, vec![text_part(text)])),
        ConversationEntry::Reminder { text, .. } | ConversationEntry::Context { text, .. } => {
            Some(message("user", vec![text_part(text)]))
        }
        ConversationEntry::Assistant {
            text,
            reasoning,
            tool_calls,
            ..
        } => {
            let calls = tool_calls.iter().map(|call| {
                json!({"type": "tool_call", "id": call.call_id, "name": call.name, "arguments": call.arguments})
            });
            Some(message("assistant", answer_parts(text, reasoning, calls)))
        }
        ConversationEntry::ToolResult { call_id, text, .. } => Some(message(
            "tool",
            vec![json!({"type": "tool_call_response", "id": call_id, "response": text})],
        )),
        ConversationEntry::InjectedResults { tasks, .. } => {
            let lines: Vec<String> = tasks
                .iter()
                .map(|task| match &task.summary {
                    Some(summary) => format!("{} ({}): {summary}", task.profile_id, task.status),
                    None => format!("{} ({})", task.profile_id, task.status),
                })
                .collect();
            Some(message("user", vec![text_part(&lines.join("\n"))]))
        }
        ConversationEntry::System { .. }
        | ConversationEntry::Requested { .. }
        | ConversationEntry::ModelError { .. }
        | ConversationEntry::Result { .. } => None,
    }
}

/// The system instructions and each round's input messages of one agent.
pub(crate) fn agent_content(conversation: &AgentConversation) -> AgentContent {
    let system: Vec<Value> = conversation
        .entries
        .iter()
        .filter_map(|entry| match entry {
            ConversationEntry::System { text } => Some(text_part(text)),
            _ => None,
        })
        .collect();
    let mut inputs = BTreeMap::new();
    let mut messages: Vec<Value> = Vec::new();
    for entry in &conversation.entries {
        // A request is given everything before it; guidance read before it is part of it.
        if let ConversationEntry::Requested { round, .. }
        | ConversationEntry::Assistant { round, .. } = entry
        {
            inputs
                .entry(u64::from(*round))
                .or_insert_with(|| Value::Array(messages.clone()));
        }
        messages.extend(entry_message(entry));
    }
    AgentContent {
        system_instructions: (!system.is_empty()).then_some(Value::Array(system)),
        inputs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_service::ConversationToolCall;
    use tt_domain::model::ModelUsage;

    #[test]
    fn each_round_is_given_what_came_before_it_in_the_conventions_format() {
        let conversation = AgentConversation {
            run_id: "run_a".into(),
            invocation_id: "inv_root".into(),
            profile_id: "writer".into(),
            kind: "root".into(),
            status: "completed".into(),
            parent_invocation_id: None,
            model_calls: 2,
            usage: ModelUsage::default(),
            cost_usd: None,
            inherited: None,
            entries: vec![
                ConversationEntry::System {
                    text: "Be brief.".into(),
                },
                ConversationEntry::History {
                    role: "user".into(),
                    text: "Write a haiku.".into(),
                },
                ConversationEntry::Assistant {
                    round: 1,
                    text: String::new(),
                    reasoning: String::new(),
                    tool_calls: vec![ConversationToolCall {
                        call_id: "c1".into(),
                        name: "workspace_read_file".into(),
                        arguments: json!({"path": "notes.md"}),
                    }],
                    usage: None,
                    cost_usd: None,
                    model: None,
                },
                ConversationEntry::ToolResult {
                    round: 1,
                    call_id: "c1".into(),
                    tool: "workspace.read_file".into(),
                    text: "moon".into(),
                    is_error: false,
                    error_code: None,
                },
                ConversationEntry::Guidance {
                    round: 2,
                    text: "Mention the sea.".into(),
                },
                ConversationEntry::Requested {
                    round: 2,
                    message_count: 4,
                },
            ],
        };
        let content = agent_content(&conversation);
        assert_eq!(
            content.system_instructions,
            Some(json!([{"type": "text", "content": "Be brief."}]))
        );
        assert_eq!(
            content.inputs.get(&1),
            Some(
                &json!([{"role": "user", "parts": [{"type": "text", "content": "Write a haiku."}]}])
            )
        );
        assert_eq!(
            content.inputs.get(&2),
            Some(&json!([
                {"role": "user", "parts": [{"type": "text", "content": "Write a haiku."}]},
                {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "workspace_read_file", "arguments": {"path": "notes.md"}}]},
                {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "moon"}]},
                {"role": "user", "parts": [{"type": "text", "content": "Mention the sea."}]},
            ]))
        );
    }
}
