//! Error types of the ports. Adapters map their own failures into these; each keeps one
//! explicit catch-all variant. Classification helpers are exhaustive matches.

use tt_domain::DomainError;
use tt_domain::error_codes::{self, ErrorClass};
use tt_domain::workspace::GuardViolation;

/// Who holds a run's lock, as `run_locked` says it.
fn lock_owner(owner_pid: Option<u32>) -> String {
    match owner_pid {
        Some(pid) if pid == std::process::id() => {
            format!("another runtime of this process (pid {pid}) on the same data dir")
        }
        Some(pid) => format!("another process (pid {pid})"),
        None => "another process".to_owned(),
    }
}

/// Failures of the storage ports (runs, invocations, journal, workspace, profiles).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StorageError {
    #[error("{what} not found")]
    NotFound { what: String },
    #[error("{what} already exists")]
    AlreadyExists { what: String },
    /// A `MustNotExist` guard found a file.
    #[error("{path} already exists")]
    GuardFileExists {
        path: String,
        current_sha256: String,
    },
    /// A `MustMatchSha256` guard found no file.
    #[error("{path} does not exist")]
    GuardFileMissing { path: String },
    /// A `MustMatchSha256` guard found different content.
    #[error("{path} changed: expected sha256 {expected}, found {actual}")]
    GuardShaMismatch {
        path: String,
        expected: String,
        actual: String,
    },
    #[error("{path} is a directory")]
    IsDirectory { path: String },
    #[error("{path} is not a directory")]
    NotADirectory { path: String },
    /// A path resolved through a symlink to somewhere outside the run directory.
    #[error("{listed_code}: {path} resolves outside the run workspace", listed_code = error_codes::AGENT_WORKSPACE_SYMLINK_ESCAPE)]
    SymlinkEscape { path: String },
    /// Another live writer holds this run's lock: another process, or another runtime of this
    /// one.
    #[error("{}: {what} is being written by {}", error_codes::AGENT_RUN_LOCKED, lock_owner(*owner_pid))]
    Locked {
        what: String,
        owner_pid: Option<u32>,
    },
    /// The store was opened for reading only.
    #[error("{listed_code}: cannot write {what}: the store is open for reading only", listed_code = error_codes::AGENT_STORAGE_READ_ONLY)]
    ReadOnly { what: String },
    #[error("{0}")]
    Domain(DomainError),
    /// Stored data could not be parsed.
    #[error("corrupt {what}: {message}")]
    Corrupt { what: String, message: String },
    #[error("i/o error on {what}: {message}")]
    Io { what: String, message: String },
    #[error("{0}")]
    Other(String),
}

impl StorageError {
    pub fn not_found(what: impl Into<String>) -> Self {
        Self::NotFound { what: what.into() }
    }

    pub fn io(what: impl Into<String>, err: impl std::fmt::Display) -> Self {
        Self::Io {
            what: what.into(),
            message: err.to_string(),
        }
    }

    pub fn corrupt(what: impl Into<String>, err: impl std::fmt::Display) -> Self {
        Self::Corrupt {
            what: what.into(),
            message: err.to_string(),
        }
    }

    /// The contract code for this failure.
    pub fn code(&self) -> error_codes::Code {
        match self {
            StorageError::NotFound { .. } => error_codes::AGENT_NOT_FOUND,
            StorageError::AlreadyExists { .. } => error_codes::AGENT_ALREADY_EXISTS,
            StorageError::GuardFileExists { .. } | StorageError::GuardShaMismatch { .. } => {
                error_codes::WORKSPACE_WRITE_STALE_FILE
            }
            StorageError::GuardFileMissing { .. } => error_codes::WORKSPACE_FILE_NOT_FOUND,
            StorageError::IsDirectory { .. } => error_codes::WORKSPACE_PATH_IS_DIRECTORY,
            StorageError::NotADirectory { .. } => error_codes::WORKSPACE_PATH_NOT_FOUND,
            StorageError::SymlinkEscape { .. } => error_codes::AGENT_WORKSPACE_SYMLINK_ESCAPE,
            StorageError::Locked { .. } => error_codes::AGENT_RUN_LOCKED,
            StorageError::ReadOnly { .. } => error_codes::AGENT_STORAGE_READ_ONLY,
            StorageError::Domain(err) => err.code,
            StorageError::Corrupt { .. } => error_codes::AGENT_STORAGE_CORRUPT,
            StorageError::Io { .. } => error_codes::AGENT_STORAGE_IO,
            StorageError::Other(_) => error_codes::AGENT_INTERNAL_ERROR,
        }
    }
}

impl StorageError {
    /// The error of a write to `path` that its guard refused.
    pub fn guard(path: impl std::fmt::Display, violation: GuardViolation) -> Self {
        let path = path.to_string();
        match violation {
            GuardViolation::FileExists { current_sha256 } => Self::GuardFileExists {
                path,
                current_sha256,
            },
            GuardViolation::FileMissing => Self::GuardFileMissing { path },
            GuardViolation::ShaMismatch { expected, actual } => Self::GuardShaMismatch {
                path,
                expected,
                actual,
            },
        }
    }
}

impl From<DomainError> for StorageError {
    fn from(value: DomainError) -> Self {
        Self::Domain(value)
    }
}

pub type StorageResult<T> = Result<T, StorageError>;

