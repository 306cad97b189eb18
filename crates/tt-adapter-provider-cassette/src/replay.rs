//! Replay: answer each request from the cassette, offline.

use async_trait::async_trait;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use tokio_util::sync::CancellationToken;
use tt_domain::error_codes;
use tt_domain::model::{AgentModelRequest, AgentModelResponse, ModelDelta};
use tt_ports::{ModelDeltaSink, ModelError, ModelProvider};

use crate::CassetteError;
use crate::diff;
use crate::format::{CASSETTE_VERSION, CassetteHeader, Interaction, Outcome, RecordedWire};
use crate::normalize::{NormalizedRequest, normalize_request, rewrite_ids};

/// A provider that answers from a cassette. Each recorded interaction answers once; requests
/// with the same profile, round and normalised request are answered in recorded order.
pub struct ReplayProvider {
    name: String,
    /// The recorded provider's `providerFormat` and `transport`, when the cassette kept them.
    wire: Option<RecordedWire>,
    state: Mutex<State>,
}

impl std::fmt::Debug for ReplayProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplayProvider")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct State {
    /// Interactions not answered yet (`None` once used).
    interactions: Vec<Option<Interaction>>,
    /// Recorded id → id of this run, learned from matched requests.
    ids: HashMap<String, String>,
}

impl ReplayProvider {
    /// Reads the cassette at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, CassetteError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| CassetteError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_text(&path.display().to_string(), &text)
    }

    /// Reads a cassette from its text; `origin` names it in errors.
    pub fn from_text(origin: &str, text: &str) -> Result<Self, CassetteError> {
        let invalid = |line: usize, message: String| CassetteError::Invalid {
            path: origin.to_owned(),
            line,
            message,
        };
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, line)| !line.trim().is_empty());
        let (_, first) = lines
            .next()
            .ok_or_else(|| invalid(1, "the cassette is empty".to_owned()))?;
        let header: CassetteHeader = serde_json::from_str(first)
            .map_err(|error| invalid(1, format!("not a cassette header: {error}")))?;
        if header.cassette != "tt-agent-runtime" || header.version != CASSETTE_VERSION {
            return Err(invalid(
                1,
                format!(
                    "a `{}` cassette of version {}; this build reads `tt-agent-runtime` version {CASSETTE_VERSION}",
                    header.cassette, header.version
                ),
            ));
        }
        let interactions = lines
            .map(|(index, line)| {
                serde_json::from_str::<Interaction>(line)
                    .map(Some)
                    .map_err(|error| invalid(index + 1, format!("not an interaction: {error}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            name: header.provider,
            wire: header.wire,
            state: Mutex::new(State {
                interactions,
                ids: HashMap::new(),
            }),
        })
    }

    /// Interactions not answered yet.
    pub fn remaining(&self) -> usize {
        self.lock().interactions.iter().flatten().count()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The recorded answer to `request`, with its ids rewritten for this run.
    fn answer(
        &self,
        request: &AgentModelRequest,
    ) -> Result<(Vec<ModelDelta>, Outcome), ModelError> {
        let now = normalize_request(request);
        let mut state = self.lock();
        let candidates: Vec<usize> = state
            .interactions
            .iter()
            .enumerate()
            .filter_map(|(index, slot)| {
                slot.as_ref()
                    .filter(|i| i.profile == now.profile && i.round == now.round)
                    .map(|_| index)
            })
            .collect();
        let found = candidates.iter().copied().find(|index| {
            state.interactions[*index]
                .as_ref()
                .is_some_and(|i| i.request_sha256 == now.sha256)
        });
        let Some(index) = found else {
            let nearest = candidates
                .first()
                .and_then(|index| state.interactions[*index].as_ref());
            return Err(mismatch(&now, nearest));
        };
        let Some(interaction) = state.interactions[index].take() else {
            return Err(mismatch(&now, None));
        };
        for (recorded, live) in interaction.ids.iter().zip(&now.ids) {
            state.ids.insert(recorded.clone(), live.clone());
        }
        let deltas = rewritten(&interaction.deltas, &state.ids)?;
        let outcome = rewritten(&interaction.outcome, &state.ids)?;
        Ok((deltas, outcome))
    }
}

/// `value` with every recorded id that `ids` knows replaced by this run's id.
fn rewritten<T: Serialize + DeserializeOwned>(
    value: &T,
    ids: &HashMap<String, String>,
) -> Result<T, ModelError> {
    let invalid = |error: serde_json::Error| ModelError::Unavailable {
        code: error_codes::MODEL_CASSETTE_INVALID,
        message: error.to_string(),
    };
    let text = serde_json::to_string(value).map_err(invalid)?;
    serde_json::from_str(&rewrite_ids(&text, ids)).map_err(invalid)
}

fn mismatch(now: &NormalizedRequest, nearest: Option<&Interaction>) -> ModelError {
    let message = match nearest {
        Some(recorded) => format!(
            "the request of agent `{}` in round {} differs from the recording: {}",
            now.profile,
            now.round,
            diff::describe(&recorded.request, &now.request).join("; ")
        ),
        None => format!(
            "the recording has no request of agent `{}` in round {} left to answer",
            now.profile, now.round
        ),
    };
    ModelError::Unavailable {
        code: error_codes::MODEL_CASSETTE_MISMATCH,
        message,
    }
}

#[async_trait]
impl ModelProvider for ReplayProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn provider_format(&self) -> &str {
        self.wire
            .as_ref()
            .map_or(&self.name, |wire| &wire.provider_format)
    }

    fn transport(&self) -> &str {
        self.wire
            .as_ref()
            .map_or("in_process", |wire| &wire.transport)
    }

    async fn complete(
        &self,
        request: &AgentModelRequest,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        self.stream(request, Arc::new(Discard), cancel).await
    }

    async fn stream(
        &self,
        request: &AgentModelRequest,
        sink: Arc<dyn ModelDeltaSink>,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        if cancel.is_cancelled() {
            return Err(ModelError::Cancelled);
        }
        let (deltas, outcome) = self.answer(request)?;
        for delta in deltas {
            sink.delta(delta);
        }
        match outcome {
            Outcome::Response(response) => Ok(response),
            Outcome::Error(error) => Err(error.to_error()),
        }
    }
}

struct Discard;

impl ModelDeltaSink for Discard {
    fn delta(&self, _delta: ModelDelta) {}
}
