//! The HTTP side: sending a JSON POST under a cancel token and a timeout, reading bodies in
//! bounded pieces (an idle timeout between pieces, a cap on the bytes of one reply), and
//! classifying failures into `ModelError` (status codes, `Retry-After`, transport errors, error
//! bodies).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tt_domain::model::AgentModelRequest;
use tt_domain::time::Timestamp;
use tt_ports::{Clock, ModelError, ModelTimeLimit};

/// Longest slice of an unparseable error body quoted in a message.
const BODY_EXCERPT_CHARS: usize = 300;
/// The most of an error body that is read: enough for any provider's error message.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// Default [`HttpLimits::connect_timeout`].
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default [`HttpLimits::idle_timeout`].
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// Default [`HttpLimits::header_timeout`].
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(120);
/// Default [`HttpLimits::max_response_bytes`]: 8 MiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 8 * 1024 * 1024;
/// The code of a reply over [`HttpLimits::max_response_bytes`].
pub const RESPONSE_TOO_LARGE: tt_domain::error_codes::Code =
    tt_domain::error_codes::MODEL_RESPONSE_TOO_LARGE;

/// Bounds on one exchange with a model server, so a broken or hostile server can neither hang
/// a call nor fill memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    /// Longest wait for the TCP (and TLS) connection.
    pub connect_timeout: Duration,
    /// Longest silence between two pieces of a body. A transient failure (retried per the
    /// profile).
    pub idle_timeout: Duration,
    /// Longest wait, from sending the request (connecting included), for the response's status
    /// and headers, streamed or not. A non-streaming server sends its headers only with the
    /// whole answer, so this bounds its generation too. A transient failure (retried per the
    /// profile), never longer than the request timeout.
    pub header_timeout: Duration,
    /// The most bytes one reply body may have; more is `model.response_too_large` (not
    /// retried), noticed as the bytes arrive, never after holding them all.
    pub max_response_bytes: u64,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        }
    }
}

/// Counts the bytes of one reply against [`HttpLimits::max_response_bytes`].
#[derive(Debug, Clone, Copy)]
pub struct BodyBudget {
    received: u64,
    max: u64,
}

impl BodyBudget {
    pub fn new(max: u64) -> Self {
        Self { received: 0, max }
    }

    /// Counts `bytes` more; `model.response_too_large` once the total is over the limit.
    pub fn take(&mut self, bytes: usize) -> Result<(), ModelError> {
        self.received = self
            .received
            .saturating_add(u64::try_from(bytes).unwrap_or(u64::MAX));
        if self.received > self.max {
            return Err(ModelError::InvalidResponse {
                code: RESPONSE_TOO_LARGE,
                message: format!(
                    "the reply is larger than {} bytes; it was cut off there",
                    self.max
                ),
            });
        }
        Ok(())
    }
}

/// The next piece of a body, waiting at most `idle` for it (a transient failure after that).
pub async fn next_chunk(
    response: &mut reqwest::Response,
    cancel: &CancellationToken,
    idle: Duration,
) -> Result<Option<Vec<u8>>, ModelError> {
    let next = async {
        match response.chunk().await {
            Ok(chunk) => Ok(chunk.map(|bytes| bytes.to_vec())),
            Err(err) => Err(transport_error(&err)),
        }
    };
    guarded_idle(next, cancel, idle).await
}

/// Like [`guarded`] with an idle timeout, whose message says the server went silent.
pub async fn guarded_idle<T>(
    work: impl Future<Output = Result<T, ModelError>>,
    cancel: &CancellationToken,
    idle: Duration,
) -> Result<T, ModelError> {
    guarded_by(
        work,
        cancel,
        ModelTimeLimit::Idle,
        idle,
        "the provider sent nothing for",
    )
    .await
}

