//! Against the strict llama.cpp fake: the sampler settings reach the server under llama.cpp's
//! names, a request over the window fails with `model.context_overflow` naming both sizes (the
//! server's exact body), and the KV-cache reuse of a growing conversation is read into usage.

use serde_json::{Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tt_adapter_provider_openai::{OpenAiConfig, OpenAiProvider};
use tt_domain::generation::GenerationSettings;
use tt_domain::model::{AgentModelMessage, AgentModelRequest, ModelRole};
use tt_ports::{ModelError, ModelProvider};
use tt_provider_http::llama_fake::{LlamaFake, estimate_tokens};

use crate::support::{Deltas, first_messages, request};

fn provider(fake: &LlamaFake, stream: bool) -> OpenAiProvider {
    OpenAiProvider::new(
        OpenAiConfig::new(fake.base_url())
            .with_default_model("local")
            .with_stream(stream),
    )
    .unwrap()
}

async fn call(
    provider: &OpenAiProvider,
    request: &AgentModelRequest,
    stream: bool,
) -> Result<tt_domain::model::AgentModelResponse, ModelError> {
    if stream {
        provider
            .stream(
                request,
                Arc::new(Deltas::default()),
                CancellationToken::new(),
            )
            .await
    } else {
        provider.complete(request, CancellationToken::new()).await
    }
}

#[tokio::test]
async fn sampler_settings_reach_the_server_under_llama_cpp_names() {
    let mut fake = LlamaFake::start(8192).await;
    let provider = provider(&fake, false);
    let mut turn = request(1, first_messages());
    turn.generation = serde_json::from_value::<GenerationSettings>(json!({
        "temperature": 0.0, "seed": 7, "topK": 40, "minP": 0.05, "repetitionPenalty": 1.1,
        "topP": 0.9, "stop": ["END"], "maxOutputTokens": 300, "extra": {"mirostat": 2},
    }))
    .unwrap();
    turn.max_output_tokens = Some(300);
    let response = call(&provider, &turn, false).await.unwrap();
    fake.server.next_request().await;
    assert_eq!(
        response.raw_response["sampler_fields"],
        json!({
            "temperature": 0.0, "top_p": 0.9, "top_k": 40, "min_p": 0.05,
            "repeat_penalty": 1.1, "seed": 7, "stop": ["END"], "max_tokens": 300,
            "mirostat": 2, "cache_prompt": true,
        })
    );
}

#[tokio::test]
async fn a_prompt_over_the_window_is_a_context_overflow_with_both_sizes() {
    for stream in [false, true] {
        let mut fake = LlamaFake::start(64).await;
        let provider = provider(&fake, stream);
        let long = "word ".repeat(200);
        let messages = vec![
            AgentModelMessage::text(ModelRole::System, "You are a writer."),
            AgentModelMessage::text(ModelRole::User, &long),
        ];
        let error = call(&provider, &request(1, messages), stream)
            .await
            .unwrap_err();
        let sent = fake.server.next_request().await;
        let expected =
            estimate_tokens(tt_provider_http::llama_fake::render_prompt(&sent.body).len());
        assert_eq!(error.code(), "model.context_overflow");
        assert!(!error.is_retryable());
        match error {
            ModelError::ContextOverflow {
                message,
                prompt_tokens,
                window_tokens,
            } => {
                assert_eq!(prompt_tokens, Some(expected));
                assert_eq!(window_tokens, Some(64));
                assert!(
                    message.contains("exceeds the available context size (64 tokens)"),
                    "{message}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn a_growing_conversation_is_served_from_the_cache_from_round_two() {
    for stream in [false, true] {
        let mut fake = LlamaFake::start(8192).await;
        let provider = provider(&fake, stream);
        let mut messages = first_messages();
        let first = call(&provider, &request(1, messages.clone()), stream)
            .await
            .unwrap();
        fake.server.next_request().await;
        assert_eq!(first.usage.unwrap().cached_input_tokens, 0);
        messages.push(first.message.clone());
        messages.push(AgentModelMessage::text(ModelRole::User, "Go on."));
        let second = call(&provider, &request(2, messages), stream)
            .await
            .unwrap();
        let sent: Value = fake.server.next_request().await.body;
        let usage = second.usage.unwrap();
        assert!(usage.cached_input_tokens > 0, "{usage:?}");
        assert!(usage.cached_input_tokens < usage.input_tokens, "{usage:?}");
        assert_eq!(
            usage.input_tokens,
            estimate_tokens(tt_provider_http::llama_fake::render_prompt(&sent).len())
        );
    }
}

#[tokio::test]
async fn the_fake_refuses_what_llama_cpp_refuses() {
    let fake = LlamaFake::start(8192).await;
    let call =
        json!({"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": "}});
    for messages in [
        json!([{"role": "narrator", "content": "x"}]),
        json!([{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": []}]),
        json!([{"role": "user", "content": "x"}, {"role": "assistant", "content": null, "tool_calls": [call]}]),
        json!([{"role": "user", "content": "x"}, {"role": "tool", "content": "r"}]),
        json!([]),
    ] {
        assert_eq!(
            raw_post(&fake, json!({"messages": messages})).await,
            400,
            "{messages}"
        );
    }
    assert_eq!(
        raw_post(
            &fake,
            json!({"messages": [{"role": "user", "content": "x"}]})
        )
        .await,
        200
    );
}

/// Posts `body` over a plain TCP connection (the adapter never sends a malformed one) and
/// returns the status code.
async fn raw_post(fake: &LlamaFake, body: Value) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let url = fake.server.url("");
    let addr = url.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let body = body.to_string();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap()
}
