//! Recording: forward each call to the real provider and append what happened to the cassette.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use tokio_util::sync::CancellationToken;
use tt_domain::error_codes;
use tt_domain::model::{AgentModelRequest, AgentModelResponse, ModelDelta};
use tt_ports::{ModelDeltaSink, ModelError, ModelProvider};

use crate::CassetteError;
use crate::format::{CassetteHeader, Interaction, Outcome, RecordedError};
use crate::normalize::normalize_request;

/// A provider that records every call of `inner` to a cassette file (created or truncated when
/// the recorder is built). Calls that were cancelled are not recorded: they have no answer.
pub struct RecordingProvider {
    inner: Arc<dyn ModelProvider>,
    path: PathBuf,
    file: Mutex<File>,
}

impl std::fmt::Debug for RecordingProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingProvider")
            .field("inner", &self.inner.name())
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl RecordingProvider {
    /// Creates (or truncates) the cassette at `path` and writes its header.
    pub fn create(
        inner: Arc<dyn ModelProvider>,
        path: impl AsRef<Path>,
    ) -> Result<Self, CassetteError> {
        let path = path.as_ref().to_path_buf();
        let io = |source| CassetteError::Io {
            path: path.display().to_string(),
            source,
        };
        let mut file = File::create(&path).map_err(io)?;
        let header =
            serde_json::to_string(&CassetteHeader::current(inner.as_ref())).unwrap_or_default();
        writeln!(file, "{header}").map_err(io)?;
        file.flush().map_err(io)?;
        Ok(Self {
            inner,
            path,
            file: Mutex::new(file),
        })
    }

    /// Appends one interaction as one line. A failure fails the call: a cassette with a hole
    /// would replay as a mismatch far from its cause.
    fn append(&self, interaction: &Interaction) -> Result<(), ModelError> {
        let line = serde_json::to_string(interaction).map_err(|error| ModelError::Unavailable {
            code: error_codes::MODEL_CASSETTE_IO_FAILED,
            message: format!("the interaction could not be encoded: {error}"),
        })?;
        let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        writeln!(file, "{line}")
            .and_then(|()| file.flush())
            .map_err(|error| ModelError::Unavailable {
                code: error_codes::MODEL_CASSETTE_IO_FAILED,
                message: format!("{}: {error}", self.path.display()),
            })
    }

    fn record(
        &self,
        request: &AgentModelRequest,
        deltas: Vec<ModelDelta>,
        result: &Result<AgentModelResponse, ModelError>,
    ) -> Result<(), ModelError> {
        let outcome = match result {
            Err(ModelError::Cancelled) => return Ok(()),
            Ok(response) => Outcome::Response(response.clone()),
            Err(error) => Outcome::Error(RecordedError::from_error(error)),
        };
        let normalized = normalize_request(request);
        self.append(&Interaction {
            profile: normalized.profile,
            round: normalized.round,
            request_sha256: normalized.sha256,
            ids: normalized.ids,
            request: normalized.request,
            deltas,
            outcome,
        })
    }
}

/// Passes deltas on and keeps a copy.
struct TeeSink {
    inner: Arc<dyn ModelDeltaSink>,
    seen: Mutex<Vec<ModelDelta>>,
}

impl ModelDeltaSink for TeeSink {
    fn delta(&self, delta: ModelDelta) {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(delta.clone());
        self.inner.delta(delta);
    }
}

// The window is not asked through a recording: a replay, offline, could not learn it again
// (replay with the window the recording ran with, `--context-window`).
tt_ports::decorated_model_provider!(RecordingProvider, inner, forward [
    name, close_session, provider_format, transport, check_settings,
], {
    async fn complete(
        &self,
        request: &AgentModelRequest,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        let result = self.inner.complete(&request.clone(), cancel).await;
        self.record(request, Vec::new(), &result)?;
        result
    }

    async fn stream(
        &self,
        request: &AgentModelRequest,
        sink: Arc<dyn ModelDeltaSink>,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        let tee = Arc::new(TeeSink {
            inner: sink,
            seen: Mutex::new(Vec::new()),
        });
        let result = self
            .inner
            .stream(
                &request.clone(),
                Arc::clone(&tee) as Arc<dyn ModelDeltaSink>,
                cancel,
            )
            .await;
        let deltas = std::mem::take(&mut *tee.seen.lock().unwrap_or_else(PoisonError::into_inner));
        self.record(request, deltas, &result)?;
        result
    }
});