/// Runs `work` until it finishes, `cancel` fires or `limit` (of `duration`) elapses, which
/// fails with "`what` N ms (limit name)".
pub async fn guarded_by<T>(
    work: impl Future<Output = Result<T, ModelError>>,
    cancel: &CancellationToken,
    limit: ModelTimeLimit,
    duration: Duration,
    what: &str,
) -> Result<T, ModelError> {
    let timed = async {
        tokio::time::timeout(duration, work)
            .await
            .unwrap_or_else(|_| Err(timed_out(limit, duration, what)))
    };
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(ModelError::Cancelled),
        result = timed => result,
    }
}

/// Reads a whole (non-streamed) body in pieces, each within the idle timeout, failing with
/// `model.response_too_large` as soon as it passes the size limit.
pub async fn read_body(
    response: &mut reqwest::Response,
    cancel: &CancellationToken,
    limits: &HttpLimits,
) -> Result<Vec<u8>, ModelError> {
    let mut budget = BodyBudget::new(limits.max_response_bytes);
    let mut body = Vec::new();
    while let Some(chunk) = next_chunk(response, cancel, limits.idle_timeout).await? {
        budget.take(chunk.len())?;
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Reads at most the first 64 KiB of an error body (within the idle timeout); whatever could
/// not be read is left out, since the status alone still classifies the failure.
pub async fn read_error_body(
    response: &mut reqwest::Response,
    cancel: &CancellationToken,
    limits: &HttpLimits,
) -> Vec<u8> {
    let mut body = Vec::new();
    while body.len() < MAX_ERROR_BODY_BYTES {
        match next_chunk(response, cancel, limits.idle_timeout).await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            Ok(None) | Err(_) => break,
        }
    }
    body.truncate(MAX_ERROR_BODY_BYTES);
    body
}

/// A reply the adapter cannot read: `model.upstream_invalid_response`.
pub fn invalid_response(message: impl Into<String>) -> ModelError {
    ModelError::InvalidResponse {
        code: tt_domain::error_codes::MODEL_UPSTREAM_INVALID_RESPONSE,
        message: message.into(),
    }
}

/// A whole reply's body as JSON, or [`invalid_response`] when it is not JSON.
pub fn response_json(body: &[u8]) -> Result<Value, ModelError> {
    serde_json::from_slice(body)
        .map_err(|err| invalid_response(format!("the response body is not JSON: {err}")))
}

/// A tool call the reply describes so that it cannot be made: `model.invalid_tool_call`.
pub fn invalid_tool_call(message: impl Into<String>) -> ModelError {
    ModelError::InvalidResponse {
        code: tt_domain::error_codes::MODEL_INVALID_TOOL_CALL,
        message: message.into(),
    }
}

/// The failure of a call that `limit` (of `duration`) ended: "`what` N ms (request timeout)".
pub fn timed_out(limit: ModelTimeLimit, duration: Duration, what: &str) -> ModelError {
    let limit_ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    let name = match limit {
        ModelTimeLimit::Request => "request timeout",
        ModelTimeLimit::Idle => "idle timeout",
        ModelTimeLimit::Header => "header timeout",
        ModelTimeLimit::CallDeadline => "call deadline",
    };
    ModelError::TimedOut {
        limit,
        limit_ms,
        message: format!("{what} {limit_ms} ms ({name})"),
    }
}

/// Runs `work` until it finishes, `cancel` fires (the future is dropped, which aborts the HTTP
/// exchange and closes its connection) or `timeout` elapses (a retried [`ModelError::TimedOut`]).
pub async fn guarded<T>(
    work: impl Future<Output = Result<T, ModelError>>,
    cancel: &CancellationToken,
    timeout: Option<Duration>,
) -> Result<T, ModelError> {
    let timed = async {
        match timeout {
            Some(limit) => tokio::time::timeout(limit, work).await.unwrap_or_else(|_| {
                Err(timed_out(
                    ModelTimeLimit::Request,
                    limit,
                    "no answer from the provider within",
                ))
            }),
            None => work.await,
        }
    };
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(ModelError::Cancelled),
        result = timed => result,
    }
}

