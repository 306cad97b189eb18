//! Tests of the `tt-agent` binary as a user runs it.

// Test helpers outside #[test] functions may unwrap: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod disk_full;
mod hostile;
mod live;
mod logs;
mod signals;
