//! Integration tests of the Anthropic provider against a local HTTP server that speaks the real
//! Messages API wire format.

// Test helpers outside #[test] functions may unwrap: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod complete;
mod failures;
mod limits;
mod settings;
mod streaming;
mod support;

tt_provider_http::http_adapter_cases!(crate::support::Adapter);
