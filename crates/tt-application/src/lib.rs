//! The tt-agent-runtime application layer: run lifecycle, the tool loop, tools, model turns.
//!
//! Knows the domain and the ports, nothing else: every side effect goes through a port handed in
//! by the composition root ([`RuntimeServices`]). [`AgentRunService`] is the facade.

pub mod binding;
pub mod commit;
pub mod context;
pub mod delegation;
pub mod dispatch;
pub mod error;
pub mod events;
pub mod guidance;
pub mod handoff_chain;
pub mod invocation_setup;
pub mod model_turn;
pub mod persist_metadata;
pub mod profiles;
pub mod prompt;
pub mod prompt_assembly;
pub mod prompt_input;
pub mod registry;
pub mod replay;
pub mod resume;
pub mod run_service;
pub mod services;
pub mod skills;
mod start_request;
pub mod streaming;
pub mod timeline;
pub mod tool_loop;
pub mod tools;
pub mod usage;

pub use error::{ApplicationError, ApplicationResult, ToolCallError, ToolError};
pub use events::{EventSink, RunEventStream};
pub use prompt_input::{PromptMessage, PromptRole, PromptSnapshot};
pub use run_service::{AgentRunService, StartRunRequest};
pub use services::RuntimeServices;
pub use timeline::{DelegationEdge, TimelineInvocation, TimelineProjection, timeline_projection};
pub use usage::{InvocationUsage, RunUsage, UsageTotals, run_usage};
