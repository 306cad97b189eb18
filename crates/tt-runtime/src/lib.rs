//! tt-agent-runtime's composition root and host API.
//!
//! [`AgentRuntimeBuilder`] wires adapters (userdata storage under a data dir, a model provider, a
//! commit bridge) into the application; [`AgentRuntime`] is the small async API a host links in,
//! from `start_run` to `shutdown`. Every request and response type is a serde DTO in camelCase
//! JSON. `docs/host-api.md` walks through `examples/desktop-shell`, a complete embedder; an
//! embedder needs no other crate: the offline models (`ScriptedProvider`, `ScriptedScenarios`,
//! `FnProvider`) and the types the API speaks are re-exported here.
//!
//! The modules are private: what a host uses is re-exported at the crate root, so the public
//! surface is this file's `pub use` list and nothing else.

mod bridges;
mod builder;
mod commands;
mod connections;
mod dto;
mod host;
mod host_approvals;
mod host_records;
mod host_stored;
mod named_connections;
mod otel_live;
mod prompt_brokers;
mod run_handle;
mod run_updates;
mod signals;
mod store;
mod system;
mod tools;

pub use bridges::{CommitHandlerResult, TranscriptEntry};
pub use builder::{AgentRuntimeBuilder, CommitBridgeChoice, PromptBrokerChoice};
/// The host command table (docs/host-api.md, "The host command table").
pub use commands::handlers as host_commands;
pub use commands::{
    AnswerSpendLimitCommand, ApproveToolCallRequest, ConnectionName, ConversationRequest,
    ForkAgentRunRequest, GuidanceRequest, HOST_COMMANDS, JsonValue, McpServerName,
    McpServerRequest, McpToolCallRequest, NoInput, PersistStateAnswer, PersistStateRequest,
    ProfileRef, RecordRequest, RunRef, SaveConnectionRequest, SavePresetTemplateRequest,
    SaveSkillFileRequest, TaskRef, TranscriptRequest, WorkspaceFileRequest,
};
pub use connections::{ConnectionKind, ConnectionSpec, build_provider};
pub use dto::{
    ConnectionSource, ConnectionSummary, DelegationEdge, HostError, HostResult, ListRunsRequest,
    MAX_LISTED_MISSING_SEQS, ReadEventsRequest, ReadEventsResponse, ReadPromptAssemblyRequest,
    ResolveChatCommitRequest, ResolvePersistentStateMetadataUpdateRequest,
    ResolvePromptAssemblyRequest, TimelineInvocation, WorkspaceFileDto,
};
pub use host::{
    AgentRuntime, COMMIT_BRIDGE_NOT_HOST_API, EventSubscription, RUNTIME_SHUT_DOWN, SHUTDOWN_GRACE,
};
/// Tools from outside: the host's own (docs/tools.md, "Host tools") and MCP servers'.
pub use host::{RegisterHostToolRequest, ToolSummary};
pub use otel_live::{OtelExportSettings, post_json as post_otlp_json};
pub use run_handle::{
    PendingHostRequests, PublishedCommit, RunEvents, RunFailure, RunHandle, RunResult,
    TypedRunEvent,
};
pub use run_updates::{RunUpdate, RunUpdates};
pub use signals::StopSignals;
pub use store::{
    STORE_LEASE_MS_ENV, STORE_URL_ENV, StoragePorts, StoreChoice, StoreOptions, StoreRegistry,
    open_store_url, open_store_url_with, redact as redact_store_url,
};
pub use tools::host_answers::{
    AnswerHostToolCallRequest, DEFAULT_HOST_ANSWER_TIMEOUT, HostToolFailure, PendingHostToolCall,
};
pub use tools::host_tools::{HostTool, HostToolCall, HostToolError, HostToolReply};
pub use tt_domain::mcp::limits::DEFAULT_CALL_TIMEOUT_MS as MCP_DEFAULT_CALL_TIMEOUT_MS;
pub use tt_domain::mcp::{
    McpCallOutput, McpCatalog, McpServerConfig, McpServerEntry, McpToolInfo, McpTransport,
};
pub use tt_domain::tool_model::{ExternalToolFacts, SideEffect, ToolPermission};
/// What a storage adapter implements to be opened from a URL ([`StoreRegistry::register`]),
/// and the port a store keeps named model connections through.
pub use tt_ports::{ConnectionRepository, StoreFactory};
pub use tt_ports::{McpClient, ToolSourceError};

