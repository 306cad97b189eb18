//! Application errors. Two kinds exist and never mix:
//! - [`ToolError`]: recoverable; becomes a tool result with `isError = true` that the model can
//!   act on, and the run goes on.
//! - [`ApplicationError`]: fail-fast; ends the active invocation (the run for root/handoff
//!   owners, only the task for a delegated agent). Cancellation is its own variant.

use tt_domain::DomainError;
use tt_domain::error_codes::{self, Code};
use tt_ports::{HostBridgeError, ModelError, ModelTimeLimit, StorageError};

/// A recoverable tool failure, returned to the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ToolError {
    pub code: Code,
    pub message: String,
    /// The finer reason within `code`, when it has one (a delegation policy denial's
    /// `agent.target_not_callable`, …): journaled as `errorReason` for hosts to decide on,
    /// while the model reads it as the message's first words, as the contract has it.
    pub reason: Option<std::borrow::Cow<'static, str>>,
}

impl ToolError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            reason: None,
        }
    }

    /// A `code` error whose finer `reason` opens the message: "`reason`: `text`".
    pub fn with_reason(code: Code, reason: Code, text: &str) -> Self {
        Self {
            code,
            message: format!("{reason}: {text}"),
            reason: Some(std::borrow::Cow::Borrowed(reason.as_str())),
        }
    }

    /// `tool.invalid_arguments`.
    pub fn invalid_arguments(message: impl Into<String>) -> Self {
        Self::new(error_codes::TOOL_INVALID_ARGUMENTS, message)
    }
}

impl From<DomainError> for ToolError {
    fn from(value: DomainError) -> Self {
        Self::new(value.code, value.message)
    }
}

/// A fail-fast error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplicationError {
    #[error("{listed_code}: {0}", listed_code = error_codes::AGENT_CANCELLED)]
    Cancelled(String),
    #[error("{code}: {message}")]
    Fatal { code: Code, message: String },
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Model(#[from] ModelError),
}

impl ApplicationError {
    pub fn fatal(code: Code, message: impl Into<String>) -> Self {
        Self::Fatal {
            code,
            message: message.into(),
        }
    }

    pub fn cancelled() -> Self {
        Self::Cancelled("the run was cancelled".to_owned())
    }

    pub fn is_cancelled(&self) -> bool {
        match self {
            ApplicationError::Cancelled(_) => true,
            ApplicationError::Model(err) => matches!(err, ModelError::Cancelled),
            ApplicationError::Fatal { .. } | ApplicationError::Storage(_) => false,
        }
    }

    /// The contract code carried by this error.
    pub fn code(&self) -> Code {
        match self {
            ApplicationError::Cancelled(_) => error_codes::AGENT_CANCELLED,
            ApplicationError::Fatal { code, .. } => *code,
            ApplicationError::Storage(err) => err.code(),
            ApplicationError::Model(err) => err.code(),
        }
    }

    /// The code a host sees in `run_failed` / `run_partial_success` (the contract's fallback
    /// codes for model failures): rate limits `agent.rate_limited`, transient failures
    /// `agent.transient` (so are a request's or idle timeout), a rejected request by HTTP status (401 `agent.unauthorized`, 403
    /// `agent.permission_denied`, 400/422 `agent.validation_error`, else the upstream
    /// `model.request_rejected`), and the upstream failure's own code otherwise. Everything else
    /// keeps [`code`](Self::code); [`model_detail`](Self::model_detail) keeps the finer one.
    pub fn host_code(&self) -> Code {
        match self {
            ApplicationError::Model(err) => match err {
                ModelError::RateLimited { .. } => error_codes::AGENT_RATE_LIMITED,
                ModelError::Transient { .. } => error_codes::AGENT_TRANSIENT,
                ModelError::TimedOut { limit, .. } if *limit != ModelTimeLimit::CallDeadline => {
                    error_codes::AGENT_TRANSIENT
                }
                ModelError::Rejected { status, .. } => match status {
                    Some(401) => error_codes::AGENT_UNAUTHORIZED,
                    Some(403) => error_codes::AGENT_PERMISSION_DENIED,
                    Some(400 | 422) => error_codes::AGENT_VALIDATION_ERROR,
                    Some(_) | None => err.code(),
                },
                ModelError::InvalidResponse { .. }
                | ModelError::Unavailable { .. }
                | ModelError::Cancelled
                | ModelError::SettingUnsupported { .. }
                | ModelError::ContextOverflow { .. }
                | ModelError::TimedOut { .. }
                | ModelError::Other(_) => err.code(),
            },
            ApplicationError::Cancelled(_)
            | ApplicationError::Fatal { .. }
            | ApplicationError::Storage(_) => self.code(),
        }
    }

