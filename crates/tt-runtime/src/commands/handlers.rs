//! One typed function per host command, re-exported as `tt_runtime::host_commands`: what a
//! surface calls for each entry of [`for_each_host_command!`](crate::for_each_host_command).
//! Each delegates to the [`AgentRuntime`] method of the same operation; the few that add
//! anything say what.

use serde_json::Value;

use tt_application::{
    AgentConversation, GuidanceReceipt, PendingSpendLimit, PendingToolApproval, RunUsage,
    SpendLimitReceipt, StartRunRequest, TimelineProjection, ToolApprovalReceipt,
};
use tt_domain::damage::{RunDamage, UnreadableRun};
use tt_domain::mcp::{McpCallOutput, McpServerConfig};
use tt_domain::profile::AgentProfileDefinition;
use tt_domain::run::AgentRun;
use tt_domain::task::AgentTaskRecord;
use tt_ports::{ChatCommitRequest, PromptAssemblyRequest};

use super::requests::*;
use crate::bridges::TranscriptEntry;
use crate::dto::{
    ConnectionSummary, HostResult, ListRunsRequest, ReadEventsRequest, ReadEventsResponse,
    ReadPromptAssemblyRequest, ResolveChatCommitRequest,
    ResolvePersistentStateMetadataUpdateRequest, ResolvePromptAssemblyRequest, WorkspaceFileDto,
};
use crate::host::{AgentRuntime, RegisterHostToolRequest, ToolSummary};
use crate::run_handle::{PendingHostRequests, RunResult};
use crate::tools::host_answers::{AnswerHostToolCallRequest, PendingHostToolCall};
use crate::{ProfileDeleted, ProfileSummary};
use tt_domain::mcp::McpServerEntry;

pub async fn start_agent_run(rt: &AgentRuntime, request: StartRunRequest) -> HostResult<AgentRun> {
    rt.start_run(request).await
}

pub async fn resume_agent_run(rt: &AgentRuntime, request: RunRef) -> HostResult<AgentRun> {
    rt.resume_run(&request.run_id).await
}

pub async fn cancel_agent_run(rt: &AgentRuntime, request: RunRef) -> HostResult<AgentRun> {
    rt.cancel_run(&request.run_id).await
}

pub async fn abandon_agent_run(rt: &AgentRuntime, request: RunRef) -> HostResult<AgentRun> {
    rt.abandon_run(&request.run_id).await
}

pub async fn fork_agent_run(
    rt: &AgentRuntime,
    request: ForkAgentRunRequest,
) -> HostResult<AgentRun> {
    rt.fork_run(&request.run_id, request.fork).await
}

pub async fn read_agent_run(rt: &AgentRuntime, request: RunRef) -> HostResult<AgentRun> {
    rt.get_run(&request.run_id).await
}

pub async fn wait_agent_run(rt: &AgentRuntime, request: RunRef) -> HostResult<AgentRun> {
    rt.wait_for_run(&request.run_id).await
}

pub async fn list_agent_runs(
    rt: &AgentRuntime,
    request: ListRunsRequest,
) -> HostResult<Vec<AgentRun>> {
    rt.list_runs(request).await
}

pub async fn list_unreadable_agent_runs(
    rt: &AgentRuntime,
    _request: NoInput,
) -> HostResult<Vec<UnreadableRun>> {
    rt.unreadable_runs().await
}

pub async fn cancel_agent_task(rt: &AgentRuntime, request: TaskRef) -> HostResult<AgentTaskRecord> {
    rt.cancel_task(&request.run_id, &request.task_id).await
}

pub async fn submit_agent_guidance(
    rt: &AgentRuntime,
    request: GuidanceRequest,
) -> HostResult<GuidanceReceipt> {
    rt.submit_guidance(&request.run_id, request.guidance).await
}

pub async fn read_agent_run_events(
    rt: &AgentRuntime,
    request: ReadEventsRequest,
) -> HostResult<ReadEventsResponse> {
    rt.read_events(request).await
}

pub async fn read_agent_timeline(
    rt: &AgentRuntime,
    request: RunRef,
) -> HostResult<TimelineProjection> {
    rt.timeline_projection(&request.run_id).await
}

pub async fn read_agent_usage(rt: &AgentRuntime, request: RunRef) -> HostResult<RunUsage> {
    rt.usage(&request.run_id).await
}

