//! tt-host-http's integration tests: every endpoint over real HTTP on 127.0.0.1, and the page
//! in a real headless Chromium.

// Test helpers outside #[test] functions fail loudly too: a broken fixture is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod api;
mod browser;
mod browser_spend;
mod browser_views;
mod commands;
mod otel;
mod support;
