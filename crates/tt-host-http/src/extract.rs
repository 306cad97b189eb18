//! What handlers take from a request: the shared state, checked ids, path and query
//! parameters and JSON bodies, each refusing bad input with a coded JSON error. Shared by the
//! routes and the event stream.

use std::collections::HashMap;
use std::sync::Arc;
use tt_runtime::error_codes;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use serde::de::DeserializeOwned;
use tt_runtime::AgentRuntime;

use crate::error::ApiError;
use crate::info::ServerInfo;

/// What every handler can reach.
#[derive(Clone)]
pub(crate) struct AppState {
    pub runtime: Arc<AgentRuntime>,
    pub info: Arc<ServerInfo>,
    /// Becomes `true` when the server stops, so that open event streams end.
    pub stopping: tokio::sync::watch::Receiver<bool>,
}

type ApiResult<T> = Result<T, ApiError>;

/// Checks an id taken from a URL: 1 to 128 ASCII letters, digits, `_` or `-`. Ids name files
/// in the store, so anything path-like (`/`, `.`, `%`) is refused before the runtime sees it.
pub(crate) fn valid_id<'a>(what: &str, id: &'a str) -> ApiResult<&'a str> {
    let plain = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if (1..=128).contains(&id.len()) && id.chars().all(plain) {
        Ok(id)
    } else {
        Err(ApiError::bad_request(
            error_codes::HTTP_INVALID_ID,
            format!("`{id}` is not a valid {what} id (1-128 letters, digits, `_` or `-`)"),
        ))
    }
}

/// URL path parameters with a JSON error when they do not decode.
pub(crate) struct PathParams(pub HashMap<String, String>);

impl PathParams {
    pub(crate) fn id(&self, key: &str, what: &str) -> ApiResult<String> {
        let value = self.0.get(key).map(String::as_str).unwrap_or_default();
        valid_id(what, value).map(str::to_owned)
    }

    pub(crate) fn run_id(&self) -> ApiResult<String> {
        self.id("run_id", "run")
    }
}

impl<S: Send + Sync> FromRequestParts<S> for PathParams {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Path::<HashMap<String, String>>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Path(map)| Self(map))
            .map_err(|rejection| {
                ApiError::bad_request(error_codes::HTTP_INVALID_PATH, rejection.body_text())
            })
    }
}

/// Query parameters with a JSON error (`http.invalid_query`) when they do not parse.
pub(crate) struct QueryParams<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for QueryParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(value)| Self(value))
            .map_err(|rejection| {
                ApiError::bad_request(error_codes::HTTP_INVALID_QUERY, rejection.body_text())
            })
    }
}

/// A JSON body: `Content-Type: application/json` is required (so a plain HTML form from
/// another site can never be one), the size is limited, and parse errors are coded.
pub(crate) struct JsonBody<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let is_json = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.split(';').next())
            .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("application/json"));
        if !is_json {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                error_codes::HTTP_UNSUPPORTED_MEDIA_TYPE,
                "send the body as application/json",
            ));
        }
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|rejection| {
                if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::new(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        error_codes::HTTP_BODY_TOO_LARGE,
                        "the request body is larger than this server accepts",
                    )
                } else {
                    ApiError::bad_request(error_codes::HTTP_BODY_UNREADABLE, rejection.body_text())
                }
            })?;
        serde_json::from_slice(&bytes)
            .map(Self)
            .map_err(|err| ApiError::bad_request(error_codes::HTTP_INVALID_JSON, err.to_string()))
    }
}
