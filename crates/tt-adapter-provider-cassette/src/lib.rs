//! Model cassettes: a [`RecordingProvider`] wraps any model provider and writes every request it
//! forwards, with the streamed deltas and the response (or error) that came back, to a cassette
//! file; a [`ReplayProvider`] answers from that file offline.
//!
//! A replayed request is matched by the agent's profile, its round and the SHA-256 of the
//! request in normalised form: the provider session is left out, and every runtime id (`run_…`,
//! `inv_…`, `task_…`, `handoff_…`, `commit_…`, `evt_…`, `prompt_assembly_…` with 32 hex digits)
//! is replaced by a placeholder numbered by first appearance, so the same conversation matches
//! in a new run whose ids differ. The ids a match pairs up (recorded id → id of this run) are
//! remembered, and the recorded deltas and response are rewritten with them before they are
//! returned, so a recorded `agent.await` names the task of this run. A request that matches
//! nothing fails with `model.cassette_mismatch` and a diff naming the first fields that changed.
//!
//! The file is JSON lines: a header `{"cassette": "tt-agent-runtime", "version": 1, "provider":
//! "<name>", "wire": {"providerFormat": …, "transport": …}}`, then one interaction per line,
//! appended as each call ends (docs/cassettes.md). A replay reports the recorded provider's
//! name, format and transport, so its journal reads like the recorded run's.

use tt_domain::error_codes;

mod diff;
mod format;
mod normalize;
mod record;
mod replay;

pub use diff::describe as describe_differences;
pub use format::{
    CASSETTE_VERSION, CassetteHeader, Interaction, Outcome, RecordedError, RecordedWire,
};
pub use normalize::{NormalizedRequest, normalize_request};
pub use record::RecordingProvider;
pub use replay::ReplayProvider;

/// Why a cassette could not be opened, read or written.
#[derive(Debug, thiserror::Error)]
pub enum CassetteError {
    #[error("{listed_code}: {path}: {source}", listed_code = error_codes::MODEL_CASSETTE_IO_FAILED)]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{listed_code}: {path} line {line}: {message}", listed_code = error_codes::MODEL_CASSETTE_INVALID)]
    Invalid {
        path: String,
        line: usize,
        message: String,
    },
}

impl CassetteError {
    /// The coded error id (`model.cassette_io_failed`, `model.cassette_invalid`).
    pub fn code(&self) -> tt_domain::error_codes::Code {
        match self {
            CassetteError::Io { .. } => error_codes::MODEL_CASSETTE_IO_FAILED,
            CassetteError::Invalid { .. } => error_codes::MODEL_CASSETTE_INVALID,
        }
    }
}
