//! Generation settings, cache breakpoints and cache usage on the Messages wire: each setting
//! under the API's name, what it does not take refused before anything is sent, at most four
//! `cache_control` breakpoints where docs/providers.md puts them, and the cache figures read
//! into usage as parts of the whole prompt.

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tt_adapter_provider_anthropic::{AnthropicProvider, MAX_CACHE_BREAKPOINTS};
use tt_domain::generation::GenerationSettings;
use tt_domain::model::{AgentModelMessage, AgentModelRequest, ModelContentPart, ModelUsage};
use tt_domain::profile::CacheTtl;
use tt_domain::tool::AgentToolCall;
use tt_ports::{ModelError, ModelProvider};

use crate::support::server::{Reply, TestServer};
use crate::support::{Adapter, config, first_messages, request, tool_result};
use tt_provider_http::test_fixtures::{AdapterUnderTest, assert_setting_refused, sent};

fn reply(usage: Value) -> Reply {
    Reply::json(
        200,
        &json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
            "content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn",
            "usage": usage,
        }),
    )
}

fn plain() -> Reply {
    reply(json!({"input_tokens": 10, "output_tokens": 2}))
}

fn with(settings: Value) -> AgentModelRequest {
    let mut request = request(1, first_messages());
    request.generation = serde_json::from_value::<GenerationSettings>(settings).unwrap();
    request
}

/// Every `cache_control` in `body`, as the JSON pointer of the block that carries it.
fn breakpoints(body: &Value) -> Vec<String> {
    fn walk(value: &Value, at: String, found: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if map.contains_key("cache_control") {
                    found.push(at.clone());
                }
                for (key, child) in map {
                    walk(child, format!("{at}/{key}"), found);
                }
            }
            Value::Array(items) => {
                for (index, child) in items.iter().enumerate() {
                    walk(child, format!("{at}/{index}"), found);
                }
            }
            _ => {}
        }
    }
    let mut found = Vec::new();
    walk(body, String::new(), &mut found);
    found.sort();
    found
}

#[tokio::test]
async fn each_setting_reaches_the_body_under_the_apis_name() {
    let mut server = TestServer::always(plain()).await;
    let provider = AnthropicProvider::new(config(&server)).unwrap();
    let body = sent(
        &provider,
        &mut server,
        &with(json!({
            "temperature": 0.4, "topP": 0.9, "topK": 40, "stop": ["\n\nTHE END"],
            "maxOutputTokens": 1000, "extra": {"metadata": {"user_id": "u1"}, "top_k": 20},
        })),
    )
    .await;
    for (field, value) in [
        ("temperature", json!(0.4)),
        ("top_p", json!(0.9)),
        // `extra` goes in last and wins over the field the adapter set.
        ("top_k", json!(20)),
        ("stop_sequences", json!(["\n\nTHE END"])),
        ("metadata", json!({"user_id": "u1"})),
    ] {
        assert_eq!(body[field], value, "{field} in {body}");
    }
    assert!(body.get("stop").is_none() && body.get("thinking").is_none());
    assert!(body.get("topP").is_none() && body.get("extra").is_none());

    // The request's thinking budget wins over the connection's; max_tokens stays above it.
    let mut server = TestServer::always(plain()).await;
    let provider = AnthropicProvider::new(config(&server).with_thinking(1024)).unwrap();
    let body = sent(
        &provider,
        &mut server,
        &with(json!({"thinkingBudgetTokens": 1500, "temperature": 1.0})),
    )
    .await;
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 1500})
    );
    assert_eq!(body["max_tokens"], json!(2048));
    assert_eq!(body["temperature"], json!(1.0));
    let body = sent(&provider, &mut server, &request(1, first_messages())).await;
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 1024})
    );
}

