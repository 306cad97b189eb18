//! The host command table (docs/host-api.md, "The host command table"): every request/answer
//! operation a host does, one typed request and one typed answer each, serde camelCase, listed
//! once in [`for_each_host_command!`]. Each surface maps the table instead of the runtime's
//! methods: `tt-host-http` (REST routes and `POST /api/commands/{name}`) and the Tauri plugin
//! (one `#[tauri::command]` per entry) expand the same list, so a command added here reaches
//! both, and nothing is mapped twice.
//!
//! Live streams (a run's events, run updates, host-tool calls as they wait) are not requests
//! with one answer; each surface carries them its own way (SSE, a Tauri channel).

pub mod handlers;
mod requests;

pub use requests::{
    AnswerSpendLimitCommand, ApproveToolCallRequest, ConnectionName, ConversationRequest,
    ForkAgentRunRequest, GuidanceRequest, JsonValue, McpServerName, McpServerRequest,
    McpToolCallRequest, NoInput, PersistStateAnswer, PersistStateRequest, ProfileRef,
    RecordRequest, RunRef, SaveConnectionRequest, SavePresetTemplateRequest, SaveSkillFileRequest,
    TaskRef, TranscriptRequest, WorkspaceFileRequest,
};

use crate::dto::{HostError, HostResult};
use crate::host::AgentRuntime;
use tt_domain::error_codes;

/// Calls `$callback!` with every host command as `(name, RequestType, AnswerType)`, in the
/// table's order. The types are paths that resolve anywhere (`$crate::…`); `()` answers
/// nothing. `tt_runtime::host_commands::<name>(&runtime, request)` runs one command typed;
/// [`AgentRuntime::execute_command`] runs one by name with JSON.
#[macro_export]
macro_rules! for_each_host_command {
    ($callback:ident) => {
        $callback! {
            // Runs.
            (start_agent_run, $crate::StartRunRequest, $crate::AgentRun),
            (resume_agent_run, $crate::RunRef, $crate::AgentRun),
            (cancel_agent_run, $crate::RunRef, $crate::AgentRun),
            (abandon_agent_run, $crate::RunRef, $crate::AgentRun),
            (fork_agent_run, $crate::ForkAgentRunRequest, $crate::AgentRun),
            (read_agent_run, $crate::RunRef, $crate::AgentRun),
            (wait_agent_run, $crate::RunRef, $crate::AgentRun),
            (read_agent_run_result, $crate::RunRef, $crate::RunResult),
            (list_agent_runs, $crate::ListRunsRequest, ::std::vec::Vec<$crate::AgentRun>),
            (list_unreadable_agent_runs, $crate::NoInput, ::std::vec::Vec<$crate::UnreadableRun>),
            (cancel_agent_task, $crate::TaskRef, $crate::AgentTaskRecord),
            (submit_agent_guidance, $crate::GuidanceRequest, $crate::GuidanceReceipt),
            // Reading a run.
            (read_agent_run_events, $crate::ReadEventsRequest, $crate::ReadEventsResponse),
            (read_agent_timeline, $crate::RunRef, $crate::TimelineProjection),
            (read_agent_usage, $crate::RunRef, $crate::RunUsage),
            (read_agent_conversation, $crate::ConversationRequest, $crate::AgentConversation),
            (check_agent_run, $crate::RunRef, $crate::RunDamage),
            (read_agent_run_failure, $crate::RunRef, ::std::option::Option<$crate::JsonValue>),
            (export_agent_run_otel, $crate::RunRef, $crate::JsonValue),
            (read_agent_workspace_file, $crate::WorkspaceFileRequest, $crate::WorkspaceFileDto),
            (list_agent_workspace_files, $crate::RunRef, ::std::vec::Vec<::std::string::String>),
            (read_agent_record, $crate::RecordRequest, $crate::JsonValue),
            (read_agent_transcript, $crate::TranscriptRequest, ::std::vec::Vec<$crate::TranscriptEntry>),
            (read_agent_persist_state, $crate::PersistStateRequest, $crate::PersistStateAnswer),
            (list_agent_connections, $crate::NoInput, ::std::vec::Vec<$crate::ConnectionSummary>),
            // What a run waits on the host for, and the answers.
            (list_agent_pending_requests, $crate::RunRef, $crate::PendingHostRequests),
            (list_agent_chat_commits, $crate::RunRef, ::std::vec::Vec<$crate::ChatCommitRequest>),
            (resolve_agent_chat_commit, $crate::ResolveChatCommitRequest, ()),
            (resolve_agent_persistent_state_metadata_update, $crate::ResolvePersistentStateMetadataUpdateRequest, ()),
            (read_agent_prompt_assembly_request, $crate::ReadPromptAssemblyRequest, $crate::PromptAssemblyRequest),
            (resolve_agent_prompt_assembly, $crate::ResolvePromptAssemblyRequest, ()),
            (list_agent_tool_approvals, $crate::RunRef, ::std::vec::Vec<$crate::PendingToolApproval>),
            (approve_agent_tool_call, $crate::ApproveToolCallRequest, $crate::ToolApprovalReceipt),
            (read_agent_spend_limit, $crate::RunRef, ::std::option::Option<$crate::PendingSpendLimit>),
            (answer_agent_spend_limit, $crate::AnswerSpendLimitCommand, $crate::SpendLimitReceipt),
            (list_agent_host_tool_calls, $crate::RunRef, ::std::vec::Vec<$crate::PendingHostToolCall>),
            (answer_agent_host_tool_call, $crate::AnswerHostToolCallRequest, ()),
            // Profiles and skills.
            (save_agent_profile, $crate::AgentProfileDefinition, ()),
            (list_agent_profiles, $crate::NoInput, ::std::vec::Vec<$crate::ProfileSummary>),
            (read_agent_profile, $crate::ProfileRef, $crate::AgentProfileDefinition),
            (delete_agent_profile, $crate::ProfileRef, $crate::ProfileDeleted),
            (save_agent_skill_file, $crate::SaveSkillFileRequest, ()),
            // Connections and preset templates.
            (save_agent_connection, $crate::SaveConnectionRequest, $crate::ConnectionSummary),
            (remove_agent_connection, $crate::ConnectionName, ()),
            (save_agent_preset_template, $crate::SavePresetTemplateRequest, ()),
            // Tools from outside.
            (list_agent_host_tools, $crate::NoInput, ::std::vec::Vec<$crate::ToolSummary>),
            (register_agent_host_tool, $crate::RegisterHostToolRequest, $crate::ToolSummary),
            (add_agent_mcp_server, $crate::McpServerConfig, $crate::McpServerEntry),
            (list_agent_mcp_servers, $crate::NoInput, ::std::vec::Vec<$crate::McpServerEntry>),
            (read_agent_mcp_server, $crate::McpServerRequest, $crate::McpServerEntry),
            (remove_agent_mcp_server, $crate::McpServerName, ()),
            (call_agent_mcp_tool, $crate::McpToolCallRequest, $crate::McpCallOutput),
        }
    };
}

