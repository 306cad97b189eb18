//! A command's request, decoded from the JSON the webview sent: a malformed request is a coded
//! `HostError` (never Tauri's uncoded argument error), and a command without input accepts no
//! request at all, `null` or `{}`.

use serde::de::DeserializeOwned;
use tt_runtime::HostError;

/// The code of a request that does not fit its command.
pub(crate) const REQUEST_INVALID: &str = "agent.host_request_invalid";

pub(crate) fn decode<T: DeserializeOwned>(
    command: &str,
    request: Option<serde_json::Value>,
) -> Result<T, HostError> {
    let value = request.unwrap_or(serde_json::Value::Null);
    let empty = value.is_null();
    match serde_json::from_value::<T>(value) {
        Ok(request) => Ok(request),
        // No input given: the request type's empty form (`{}`), when it has one.
        Err(_) if empty => serde_json::from_value(serde_json::json!({})).map_err(|err| {
            HostError::new(
                REQUEST_INVALID,
                format!("{command} needs a request: {err}"),
            )
        }),
        Err(err) => Err(HostError::new(
            REQUEST_INVALID,
            format!("{command}: the request does not fit: {err}"),
        )),
    }
}
