//! The cassette file: a header line, then one [`Interaction`] per line.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tt_domain::error_codes;
use tt_domain::model::{AgentModelResponse, ModelDelta};
use tt_ports::{ModelError, ModelProvider, ModelTimeLimit};

/// The format version this crate writes and reads.
pub const CASSETTE_VERSION: u32 = 1;

/// The first line of a cassette. A recording writes every field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CassetteHeader {
    /// Always `tt-agent-runtime`.
    pub cassette: String,
    pub version: u32,
    /// The name of the provider recorded (`openai`, `anthropic`, …); a replay goes by it, so
    /// its events read as the recorded run's did.
    pub provider: String,
    /// How the recorded provider spoke, which a replay reports too; absent in cassettes
    /// recorded before it was kept (a replay then reports what those recordings did).
    pub wire: Option<RecordedWire>,
}

/// The recorded provider's `providerFormat` and `transport`, as its events carried them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecordedWire {
    /// Its wire format (`openai_chat_completions`, `anthropic_messages`, …).
    pub provider_format: String,
    /// How its requests travelled (`http`, `in_process`).
    pub transport: String,
}

impl CassetteHeader {
    /// The header of a cassette recorded through `provider`.
    pub fn current(provider: &dyn ModelProvider) -> Self {
        Self {
            cassette: "tt-agent-runtime".to_owned(),
            version: CASSETTE_VERSION,
            provider: provider.name().to_owned(),
            wire: Some(RecordedWire {
                provider_format: provider.provider_format().to_owned(),
                transport: provider.transport().to_owned(),
            }),
        }
    }
}

/// One model call: what was asked and what came back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Interaction {
    /// The profile of the agent that asked.
    pub profile: String,
    /// The agent's round (1-based).
    pub round: u32,
    /// SHA-256 (hex) of the normalised request.
    pub request_sha256: String,
    /// The runtime ids of the recorded request, in order of first appearance: placeholder
    /// `<task#2>` is the second distinct `task_…` id here.
    pub ids: Vec<String>,
    /// The normalised request (session left out, ids replaced by placeholders).
    pub request: Value,
    /// Streamed deltas, in order (empty for a call that did not stream).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deltas: Vec<ModelDelta>,
    pub outcome: Outcome,
}

/// A response or an error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Outcome {
    Response(AgentModelResponse),
    Error(RecordedError),
}

/// A model error as recorded: enough to raise the same kind of error on replay (so retries and
/// failures replay too).
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedError {
    /// `rate_limited`, `transient`, `timed_out`, `rejected`, `invalid_response`,
    /// `unavailable`, `cancelled`, `setting_unsupported`, `context_overflow` or `other`.
    pub kind: String,
    pub code: String,
    pub message: String,
    pub status: Option<u16>,
    pub retry_after_ms: Option<u64>,
    /// A context overflow's prompt size, when known.
    pub prompt_tokens: Option<u64>,
    /// A context overflow's window, when known.
    pub window_tokens: Option<u64>,
    /// A timeout's limit (`requestTimeout`, `idleTimeout`, `callDeadline`).
    pub limit: Option<String>,
    /// That limit's value.
    pub limit_ms: Option<u64>,
}

impl RecordedError {
    pub fn from_error(error: &ModelError) -> Self {
        let (kind, status, retry_after_ms, message) = match error {
            ModelError::RateLimited {
                message,
                retry_after_ms,
            } => ("rate_limited", None, *retry_after_ms, message.clone()),
            ModelError::Transient { message } => ("transient", None, None, message.clone()),
            ModelError::Rejected { status, message } => {
                ("rejected", *status, None, message.clone())
            }
            ModelError::InvalidResponse { message, .. } => {
                ("invalid_response", None, None, message.clone())
            }
            ModelError::Unavailable { message, .. } => ("unavailable", None, None, message.clone()),
            ModelError::Cancelled => ("cancelled", None, None, String::new()),
            ModelError::SettingUnsupported { message } => {
                ("setting_unsupported", None, None, message.clone())
            }
            ModelError::ContextOverflow {
                message,
                prompt_tokens,
                window_tokens,
            } => {
                return Self {
                    prompt_tokens: *prompt_tokens,
                    window_tokens: *window_tokens,
                    ..Self::of_kind("context_overflow", error, message.clone())
                };
            }
            ModelError::TimedOut {
                limit,
                limit_ms,
                message,
            } => {
                return Self {
                    limit: Some(limit.as_str().to_owned()),
                    limit_ms: Some(*limit_ms),
                    ..Self::of_kind("timed_out", error, message.clone())
                };
            }
            ModelError::Other(message) => ("other", None, None, message.clone()),
        };
        Self {
            status,
            retry_after_ms,
            ..Self::of_kind(kind, error, message)
        }
    }

