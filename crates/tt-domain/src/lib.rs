//! The pure domain model of tt-agent-runtime.
//!
//! Everything here is plain data and rules: no I/O, no async runtime, no clocks. Other crates
//! speak in these types; adapters map their own failures and wire formats onto them.

pub mod approval;
pub mod brief;
pub mod context_window;
pub mod cost;
pub mod damage;
pub mod error;
pub mod error_codes;
pub mod event;
pub mod event_payload;
pub mod generation;
pub mod ids;
pub mod invocation;
pub mod json_writer;
pub mod mcp;
pub mod model;
pub mod model_storage;
pub mod presentation;
pub mod profile;
pub mod run;
pub mod skill;
pub mod task;
pub mod task_result;
pub mod text;
pub mod time;
pub mod tool;
pub mod tool_model;
pub mod tool_name;
pub mod transcript;
pub mod workspace;

pub use error::{DomainError, DomainResult};