    /// For a model failure whose host code differs from its own: `{modelCode, httpStatus?}`, the
    /// provider adapter's finer classification (carried in `run_failed.details`).
    pub fn model_detail(&self) -> Option<serde_json::Value> {
        let ApplicationError::Model(err) = self else {
            return None;
        };
        if self.host_code() == err.code() {
            return None;
        }
        let mut detail = serde_json::json!({"modelCode": err.code()});
        if let ModelError::Rejected {
            status: Some(status),
            ..
        } = err
        {
            detail["httpStatus"] = serde_json::json!(status);
        }
        Some(detail)
    }

    /// The message without the code prefix.
    pub fn detail(&self) -> String {
        let text = self.to_string();
        match tt_domain::error::split_error_code(&text) {
            Some((_, rest)) => rest.to_owned(),
            None => text,
        }
    }

    /// Whether the same request could succeed if sent again: rate limits, transient upstream
    /// failures and unreadable upstream bodies. Rejections (401, other 4xx), policy and
    /// argument errors, model slips, storage failures and cancellation are not. The reference
    /// marks every upstream failure retryable; this follows the classification instead.
    pub fn is_retryable(&self) -> bool {
        match self {
            ApplicationError::Model(err) => err.is_retryable(),
            ApplicationError::Cancelled(_)
            | ApplicationError::Fatal { .. }
            | ApplicationError::Storage(_) => false,
        }
    }

    /// Whether a user may sensibly press "retry" (drift and transient upstream problems). A
    /// fatal code decides by its class in the one list of codes (docs/errors.md), so a new
    /// code is classified once, there.
    pub fn user_retryable(&self) -> bool {
        match self {
            ApplicationError::Fatal { code, .. } => code.class().is_user_retryable(),
            ApplicationError::Model(err) => err.is_retryable(),
            ApplicationError::Cancelled(_) | ApplicationError::Storage(_) => false,
        }
    }
}

impl From<DomainError> for ApplicationError {
    fn from(value: DomainError) -> Self {
        Self::Fatal {
            code: value.code,
            message: value.message,
        }
    }
}

impl From<HostBridgeError> for ApplicationError {
    fn from(value: HostBridgeError) -> Self {
        match value {
            HostBridgeError::Cancelled => Self::cancelled(),
            HostBridgeError::Rejected(message) => {
                Self::fatal(error_codes::AGENT_CHAT_COMMIT_FAILED, message)
            }
            HostBridgeError::Unavailable(message) => {
                Self::fatal(error_codes::AGENT_CHAT_COMMIT_CHANNEL_CLOSED, message)
            }
        }
    }
}

pub type ApplicationResult<T> = Result<T, ApplicationError>;

/// The outcome of a failed tool call: recoverable or fail-fast.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolCallError {
    #[error(transparent)]
    Recoverable(#[from] ToolError),
    #[error(transparent)]
    Fatal(#[from] ApplicationError),
}

impl From<StorageError> for ToolCallError {
    fn from(value: StorageError) -> Self {
        Self::Fatal(ApplicationError::Storage(value))
    }
}

impl From<DomainError> for ToolCallError {
    /// Domain rule violations from model input are recoverable (for example an invalid path).
    fn from(value: DomainError) -> Self {
        Self::Recoverable(value.into())
    }
}

/// A step taken while a run or task is already ending (cancel, failure, teardown): its own
/// failure must not replace the error being reported, but it must not vanish either, so it is
/// logged as a warning with the step's name.
pub(crate) trait BestEffort {
    fn best_effort(self, step: &'static str);
}

impl<T, E: std::fmt::Display> BestEffort for Result<T, E> {
    fn best_effort(self, step: &'static str) {
        if let Err(error) = self {
            tracing::warn!(step, %error, "best-effort step failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_failures_surface_with_the_contract_host_codes() {
        let model = |err: ModelError| ApplicationError::Model(err);
        let limited = model(ModelError::RateLimited {
            message: "slow down".into(),
            retry_after_ms: Some(1000),
        });
        assert_eq!(limited.host_code(), "agent.rate_limited");
        assert_eq!(
            limited.model_detail(),
            Some(serde_json::json!({"modelCode": "model.provider_rate_limited"}))
        );
        let transient = model(ModelError::Transient {
            message: "502".into(),
        });
        assert_eq!(transient.host_code(), "agent.transient");
        let unreadable = model(ModelError::InvalidResponse {
            code: tt_domain::error_codes::MODEL_UPSTREAM_INVALID_RESPONSE,
            message: "not JSON".into(),
        });
        assert_eq!(unreadable.host_code(), "model.upstream_invalid_response");
        assert_eq!(unreadable.model_detail(), None);
        // Not a model failure: unchanged.
        let fatal = ApplicationError::fatal(tt_domain::error_codes::AGENT_TOOL_AFTER_FINISH, "x");
        assert_eq!(fatal.host_code(), "agent.tool_after_finish");
        assert_eq!(fatal.model_detail(), None);
        assert_eq!(model(ModelError::Cancelled).host_code(), "agent.cancelled");
    }
}