#[tokio::test]
async fn settings_the_api_does_not_take_are_refused_before_anything_is_sent() {
    let mut server = TestServer::always(plain()).await;
    let provider = AnthropicProvider::new(config(&server)).unwrap();
    let cases = [
        (json!({"seed": 7}), "does not take seed"),
        (
            json!({"frequencyPenalty": 0.5, "presencePenalty": 0.1, "minP": 0.1}),
            "does not take minP, frequencyPenalty, presencePenalty",
        ),
        (json!({"repetitionPenalty": 1.1}), "repetitionPenalty"),
        (json!({"reasoningEffort": "high"}), "thinkingBudgetTokens"),
        (json!({"temperature": 1.5}), "at most 1"),
        (json!({"thinkingBudgetTokens": 4096}), "below max_tokens"),
        (
            json!({"thinkingBudgetTokens": 1024, "temperature": 0.2}),
            "no temperature but 1",
        ),
        (json!({"thinkingBudgetTokens": 1024, "topK": 5}), "no topK"),
        (
            json!({"thinkingBudgetTokens": 1024, "topP": 0.5}),
            "topP of 0.95 to 1",
        ),
    ];
    for (settings, expected) in cases {
        assert_setting_refused(&provider, &with(settings.clone()), &settings, expected).await;
    }
    // Nothing reached the server: the next request it sees is this one.
    let body = sent(&provider, &mut server, &request(1, first_messages())).await;
    assert_eq!(body["messages"][0]["content"][0]["text"], "Write a scene.");
}

#[tokio::test]
async fn breakpoints_mark_tools_system_and_the_last_two_user_turns() {
    let mut server = TestServer::always(plain()).await;
    let provider = AnthropicProvider::new(config(&server)).unwrap();
    // Round 1: tools, system, the only user turn.
    let body = sent(&provider, &mut server, &request(1, first_messages())).await;
    assert_eq!(
        breakpoints(&body),
        ["/messages/0/content/0", "/system/0", "/tools/1"]
    );

    // Round 3 of a tool loop: the last user turn (this round's results) and the one before
    // (where round 2's request ended); the first user turn no longer.
    let call = |id: &str| {
        AgentModelMessage::assistant(vec![ModelContentPart::ToolCall {
            call: AgentToolCall::new(id, "workspace_finish", json!({})),
        }])
    };
    let mut messages = first_messages();
    messages.push(call("t1"));
    messages.push(tool_result("t1", "one", false));
    messages.push(call("t2"));
    messages.push(tool_result("t2", "two", false));
    messages.push(tool_result("t3", "three", false));
    let body = sent(&provider, &mut server, &request(3, messages.clone())).await;
    let marks = breakpoints(&body);
    assert_eq!(
        marks,
        [
            "/messages/2/content/0",
            "/messages/4/content/1",
            "/system/0",
            "/tools/1"
        ]
    );
    assert!(marks.len() <= MAX_CACHE_BREAKPOINTS);
    // The breakpoints sit on blocks the API accepts them on.
    for mark in &marks {
        let block = body.pointer(mark).unwrap();
        assert!(
            matches!(block["type"].as_str(), Some("text" | "tool_result") | None),
            "{mark}: {block}"
        );
    }

    // Turned off, nothing is marked and the system prompt stays a string.
    let mut server = TestServer::always(plain()).await;
    let provider = AnthropicProvider::new(config(&server).with_prompt_caching(false)).unwrap();
    let body = sent(&provider, &mut server, &request(3, messages)).await;
    assert!(breakpoints(&body).is_empty(), "{body}");
    assert_eq!(body["system"], json!("You are a writer."));
}

#[tokio::test]
async fn an_hour_long_cache_marks_every_breakpoint_with_its_ttl() {
    let mut server = TestServer::always(plain()).await;
    let provider = AnthropicProvider::new(config(&server)).unwrap();
    let mut hour = request(1, first_messages());
    hour.cache_ttl = Some(CacheTtl::OneHour);
    let body = sent(&provider, &mut server, &hour).await;
    let one_hour = json!({"type": "ephemeral", "ttl": "1h"});
    assert_eq!(
        body["tools"][1]["cache_control"], one_hour,
        "the tool schemas: {body}"
    );
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "You are a writer.", "cache_control": one_hour}])
    );
    assert_eq!(
        body["messages"][0]["content"][0],
        json!({"type": "text", "text": "Write a scene.", "cache_control": one_hour})
    );
    assert_eq!(breakpoints(&body).len(), 3, "{body}");

    // The provider's default lifetime sends no ttl at all (requests stay as they were).
    for ttl in [None, Some(CacheTtl::ProviderDefault)] {
        let mut plain_request = request(1, first_messages());
        plain_request.cache_ttl = ttl;
        let body = sent(&provider, &mut server, &plain_request).await;
        assert_eq!(
            body["system"][0]["cache_control"],
            json!({"type": "ephemeral"}),
            "{ttl:?}"
        );
        assert!(!body.to_string().contains("\"ttl\""), "{ttl:?}: {body}");
    }

    // With caching turned off nothing is marked, whatever lifetime the profile asks for.
    let mut server = TestServer::always(plain()).await;
    let provider = AnthropicProvider::new(config(&server).with_prompt_caching(false)).unwrap();
    let mut hour = request(1, first_messages());
    hour.cache_ttl = Some(CacheTtl::OneHour);
    let body = sent(&provider, &mut server, &hour).await;
    assert!(breakpoints(&body).is_empty(), "{body}");
}

