//! The plugin in Tauri's mock runtime: its commands invoked as a webview invokes them, through
//! the default permission set; channels observed by a channel interceptor.

mod commands;
mod permissions;
mod streams;
mod support;
