//! Integration tests of the application layer on `tt-testkit` fakes.

// Test helpers outside #[test] functions may unwrap: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

mod assembly;
mod cache_ttl;
mod cancel;
mod commit_units;
mod context_budget;
mod context_window;
mod conversation;
mod delegation;
mod disk_faults;
mod drift_and_retry;
mod fallbacks;
mod following;
mod fork;
mod fork_mode;
mod guidance;
mod handoff;
mod limits;
mod model_facing_text;
mod orchestration;
mod persist_metadata;
mod return_gate;
mod run_spend_limit;
mod runs;
mod skills;
mod slips;
mod spend_approval;
mod streaming;
mod tool_rules;
mod watchdog;
