//! tt-agent-runtime's composition root and host API.
//!
//! [`AgentRuntimeBuilder`] wires adapters (userdata storage under a data dir, a model provider, a
//! commit bridge) into the application; [`AgentRuntime`] is the small async API a host links in.
//! Every request and response type is a serde DTO in camelCase JSON (see `docs/host-api.md`).

pub mod bridges;
pub mod builder;
pub mod connections;
pub mod dto;
pub mod host;
pub mod named_connections;
pub mod prompt_brokers;
pub mod signals;
pub mod system;

pub use builder::{AgentRuntimeBuilder, CommitBridgeChoice, PromptBrokerChoice};
pub use connections::{ConnectionKind, ConnectionSpec, build_provider};
pub use dto::*;
pub use host::{AgentRuntime, EventSubscription};
pub use signals::StopSignals;

/// Re-exports a host or the CLI needs without depending on inner crates.
pub use tt_adapter_provider_scripted::ScriptedProvider;
pub use tt_adapter_storage_userdata::UserDataStore;
pub use tt_application::{
    InvocationUsage, PromptMessage, PromptRole, RunUsage, StartRunRequest, TimelineProjection,
    UsageTotals,
};
pub use tt_domain::event::{AgentRunEvent, EventLevel};
pub use tt_domain::profile::AgentProfileDefinition;
pub use tt_domain::run::{AgentRun, AgentRunStatus, ConversationKind};
pub use tt_domain::skill::{SkillScope, SkillScopeRefs};
pub use tt_domain::task::{AgentTaskRecord, TaskContinuation, TaskStatus};
pub use tt_ports::ModelProvider;
