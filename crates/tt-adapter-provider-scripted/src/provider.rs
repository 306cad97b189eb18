//! `ScriptedProvider`: plays a `Script` as a `ModelProvider`, choosing each turn from the
//! request itself (agent profile id + number of assistant messages so far).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tt_domain::model::{
    AgentModelMessage, AgentModelRequest, AgentModelResponse, ModelContentPart, ModelUsage,
};
use tt_domain::tool::AgentToolCall;
use tt_ports::{ModelError, ModelProvider};

use crate::script::{Script, ScriptError, ScriptedResponse};

/// The provider name, also used as the response's `model`.
pub const SCRIPTED_PROVIDER_NAME: &str = "scripted";

/// The error code when an agent's script has no turn left.
pub const SCRIPT_EXHAUSTED_CODE: tt_domain::error_codes::Code =
    tt_domain::error_codes::MODEL_SCRIPT_EXHAUSTED;

/// A deterministic model that plays a script; see the crate docs for the format and the rules.
pub struct ScriptedProvider {
    script: Script,
    /// `(sessionId, turn index)` -> number of injected errors already emitted there. Only
    /// looked up by key, so HashMap order never matters.
    emitted_errors: Mutex<HashMap<(String, usize), usize>>,
    /// Answers held back until a host releases them: `(agent, round)` -> hold.
    holds: Mutex<Vec<(String, u32, Arc<ScriptHold>)>>,
}

/// One held answer (see [`ScriptedProvider::hold_after`]): the call for that agent's round has
/// its answer ready and waits, cancellably, until [`ScriptHold::release`]. A demo uses it to do
/// something at an exact point of a run (for example send user guidance while the agent is
/// between two model requests), so the run stays deterministic.
#[derive(Debug)]
pub struct ScriptHold {
    reached: watch::Sender<bool>,
    released: watch::Sender<bool>,
}

impl ScriptHold {
    /// Resolves once the held call has its answer ready and is waiting.
    pub async fn reached(&self) {
        let mut reached = self.reached.subscribe();
        // The sender lives in `self`, so the channel cannot close while we wait.
        let _ = reached.wait_for(|reached| *reached).await;
    }

    /// Lets the held call (and any later call for the same round) answer.
    pub fn release(&self) {
        self.released.send_replace(true);
    }

    async fn wait(&self, cancel: &CancellationToken) -> Result<(), ModelError> {
        self.reached.send_replace(true);
        let mut released = self.released.subscribe();
        tokio::select! {
            () = cancel.cancelled() => Err(ModelError::Cancelled),
            _ = released.wait_for(|released| *released) => Ok(()),
        }
    }
}

impl std::fmt::Debug for ScriptedProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedProvider")
            .field("agents", &self.agent_ids())
            .finish_non_exhaustive()
    }
}

/// What one call will do, decided under the lock and carried out after it is released.
enum Step {
    Fail {
        error: ModelError,
        delay_ms: Option<u64>,
    },
    Respond(ScriptedResponse),
}

impl ScriptedProvider {
    pub fn new(script: Script) -> Self {
        Self {
            script,
            emitted_errors: Mutex::new(HashMap::new()),
            holds: Mutex::new(Vec::new()),
        }
    }

    /// Holds `agent`'s answer for model round `round` (1-based) until the returned hold is
    /// released. The request of that round is already sent when the call waits.
    pub fn hold_after(&self, agent: &str, round: u32) -> Arc<ScriptHold> {
        let hold = Arc::new(ScriptHold {
            reached: watch::Sender::new(false),
            released: watch::Sender::new(false),
        });
        self.holds
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((agent.to_owned(), round, Arc::clone(&hold)));
        hold
    }

