//! The plugin in Tauri's mock runtime: its commands invoked as a webview invokes them, through
//! the default permission set; channels observed by a channel interceptor.

// Test helpers outside #[test] functions may unwrap: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod commands;
mod dist_js;
mod permissions;
mod streams;
mod support;
mod ts_types;
