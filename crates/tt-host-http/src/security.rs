//! The checks every request passes before it reaches a handler: the `Host` header names this
//! server (no DNS rebinding), an `Origin` header, when present, is this server's own (no
//! cross-site requests), and the per-server secret token is given (header or `?token=`).
//! Every response also gets headers that keep the token out of referrers and caches.

use std::net::SocketAddr;
use std::sync::Arc;
use tt_runtime::error_codes;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// The header a client may carry the token in (besides `Authorization: Bearer`).
pub(crate) const TOKEN_HEADER: &str = "x-tt-token";

/// What a request must match: the hosts this server answers to and its token.
#[derive(Debug, Clone)]
pub(crate) struct Guard {
    inner: Arc<GuardInner>,
}

#[derive(Debug)]
struct GuardInner {
    hosts: Vec<String>,
    origins: Vec<String>,
    token: String,
}

impl Guard {
    /// The hosts are the bound `ip:port` and, on loopback, `localhost:port`.
    pub(crate) fn new(addr: SocketAddr, token: String) -> Self {
        let mut hosts = vec![addr.to_string()];
        if addr.ip().is_loopback() {
            hosts.push(format!("localhost:{}", addr.port()));
        }
        let origins = hosts.iter().map(|host| format!("http://{host}")).collect();
        Self {
            inner: Arc::new(GuardInner {
                hosts,
                origins,
                token,
            }),
        }
    }

    fn check(&self, headers: &HeaderMap, query: Option<&str>) -> Result<(), ApiError> {
        let host = headers
            .get(header::HOST)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default();
        if !self.inner.hosts.iter().any(|allowed| allowed == host) {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                error_codes::HTTP_HOST_REFUSED,
                format!(
                    "this server answers only to {}",
                    self.inner.hosts.join(" or ")
                ),
            ));
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or_default();
            if !self.inner.origins.iter().any(|allowed| allowed == origin) {
                return Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    error_codes::HTTP_ORIGIN_REFUSED,
                    "cross-origin requests are refused",
                ));
            }
        }
        let given = token_from_headers(headers).or_else(|| query.and_then(token_from_query));
        match given {
            Some(given) if constant_time_eq(given.as_bytes(), self.inner.token.as_bytes()) => {
                Ok(())
            }
            Some(_) => Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                error_codes::HTTP_TOKEN_INVALID,
                "the token does not match this server's",
            )),
            None => Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                error_codes::HTTP_TOKEN_MISSING,
                "every request needs this server's token (the `token` query parameter of the printed URL, or the x-tt-token header)",
            )),
        }
    }
}

fn token_from_headers(headers: &HeaderMap) -> Option<String> {
    if let Some(value) = headers.get(TOKEN_HEADER).and_then(|v| v.to_str().ok()) {
        return Some(value.to_owned());
    }
    headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::to_owned)
}

fn token_from_query(query: &str) -> Option<String> {
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))
        .map(str::to_owned)
}

/// Compares without stopping at the first difference, so timing does not reveal a prefix.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A fresh 256-bit token from the OS's random source, hex encoded.
pub(crate) fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|err| std::io::Error::other(err.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Refuses a request that fails [`Guard::check`]; adds the protective headers to every answer.
pub(crate) async fn guard(State(guard): State<Guard>, request: Request, next: Next) -> Response {
    let mut response = match guard.check(request.headers(), request.uri().query()) {
        Ok(()) => next.run(request).await,
        Err(error) => error.into_response(),
    };
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CACHE_CONTROL, "no-store"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_long_random_and_distinct() {
        let a = random_token().unwrap();
        let b = random_token().unwrap();
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }

    #[test]
    fn token_comparison_needs_equal_bytes() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }

    #[test]
    fn token_comes_from_query_among_other_parameters() {
        assert_eq!(
            token_from_query("after=3&token=xyz"),
            Some("xyz".to_owned())
        );
        assert_eq!(token_from_query("after=3"), None);
    }
}
