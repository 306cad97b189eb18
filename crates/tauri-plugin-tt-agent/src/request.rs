//! A command's request, decoded from the JSON the webview sent, as the runtime's own
//! dispatcher (`AgentRuntime::execute_command`) decodes it: a JSON object (no request, or
//! `null`, is `{}`), else `host.request_invalid`, a coded `HostError` rather than Tauri's
//! uncoded argument error.

use serde::de::DeserializeOwned;
use tt_runtime::{HostError, error_codes};

pub(crate) fn decode<T: DeserializeOwned>(
    command: &str,
    request: Option<serde_json::Value>,
) -> Result<T, HostError> {
    let request = match request {
        None | Some(serde_json::Value::Null) => serde_json::Value::Object(serde_json::Map::new()),
        Some(object @ serde_json::Value::Object(_)) => object,
        Some(_) => {
            return Err(HostError::new(
                error_codes::HOST_REQUEST_INVALID,
                format!("the request of `{command}` must be a JSON object"),
            ));
        }
    };
    serde_json::from_value(request).map_err(|err| {
        HostError::new(
            error_codes::HOST_REQUEST_INVALID,
            format!("the request of `{command}` does not fit it: {err}"),
        )
    })
}
