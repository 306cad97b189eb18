//! The host's conversation input for a run and its frozen form, `input/prompt_snapshot.json`.

use serde::{Deserialize, Serialize};
use tt_domain::model::{AgentModelMessage, ModelRole};
use tt_domain::profile::ContextPolicy;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptRole {
    System,
    User,
    Assistant,
}

/// One message of the host conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptMessage {
    pub role: PromptRole,
    pub content: String,
}

/// The conversation as frozen at run start, after the root profile's context policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptSnapshot {
    pub schema_version: u32,
    pub context_policy: ContextPolicy,
    /// Host system messages, then the kept chat history, then the user's request.
    pub messages: Vec<PromptMessage>,
}

impl PromptSnapshot {
    /// Applies `initialChatHistoryMessages` (-1 all, 0 none, N the last N) to the history;
    /// host system messages and the request are always kept.
    pub fn freeze(policy: ContextPolicy, history: &[PromptMessage], request: Option<&str>) -> Self {
        let (system, chat): (Vec<&PromptMessage>, Vec<&PromptMessage>) = history
            .iter()
            .partition(|message| message.role == PromptRole::System);
        let keep = match usize::try_from(policy.initial_chat_history_messages) {
            Ok(limit) => limit.min(chat.len()),
            Err(_) => chat.len(),
        };
        let mut messages: Vec<PromptMessage> = system.into_iter().cloned().collect();
        messages.extend(
            chat[chat.len() - keep..]
                .iter()
                .map(|message| (*message).clone()),
        );
        if let Some(request) = request.map(str::trim).filter(|text| !text.is_empty()) {
            messages.push(PromptMessage {
                role: PromptRole::User,
                content: request.to_owned(),
            });
        }
        Self {
            schema_version: 1,
            context_policy: policy,
            messages,
        }
    }

    /// The snapshot's messages in canonical model form.
    pub fn model_messages(&self) -> Vec<AgentModelMessage> {
        self.messages
            .iter()
            .map(|message| {
                let role = match message.role {
                    PromptRole::System => ModelRole::System,
                    PromptRole::User => ModelRole::User,
                    PromptRole::Assistant => ModelRole::Assistant,
                };
                AgentModelMessage::text(role, message.content.clone())
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(role: PromptRole, content: &str) -> PromptMessage {
        PromptMessage {
            role,
            content: content.into(),
        }
    }

    #[test]
    fn history_limit_keeps_the_newest_messages() {
        let history = vec![
            msg(PromptRole::System, "world"),
            msg(PromptRole::User, "a"),
            msg(PromptRole::Assistant, "b"),
            msg(PromptRole::User, "c"),
        ];
        let policy = |n| ContextPolicy {
            initial_chat_history_messages: n,
            include_activated_world_info: true,
            ..ContextPolicy::default()
        };
        let all = PromptSnapshot::freeze(policy(-1), &history, Some("go"));
        assert_eq!(all.messages.len(), 5);
        let none = PromptSnapshot::freeze(policy(0), &history, Some("go"));
        assert_eq!(
            none.messages,
            vec![
                msg(PromptRole::System, "world"),
                msg(PromptRole::User, "go")
            ]
        );
        let two = PromptSnapshot::freeze(policy(2), &history, None);
        assert_eq!(
            two.messages[1..],
            [msg(PromptRole::Assistant, "b"), msg(PromptRole::User, "c")]
        );
    }
}
