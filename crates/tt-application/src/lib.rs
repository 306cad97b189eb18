//! The tt-agent-runtime application layer: run lifecycle, the tool loop, tools, model turns.
//!
//! Knows the domain and the ports, nothing else: every side effect goes through a port handed in
//! by the composition root.

pub mod error;
pub mod tools;

pub use error::{ApplicationError, ApplicationResult, ToolCallError, ToolError};