pub async fn read_agent_conversation(
    rt: &AgentRuntime,
    request: ConversationRequest,
) -> HostResult<AgentConversation> {
    rt.agent_conversation(&request.run_id, &request.invocation_id)
        .await
}

pub async fn check_agent_run(rt: &AgentRuntime, request: RunRef) -> HostResult<RunDamage> {
    rt.check_run(&request.run_id).await
}

/// Why a run ended when the journal could not keep its end (a full or read-only disk): the
/// end's payload plus `unrecordedBecause`, from this process's memory or, for a run another
/// process ran, from the run record; `None` for a run whose journal holds its end.
pub async fn read_agent_run_failure(
    rt: &AgentRuntime,
    request: RunRef,
) -> HostResult<Option<Value>> {
    if let Some(failure) = rt.unrecorded_failure(&request.run_id).await? {
        return Ok(Some(failure));
    }
    let run = rt.get_run(&request.run_id).await?;
    Ok(run.unrecorded_end.map(|end| {
        let mut payload = end.payload;
        payload["unrecordedBecause"] = serde_json::json!(end.unrecorded_because);
        payload
    }))
}

pub async fn export_agent_run_otel(rt: &AgentRuntime, request: RunRef) -> HostResult<Value> {
    rt.export_otel(&request.run_id).await
}

pub async fn read_agent_workspace_file(
    rt: &AgentRuntime,
    request: WorkspaceFileRequest,
) -> HostResult<WorkspaceFileDto> {
    rt.read_workspace_file(&request.run_id, &request.path).await
}

pub async fn list_agent_workspace_files(
    rt: &AgentRuntime,
    request: RunRef,
) -> HostResult<Vec<String>> {
    rt.list_workspace_files(&request.run_id).await
}

pub async fn read_agent_record(rt: &AgentRuntime, request: RecordRequest) -> HostResult<Value> {
    rt.read_record(&request.run_id, &request.reference).await
}

pub async fn read_agent_transcript(
    rt: &AgentRuntime,
    request: TranscriptRequest,
) -> HostResult<Vec<TranscriptEntry>> {
    rt.transcript(&request.workspace_id).await
}

pub async fn read_agent_persist_state(
    rt: &AgentRuntime,
    request: PersistStateRequest,
) -> HostResult<PersistStateAnswer> {
    Ok(PersistStateAnswer {
        state_id: rt.latest_persist_state(&request.stable_chat_id).await?,
    })
}

pub async fn list_agent_connections(
    rt: &AgentRuntime,
    _request: NoInput,
) -> HostResult<Vec<ConnectionSummary>> {
    rt.list_connections().await
}

pub async fn save_agent_connection(
    rt: &AgentRuntime,
    request: SaveConnectionRequest,
) -> HostResult<ConnectionSummary> {
    rt.save_connection(&request.name, &request.document).await
}

pub async fn remove_agent_connection(rt: &AgentRuntime, request: ConnectionName) -> HostResult<()> {
    rt.remove_connection(&request.name).await
}

pub async fn save_agent_preset_template(
    rt: &AgentRuntime,
    request: SavePresetTemplateRequest,
) -> HostResult<()> {
    rt.save_preset_template(&request.api_id, &request.name, &request.template)
        .await
}

/// Waits for the run's end and answers its outcome: the final record, why it failed, and
/// what it published.
pub async fn read_agent_run_result(rt: &AgentRuntime, request: RunRef) -> HostResult<RunResult> {
    rt.run_result(&request.run_id).await
}

/// Everything the run waits on the host for now: commits, metadata updates, prompt
/// assemblies, approvals.
pub async fn list_agent_pending_requests(
    rt: &AgentRuntime,
    request: RunRef,
) -> HostResult<PendingHostRequests> {
    rt.pending_requests(&request.run_id).await
}

pub async fn list_agent_chat_commits(
    rt: &AgentRuntime,
    request: RunRef,
) -> HostResult<Vec<ChatCommitRequest>> {
    rt.pending_commits(&request.run_id).await
}

pub async fn resolve_agent_chat_commit(
    rt: &AgentRuntime,
    request: ResolveChatCommitRequest,
) -> HostResult<()> {
    rt.resolve_chat_commit(request)
}

pub async fn resolve_agent_persistent_state_metadata_update(
    rt: &AgentRuntime,
    request: ResolvePersistentStateMetadataUpdateRequest,
) -> HostResult<()> {
    rt.resolve_agent_persistent_state_metadata_update(request)
}

