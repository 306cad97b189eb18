//! Failure classification over HTTP: 429 with `Retry-After`, 529 and 500, other 4xx with the
//! API's message, malformed bodies, invalid `tool_use` blocks, and cancel aborting the request.

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tt_adapter_provider_anthropic::{AnthropicConfig, AnthropicError, AnthropicProvider};
use tt_ports::{ModelError, ModelProvider};

use crate::support::server::{Reply, TestServer};
use crate::support::{Adapter, first_messages, request};
use tt_provider_http::test_fixtures::AdapterUnderTest;

fn api_error(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

#[tokio::test]
async fn too_many_requests_is_rate_limited_with_retry_after() {
    let error = Adapter::complete_against(
        Reply::json(
            429,
            &api_error(
                "rate_limit_error",
                "Number of request tokens has exceeded your per-minute rate limit",
            ),
        )
        .with_header("retry-after", "17"),
    )
    .await;
    assert_eq!(
        error,
        ModelError::RateLimited {
            message: "HTTP 429: Number of request tokens has exceeded your per-minute rate limit"
                .into(),
            retry_after_ms: Some(17_000),
        }
    );
    assert!(error.is_retryable());
}

#[tokio::test]
async fn overloaded_and_server_errors_are_transient() {
    Adapter::assert_transient(
        Reply::json(529, &api_error("overloaded_error", "Overloaded")),
        "HTTP 529: Overloaded",
    )
    .await;
    Adapter::assert_transient(
        Reply::json(500, &api_error("api_error", "Internal server error")),
        "HTTP 500: Internal server error",
    )
    .await;
}

#[tokio::test]
async fn other_client_errors_are_rejected_with_the_apis_message() {
    Adapter::assert_rejected(
        Reply::json(
            400,
            &api_error(
                "invalid_request_error",
                "messages.1.content.0.thinking.signature: Field required",
            ),
        ),
        400,
        "HTTP 400: messages.1.content.0.thinking.signature: Field required",
    )
    .await;
    let auth = Adapter::complete_against(Reply::json(
        401,
        &api_error("authentication_error", "invalid x-api-key"),
    ))
    .await;
    assert!(matches!(
        auth,
        ModelError::Rejected {
            status: Some(401),
            ..
        }
    ));
    assert!(!auth.is_retryable());
}

#[tokio::test]
async fn a_malformed_success_body_is_an_upstream_invalid_response() {
    Adapter::assert_truncated_body_invalid(b"{\"id\": \"msg_1\", \"content\": [{\"type\": \"te")
        .await;
    let no_content =
        Adapter::complete_against(Reply::json(200, &json!({"id": "msg_1", "type": "message"})))
            .await;
    assert_eq!(no_content.code(), "model.upstream_invalid_response");
}

#[tokio::test]
async fn tool_use_without_id_or_name_is_invalid() {
    let cases = [
        (
            json!({"type": "tool_use", "name": "workspace_finish", "input": {}}),
            "has no id",
        ),
        (
            json!({"type": "tool_use", "id": "toolu_1", "input": {}}),
            "has no name",
        ),
    ];
    for (block, expected) in cases {
        let body = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "c",
            "content": [block], "stop_reason": "tool_use", "usage": {"input_tokens": 1, "output_tokens": 1}});
        let error = Adapter::complete_against(Reply::json(200, &body)).await;
        match &error {
            ModelError::InvalidResponse { code, message } => {
                assert_eq!(*code, "model.invalid_tool_call");
                assert!(message.contains(expected), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn bad_settings_are_refused() {
    assert_eq!(
        AnthropicProvider::new(AnthropicConfig::new("not a url")).unwrap_err(),
        AnthropicError::InvalidBaseUrl("not a url".into())
    );
    assert!(matches!(
        AnthropicProvider::new(
            AnthropicConfig::default()
                .with_max_tokens(1000)
                .with_thinking(1000)
        ),
        Err(AnthropicError::InvalidTokenLimits(_))
    ));
    let provider = AnthropicProvider::new(
        AnthropicConfig::new("http://localhost:8081/")
            .with_api_key("secret")
            .with_stream(true),
    )
    .unwrap();
    assert_eq!(provider.endpoint(), "http://localhost:8081/v1/messages");
    assert!(provider.prefers_streaming());
    assert!(!format!("{provider:?}").contains("secret"));
}

#[tokio::test]
async fn thinking_settings_are_sent() {
    let body = json!({"id": "m", "type": "message", "role": "assistant", "model": "c",
        "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}});
    let mut server = TestServer::always(Reply::json(200, &body)).await;
    let provider = AnthropicProvider::new(
        crate::support::config(&server)
            .with_max_tokens(16_000)
            .with_thinking(4_000),
    )
    .unwrap();
    provider
        .complete(&request(1, first_messages()), CancellationToken::new())
        .await
        .unwrap();
    let sent = server.next_request().await;
    assert_eq!(
        sent.body["thinking"],
        json!({"type": "enabled", "budget_tokens": 4000})
    );
    assert_eq!(sent.body["max_tokens"], json!(16_000));
}
