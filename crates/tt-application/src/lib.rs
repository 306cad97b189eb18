//! The tt-agent-runtime application layer: run lifecycle, the tool loop, tools, model turns.
//!
//! Knows the domain and the ports, nothing else: every side effect goes through a port handed in
//! by the composition root ([`RuntimeServices`]). [`AgentRunService`] is the facade.
//!
//! Every module is private to the crate; what other crates may use is re-exported below, so
//! the compiler reports code nothing reaches (`unreachable_pub`, `dead_code`).

pub(crate) mod approvals;
pub(crate) mod delegation;
pub(crate) mod engine;
pub(crate) mod error;
pub(crate) mod events;
pub(crate) mod fork;
pub(crate) mod guidance;
pub(crate) mod handoff_chain;
pub(crate) mod journal_read;
pub(crate) mod otel;
pub(crate) mod persist_metadata;
pub(crate) mod profiles;
pub(crate) mod prompt;
pub(crate) mod prompt_input;
pub(crate) mod registry;
pub(crate) mod replay;
pub(crate) mod resume;
pub(crate) mod run_service;
pub(crate) mod services;
pub(crate) mod skills;
pub(crate) mod spend_limit;
mod start_request;
pub(crate) mod timeline;
pub(crate) mod tools;
pub(crate) mod usage;

pub use approvals::{
    DEFAULT_DECIDED_BY, PendingToolApproval, ResolveToolApprovalRequest, ToolApprovalReceipt,
};
pub use engine::records::call_file_key;
pub use engine::streaming::MAX_DELTA_BYTES_PER_CALL;
pub use error::{ApplicationError, ApplicationResult, ToolCallError, ToolError};
pub use events::{EventSink, PendingEvent, RunEventStream};
pub use fork::{ForkChanges, ForkPoint, ForkRunRequest};
pub use guidance::{
    GuidanceReceipt, MAX_GUIDANCE_CHARS, MAX_PENDING_GUIDANCE_CHARS, MAX_PENDING_GUIDANCE_ITEMS,
    SubmitGuidanceRequest,
};
pub use otel::{AnswerExtras, OtelExtras, otlp_traces, otlp_traces_with};
pub use prompt::{agent_system_prompt, default_system_prompt, default_system_prompt_in};
pub use prompt_input::{PromptMessage, PromptRole, PromptSnapshot};
pub use registry::build_tool_snapshot;
pub use run_service::{
    AgentConversation, AgentRunService, ConversationEntry, ConversationToolCall, InheritedAnswers,
    InjectedTaskResult, ProfileDeleted, ProfileSummary, StartRunRequest,
};
pub use services::RuntimeServices;
pub use spend_limit::{
    AnswerSpendLimitRequest, PendingSpendLimit, SpendLimitDecision, SpendLimitReceipt,
};
pub use timeline::{
    DelegationEdge, TimelineInvocation, TimelineModelSwitch, TimelineProjection,
    timeline_projection,
};
pub use tt_domain::damage::{DamageFinding, RunDamage};
pub use usage::{InheritedUsage, InvocationUsage, RunUsage, UsageTotals, run_usage};
