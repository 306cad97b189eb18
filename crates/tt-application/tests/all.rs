//! Integration tests of the application layer on `tt-testkit` fakes.

mod support;

mod cancel;
mod drift_and_retry;
mod model_facing_text;
mod runs;
mod tool_rules;
