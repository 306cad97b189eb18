//! `ScriptedScenarios`: several scripts behind one provider, chosen per run, so a second
//! scenario does not need cloned profiles.
//!
//! A run is bound to a scenario by its first model call (the foreground agent always calls
//! first): the first scenario whose marker occurs in a user message of that request wins, else
//! the fallback script. Every later call of the run, its sub-agents' included, plays the bound
//! scenario's script, by the usual rules of [`ScriptedProvider`].

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;
use tt_domain::ids::RunId;
use tt_domain::model::{AgentModelRequest, AgentModelResponse, ModelContentPart, ModelRole};
use tt_ports::{ModelError, ModelProvider};

use crate::provider::{SCRIPTED_PROVIDER_NAME, ScriptedProvider};

/// Scripts chosen per run by a marker in the run's user request.
///
/// ```
/// use tt_adapter_provider_scripted::{ScriptedProvider, ScriptedScenarios};
///
/// let quick = ScriptedProvider::from_json_str(
///     r#"{"schemaVersion": 1, "agents": {"default-writer": [{"text": "Quick."}]}}"#,
/// )?;
/// let slow = ScriptedProvider::from_json_str(
///     r#"{"schemaVersion": 1, "agents": {"default-writer": [{"text": "Slow.", "delayMs": 60000}]}}"#,
/// )?;
/// // Runs whose user request contains "[slow]" play `slow`; all others play `quick`.
/// let provider = ScriptedScenarios::new(quick).scenario("[slow]", slow);
/// # let _ = provider;
/// # Ok::<(), tt_adapter_provider_scripted::ScriptError>(())
/// ```
pub struct ScriptedScenarios {
    fallback: ScriptedProvider,
    scenarios: Vec<(String, ScriptedProvider)>,
    /// Run id -> index into `scenarios` (`None`: the fallback), fixed by the run's first call.
    bound: Mutex<HashMap<RunId, Option<usize>>>,
}

impl std::fmt::Debug for ScriptedScenarios {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedScenarios")
            .field(
                "markers",
                &self
                    .scenarios
                    .iter()
                    .map(|(marker, _)| marker)
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl ScriptedScenarios {
    /// Scenarios over a fallback script, played by runs that match no marker.
    pub fn new(fallback: ScriptedProvider) -> Self {
        Self {
            fallback,
            scenarios: Vec::new(),
            bound: Mutex::new(HashMap::new()),
        }
    }

    /// Adds a scenario: runs whose first model request has a user message containing `marker`
    /// play `script`. Scenarios are tried in the order they were added.
    pub fn scenario(mut self, marker: impl Into<String>, script: ScriptedProvider) -> Self {
        self.scenarios.push((marker.into(), script));
        self
    }

    /// The scenario a run is bound to: its marker, or `None` for the fallback or an unbound run.
    pub fn scenario_of(&self, run_id: &RunId) -> Option<&str> {
        let bound = self.bound.lock().unwrap_or_else(PoisonError::into_inner);
        bound
            .get(run_id)
            .copied()
            .flatten()
            .map(|index| self.scenarios[index].0.as_str())
    }

    fn choose(&self, request: &AgentModelRequest) -> &ScriptedProvider {
        let mut bound = self.bound.lock().unwrap_or_else(PoisonError::into_inner);
        let index = *bound
            .entry(request.session.run_id.clone())
            .or_insert_with(|| {
                self.scenarios
                    .iter()
                    .position(|(marker, _)| user_text_contains(request, marker))
            });
        match index {
            Some(index) => &self.scenarios[index].1,
            None => &self.fallback,
        }
    }
}

fn user_text_contains(request: &AgentModelRequest, marker: &str) -> bool {
    request
        .messages
        .iter()
        .filter(|message| message.role == ModelRole::User)
        .flat_map(|message| message.parts.iter())
        .any(|part| matches!(part, ModelContentPart::Text { text } if text.contains(marker)))
}

#[async_trait]
impl ModelProvider for ScriptedScenarios {
    fn name(&self) -> &str {
        SCRIPTED_PROVIDER_NAME
    }

    async fn complete(
        &self,
        request: &AgentModelRequest,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        self.choose(request).complete(request, cancel).await
    }

    async fn close_session(&self, session_id: &str) {
        self.fallback.close_session(session_id).await;
        for (_, script) in &self.scenarios {
            script.close_session(session_id).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tt_domain::ids::{InvocationId, ProfileId};
    use tt_domain::model::{AgentModelMessage, ProviderSession};

    fn script(text: &str) -> ScriptedProvider {
        ScriptedProvider::from_json_str(&format!(
            r#"{{"schemaVersion": 1, "agents": {{
                "default-writer": [{{"text": "{text}"}}],
                "scene-critic": [{{"text": "{text} critic"}}]}}}}"#
        ))
        .unwrap()
    }

    fn request(run: &str, agent: &str, invocation: &str, user: &str) -> AgentModelRequest {
        AgentModelRequest::new(
            ProviderSession::new(&RunId::from_raw(run), &InvocationId::from_raw(invocation)),
            ProfileId::parse(agent).unwrap(),
            1,
            vec![
                AgentModelMessage::text(ModelRole::System, "[slow] in a system message"),
                AgentModelMessage::text(ModelRole::User, user),
            ],
        )
    }

    async fn text_of(provider: &ScriptedScenarios, request: &AgentModelRequest) -> String {
        let response = provider
            .complete(request, CancellationToken::new())
            .await
            .unwrap();
        match &response.message.parts[0] {
            ModelContentPart::Text { text } => text.clone(),
            other => panic!("expected text, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_run_plays_the_scenario_its_first_request_names_and_keeps_it() {
        let provider = ScriptedScenarios::new(script("fallback"))
            .scenario("[quick]", script("quick"))
            .scenario("[slow]", script("slow"));
        let run_a = request("run_a", "default-writer", "inv_root", "Go. [slow]");
        assert_eq!(text_of(&provider, &run_a).await, "slow");
        // A sub-agent of the same run has no marker in its brief: it stays in the scenario.
        let child = request("run_a", "scene-critic", "inv_child", "Review it.");
        assert_eq!(text_of(&provider, &child).await, "slow critic");
        assert_eq!(
            provider.scenario_of(&RunId::from_raw("run_a")),
            Some("[slow]")
        );
        // Markers only count in user messages; a run without one plays the fallback.
        let run_b = request("run_b", "default-writer", "inv_root", "Go.");
        assert_eq!(text_of(&provider, &run_b).await, "fallback");
        assert_eq!(provider.scenario_of(&RunId::from_raw("run_b")), None);
        let run_c = request("run_c", "default-writer", "inv_root", "[quick] please");
        assert_eq!(text_of(&provider, &run_c).await, "quick");
    }
}
