//! tt-host-http's integration tests: every endpoint over real HTTP on 127.0.0.1, and the page
//! in a real headless Chromium.

mod api;
mod browser;
mod support;
