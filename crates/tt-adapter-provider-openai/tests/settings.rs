//! Generation settings and prompt caching on the wire: each setting under the server's name,
//! what OpenAI's own API does not take refused before anything is sent, the cache hints of each
//! dialect, and the cached part of the prompt read back into usage.

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tt_adapter_provider_openai::{Dialect, OpenAiProvider};
use tt_domain::generation::GenerationSettings;
use tt_domain::model::{AgentModelRequest, ModelUsage};
use tt_ports::ModelProvider;

use crate::support::server::{Reply, TestServer};
use crate::support::{Adapter, config, first_messages, request};
use tt_provider_http::test_fixtures::{AdapterUnderTest, assert_setting_refused, sent};

fn reply(usage: Value, timings: Option<Value>) -> Reply {
    let mut body = json!({
        "id": "chatcmpl-7", "object": "chat.completion", "model": "local-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Done."}, "finish_reason": "stop"}],
        "usage": usage,
    });
    if let Some(timings) = timings {
        body["timings"] = timings;
    }
    Reply::json(200, &body)
}

fn plain_usage() -> Value {
    json!({"prompt_tokens": 100, "completion_tokens": 5})
}

fn with(settings: Value) -> AgentModelRequest {
    let mut request = request(1, first_messages());
    request.generation = serde_json::from_value::<GenerationSettings>(settings).unwrap();
    request
}

fn every_setting() -> Value {
    json!({
        "temperature": 0.0, "topP": 0.9, "topK": 40, "minP": 0.05,
        "frequencyPenalty": 0.5, "presencePenalty": -0.5, "repetitionPenalty": 1.1,
        "stop": ["\n\nTHE END"], "seed": 7, "reasoningEffort": "low",
        "extra": {"mirostat": 2, "top_k": 50},
    })
}

#[tokio::test]
async fn a_compatible_server_gets_every_setting_under_its_own_name_and_cache_prompt() {
    let mut server = TestServer::always(reply(plain_usage(), None)).await;
    let provider = OpenAiProvider::new(config(&server)).unwrap();
    let body = sent(&provider, &mut server, &with(every_setting())).await;
    for (field, value) in [
        ("temperature", json!(0.0)),
        ("top_p", json!(0.9)),
        ("min_p", json!(0.05)),
        ("frequency_penalty", json!(0.5)),
        ("presence_penalty", json!(-0.5)),
        ("repeat_penalty", json!(1.1)),
        ("stop", json!(["\n\nTHE END"])),
        ("seed", json!(7)),
        ("reasoning_effort", json!("low")),
        ("mirostat", json!(2)),
        // `extra` goes in last and wins over the field the adapter set.
        ("top_k", json!(50)),
        ("cache_prompt", json!(true)),
    ] {
        assert_eq!(body[field], value, "{field} in {body}");
    }
    assert!(body.get("prompt_cache_key").is_none(), "{body}");
    assert!(
        body.get("topK").is_none() && body.get("extra").is_none(),
        "{body}"
    );
}

#[tokio::test]
async fn openai_itself_gets_a_prompt_cache_key_per_run_and_profile_and_no_llama_fields() {
    let mut server = TestServer::always(reply(plain_usage(), None)).await;
    let provider = OpenAiProvider::new(config(&server).with_dialect(Dialect::OpenAi)).unwrap();
    let body = sent(
        &provider,
        &mut server,
        &with(json!({"temperature": 0.3, "seed": 1, "stop": ["a", "b"]})),
    )
    .await;
    assert_eq!(body["temperature"], json!(0.3));
    assert_eq!(body["seed"], json!(1));
    assert_eq!(body["prompt_cache_key"], json!("run_a:writer"));
    assert!(body.get("cache_prompt").is_none(), "{body}");
    // No settings: only the cache key is added.
    let body = sent(&provider, &mut server, &request(1, first_messages())).await;
    assert!(body.get("temperature").is_none(), "{body}");
    assert_eq!(body["prompt_cache_key"], json!("run_a:writer"));
}

