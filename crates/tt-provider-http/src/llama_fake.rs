//! A strict fake of llama.cpp's `llama-server` `/v1/chat/completions` on 127.0.0.1, for tests
//! that need its window and its KV cache without the real server: it refuses a request whose
//! estimated prompt is larger than its `n_ctx` with llama.cpp's exact overflow body, reports
//! `timings.cache_n` as the estimated tokens of the byte-identical prefix shared with the
//! previous request, refuses malformed messages the way the real parser does, and echoes the
//! sampler fields it received (`sampler_fields` in each answer).
//!
//! The estimate is deterministic and tokenizer-free: [`estimate_tokens`] of the prompt as the
//! fake renders it (the tools, then each message, as the JSON the client sent).

// Test support: a poisoned lock is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};

use crate::test_server::{Recorded, Reply, TestServer};

/// Body fields the fake reports as sampler fields when a request sets them.
pub const SAMPLER_FIELDS: &[&str] = &[
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "repeat_penalty",
    "frequency_penalty",
    "presence_penalty",
    "seed",
    "stop",
    "max_tokens",
    "n_predict",
    "mirostat",
    "cache_prompt",
];

/// Bytes per estimated token.
pub const BYTES_PER_TOKEN: usize = 4;

/// The fake's token estimate of `bytes` bytes of prompt: one token per four bytes, rounded up.
pub fn estimate_tokens(bytes: usize) -> u64 {
    bytes.div_ceil(BYTES_PER_TOKEN) as u64
}

/// The prompt as the fake renders it: the tools' JSON, then each message's JSON on its own
/// line. Two requests with the same leading messages share a byte-identical prefix.
pub fn render_prompt(body: &Value) -> String {
    let mut prompt = body
        .get("tools")
        .map(|tools| format!("{tools}\n"))
        .unwrap_or_default();
    for message in body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        prompt.push_str(&message.to_string());
        prompt.push('\n');
    }
    prompt
}

/// llama.cpp's answer to a prompt over the window, exactly as it sends it (HTTP 400).
pub fn overflow_body(prompt_tokens: u64, n_ctx: u64) -> Value {
    json!({"error": {
        "code": 400,
        "message": format!("request ({prompt_tokens} tokens) exceeds the available context size ({n_ctx} tokens), try increasing it"),
        "type": "exceed_context_size_error",
        "n_prompt_tokens": prompt_tokens,
        "n_ctx": n_ctx,
    }})
}

#[derive(Debug, Default)]
struct State {
    previous_prompt: Option<String>,
}

/// The fake server. Answers the n-th accepted request with the n-th of its replies (the last
/// one again after that); each reply is an assistant message (`content`, `tool_calls`).
pub struct LlamaFake {
    pub server: TestServer,
    n_ctx: u64,
}

impl LlamaFake {
    /// A fake whose window is `n_ctx` tokens and whose every answer is "Done.".
    pub async fn start(n_ctx: u64) -> Self {
        Self::with_replies(
            n_ctx,
            vec![json!({"role": "assistant", "content": "Done."})],
        )
        .await
    }

    /// A fake that answers with `replies` in turn (assistant messages in the wire's shape).
    pub async fn with_replies(n_ctx: u64, replies: Vec<Value>) -> Self {
        let state = Arc::new(Mutex::new(State::default()));
        let answered = Arc::new(Mutex::new(0usize));
        let server = TestServer::start(move |request, _| {
            let mut state = state.lock().unwrap();
            match check(request, n_ctx, &mut state) {
                Err(reply) => reply,
                Ok(counts) => {
                    let mut answered = answered.lock().unwrap();
                    let reply = replies
                        .get(*answered)
                        .or(replies.last())
                        .cloned()
                        .unwrap_or_else(|| json!({"role": "assistant", "content": ""}));
                    *answered += 1;
                    answer(&request.body, reply, counts)
                }
            }
        })
        .await;
        Self { server, n_ctx }
    }

    /// The base URL a client connects to (`…/v1`).
    pub fn base_url(&self) -> String {
        self.server.url("/v1")
    }

    pub fn n_ctx(&self) -> u64 {
        self.n_ctx
    }
}

/// Estimated tokens of one accepted request.
#[derive(Debug, Clone, Copy)]
struct Counts {
    prompt: u64,
    cached: u64,
}

fn invalid(message: &str) -> Reply {
    Reply::json(
        400,
        &json!({"error": {"code": 400, "message": message, "type": "invalid_request_error"}}),
    )
}