/// Failures of a model provider, classified for retry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// HTTP 429 or equivalent; `retry_after_ms` when the provider said how long to wait.
    #[error("{listed_code}: {message}", listed_code = error_codes::MODEL_PROVIDER_RATE_LIMITED)]
    RateLimited {
        message: String,
        retry_after_ms: Option<u64>,
    },
    /// 5xx, overload, connection reset, timeout, unreadable body.
    #[error("{listed_code}: {message}", listed_code = error_codes::MODEL_TRANSIENT)]
    Transient { message: String },
    /// The provider refused the request (4xx other than 429).
    #[error("{listed_code}: {message}", listed_code = error_codes::MODEL_REQUEST_REJECTED)]
    Rejected {
        status: Option<u16>,
        message: String,
    },
    /// The response could not be decoded into the canonical IR. `code` is e.g.
    /// `model.invalid_tool_call` or `model.upstream_invalid_response`.
    #[error("{code}: {message}")]
    InvalidResponse {
        code: error_codes::Code,
        message: String,
    },
    /// The provider has nothing to answer with (for example a scripted model ran out of turns).
    #[error("{code}: {message}")]
    Unavailable {
        code: error_codes::Code,
        message: String,
    },
    #[error("{listed_code}: the model call was cancelled", listed_code = error_codes::AGENT_CANCELLED)]
    Cancelled,
    /// A generation setting this provider cannot honour (refused before anything is sent;
    /// docs/providers.md lists what each adapter takes).
    #[error("{listed_code}: {message}", listed_code = error_codes::MODEL_SETTING_UNSUPPORTED)]
    SettingUnsupported { message: String },
    /// The request does not fit the model's context window: refused by the server (its own
    /// figures when it gave them), or found too large before it was sent.
    #[error("{listed_code}: {message}", listed_code = error_codes::MODEL_CONTEXT_OVERFLOW)]
    ContextOverflow {
        message: String,
        /// Prompt tokens the request needs, as the server counted them (or as estimated).
        prompt_tokens: Option<u64>,
        /// Tokens the model's window holds.
        window_tokens: Option<u64>,
    },
    /// A time limit fired: one attempt's request, header or idle timeout (retried), or the
    /// whole call's deadline across attempts (the profile's `run.modelRetry.deadlineSeconds`,
    /// else the connection's, not retried).
    #[error("{}: {message}", .limit.code())]
    TimedOut {
        limit: ModelTimeLimit,
        /// The limit's value.
        limit_ms: u64,
        message: String,
    },
    #[error("{listed_code}: {0}", listed_code = error_codes::MODEL_PROVIDER_ERROR)]
    Other(String),
}

/// Which time limit ended a model call; its name is journaled with the failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModelTimeLimit {
    /// The connection's request timeout: one whole exchange, streamed or not.
    Request,
    /// The connection's idle timeout: silence between two pieces of a reply.
    Idle,
    /// The connection's header timeout: the wait for the response's status and headers.
    Header,
    /// The deadline of one model call, its retries and waits included (the profile's, else
    /// the connection's).
    CallDeadline,
}

impl ModelTimeLimit {
    /// The name journaled in `model_call_attempt_failed.limit`.
    pub fn as_str(self) -> &'static str {
        match self {
            ModelTimeLimit::Request => "requestTimeout",
            ModelTimeLimit::Idle => "idleTimeout",
            ModelTimeLimit::Header => "headerTimeout",
            ModelTimeLimit::CallDeadline => "callDeadline",
        }
    }

    /// The limit [`as_str`](Self::as_str) names.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Request, Self::Idle, Self::Header, Self::CallDeadline]
            .into_iter()
            .find(|limit| limit.as_str() == name)
    }

    /// The error code of a call this limit ended.
    pub fn code(self) -> error_codes::Code {
        match self {
            ModelTimeLimit::Request | ModelTimeLimit::Idle | ModelTimeLimit::Header => {
                error_codes::MODEL_TIMEOUT
            }
            ModelTimeLimit::CallDeadline => error_codes::MODEL_CALL_DEADLINE_EXCEEDED,
        }
    }
}

impl ModelError {
    /// Rate limits and transient failures are retried per `run.modelRetry`; an unreadable
    /// upstream body counts as transient.
    pub fn is_retryable(&self) -> bool {
        match self {
            ModelError::RateLimited { .. } | ModelError::Transient { .. } => true,
            ModelError::TimedOut { limit, .. } => *limit != ModelTimeLimit::CallDeadline,
            ModelError::InvalidResponse { code, .. } => {
                code.class() == ErrorClass::ProviderTransient
            }
            ModelError::Rejected { .. }
            | ModelError::Unavailable { .. }
            | ModelError::Cancelled
            | ModelError::SettingUnsupported { .. }
            | ModelError::ContextOverflow { .. }
            | ModelError::Other(_) => false,
        }
    }

    pub fn code(&self) -> error_codes::Code {
        match self {
            ModelError::RateLimited { .. } => error_codes::MODEL_PROVIDER_RATE_LIMITED,
            ModelError::Transient { .. } => error_codes::MODEL_TRANSIENT,
            ModelError::Rejected { .. } => error_codes::MODEL_REQUEST_REJECTED,
            ModelError::InvalidResponse { code, .. } | ModelError::Unavailable { code, .. } => {
                *code
            }
            ModelError::Cancelled => error_codes::AGENT_CANCELLED,
            ModelError::SettingUnsupported { .. } => error_codes::MODEL_SETTING_UNSUPPORTED,
            ModelError::ContextOverflow { .. } => error_codes::MODEL_CONTEXT_OVERFLOW,
            ModelError::TimedOut { limit, .. } => limit.code(),
            ModelError::Other(_) => error_codes::MODEL_PROVIDER_ERROR,
        }
    }
}

/// Failures of a host bridge (commit, prompt assembly).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostBridgeError {
    /// The host answered with an error.
    #[error("{0}")]
    Rejected(String),
    #[error("{listed_code}: the host request was cancelled", listed_code = error_codes::AGENT_CANCELLED)]
    Cancelled,
    /// No host is attached or its channel closed.
    #[error("{0}")]
    Unavailable(String),
}