/// Re-exports a host or the CLI needs without depending on inner crates.
pub use tt_adapter_provider_cassette::{CassetteError, RecordingProvider, ReplayProvider};
pub use tt_adapter_provider_scripted::{
    FnProvider, ModelReply, ScriptedProvider, ScriptedScenarios,
};
pub use tt_adapter_storage_userdata::UserDataStore;
/// One agent's conversation (`AgentRuntime::agent_conversation`).
pub use tt_application::{
    AgentConversation, ConversationEntry, ConversationToolCall, InheritedAnswers,
    InjectedTaskResult,
};
/// The run's spend approval (docs/host-api.md, "Run spend approval").
pub use tt_application::{
    AnswerSpendLimitRequest, PendingSpendLimit, SpendLimitDecision, SpendLimitReceipt,
};
pub use tt_application::{
    DEFAULT_DECIDED_BY, PendingToolApproval, ResolveToolApprovalRequest, ToolApprovalReceipt,
};
/// Branching a run (docs/branching.md).
pub use tt_application::{ForkChanges, ForkPoint, ForkRunRequest};
pub use tt_application::{
    GuidanceReceipt, MAX_GUIDANCE_CHARS, MAX_PENDING_GUIDANCE_CHARS, MAX_PENDING_GUIDANCE_ITEMS,
    SubmitGuidanceRequest,
};
pub use tt_application::{
    InheritedUsage, InvocationUsage, PromptMessage, PromptRole, RunUsage, StartRunRequest,
    TimelineModelSwitch, TimelineProjection, UsageTotals,
};
/// Listing and deleting profiles (docs/profiles.md, "Managing profiles").
pub use tt_application::{ProfileDeleted, ProfileSummary};
pub use tt_domain::approval::{ApprovalDecision, ApprovalPolicy, ApprovalRule};
pub use tt_domain::cost::{ModelPrice, PriceTable};
/// What `check_run` and the timeline's `damage` report (docs/storage.md, "Damage").
pub use tt_domain::damage::{
    DamageFinding, RunDamage, UnreadableRun, rebuilt_record_finding, unrecorded_end_finding,
};
pub use tt_domain::error_codes::{self, ErrorClass, ErrorCode};
pub use tt_domain::event::{AgentRunEvent, EventLevel, RunEventType};
/// Typed event payloads: decode an event with `AgentRunEvent::typed_payload` (docs/events.md).
pub use tt_domain::event_payload::{self, EventPayload, RunEventPayload};
pub use tt_domain::generation::{
    GenerationSettings, ReasoningEffort, parse_assignment as parse_generation_assignment,
};
/// The ids typed payloads and records carry.
pub use tt_domain::ids::{CheckpointId, InvocationId, ProfileId, RunId, TaskId};
/// What typed payloads say of an agent: its status, kind and how it may end.
pub use tt_domain::invocation::{ExitPolicy, InvocationKind, InvocationStatus};
/// What a model provider (a `FnProvider` closure among them) receives and answers.
pub use tt_domain::model::{
    AgentModelMessage, AgentModelRequest, AgentModelResponse, ModelContentPart, ModelRole,
    ModelUsage,
};
pub use tt_domain::profile::{AgentProfileDefinition, MIN_CONTEXT_WINDOW_TOKENS};
pub use tt_domain::run::{
    AgentRun, AgentRunStatus, ConversationKind, ForkedFrom, RebuiltRecord, UnrecordedEnd,
};
pub use tt_domain::skill::{SkillScope, SkillScopeRefs};
pub use tt_domain::task::{AgentTaskRecord, TaskContinuation, TaskStatus};
pub use tt_domain::tool::{AgentToolCall, AgentToolResult, AgentToolSpec};
/// How many events `read_events` returns when asked for none, and at most.
pub use tt_ports::journal::{DEFAULT_EVENT_PAGE_LIMIT, MAX_EVENT_PAGE_LIMIT};
pub use tt_ports::{
    AssembledSettings, ChatCommitRequest, ConnectionModelInfo, DroppedSetting, ModelError,
    ModelProvider, PromptAssemblyRequest, ServerContextWindow, UnsupportedSettings,
};
