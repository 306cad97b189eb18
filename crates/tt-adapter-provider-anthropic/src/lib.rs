//! An Anthropic Messages API model provider.
//!
//! # Requests
//!
//! `POST {baseUrl}/v1/messages` with headers `x-api-key` (when a key is configured) and
//! `anthropic-version: 2023-06-01`, and a body of `model` (the request's `model_id`, else the
//! connection's default model), `max_tokens` (configurable, default 8192), `system` (the leading
//! system/developer messages, joined by blank lines), `messages`, `tools` as
//! `{"name":<model alias>,"description","input_schema"}` with `tool_choice: {"type":"auto"}`
//! (only when tools are offered), the generation settings, `thinking` when a budget is set, and
//! `stream`.
//!
//! Messages are content blocks. An assistant turn replays its parts in order: native parts of
//! provider `anthropic` (thinking blocks with their signature, redacted thinking) unchanged,
//! text blocks, and `tool_use` blocks with the ids the API sent. Tool results become
//! `tool_result` blocks (`tool_use_id`, `content` = `AgentToolResult::to_model_payload()`,
//! `is_error` when set); consecutive turns of one role are merged, so the results of parallel
//! calls travel in one user message. Later system messages stay in place as user text.
//!
//! # Responses
//!
//! `text` blocks become text parts, `tool_use` blocks tool-call parts (a block without an id or
//! a name is `model.invalid_tool_call`; an input that is not an object, or streamed input that
//! is not valid JSON and stays a string, passes through for the runtime to answer as a
//! recoverable `model.invalid_tool_call`; such input is replayed as `{}`), and every other
//! block (`thinking`, `redacted_thinking`, server tool blocks) a
//! `ModelContentPart::Native { provider: "anthropic", value: <the block> }`. Usage's input
//! tokens are the whole prompt: the API's `input_tokens` plus `cache_read_input_tokens` (also
//! kept as the cached input tokens) and `cache_creation_input_tokens` (the cache-write
//! tokens); `stop_reason` becomes the finish reason.
//!
//! # Settings and caching
//!
//! The request's generation settings go out as `temperature` (at most 1), `top_p`, `top_k`,
//! `stop_sequences` and `thinking.budget_tokens` (`thinkingBudgetTokens`, else the
//! connection's budget); penalties, `minP`, `seed` and `reasoningEffort`, and the samplers the
//! API refuses while thinking is on, are `model.setting_unsupported` before anything is sent.
//! With prompt caching on (the default), `cache_control` breakpoints mark the last tool, the
//! system prompt and the last two user turns: four at most, the API's limit. A request whose
//! `cache_ttl` is one hour (the profile's `model.cache.ttl: "1h"`) marks each with
//! `{"type": "ephemeral", "ttl": "1h"}`; otherwise the API's default lifetime (five minutes)
//! applies and no `ttl` is sent.
//!
//! # Streaming
//!
//! [`ModelProvider::stream`](tt_ports::ModelProvider::stream) rebuilds each content block from
//! its `content_block_start` and deltas (`text_delta`, `input_json_delta`, `thinking_delta`,
//! `signature_delta`), forwarding text, thinking and tool-input fragments as they arrive.
//! [`AnthropicProvider::prefers_streaming`] tells the runtime which of the two to use.
//!
//! # Errors
//!
//! 429 and stream `rate_limit_error` are `RateLimited` (with `retry-after-ms` or `Retry-After`);
//! 408, 5xx (including 529 "overloaded"), stream `overloaded_error`/`api_error`, connection
//! failures and streams cut short are `Transient`; the request and idle timeouts are `TimedOut`
//! (`model.timeout`, retried too); other 4xx are `Rejected` with the
//! API's error message; a 2xx body that is not the expected JSON is `InvalidResponse`
//! `model.upstream_invalid_response` (retried). Cancelling drops the request at once, which
//! closes its connection.
//!
//! ```no_run
//! use tt_adapter_provider_anthropic::{AnthropicConfig, AnthropicProvider};
//!
//! let provider = AnthropicProvider::new(
//!     AnthropicConfig::default()
//!         .with_default_model("claude-sonnet-4-5")
//!         .with_api_key_from_env("ANTHROPIC_API_KEY")
//!         .with_max_tokens(16_000)
//!         .with_thinking(8_000),
//! )?;
//! assert_eq!(provider.endpoint(), "https://api.anthropic.com/v1/messages");
//! # Ok::<(), tt_adapter_provider_anthropic::AnthropicError>(())
//! ```

mod config;
mod provider;
mod request;
mod response;
mod settings;
mod stream;

pub use config::{
    ANTHROPIC_DEFAULT_BASE_URL, ANTHROPIC_VERSION, AnthropicConfig, AnthropicError,
    DEFAULT_MAX_TOKENS, HttpLimits,
};
pub use provider::{ANTHROPIC_PROVIDER_NAME, AnthropicProvider};
pub use request::MAX_CACHE_BREAKPOINTS;
