//! Building a [`StartRunRequest`] in code: `StartRunRequest::new(chat, request)` and chained
//! setters, so a host needs neither JSON nor every field spelled out.

use serde_json::Value;
use tt_domain::run::ConversationKind;
use tt_domain::skill::SkillScopeRefs;

use crate::prompt_input::PromptMessage;
use crate::run_service::StartRunRequest;

impl StartRunRequest {
    /// A request for `stable_chat_id` asking `user_request`, with every other field at its
    /// default: a `character` conversation, the built-in `default-writer`, no history, no
    /// persisted state, no skill scopes, `null` host metadata.
    pub fn new(stable_chat_id: impl Into<String>, user_request: impl Into<String>) -> Self {
        Self {
            stable_chat_id: stable_chat_id.into(),
            user_request: Some(user_request.into()),
            ..Self::default()
        }
    }

    /// Runs the agent profile `profile_id` instead of the built-in `default-writer`.
    pub fn profile(mut self, profile_id: impl Into<String>) -> Self {
        self.profile_id = Some(profile_id.into());
        self
    }

    /// The conversation so far, oldest first.
    pub fn history(mut self, history: impl IntoIterator<Item = PromptMessage>) -> Self {
        self.history = history.into_iter().collect();
        self
    }

    /// `character` (the default) or `group`; part of the workspace id.
    pub fn conversation_kind(mut self, kind: ConversationKind) -> Self {
        self.conversation_kind = kind;
        self
    }

    /// Opaque host metadata carried into events and commit requests.
    pub fn chat_ref(mut self, chat_ref: Value) -> Self {
        self.chat_ref = chat_ref;
        self
    }

    /// Opaque host metadata carried into events and commit requests.
    pub fn generation_type(mut self, generation_type: Value) -> Self {
        self.generation_type = generation_type;
        self
    }

    /// Sampler settings for every agent of the run, over the connection's, the profile's and
    /// the prompt assembly's (docs/profiles.md#generation-settings).
    pub fn generation(mut self, settings: tt_domain::generation::GenerationSettings) -> Self {
        self.generation = settings;
        self
    }

    /// Starts from the `persist/` of this persistent state (see `latest_persist_state`).
    pub fn persist_base_state(mut self, state_id: impl Into<String>) -> Self {
        self.persist_base_state_id = Some(state_id.into());
        self
    }

    /// The preset and character the conversation runs with (skill scopes).
    pub fn skill_scope_refs(mut self, refs: SkillScopeRefs) -> Self {
        self.skill_scope_refs = refs;
        self
    }

    /// Runs the conversation's current model on the named connection `name` (registered with
    /// the runtime, or a connection file) instead of the runtime's default model.
    pub fn connection(mut self, name: impl Into<String>) -> Self {
        self.connection_ref = Some(name.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt_input::PromptRole;

    #[test]
    fn the_builder_fills_what_it_is_given_and_defaults_the_rest() {
        let request = StartRunRequest::new("chat-1", "Write it.")
            .profile("critic")
            .history([PromptMessage {
                role: PromptRole::User,
                content: "Hello".to_owned(),
            }])
            .persist_base_state("run_prev");
        assert_eq!(request.stable_chat_id, "chat-1");
        assert_eq!(request.user_request.as_deref(), Some("Write it."));
        assert_eq!(request.profile_id.as_deref(), Some("critic"));
        assert_eq!(request.history.len(), 1);
        assert_eq!(request.persist_base_state_id.as_deref(), Some("run_prev"));
        assert_eq!(request.conversation_kind, ConversationKind::Character);
        assert_eq!(request.chat_ref, Value::Null);
    }

    #[test]
    fn the_default_matches_a_json_request_with_only_a_chat_id() {
        let parsed: StartRunRequest =
            serde_json::from_value(serde_json::json!({"stableChatId": ""})).unwrap();
        assert_eq!(parsed, StartRunRequest::default());
    }
}