/// The server's checks, in its order: the request's shape, then the window. An accepted
/// request becomes the previous one the next request's cache is measured against.
fn check(request: &Recorded, n_ctx: u64, state: &mut State) -> Result<Counts, Reply> {
    if request.method != "POST" || !request.path.ends_with("/chat/completions") {
        return Err(Reply::json(
            404,
            &json!({"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}}),
        ));
    }
    let Some(messages) = request.body.get("messages").and_then(Value::as_array) else {
        return Err(invalid("'messages' is required"));
    };
    if messages.is_empty() {
        return Err(invalid("'messages' must not be empty"));
    }
    for message in messages {
        check_message(message).map_err(|text| invalid(&text))?;
    }
    let prompt = render_prompt(&request.body);
    let prompt_tokens = estimate_tokens(prompt.len());
    if prompt_tokens > n_ctx {
        return Err(Reply::json(400, &overflow_body(prompt_tokens, n_ctx)));
    }
    let shared = state.previous_prompt.as_deref().map_or(0, |previous| {
        previous
            .bytes()
            .zip(prompt.bytes())
            .take_while(|(a, b)| a == b)
            .count()
    });
    state.previous_prompt = Some(prompt);
    Ok(Counts {
        prompt: prompt_tokens,
        // Only whole tokens of the shared prefix are reused.
        cached: (shared / BYTES_PER_TOKEN) as u64,
    })
}

/// What llama.cpp's chat parser refuses.
fn check_message(message: &Value) -> Result<(), String> {
    let role = message.get("role").and_then(Value::as_str).unwrap_or("");
    let calls = message.get("tool_calls").and_then(Value::as_array);
    match role {
        "system" | "user" => {
            if message.get("content").is_none_or(Value::is_null) {
                return Err(format!("a {role} message needs 'content'"));
            }
        }
        "assistant" => {
            if message.get("content").is_none() {
                return Err(
                    "Expected 'content' (ref: https://github.com/ggml-org/llama.cpp/issues/8367)"
                        .to_owned(),
                );
            }
            for call in calls.into_iter().flatten() {
                let arguments = call.pointer("/function/arguments").and_then(Value::as_str);
                if arguments.is_none_or(|text| serde_json::from_str::<Value>(text).is_err()) {
                    return Err("tool call arguments must be a JSON text".to_owned());
                }
                if call.get("id").and_then(Value::as_str).is_none() {
                    return Err("a tool call needs an 'id'".to_owned());
                }
            }
        }
        "tool" => {
            if message
                .get("tool_call_id")
                .and_then(Value::as_str)
                .is_none()
                || !message.get("content").is_some_and(Value::is_string)
            {
                return Err("a tool message needs 'tool_call_id' and text 'content'".to_owned());
            }
        }
        other => return Err(format!("unsupported role '{other}'")),
    }
    Ok(())
}

fn sampler_fields(body: &Value) -> Value {
    let fields: Map<String, Value> = SAMPLER_FIELDS
        .iter()
        .filter_map(|key| {
            body.get(*key)
                .map(|value| ((*key).to_owned(), value.clone()))
        })
        .collect();
    Value::Object(fields)
}

fn answer(body: &Value, mut message: Value, counts: Counts) -> Reply {
    message["role"] = json!("assistant");
    if message.get("content").is_none() {
        message["content"] = Value::Null;
    }
    let has_calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .is_some_and(|calls| !calls.is_empty());
    let finish = if has_calls { "tool_calls" } else { "stop" };
    let completion = estimate_tokens(message.to_string().len());
    let usage = json!({
        "prompt_tokens": counts.prompt,
        "completion_tokens": completion,
        "total_tokens": counts.prompt + completion,
    });
    let timings = json!({
        "cache_n": counts.cached,
        "prompt_n": counts.prompt - counts.cached,
        "predicted_n": completion,
    });
    let model = body.get("model").cloned().unwrap_or(json!("llama-fake"));
    if body.get("stream") != Some(&json!(true)) {
        return Reply::json(
            200,
            &json!({
                "id": "chatcmpl-fake", "object": "chat.completion", "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage, "timings": timings, "sampler_fields": sampler_fields(body),
            }),
        );
    }
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut delta = message.clone();
    if let Some(calls) = delta.get_mut("tool_calls").and_then(Value::as_array_mut) {
        for (index, call) in calls.iter_mut().enumerate() {
            call["index"] = json!(index);
        }
    }
    let events = [
        chunk(delta, Value::Null),
        chunk(json!({}), json!(finish)),
        json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": model,
               "choices": [], "usage": usage, "timings": timings,
               "sampler_fields": sampler_fields(body)}),
    ];
    let mut text: String = events
        .iter()
        .map(|event| format!("data: {event}\n\n"))
        .collect();
    text.push_str("data: [DONE]\n\n");
    Reply::sse(vec![text])
}
