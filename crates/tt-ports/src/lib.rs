//! The ports of tt-agent-runtime: every trait through which the application reaches storage,
//! the journal, models, the host and the clock, with the error types adapters map into.
//!
//! All ports use `#[async_trait]` because the composition root holds every adapter as
//! `Arc<dyn Port>` and swaps them at run time (userdata vs in-memory storage, scripted vs HTTP
//! models); native `async fn` in traits is not yet object safe.

pub mod connections;
pub mod error;
pub mod host;
pub mod interruption;
pub mod journal;
pub mod mcp_servers;
pub mod model;
mod model_decorator;
pub mod presets;
pub mod profiles;
pub mod prompt;
pub mod runs;
pub mod skills;
pub mod store_inputs;
pub mod stores;
pub mod system;
pub mod tools;
pub mod transcripts;
pub mod workspace;

pub use connections::ConnectionRepository;
pub use error::{HostBridgeError, ModelError, ModelTimeLimit, StorageError, StorageResult};
pub use host::{
    ChatCommitReceipt, ChatCommitRequest, CommitAnswer, HostCommitBridge, MetadataUpdateAnswer,
    PersistentStateMetadataUpdate,
};
pub use journal::{ChainedCommit, CommitChain, EventPage, RunJournal, RunWrite, commit_in_order};
pub use mcp_servers::McpServerRepository;
pub use model::{
    ConnectionModelInfo, DroppedSetting, ModelConnections, ModelDeltaSink, ModelProvider,
    NoConnections, ResolvedConnection, ServerContextWindow, UnsupportedSettings,
    add_provider_fields, provider_fields, provider_wire,
};
pub use presets::{PresetKey, PresetTemplateRepository};
pub use profiles::ProfileRepository;
pub use prompt::{
    AssembledSettings, PendingPromptAssembly, PromptAssemblyAnswer, PromptAssemblyBroker,
    PromptAssemblyFingerprint, PromptAssemblyRequest, PromptAssemblyScope,
};
pub use runs::{
    AgentInvocationRepository, AgentRunRepository, RunChange, RunDocument, RunListPage, RunWatch,
    SerializedDocument, TaskTransitionOutcome,
};
pub use skills::{SkillFileRef, SkillRepository};
pub use stores::{StoragePorts, StoreFactory, StoreOptions};
pub use system::{Clock, IdGenerator};
pub use tools::{
    ExternalToolCall, ExternalToolDefinition, ExternalToolOutput, ExternalTools, McpClient,
    NoExternalTools, ToolSourceError,
};
pub use transcripts::TranscriptRepository;
pub use workspace::{FileContent, WorkspaceEntry, WorkspaceRepository, WriteOutcome};

/// Cooperative cancellation passed into every wait.
pub use tokio_util::sync::CancellationToken;

// What `decorated_model_provider!` expands to names, reachable from any crate that uses it.
#[doc(hidden)]
pub use async_trait::async_trait as __async_trait;
#[doc(hidden)]
pub use tt_domain as __domain;