/// Expands the table into the list of names and the JSON dispatcher.
macro_rules! define_dispatch {
    ($( ($name:ident, $request:ty, $answer:ty) ),* $(,)?) => {
        /// Every host command's name, in the table's order.
        pub const HOST_COMMANDS: &[&str] = &[$(stringify!($name)),*];

        impl AgentRuntime {
            /// Runs host command `name` with its JSON request and answers JSON: the one entry
            /// point a surface that speaks JSON needs (`tt-host-http`'s
            /// `POST /api/commands/{name}`). `host.command_unknown` for a name not in
            /// [`HOST_COMMANDS`], `host.request_invalid` for a request that does not fit the
            /// command (a command without input takes `{}` or `null`); otherwise the
            /// command's own answer or coded error.
            pub async fn execute_command(
                &self,
                name: &str,
                request: serde_json::Value,
            ) -> HostResult<serde_json::Value> {
                match name {
                    $(stringify!($name) => {
                        let request: $request = decode_request(name, request)?;
                        encode_answer(handlers::$name(self, request).await?)
                    })*
                    _ => Err(HostError::new(
                        error_codes::HOST_COMMAND_UNKNOWN,
                        format!("no host command is named `{name}`"),
                    )),
                }
            }
        }
    };
}

for_each_host_command!(define_dispatch);

fn decode_request<T: serde::de::DeserializeOwned>(
    name: &str,
    request: serde_json::Value,
) -> HostResult<T> {
    // Every request is an object: serde would read a struct from an array by position too.
    let request = match request {
        serde_json::Value::Null => serde_json::Value::Object(serde_json::Map::new()),
        object @ serde_json::Value::Object(_) => object,
        _ => {
            return Err(HostError::new(
                error_codes::HOST_REQUEST_INVALID,
                format!("the request of `{name}` must be a JSON object"),
            ));
        }
    };
    serde_json::from_value(request).map_err(|err| {
        HostError::new(
            error_codes::HOST_REQUEST_INVALID,
            format!("the request of `{name}` does not fit it: {err}"),
        )
    })
}

fn encode_answer<T: serde::Serialize>(answer: T) -> HostResult<serde_json::Value> {
    serde_json::to_value(answer).map_err(|err| {
        HostError::new(
            error_codes::AGENT_INTERNAL_ERROR,
            format!("an answer could not be written as JSON: {err}"),
        )
    })
}