#[tokio::test]
async fn cache_reads_and_writes_are_parts_of_the_whole_prompt() {
    let mut server = TestServer::always(reply(json!({
        "input_tokens": 12, "cache_creation_input_tokens": 300,
        "cache_read_input_tokens": 1700, "output_tokens": 40,
    })))
    .await;
    let provider = AnthropicProvider::new(config(&server)).unwrap();
    let response = provider
        .complete(&request(1, first_messages()), CancellationToken::new())
        .await
        .unwrap();
    server.next_request().await;
    assert_eq!(
        response.usage,
        Some(ModelUsage {
            input_tokens: 2012,
            output_tokens: 40,
            cached_input_tokens: 1700,
            cache_write_tokens: 300,
        })
    );

    // Streamed: from message_start, and the audit body keeps the API's three figures.
    let events = [
        json!({"type": "message_start", "message": {"id": "m", "model": "c", "usage": {
            "input_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 995, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}),
        json!({"type": "message_stop"}),
    ];
    let text: String = events
        .iter()
        .map(|event| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap()
            )
        })
        .collect();
    let usage = ModelUsage {
        cached_input_tokens: 995,
        ..ModelUsage::new(1000, 3)
    };
    let response = Adapter::assert_streamed_usage(Reply::sse(vec![text]), usage).await;
    assert_eq!(
        response.raw_response["usage"],
        json!({"input_tokens": 5, "cache_creation_input_tokens": 0,
               "cache_read_input_tokens": 995, "output_tokens": 3})
    );
}

#[tokio::test]
async fn a_prompt_too_long_is_a_context_overflow_with_both_sizes() {
    let body = json!({"type": "error", "error": {"type": "invalid_request_error",
        "message": "prompt is too long: 208310 tokens > 200000 maximum"}});
    let server = TestServer::always(Reply::json(400, &body)).await;
    let error = AnthropicProvider::new(config(&server))
        .unwrap()
        .complete(&request(1, first_messages()), CancellationToken::new())
        .await
        .unwrap_err();
    assert!(!error.is_retryable());
    assert_eq!(
        error,
        ModelError::ContextOverflow {
            message: "HTTP 400: prompt is too long: 208310 tokens > 200000 maximum".into(),
            prompt_tokens: Some(208_310),
            window_tokens: Some(200_000),
        }
    );
}

#[tokio::test]
async fn a_connection_that_drops_settings_sends_the_rest_and_says_what_it_dropped() {
    use tt_ports::UnsupportedSettings;
    let mut server = TestServer::always(plain()).await;
    let refusing = AnthropicProvider::new(config(&server)).unwrap();
    let dropping = AnthropicProvider::new(
        config(&server).with_unsupported_settings(UnsupportedSettings::Drop),
    )
    .unwrap();
    let settings = json!({"seed": 7, "temperature": 0.4, "minP": 0.1});
    let parsed: GenerationSettings = serde_json::from_value(settings.clone()).unwrap();
    // Checked before any request: `seed` on Anthropic used to fail the run at its first call.
    let refused = refusing.check_settings(&parsed, None).unwrap_err();
    assert!(
        matches!(&refused, ModelError::SettingUnsupported { message } if message.contains("does not take minP, seed")),
        "{refused}"
    );
    let dropped = dropping.check_settings(&parsed, None).unwrap();
    let names: Vec<&str> = dropped.iter().map(|d| d.setting.as_str()).collect();
    assert_eq!(names, ["minP", "seed"]);
    let body = sent(&dropping, &mut server, &with(settings)).await;
    assert_eq!(body["temperature"], json!(0.4));
    assert!(
        body.get("seed").is_none() && body.get("min_p").is_none(),
        "{body}"
    );
    // A thinking budget that does not fit below max_tokens is refused either way.
    let too_big: GenerationSettings =
        serde_json::from_value(json!({"thinkingBudgetTokens": 4096})).unwrap();
    assert!(dropping.check_settings(&too_big, Some(2048)).is_err());
}
