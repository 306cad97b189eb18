//! End-to-end scenario crate; the scenarios live in `e2e/`.