    fn of_kind(kind: &str, error: &ModelError, message: String) -> Self {
        Self {
            kind: kind.to_owned(),
            code: error.code().to_string(),
            message,
            ..Self::default()
        }
    }

    pub fn to_error(&self) -> ModelError {
        // A replayed `invalid_response` or `unavailable` error carries its recorded code when
        // that is a listed code (the error keeps a typed code); any other code replays as
        // `model.provider_error` with the recorded code in its message.
        let known = error_codes::Code::parse(&self.code);
        let message = self.message.clone();
        match (self.kind.as_str(), known) {
            ("rate_limited", _) => ModelError::RateLimited {
                message,
                retry_after_ms: self.retry_after_ms,
            },
            ("transient", _) => ModelError::Transient { message },
            ("timed_out", _) => match self.limit.as_deref().and_then(ModelTimeLimit::parse) {
                Some(limit) => ModelError::TimedOut {
                    limit,
                    limit_ms: self.limit_ms.unwrap_or(0),
                    message,
                },
                None => ModelError::Transient { message },
            },
            ("rejected", _) => ModelError::Rejected {
                status: self.status,
                message,
            },
            ("invalid_response", Some(code)) => ModelError::InvalidResponse { code, message },
            ("unavailable", Some(code)) => ModelError::Unavailable { code, message },
            ("cancelled", _) => ModelError::Cancelled,
            ("setting_unsupported", _) => ModelError::SettingUnsupported { message },
            ("context_overflow", _) => ModelError::ContextOverflow {
                message,
                prompt_tokens: self.prompt_tokens,
                window_tokens: self.window_tokens,
            },
            ("other", _) if self.code == error_codes::MODEL_PROVIDER_ERROR => {
                ModelError::Other(message)
            }
            _ => ModelError::Other(format!("{}: {message}", self.code)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_kind_round_trips() {
        let errors = [
            ModelError::RateLimited {
                message: "slow down".into(),
                retry_after_ms: Some(1500),
            },
            ModelError::Transient {
                message: "502".into(),
            },
            ModelError::TimedOut {
                limit: ModelTimeLimit::Idle,
                limit_ms: 120_000,
                message: "the provider sent nothing for 120000 ms (idle timeout)".into(),
            },
            ModelError::Rejected {
                status: Some(401),
                message: "no key".into(),
            },
            ModelError::InvalidResponse {
                code: tt_domain::error_codes::MODEL_INVALID_TOOL_CALL,
                message: "bad json".into(),
            },
            ModelError::Unavailable {
                code: tt_domain::error_codes::MODEL_SCRIPT_EXHAUSTED,
                message: "done".into(),
            },
            ModelError::Cancelled,
            ModelError::SettingUnsupported {
                message: "no topK here".into(),
            },
            ModelError::ContextOverflow {
                message: "9000 tokens > 8192".into(),
                prompt_tokens: Some(9000),
                window_tokens: Some(8192),
            },
            ModelError::Other("odd".into()),
        ];
        for error in errors {
            let recorded = RecordedError::from_error(&error);
            let text = serde_json::to_string(&recorded).unwrap();
            let back: RecordedError = serde_json::from_str(&text).unwrap();
            assert_eq!(back.to_error(), error, "{text}");
        }
    }

    #[test]
    fn an_unknown_code_replays_as_a_provider_error_naming_it() {
        let recorded = RecordedError {
            kind: "invalid_response".into(),
            code: "model.something_new".into(),
            message: "what".into(),
            ..RecordedError::default()
        };
        assert_eq!(
            recorded.to_error(),
            ModelError::Other("model.something_new: what".into())
        );
    }
}
