//! HTTP plumbing shared by the HTTP model-provider adapters: a JSON POST under a cancel token
//! and a timeout, classification of failures into `ModelError`, an SSE decoder, and the control
//! flow of a whole or streamed call (`exchange`), parameterised by the adapter's wire format.
//!
//! Not an adapter itself: it knows only tt-domain and tt-ports (and the HTTP client), so the
//! adapters can share it without depending on one another. With the `test-support` feature
//! (dev-dependencies only) it also carries the 127.0.0.1 test server, a strict fake of
//! llama.cpp's server (`llama_fake`) and the fixtures both adapters' tests use.

pub mod dropped;
pub mod exchange;
pub mod http;
#[cfg(feature = "test-support")]
pub mod llama_fake;
pub mod probe;
mod setters;
pub mod sse;
#[cfg(feature = "test-support")]
pub mod test_fixtures;
#[cfg(feature = "test-support")]
pub mod test_server;

/// The wire format an HTTP adapter named `name` speaks, for events' `providerFormat`.
pub fn provider_format_of(name: &str) -> &str {
    match name {
        "openai" => "openai_chat_completions",
        "anthropic" => "anthropic_messages",
        other => other,
    }
}