/// The `http_request` span of one model call (provider, endpoint, model, round, streamed or
/// not); it nests under the application's `model_call` span.
pub fn request_span(
    provider: &str,
    endpoint: &str,
    request: &AgentModelRequest,
    stream: bool,
) -> tracing::Span {
    tracing::info_span!(
        "http_request",
        provider,
        endpoint,
        model = request.model_id.as_deref().unwrap_or("default"),
        round = request.round,
        stream,
    )
}

/// Maps a transport failure (connect, reset, timeout, unreadable body) to a model error.
pub fn transport_error(err: &reqwest::Error) -> ModelError {
    tracing::debug!(error = %error_chain(err), "HTTP transport error");
    if err.is_builder() {
        return ModelError::Other(format!("cannot build the HTTP request: {err}"));
    }
    if err.is_redirect() {
        return ModelError::Other(format!("too many redirects: {err}"));
    }
    // Connection refused or reset, a timeout, a body cut short: all worth another attempt.
    ModelError::Transient {
        message: format!("HTTP transport failed: {}", error_chain(err)),
    }
}

fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Classifies a non-success response. `clock` is the fallback "now" for an HTTP-date
/// `Retry-After` when the response has no `Date` header.
pub fn status_error(
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
    clock: Option<&Arc<dyn Clock>>,
) -> ModelError {
    let code = status.as_u16();
    let message = format!("HTTP {code}: {}", error_message(body));
    tracing::debug!(status = code, %message, "model server answered with an error status");
    match code {
        429 => ModelError::RateLimited {
            message,
            retry_after_ms: retry_after_ms(headers, clock),
        },
        // 408 is the server timing the request out: as transient as a client-side timeout.
        408 | 500..=599 => ModelError::Transient { message },
        400..=499 => context_overflow(body, &message).unwrap_or(ModelError::Rejected {
            status: Some(code),
            message,
        }),
        _ => ModelError::Other(message),
    }
}

/// A refusal because the prompt does not fit the model's window, in the shapes servers use,
/// with the prompt and window sizes when the server gave them:
///
/// - llama.cpp: `error.type` `exceed_context_size_error` with `n_prompt_tokens` and `n_ctx`;
/// - OpenAI: `error.code` `context_length_exceeded` ("maximum context length is M tokens …
///   resulted in N tokens");
/// - vLLM, DeepSeek and other compatible servers: "maximum context length is M tokens" with
///   "(N in the messages" or "has N input tokens";
/// - Anthropic: "prompt is too long: N tokens > M maximum", and "input length and `max_tokens`
///   exceed context limit: N + K > M".
///
/// `message` is the text of the error that is returned. `None` for every other refusal.
pub fn context_overflow(body: &[u8], message: &str) -> Option<ModelError> {
    let value = serde_json::from_slice::<Value>(body).unwrap_or(Value::Null);
    let error = value.get("error").unwrap_or(&value);
    let field = |key: &str| error.get(key).and_then(Value::as_str);
    let text = error_message(body);
    let overflow = |prompt_tokens: Option<u64>, window_tokens: Option<u64>| {
        Some(ModelError::ContextOverflow {
            message: message.to_owned(),
            prompt_tokens,
            window_tokens,
        })
    };
    if field("type") == Some("exceed_context_size_error") {
        let number = |key: &str| error.get(key).and_then(Value::as_u64);
        return overflow(
            number("n_prompt_tokens").or_else(|| number_before(&text, "(", " tokens)")),
            number("n_ctx").or_else(|| number_after_last(&text, "context size (")),
        );
    }
    if let Some(rest) = text.split("prompt is too long: ").nth(1) {
        return overflow(number_at(rest), rest.split("> ").nth(1).and_then(number_at));
    }
    if let Some(rest) = text.split("exceed context limit: ").nth(1) {
        return overflow(number_at(rest), rest.split("> ").nth(1).and_then(number_at));
    }
    let window = number_after_last(&text, "maximum context length is ");
    if field("code") == Some("context_length_exceeded") || window.is_some() {
        let prompt = number_before(&text, "(", " in the messages")
            .or_else(|| number_after_last(&text, "resulted in "))
            .or_else(|| number_after_last(&text, "your request has "))
            .or_else(|| number_after_last(&text, "you requested "));
        return overflow(prompt, window);
    }
    None
}

