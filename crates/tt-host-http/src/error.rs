//! The error every endpoint answers with: the host API's coded error as JSON `{code, message}`,
//! with an HTTP status chosen from the code.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use tt_runtime::HostError;
use tt_runtime::error_codes::Code;

/// A coded error answered as `{"code", "message"}` with a status that fits the code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ApiError {
    pub status: StatusCode,
    pub code: String,
    pub message: String,
}

impl ApiError {
    /// An error of this adapter's own (`http.*` codes).
    pub fn new(status: StatusCode, code: Code, message: impl Into<String>) -> Self {
        Self {
            status,
            code: code.to_string(),
            message: message.into(),
        }
    }

    pub(crate) fn bad_request(code: Code, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }
}

impl From<HostError> for ApiError {
    fn from(error: HostError) -> Self {
        Self {
            status: status_for(&error.code),
            code: error.code,
            message: error.message,
        }
    }
}

/// The HTTP status of a host API error code: missing things are 404, answers that come too
/// late or for another run are 409, a run held by another process is 409, failures of the
/// store and broken invariants (the `Storage` and `Internal` classes of docs/errors.md) are
/// 500, and everything else is a request the runtime refused (400).
pub(crate) fn status_for(code: &str) -> StatusCode {
    let name = code.rsplit('.').next().unwrap_or(code);
    if name.ends_with("not_found") || name == "command_unknown" {
        StatusCode::NOT_FOUND
    } else if name.ends_with("not_pending")
        || name.ends_with("mismatch")
        || name.ends_with("collision")
        || name.ends_with("channel_closed")
        || name == "run_locked"
        || name == "run_not_resumable"
        || name == "run_not_abandonable"
        || name.starts_with("already")
    {
        StatusCode::CONFLICT
    } else if matches!(
        tt_runtime::error_codes::class_of(code),
        Some(tt_runtime::ErrorClass::Storage | tt_runtime::ErrorClass::Internal)
    ) || name.ends_with("unreadable")
        || name == "io"
    {
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        StatusCode::BAD_REQUEST
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "code": self.code, "message": self.message });
        (self.status, axum::Json(body)).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_map_to_statuses() {
        assert_eq!(status_for("agent.not_found"), StatusCode::NOT_FOUND);
        assert_eq!(
            status_for("workspace.file_not_found"),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            status_for("agent.chat_commit_not_pending"),
            StatusCode::CONFLICT
        );
        assert_eq!(status_for("agent.run_locked"), StatusCode::CONFLICT);
        assert_eq!(status_for("agent.run_not_resumable"), StatusCode::CONFLICT);
        assert_eq!(
            status_for("agent.run_not_abandonable"),
            StatusCode::CONFLICT
        );
        assert_eq!(
            status_for("agent.storage_io"),
            StatusCode::INTERNAL_SERVER_ERROR
        );
        assert_eq!(
            status_for("workspace.path_not_visible"),
            StatusCode::BAD_REQUEST
        );
    }
}