pub async fn read_agent_prompt_assembly_request(
    rt: &AgentRuntime,
    request: ReadPromptAssemblyRequest,
) -> HostResult<PromptAssemblyRequest> {
    rt.read_prompt_assembly_request(request)
}

pub async fn resolve_agent_prompt_assembly(
    rt: &AgentRuntime,
    request: ResolvePromptAssemblyRequest,
) -> HostResult<()> {
    rt.resolve_prompt_assembly(request)
}

pub async fn list_agent_tool_approvals(
    rt: &AgentRuntime,
    request: RunRef,
) -> HostResult<Vec<PendingToolApproval>> {
    rt.pending_approvals(&request.run_id).await
}

pub async fn approve_agent_tool_call(
    rt: &AgentRuntime,
    request: ApproveToolCallRequest,
) -> HostResult<ToolApprovalReceipt> {
    rt.resolve_tool_approval(&request.run_id, &request.approval_id, request.resolution)
        .await
}

/// Whether the run is parked at its spend limit, and what it spent.
pub async fn read_agent_spend_limit(
    rt: &AgentRuntime,
    request: RunRef,
) -> HostResult<Option<PendingSpendLimit>> {
    rt.pending_spend_limit(&request.run_id).await
}

/// Raises the spend limit of a parked run, or refuses.
pub async fn answer_agent_spend_limit(
    rt: &AgentRuntime,
    request: AnswerSpendLimitCommand,
) -> HostResult<SpendLimitReceipt> {
    rt.answer_spend_limit(&request.run_id, request.answer).await
}

pub async fn list_agent_host_tool_calls(
    rt: &AgentRuntime,
    request: RunRef,
) -> HostResult<Vec<PendingHostToolCall>> {
    rt.pending_host_tool_calls(&request.run_id).await
}

pub async fn answer_agent_host_tool_call(
    rt: &AgentRuntime,
    request: AnswerHostToolCallRequest,
) -> HostResult<()> {
    rt.answer_host_tool_call(request)
}

pub async fn save_agent_profile(
    rt: &AgentRuntime,
    request: AgentProfileDefinition,
) -> HostResult<()> {
    rt.save_profile(request).await
}

pub async fn list_agent_profiles(
    rt: &AgentRuntime,
    _request: NoInput,
) -> HostResult<Vec<ProfileSummary>> {
    rt.list_profiles().await
}

pub async fn read_agent_profile(
    rt: &AgentRuntime,
    request: ProfileRef,
) -> HostResult<AgentProfileDefinition> {
    rt.get_profile(&request.profile_id).await
}

pub async fn delete_agent_profile(
    rt: &AgentRuntime,
    request: ProfileRef,
) -> HostResult<ProfileDeleted> {
    rt.delete_profile(&request.profile_id).await
}

pub async fn save_agent_skill_file(
    rt: &AgentRuntime,
    request: SaveSkillFileRequest,
) -> HostResult<()> {
    rt.save_skill_file(
        &request.scope,
        &request.skill_id,
        &request.path,
        &request.text,
    )
    .await
}

pub async fn list_agent_host_tools(
    rt: &AgentRuntime,
    _request: NoInput,
) -> HostResult<Vec<ToolSummary>> {
    rt.ensure_open()?;
    Ok(rt.list_host_tools())
}

pub async fn register_agent_host_tool(
    rt: &AgentRuntime,
    request: RegisterHostToolRequest,
) -> HostResult<ToolSummary> {
    rt.register_host_tool(request)
}

pub async fn add_agent_mcp_server(
    rt: &AgentRuntime,
    request: McpServerConfig,
) -> HostResult<McpServerEntry> {
    rt.add_mcp_server(request).await
}

pub async fn list_agent_mcp_servers(
    rt: &AgentRuntime,
    _request: NoInput,
) -> HostResult<Vec<McpServerEntry>> {
    rt.list_mcp_servers().await
}

pub async fn read_agent_mcp_server(
    rt: &AgentRuntime,
    request: McpServerRequest,
) -> HostResult<McpServerEntry> {
    rt.mcp_server(&request.name, request.refresh).await
}

pub async fn remove_agent_mcp_server(rt: &AgentRuntime, request: McpServerName) -> HostResult<()> {
    rt.remove_mcp_server(&request.name).await
}

pub async fn call_agent_mcp_tool(
    rt: &AgentRuntime,
    request: McpToolCallRequest,
) -> HostResult<McpCallOutput> {
    rt.call_mcp_tool(&request.server, &request.tool, request.arguments)
        .await
}