    fn hold_for(&self, request: &AgentModelRequest) -> Option<Arc<ScriptHold>> {
        self.holds
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|(agent, round, _)| {
                agent == request.agent_profile_id.as_str() && *round == request.round
            })
            .map(|(_, _, hold)| Arc::clone(hold))
    }

    pub fn from_json_str(text: &str) -> Result<Self, ScriptError> {
        Script::from_json_str(text).map(Self::new)
    }

    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ScriptError> {
        Script::from_file(path).map(Self::new)
    }

    /// Agents with a script, sorted.
    pub fn agent_ids(&self) -> Vec<&str> {
        self.script.agents.keys().map(String::as_str).collect()
    }

    /// Number of assistant turns scripted for `agent` (0 when it has none).
    pub fn turn_count(&self, agent: &str) -> usize {
        self.script.agents.get(agent).map_or(0, |turns| {
            turns.iter().filter(|turn| turn.response.is_some()).count()
        })
    }

    fn counters(&self) -> MutexGuard<'_, HashMap<(String, usize), usize>> {
        self.emitted_errors
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn decide(&self, request: &AgentModelRequest) -> Result<Step, ModelError> {
        let agent = request.agent_profile_id.as_str();
        let turn_index = usize::try_from(request.round.saturating_sub(1)).unwrap_or(usize::MAX);
        let turn_number = turn_index.saturating_add(1);
        let Some(turns) = self.script.agents.get(agent) else {
            return Err(exhausted(format!(
                "the script has no turns for agent `{agent}` (turn {turn_number} was requested)"
            )));
        };
        let Some(turn) = turns.get(turn_index) else {
            return Err(exhausted(format!(
                "the script for agent `{agent}` has no turn {turn_number}; it scripts {} turn(s)",
                self.turn_count(agent)
            )));
        };
        let mut counters = self.counters();
        let emitted = counters
            .entry((request.session.session_id.clone(), turn_index))
            .or_insert(0);
        if let Some(entry) = turn.errors_before.get(*emitted) {
            // Counted when selected, so a call cancelled during its delay still uses it up.
            *emitted += 1;
            return Ok(Step::Fail {
                error: entry.failure.to_model_error(),
                delay_ms: entry.delay_ms,
            });
        }
        match &turn.response {
            Some(response) => Ok(Step::Respond(response.clone())),
            None => Err(exhausted(format!(
                "the script for agent `{agent}` has no answer for turn {turn_number} after its injected errors"
            ))),
        }
    }
}

fn exhausted(message: String) -> ModelError {
    ModelError::Unavailable {
        code: SCRIPT_EXHAUSTED_CODE,
        message,
    }
}

/// Sleeps on tokio time unless `cancel` fires first.
pub(crate) async fn delay(
    delay_ms: Option<u64>,
    cancel: &CancellationToken,
) -> Result<(), ModelError> {
    let Some(millis) = delay_ms.filter(|millis| *millis > 0) else {
        return Ok(());
    };
    tokio::select! {
        () = cancel.cancelled() => Err(ModelError::Cancelled),
        () = tokio::time::sleep(Duration::from_millis(millis)) => Ok(()),
    }
}

/// Roughly four characters per token: simple, deterministic usage numbers.
fn approx_tokens(chars: usize) -> u64 {
    u64::try_from(chars.div_ceil(4)).unwrap_or(u64::MAX)
}

pub(crate) fn build_response(
    request: &AgentModelRequest,
    scripted: ScriptedResponse,
) -> AgentModelResponse {
    let input_chars = serde_json::to_string(&request.messages)
        .map(|text| text.chars().count())
        .unwrap_or(0);
    let mut output_chars = scripted.text.chars().count();
    let has_calls = !scripted.tool_calls.is_empty();
    let mut parts = Vec::new();
    if !scripted.text.is_empty() {
        parts.push(ModelContentPart::Text {
            text: scripted.text,
        });
    }
    for call in scripted.tool_calls {
        output_chars += call.name.chars().count() + call.arguments.to_string().chars().count();
        parts.push(ModelContentPart::ToolCall {
            call: AgentToolCall::new(call.id, call.name, call.arguments),
        });
    }
    AgentModelResponse {
        message: AgentModelMessage::assistant(parts),
        response_id: Some(format!(
            "scripted:{}:turn-{}",
            request.session.session_id, request.round
        )),
        model: Some(SCRIPTED_PROVIDER_NAME.to_owned()),
        finish_reason: Some(if has_calls { "tool_calls" } else { "stop" }.to_owned()),
        usage: Some(ModelUsage::new(
            approx_tokens(input_chars),
            approx_tokens(output_chars),
        )),
        raw_response: scripted.raw,
    }
}

#[async_trait]
impl ModelProvider for ScriptedProvider {
    fn name(&self) -> &str {
        SCRIPTED_PROVIDER_NAME
    }

    async fn complete(
        &self,
        request: &AgentModelRequest,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        if cancel.is_cancelled() {
            return Err(ModelError::Cancelled);
        }
        match self.decide(request)? {
            Step::Fail { error, delay_ms } => {
                delay(delay_ms, &cancel).await?;
                Err(error)
            }
            Step::Respond(response) => {
                delay(response.delay_ms, &cancel).await?;
                if let Some(hold) = self.hold_for(request) {
                    hold.wait(&cancel).await?;
                }
                Ok(build_response(request, response))
            }
        }
    }

    async fn close_session(&self, session_id: &str) {
        self.counters()
            .retain(|(session, _), _| session.as_str() != session_id);
    }
}

#[cfg(test)]
mod tests;
