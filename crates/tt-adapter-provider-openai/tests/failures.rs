//! Failure classification over HTTP: 429 with `Retry-After`, 5xx, other 4xx, malformed bodies,
//! invalid tool calls, timeouts, refused connections, and cancel aborting the request.

use serde_json::{Value, json};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tt_adapter_provider_openai::{OpenAiConfig, OpenAiError, OpenAiProvider};
use tt_ports::{ModelError, ModelProvider};

use crate::support::server::{Reply, TestServer};
use crate::support::{Adapter, config, first_messages, provider, request};
use tt_provider_http::test_fixtures::AdapterUnderTest;

#[tokio::test]
async fn too_many_requests_is_rate_limited_with_retry_after() {
    let body = json!({"error": {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"}});
    let error =
        Adapter::complete_against(Reply::json(429, &body).with_header("retry-after", "3")).await;
    assert_eq!(
        error,
        ModelError::RateLimited {
            message: "HTTP 429: Rate limit reached for requests".into(),
            retry_after_ms: Some(3000),
        }
    );
    assert!(error.is_retryable());

    let dated = Reply::json(429, &body)
        .with_header("date", "Tue, 03 Jun 2025 10:00:00 GMT")
        .with_header("retry-after", "Tue, 03 Jun 2025 10:00:12 GMT");
    assert!(matches!(
        Adapter::complete_against(dated).await,
        ModelError::RateLimited {
            retry_after_ms: Some(12_000),
            ..
        }
    ));

    let precise = Reply::json(429, &body).with_header("retry-after-ms", "750");
    assert!(matches!(
        Adapter::complete_against(precise).await,
        ModelError::RateLimited {
            retry_after_ms: Some(750),
            ..
        }
    ));
}

#[tokio::test]
async fn server_errors_are_transient() {
    Adapter::assert_transient(
        Reply::json(
            500,
            &json!({"error": {"message": "The server had an error", "type": "server_error"}}),
        ),
        "HTTP 500: The server had an error",
    )
    .await;
    Adapter::assert_transient(
        Reply::Whole {
            status: 502,
            headers: vec![("content-type".into(), "text/html".into())],
            body: b"<html>Bad Gateway</html>".to_vec(),
        },
        "HTTP 502: <html>Bad Gateway</html>",
    )
    .await;
}

#[tokio::test]
async fn other_client_errors_are_rejected_with_the_servers_message() {
    Adapter::assert_rejected(
        Reply::json(
            400,
            &json!({"error": {"message": "'messages' must contain at least one message", "type": "invalid_request_error", "param": "messages"}}),
        ),
        400,
        "HTTP 400: 'messages' must contain at least one message",
    )
    .await;
    // vLLM's older error shape.
    Adapter::assert_rejected(
        Reply::json(
            404,
            &json!({"object": "error", "message": "The model `x` does not exist.", "type": "NotFoundError", "code": 404}),
        ),
        404,
        "HTTP 404: The model `x` does not exist.",
    )
    .await;
}

#[tokio::test]
async fn a_malformed_success_body_is_an_upstream_invalid_response() {
    Adapter::assert_truncated_body_invalid(b"{\"id\": \"chatcmpl-1\", \"choices\": [").await;
}

#[tokio::test]
async fn calls_without_id_or_name_are_invalid() {
    let call_reply = |call: Value| {
        Reply::json(
            200,
            &json!({"id": "c", "model": "m", "choices": [{"index": 0, "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": null, "tool_calls": [call]}}]}),
        )
    };
    let cases = [
        (
            json!({"type": "function", "function": {"name": "workspace_finish", "arguments": "{}"}}),
            "has no id",
        ),
        (
            json!({"id": "call_1", "type": "function", "function": {"arguments": "{}"}}),
            "has no function name",
        ),
    ];
    for (call, expected) in cases {
        let error = Adapter::complete_against(call_reply(call)).await;
        match &error {
            ModelError::InvalidResponse { code, message } => {
                assert_eq!(*code, "model.invalid_tool_call");
                assert!(message.contains(expected), "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert!(!error.is_retryable());
    }
}

#[tokio::test]
async fn unparseable_or_non_object_arguments_pass_through_for_the_runtime_to_answer() {
    for (arguments, expected) in [
        (json!("{\"path\": \"output/"), json!("{\"path\": \"output/")),
        (json!("[1, 2]"), json!([1, 2])),
    ] {
        let call = json!({"id": "call_1", "type": "function", "function": {"name": "workspace_write_file", "arguments": arguments}});
        let mut server = TestServer::always(Reply::json(
            200,
            &json!({"id": "c", "model": "m", "choices": [{"index": 0, "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": null, "tool_calls": [call]}}]}),
        ))
        .await;
        let response = provider(&server)
            .complete(&request(1, first_messages()), CancellationToken::new())
            .await
            .unwrap();
        server.next_request().await;
        let calls = response.tool_calls();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].arguments, expected);
    }
}

#[tokio::test]
async fn a_request_timeout_is_a_retried_timeout() {
    let server = TestServer::always(Reply::Hang).await;
    // The server never answers, so the outcome does not depend on how fast the machine is.
    let provider =
        OpenAiProvider::new(config(&server).with_request_timeout(Duration::from_millis(50)))
            .unwrap();
    let error = provider
        .complete(&request(1, first_messages()), CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ModelError::TimedOut { message, .. } if message.contains("within 50 ms (request timeout)")),
        "{error:?}"
    );
    assert_eq!(error.code(), "model.timeout");
    assert!(error.is_retryable());
}

#[tokio::test]
async fn a_refused_connection_is_transient() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let provider =
        OpenAiProvider::new(OpenAiConfig::new(format!("http://{addr}/v1")).with_default_model("m"))
            .unwrap();
    let error = provider
        .complete(&request(1, first_messages()), CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(error, ModelError::Transient { .. }), "{error:?}");
}

#[tokio::test]
async fn no_model_id_anywhere_is_an_error_before_any_request() {
    let provider = OpenAiProvider::new(OpenAiConfig::new("http://127.0.0.1:9/v1")).unwrap();
    let error = provider
        .complete(&request(1, first_messages()), CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(&error, ModelError::Other(message) if message.contains("no model id")));
}

#[test]
fn bad_settings_are_refused() {
    assert_eq!(
        OpenAiProvider::new(OpenAiConfig::new("ftp://example")).unwrap_err(),
        OpenAiError::InvalidBaseUrl("ftp://example".into())
    );
    assert_eq!(
        OpenAiProvider::new(OpenAiConfig::new("http://x/v1").with_header("bad header", "v"))
            .unwrap_err(),
        OpenAiError::InvalidHeader("bad header".into())
    );
    let provider = OpenAiProvider::new(
        OpenAiConfig::new("http://127.0.0.1:8080/v1/")
            .with_api_key("secret")
            .with_stream(true),
    )
    .unwrap();
    assert_eq!(
        provider.endpoint(),
        "http://127.0.0.1:8080/v1/chat/completions"
    );
    assert!(provider.prefers_streaming());
    assert!(!format!("{provider:?}").contains("secret"));
}