#[tokio::test]
async fn settings_openai_does_not_take_are_refused_before_anything_is_sent() {
    let server = TestServer::always(reply(plain_usage(), None)).await;
    let openai = OpenAiProvider::new(config(&server).with_dialect(Dialect::OpenAi)).unwrap();
    let compatible = OpenAiProvider::new(config(&server)).unwrap();
    let cases = [
        (
            &openai,
            json!({"topK": 40, "minP": 0.1}),
            "does not take topK, minP",
        ),
        (
            &openai,
            json!({"repetitionPenalty": 1.2}),
            "repetitionPenalty",
        ),
        (
            &openai,
            json!({"stop": ["1", "2", "3", "4", "5"]}),
            "at most 4 stop strings",
        ),
        (
            &openai,
            json!({"thinkingBudgetTokens": 2048}),
            "Anthropic setting",
        ),
        (
            &compatible,
            json!({"thinkingBudgetTokens": 2048}),
            "Anthropic setting",
        ),
    ];
    for (provider, settings, expected) in cases {
        assert_setting_refused(provider, &with(settings.clone()), &settings, expected).await;
    }
}

#[tokio::test]
async fn cached_prompt_tokens_are_read_from_usage_details_or_llama_timings() {
    let cases = [
        (
            reply(
                json!({"prompt_tokens": 2006, "completion_tokens": 300,
                       "prompt_tokens_details": {"cached_tokens": 1920}}),
                None,
            ),
            1920,
        ),
        (
            reply(
                plain_usage(),
                Some(json!({"cache_n": 96, "prompt_n": 4, "predicted_n": 5})),
            ),
            96,
        ),
        (reply(plain_usage(), None), 0),
    ];
    for (reply, cached) in cases {
        let server = TestServer::always(reply).await;
        let response = OpenAiProvider::new(config(&server))
            .unwrap()
            .complete(&request(1, first_messages()), CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(
            response.usage.map(|usage| usage.cached_input_tokens),
            Some(cached)
        );
    }
}

#[tokio::test]
async fn a_stream_whose_timings_come_after_its_usage_still_reports_the_cache() {
    let chunks = [
        json!({"id": "c1", "model": "local-model", "choices": [{"index": 0, "delta": {"content": "Hi."}, "finish_reason": null}]}),
        json!({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        json!({"id": "c1", "choices": [], "usage": {"prompt_tokens": 120, "completion_tokens": 2}}),
        json!({"id": "c1", "choices": [], "timings": {"cache_n": 110, "prompt_n": 10}}),
    ];
    let mut text: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    text.push_str("data: [DONE]\n\n");
    let usage = ModelUsage {
        cached_input_tokens: 110,
        ..ModelUsage::new(120, 2)
    };
    let response = Adapter::assert_streamed_usage(Reply::sse(vec![text]), usage).await;
    assert_eq!(
        response.raw_response["usage"]["prompt_tokens_details"]["cached_tokens"],
        json!(110)
    );
}

#[tokio::test]
async fn a_connection_that_drops_settings_names_them_at_the_check_and_leaves_them_out() {
    use tt_ports::{DroppedSetting, UnsupportedSettings};
    let mut server = TestServer::always(reply(plain_usage(), None)).await;
    let refusing = OpenAiProvider::new(config(&server).with_dialect(Dialect::OpenAi)).unwrap();
    let dropping = OpenAiProvider::new(
        config(&server)
            .with_dialect(Dialect::OpenAi)
            .with_unsupported_settings(UnsupportedSettings::Drop),
    )
    .unwrap();
    let settings: GenerationSettings =
        serde_json::from_value(json!({"topK": 40, "temperature": 0.2, "seed": 3})).unwrap();
    // Checked before any request: the refusing connection refuses, the other names what it drops.
    let refused = refusing.check_settings(&settings, None).unwrap_err();
    assert_eq!(refused.code(), "model.setting_unsupported");
    assert_eq!(
        dropping.check_settings(&settings, None).unwrap(),
        vec![DroppedSetting {
            setting: "topK".into(),
            reason: "OpenAI's API does not take it".into()
        }]
    );
    // More stop strings than OpenAI takes are a value, not a setting: refused either way.
    let stops: GenerationSettings =
        serde_json::from_value(json!({"stop": ["1", "2", "3", "4", "5"]})).unwrap();
    assert!(dropping.check_settings(&stops, None).is_err());
    let body = sent(
        &dropping,
        &mut server,
        &with(json!({"topK": 40, "temperature": 0.2, "seed": 3})),
    )
    .await;
    assert!(body.get("top_k").is_none(), "{body}");
    assert_eq!(body["temperature"], json!(0.2));
    assert_eq!(body["seed"], json!(3));
}
