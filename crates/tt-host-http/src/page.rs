//! `GET /`: the run inspector, one self-contained HTML page (its script and styles inline, no
//! CDN, no build step) embedded in the binary.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

const PAGE: &str = include_str!("../page/inspector.html");

/// The page may run its own inline script and talk to this server only.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; \
     style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; \
     base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

pub(crate) async fn page() -> Response {
    let mut response = axum::response::Html(PAGE).into_response();
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    response
}