/// The decimal number `text` starts with (after spaces), if any.
fn number_at(text: &str) -> Option<u64> {
    let digits: String = text
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(|c| *c != ',')
        .collect();
    digits.parse().ok()
}

/// The number right after the last `marker` in `text`.
fn number_after_last(text: &str, marker: &str) -> Option<u64> {
    text.rsplit_once(marker)
        .and_then(|(_, rest)| number_at(rest))
}

/// The number between the last `open` before the first `close` and that `close`
/// (`"request (8205 tokens)"` with `"("` and `" tokens)"`).
fn number_before(text: &str, open: &str, close: &str) -> Option<u64> {
    let (head, _) = text.split_once(close)?;
    let (_, number) = head.rsplit_once(open)?;
    number_at(number).filter(|_| {
        number
            .trim()
            .chars()
            .all(|c| c.is_ascii_digit() || c == ',')
    })
}

/// The provider's error message from an error body, in the shapes servers use:
/// `{"error":{"message":..}}`, `{"error":".."}`, `{"message":..}`, `{"detail":..}`; otherwise
/// the start of the body as text.
pub fn error_message(body: &[u8]) -> String {
    if let Ok(value) = serde_json::from_slice::<Value>(body) {
        let candidates = [
            value.pointer("/error/message"),
            value.get("error"),
            value.get("message"),
            value.get("detail"),
        ];
        if let Some(text) = candidates
            .into_iter()
            .flatten()
            .find_map(|candidate| candidate.as_str())
            .filter(|text| !text.trim().is_empty())
        {
            return text.to_owned();
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        return "(empty body)".to_owned();
    }
    let excerpt: String = text.chars().take(BODY_EXCERPT_CHARS).collect();
    if excerpt.len() < text.len() {
        format!("{excerpt}…")
    } else {
        excerpt
    }
}

/// How long the provider asked us to wait: `retry-after-ms` (milliseconds), else
/// `Retry-After` as seconds or as an HTTP-date (relative to the response's `Date`, else to
/// `clock`).
pub fn retry_after_ms(headers: &HeaderMap, clock: Option<&Arc<dyn Clock>>) -> Option<u64> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::trim)
    };
    if let Some(millis) = header("retry-after-ms").and_then(parse_non_negative) {
        return Some(millis.ceil() as u64);
    }
    let retry_after = header("retry-after")?;
    if let Some(seconds) = parse_non_negative(retry_after) {
        return Some((seconds * 1000.0).ceil() as u64);
    }
    let at = parse_http_date(retry_after)?;
    let now = header("date")
        .and_then(parse_http_date)
        .or_else(|| clock.map(|clock| clock.now()))?;
    Some(at.millis_since(now))
}

/// A finite, non-negative decimal number (bounded so the conversion to `u64` is exact enough).
fn parse_non_negative(text: &str) -> Option<f64> {
    let value: f64 = text.parse().ok()?;
    (value.is_finite() && (0.0..=1.0e12).contains(&value)).then_some(value)
}

/// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the HTTP-date servers send.
pub fn parse_http_date(text: &str) -> Option<Timestamp> {
    let mut words = text.split_whitespace();
    let _weekday = words.next()?.strip_suffix(',')?;
    let day: u32 = words.next()?.parse().ok()?;
    let month = match words.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: u32 = words.next()?.parse().ok()?;
    let clock = words.next()?;
    if words.next()? != "GMT" || words.next().is_some() || clock.len() != 8 {
        return None;
    }
    Timestamp::parse_rfc3339(&format!("{year:04}-{month:02}-{day:02}T{clock}Z"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    struct FixedClock(Timestamp);

    impl Clock for FixedClock {
        fn now(&self) -> Timestamp {
            self.0
        }
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_static(value));
        }
        map
    }

    fn overflow_of(status: u16, body: &Value) -> ModelError {
        let status = StatusCode::from_u16(status).unwrap();
        status_error(status, &HeaderMap::new(), body.to_string().as_bytes(), None)
    }

    #[test]
    fn context_overflows_are_classified_with_both_sizes_when_given() {
        let cases = [
            // llama.cpp's server, as it answers (fields and message).
            (
                serde_json::json!({"error": {"code": 400, "message": "request (8205 tokens) exceeds the available context size (8192 tokens), try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 8205, "n_ctx": 8192}}),
                Some(8205),
                Some(8192),
            ),
            // The same without the numeric fields: read from the message.
            (
                serde_json::json!({"error": {"code": 400, "message": "request (4100 tokens) exceeds the available context size (4096 tokens), try increasing it", "type": "exceed_context_size_error"}}),
                Some(4100),
                Some(4096),
            ),
            (
                serde_json::json!({"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
                Some(130_512),
                Some(128_000),
            ),
            (
                serde_json::json!({"error": {"message": "Input tokens exceed the configured limit of 272000 tokens.", "code": "context_length_exceeded"}}),
                None,
                None,
            ),
            // vLLM.
            (
                serde_json::json!({"object": "error", "message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.", "type": "BadRequestError", "param": null, "code": 400}),
                Some(4000),
                Some(4096),
            ),
            (
                serde_json::json!({"object": "error", "message": "'max_tokens' or 'max_completion_tokens' is too large: 8192. This model's maximum context length is 4096 tokens and your request has 120 input tokens (8192 > 4096 - 120).", "type": "BadRequestError", "code": 400}),
                Some(120),
                Some(4096),
            ),
            // Anthropic.
            (
                serde_json::json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 208310 tokens > 200000 maximum"}}),
                Some(208_310),
                Some(200_000),
            ),
            (
                serde_json::json!({"type": "error", "error": {"type": "invalid_request_error", "message": "input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000, decrease input length or `max_tokens` and try again"}}),
                Some(197_000),
                Some(200_000),
            ),
        ];
        for (body, prompt, window) in cases {
            let error = overflow_of(400, &body);
            assert_eq!(error.code(), "model.context_overflow", "{body}");
            assert!(!error.is_retryable());
            match error {
                ModelError::ContextOverflow {
                    message,
                    prompt_tokens,
                    window_tokens,
                } => {
                    assert_eq!((prompt_tokens, window_tokens), (prompt, window), "{body}");
                    assert!(message.starts_with("HTTP 400: "), "{message}");
                }
                other => panic!("{other:?}"),
            }
        }
        // Other refusals stay refusals; a 5xx that mentions the window stays transient.
        let other = serde_json::json!({"error": {"message": "Invalid value for 'temperature'", "type": "invalid_request_error"}});
        assert!(matches!(
            overflow_of(400, &other),
            ModelError::Rejected { .. }
        ));
        let busy = serde_json::json!({"error": {"message": "maximum context length is 4096 tokens", "type": "server_error"}});
        assert!(matches!(
            overflow_of(503, &busy),
            ModelError::Transient { .. }
        ));
        assert!(matches!(
            status_error(
                StatusCode::BAD_REQUEST,
                &HeaderMap::new(),
                b"prompt is too long: lots",
                None
            ),
            ModelError::ContextOverflow {
                prompt_tokens: None,
                window_tokens: None,
                ..
            }
        ));
    }

    #[test]
    fn retry_after_in_seconds_milliseconds_and_dates() {
        assert_eq!(
            retry_after_ms(&headers(&[("retry-after", "7")]), None),
            Some(7000)
        );
        assert_eq!(
            retry_after_ms(&headers(&[("retry-after", "0.25")]), None),
            Some(250)
        );
        assert_eq!(
            retry_after_ms(
                &headers(&[("retry-after-ms", "1500"), ("retry-after", "9")]),
                None
            ),
            Some(1500)
        );
        assert_eq!(
            retry_after_ms(
                &headers(&[
                    ("retry-after", "Wed, 21 Oct 2015 07:28:30 GMT"),
                    ("date", "Wed, 21 Oct 2015 07:28:00 GMT"),
                ]),
                None
            ),
            Some(30_000)
        );
        let clock: Arc<dyn Clock> = Arc::new(FixedClock(
            parse_http_date("Wed, 21 Oct 2015 07:27:58 GMT").unwrap(),
        ));
        assert_eq!(
            retry_after_ms(
                &headers(&[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")]),
                Some(&clock)
            ),
            Some(2_000)
        );
        // A date in the past means "now"; no date and no clock means unknown.
        assert_eq!(
            retry_after_ms(
                &headers(&[
                    ("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"),
                    ("date", "Wed, 21 Oct 2015 07:29:00 GMT"),
                ]),
                None
            ),
            Some(0)
        );
        assert_eq!(
            retry_after_ms(
                &headers(&[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")]),
                None
            ),
            None
        );
        assert_eq!(
            retry_after_ms(&headers(&[("retry-after", "soon")]), None),
            None
        );
        assert_eq!(
            retry_after_ms(&headers(&[("retry-after", "-3")]), None),
            None
        );
        assert_eq!(retry_after_ms(&headers(&[]), None), None);
    }

    #[test]
    fn http_dates_parse_strictly() {
        assert_eq!(
            parse_http_date("Thu, 01 Jan 1970 00:00:01 GMT"),
            Some(Timestamp::from_unix_millis(1000))
        );
        assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:01 UTC"), None);
        assert_eq!(parse_http_date("Thu, 01 Foo 1970 00:00:01 GMT"), None);
        assert_eq!(parse_http_date("01 Jan 1970 00:00:01 GMT"), None);
    }

    #[test]
    fn the_body_budget_fails_past_the_limit_and_is_not_retried() {
        let mut budget = BodyBudget::new(10);
        assert!(budget.take(6).is_ok());
        assert!(budget.take(4).is_ok());
        let err = budget.take(1).unwrap_err();
        assert_eq!(err.code(), RESPONSE_TOO_LARGE);
        assert!(!err.is_retryable());
        assert!(err.to_string().contains("larger than 10 bytes"), "{err}");
    }

    #[test]
    fn statuses_are_classified() {
        let none = HeaderMap::new();
        let body = br#"{"error":{"message":"bad thing","type":"x"}}"#;
        assert_eq!(
            status_error(
                StatusCode::TOO_MANY_REQUESTS,
                &headers(&[("retry-after", "2")]),
                body,
                None
            ),
            ModelError::RateLimited {
                message: "HTTP 429: bad thing".into(),
                retry_after_ms: Some(2000)
            }
        );
        for code in [500u16, 502, 503, 529, 408] {
            let status = StatusCode::from_u16(code).unwrap();
            assert!(
                matches!(
                    status_error(status, &none, body, None),
                    ModelError::Transient { .. }
                ),
                "{code}"
            );
        }
        assert_eq!(
            status_error(StatusCode::BAD_REQUEST, &none, body, None),
            ModelError::Rejected {
                status: Some(400),
                message: "HTTP 400: bad thing".into()
            }
        );
        assert!(matches!(
            status_error(StatusCode::NOT_MODIFIED, &none, body, None),
            ModelError::Other(_)
        ));
    }

    #[test]
    fn error_messages_come_from_the_usual_body_shapes() {
        assert_eq!(error_message(br#"{"error":{"message":"m1"}}"#), "m1");
        assert_eq!(error_message(br#"{"error":"m2"}"#), "m2");
        assert_eq!(error_message(br#"{"object":"error","message":"m3"}"#), "m3");
        assert_eq!(error_message(br#"{"detail":"m4"}"#), "m4");
        assert_eq!(
            error_message(b"<html>gateway</html>"),
            "<html>gateway</html>"
        );
        assert_eq!(error_message(b"  "), "(empty body)");
        let long = "x".repeat(400);
        assert_eq!(error_message(long.as_bytes()).chars().count(), 301);
    }
}
