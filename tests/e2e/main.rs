//! End-to-end scenarios.
