//! `FnProvider`: a model that is a closure over the request, for an embedder's unit tests
//! (`|request| Ok(ModelReply::text("Hi."))`), and `ModelReply`, the answer it builds.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tt_domain::model::{AgentModelRequest, AgentModelResponse};
use tt_ports::{ModelError, ModelProvider};

use crate::provider::{build_response, delay};
use crate::script::{ScriptedResponse, ScriptedToolCall};

/// The provider name of an [`FnProvider`] (also the response's `model`).
pub const FN_PROVIDER_NAME: &str = "scripted";

/// One assistant answer: text and/or tool calls, optionally after a delay.
///
/// Tool calls get the ids `call_<round>_<n>` (n from 1), unique within the invocation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelReply {
    text: String,
    tool_calls: Vec<(String, Value)>,
    delay: Option<Duration>,
}

impl ModelReply {
    /// An answer with only text (the agent's turn ends without a tool call).
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }

    /// An answer that calls one tool, by its model-facing name (`workspace_write_file`, …)
    /// with its JSON arguments (see docs/scripted-provider.md for each tool's arguments).
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Self {
        Self::default().with_tool_call(name, arguments)
    }

    /// Adds one more tool call to the answer.
    pub fn with_tool_call(mut self, name: impl Into<String>, arguments: Value) -> Self {
        self.tool_calls.push((name.into(), arguments));
        self
    }

    /// Sets the answer's text.
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = text.into();
        self
    }

    /// Answers only after `delay` of tokio time; a cancel during the wait ends the call with
    /// `ModelError::Cancelled`. A very long delay models a call that never returns.
    pub fn after(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    fn into_response(self, round: u32) -> ScriptedResponse {
        let raw = json!({
            "text": self.text,
            "toolCalls": self.tool_calls.iter().map(|(name, arguments)| {
                json!({"name": name, "arguments": arguments})
            }).collect::<Vec<_>>(),
        });
        ScriptedResponse {
            text: self.text,
            tool_calls: self
                .tool_calls
                .into_iter()
                .enumerate()
                .map(|(index, (name, arguments))| ScriptedToolCall {
                    id: format!("call_{round}_{}", index + 1),
                    name,
                    arguments,
                })
                .collect(),
            delay_ms: self
                .delay
                .map(|delay| u64::try_from(delay.as_millis()).unwrap_or(u64::MAX)),
            raw,
        }
    }
}

type ReplyFn = dyn Fn(&AgentModelRequest) -> Result<ModelReply, ModelError> + Send + Sync;

/// A model provider that answers every call with a closure over the request.
///
/// The request says who is asking and where: `agent_profile_id`, `round` (1-based within the
/// invocation), `messages` (the conversation so far, tool results included), `tools` and
/// `session.run_id`. Return a [`ModelReply`] or a `ModelError` (for example
/// `ModelError::Transient` to exercise retries). Responses are shaped like the scripted
/// provider's (`model: "scripted"`, usage of characters / 4).
///
/// ```
/// use serde_json::json;
/// use tt_adapter_provider_scripted::{FnProvider, ModelReply};
///
/// let provider = FnProvider::new(|request| {
///     Ok(match request.round {
///         1 => ModelReply::tool_call(
///             "workspace_write_file",
///             json!({"path": "output/main.md", "content": "Hello."}),
///         ),
///         _ => ModelReply::tool_call("workspace_finish", json!({})),
///     })
/// });
/// # let _ = provider;
/// ```
pub struct FnProvider {
    reply: Box<ReplyFn>,
}

impl std::fmt::Debug for FnProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnProvider").finish_non_exhaustive()
    }
}

impl FnProvider {
    /// A provider that calls `reply` for every model call.
    pub fn new<F>(reply: F) -> Self
    where
        F: Fn(&AgentModelRequest) -> Result<ModelReply, ModelError> + Send + Sync + 'static,
    {
        Self {
            reply: Box::new(reply),
        }
    }
}

#[async_trait]
impl ModelProvider for FnProvider {
    fn name(&self) -> &str {
        FN_PROVIDER_NAME
    }

    async fn complete(
        &self,
        request: &AgentModelRequest,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        if cancel.is_cancelled() {
            return Err(ModelError::Cancelled);
        }
        let response = (self.reply)(request)?.into_response(request.round);
        delay(response.delay_ms, &cancel).await?;
        Ok(build_response(request, response))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tt_domain::ids::{InvocationId, ProfileId, RunId};
    use tt_domain::model::{AgentModelMessage, ModelContentPart, ModelRole, ProviderSession};

    fn request(round: u32) -> AgentModelRequest {
        AgentModelRequest::new(
            ProviderSession::new(
                &RunId::from_raw("run_a"),
                &InvocationId::from_raw("inv_root"),
            ),
            ProfileId::parse("default-writer").unwrap(),
            round,
            vec![AgentModelMessage::text(ModelRole::User, "Write.")],
        )
    }

    fn provider() -> FnProvider {
        FnProvider::new(|request| match request.round {
            1 => Ok(ModelReply::text("Drafting.").with_tool_call(
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "hi"}),
            )),
            2 => Ok(ModelReply::tool_call("workspace_finish", json!({}))),
            _ => Err(ModelError::Transient {
                message: "no more".to_owned(),
            }),
        })
    }

    #[tokio::test]
    async fn the_closure_answers_from_the_request() {
        let provider = provider();
        let first = provider
            .complete(&request(1), CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(first.finish_reason.as_deref(), Some("tool_calls"));
        let parts = &first.message.parts;
        assert!(matches!(&parts[0], ModelContentPart::Text { text } if text == "Drafting."));
        match &parts[1] {
            ModelContentPart::ToolCall { call } => {
                assert_eq!(call.id, "call_1_1");
                assert_eq!(call.name, "workspace_write_file");
                assert_eq!(call.arguments["path"], "output/main.md");
            }
            other => panic!("expected a tool call, got {other:?}"),
        }
        let second = provider
            .complete(&request(2), CancellationToken::new())
            .await
            .unwrap();
        assert!(matches!(
            &second.message.parts[0],
            ModelContentPart::ToolCall { call } if call.id == "call_2_1" && call.name == "workspace_finish"
        ));
        let third = provider
            .complete(&request(3), CancellationToken::new())
            .await
            .unwrap_err();
        assert!(matches!(third, ModelError::Transient { .. }));
    }

    #[tokio::test(start_paused = true)]
    async fn a_delayed_reply_ends_cancelled_when_the_call_is_cancelled() {
        let provider = FnProvider::new(|_| Ok(ModelReply::text("late").after(Duration::MAX)));
        let cancel = CancellationToken::new();
        let first = request(1);
        let call = provider.complete(&first, cancel.clone());
        cancel.cancel();
        assert!(matches!(call.await, Err(ModelError::Cancelled)));
    }
}
