//! Small side requests to a model server that are not model calls: reading what the server says
//! about its models (its context window) with a `GET` or a small `POST`, under a short timeout
//! and the caller's cancel token. A probe is best effort: an answer that is not a 2xx JSON body
//! is "the server does not say" (`Ok(None)`), never an error the run sees.

use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tt_ports::{ModelError, ModelTimeLimit};

use crate::exchange::HttpEndpoint;
use crate::http::{guarded_by, read_body, transport_error};

/// How long one probe request may take, from sending it to the end of its body (or the
/// connection's header timeout, when that is shorter).
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Most bytes of a probe's answer that are read (a model list with templates can be large).
const MAX_PROBE_BYTES: u64 = 4 * 1024 * 1024;

/// The root of a server whose API sits under `base_url`: `http://host:8080/v1` →
/// `http://host:8080` (llama.cpp's `/props` and Ollama's `/api/...` live at the root).
pub fn server_root(base_url: &str) -> String {
    let base = base_url.trim_end_matches('/');
    base.strip_suffix("/v1").unwrap_or(base).to_owned()
}

impl HttpEndpoint {
    /// `GET url` with the endpoint's headers: the JSON body of a 2xx answer, `Ok(None)` for
    /// any other answer or a body that is not JSON, `Err` when the server could not be reached
    /// or did not answer within [`PROBE_TIMEOUT`].
    pub async fn probe_get(
        &self,
        url: &str,
        cancel: &CancellationToken,
    ) -> Result<Option<Value>, ModelError> {
        self.probe(self.client().get(url), cancel).await
    }

    /// `POST url` with `body` as JSON, answered as [`probe_get`](Self::probe_get) is.
    pub async fn probe_post(
        &self,
        url: &str,
        body: &Value,
        cancel: &CancellationToken,
    ) -> Result<Option<Value>, ModelError> {
        self.probe(self.client().post(url).body(body.to_string()), cancel)
            .await
    }

    async fn probe(
        &self,
        request: reqwest::RequestBuilder,
        cancel: &CancellationToken,
    ) -> Result<Option<Value>, ModelError> {
        let timeout = PROBE_TIMEOUT.min(self.limits().header_timeout);
        let limits = crate::http::HttpLimits {
            max_response_bytes: MAX_PROBE_BYTES,
            idle_timeout: timeout,
            ..self.limits()
        };
        let exchange = async {
            let mut response = request
                .headers(self.headers().clone())
                .send()
                .await
                .map_err(|err| transport_error(&err))?;
            if !response.status().is_success() {
                return Ok(None);
            }
            let body = read_body(&mut response, cancel, &limits).await?;
            Ok(serde_json::from_slice(&body).ok())
        };
        guarded_by(
            exchange,
            cancel,
            ModelTimeLimit::Request,
            timeout,
            "the server did not answer the probe within",
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_drops_the_api_version() {
        assert_eq!(server_root("http://h:8080/v1"), "http://h:8080");
        assert_eq!(server_root("http://h:8080/v1/"), "http://h:8080");
        assert_eq!(server_root("http://h:8080"), "http://h:8080");
        assert_eq!(server_root("http://h/api/v2"), "http://h/api/v2");
    }
}
