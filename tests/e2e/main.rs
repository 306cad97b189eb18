//! End-to-end scenarios: `tt-runtime` on the userdata adapter and the scripted model, exactly as
//! a host links it, with a fresh temporary data dir per test.

// Test helpers outside #[test] functions may unwrap: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod approvals;
mod cassettes;
mod chat_race;
mod chat_state;
mod cost;
mod delegation;
mod disk_full;
mod fork;
mod fork_cache;
mod fork_random;
mod golden;
mod host_api;
mod hostile_servers;
mod mcp;
mod multi_host;
mod orchestration;
mod pg_host_calls;
mod pg_restart;
mod prompt_assembly;
mod providers;
mod real_llama;
mod real_llama_window;
mod resume;
mod resume_after_end;
mod store_choice;
mod support;
mod writer_run;
