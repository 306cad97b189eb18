//! An OpenAI-compatible Chat Completions model provider: OpenAI itself and any server that
//! speaks the same API (llama.cpp's `llama-server`, vLLM, Ollama, LM Studio, …).
//!
//! # Requests
//!
//! `POST {baseUrl}/chat/completions` with the request's messages, its tools as
//! `{"type":"function","function":{"name":<model alias>,"description","parameters":<input schema>}}`,
//! `tool_choice` and `parallel_tool_calls: true` (both only when tools are offered), `model`
//! (the request's `model_id`, else the connection's default model), `max_tokens` when configured,
//! the request's generation settings and prompt-cache hints (`settings`: what each [`Dialect`]
//! takes), and `stream`. Roles map one to one, except `developer`, which is sent as `system`. An assistant
//! turn is replayed with its tool calls (arguments as a JSON string) and `content: null` when it
//! has no text; every tool result becomes a `tool` message whose `tool_call_id` is the call id
//! the server sent and whose `content` is `AgentToolResult::to_model_payload()`.
//!
//! # Responses
//!
//! The first choice's `content` becomes a text part, `reasoning_content` (or `reasoning`) a
//! reasoning part, each tool call a tool-call part with its id kept verbatim. A call without an
//! id or a name fails the turn with `model.invalid_tool_call`; no id is ever made up. Empty
//! arguments mean `{}`; arguments that are not valid JSON pass through as a JSON string of the
//! raw text (and are replayed as `{}`), so the runtime can answer the slip to the model as a
//! recoverable `model.invalid_tool_call`. `usage`
//! (`prompt_tokens` / `completion_tokens`, and the cached part from
//! `prompt_tokens_details.cached_tokens` or llama.cpp's `timings.cache_n`) and `finish_reason`
//! are carried over.
//!
//! # Streaming
//!
//! [`ModelProvider::stream`](tt_ports::ModelProvider::stream) sends `stream: true` with
//! `stream_options: {"include_usage": true}`, forwards text, reasoning and tool-call fragments
//! as they arrive and reassembles tool calls by their `index`.
//! [`OpenAiProvider::prefers_streaming`] tells the runtime which of the two to use.
//!
//! # The window
//!
//! `ModelProvider::context_window` asks a compatible server what window it serves a model
//! with: llama.cpp's `/props`, the `/v1/models` entry (vLLM's `max_model_len` and the like),
//! Ollama's `/api/show` and `/api/ps` (the `window` module). OpenAI's own API is not asked.
//!
//! # Errors
//!
//! 429 is `RateLimited` (with `retry-after-ms` or `Retry-After`, seconds or an HTTP-date);
//! 408, 5xx, connection failures and streams cut short are `Transient`; the request and idle
//! timeouts are `TimedOut` (`model.timeout`, retried too); other 4xx are
//! `Rejected` with the server's error message; a 2xx body that is not the expected JSON is
//! `InvalidResponse` `model.upstream_invalid_response` (retried). Cancelling drops the request
//! at once, which closes its connection.
//!
//! ```no_run
//! use std::time::Duration;
//! use tt_adapter_provider_openai::{OpenAiConfig, OpenAiProvider};
//!
//! let provider = OpenAiProvider::new(
//!     OpenAiConfig::new("http://127.0.0.1:8080/v1")
//!         .with_default_model("qwen3")
//!         .with_api_key_from_env("OPENAI_API_KEY")
//!         .with_request_timeout(Duration::from_secs(300))
//!         .with_stream(true),
//! )?;
//! assert!(provider.prefers_streaming());
//! # Ok::<(), tt_adapter_provider_openai::OpenAiError>(())
//! ```

mod config;
mod provider;
mod request;
mod response;
mod settings;
mod stream;
mod window;

pub use config::{
    DEFAULT_MAX_TOKENS, Dialect, HttpLimits, OpenAiConfig, OpenAiError, TokenLimitField,
};
pub use provider::{OPENAI_PROVIDER_NAME, OpenAiProvider};
