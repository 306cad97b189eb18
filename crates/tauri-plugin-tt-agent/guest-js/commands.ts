// The host command table, typed: each command's [request, answer]. `null` as the request: the
// command takes none. A test (tests/permissions.rs) holds the keys equal to
// `tt_runtime::HOST_COMMANDS`. Types this file does not spell out are `Json`; their shapes are
// in docs/host-api.md.

import type {
  AgentRun,
  ChatCommitRequest,
  ForkRunRequest,
  Json,
  ListRunsRequest,
  PendingToolApproval,
  ReadEventsRequest,
  ReadEventsResponse,
  ResolveChatCommitRequest,
  ResolveToolApprovalRequest,
  StartRunRequest,
  TimelineProjection,
  ToolApprovalReceipt,
  WorkspaceFile
} from './types.js'

/** A run by id. */
export interface RunRef {
  runId: string
}

/** A call of a host-answered tool waiting for the page. */
export interface PendingHostToolCall {
  runId: string
  callKey: string
  tool: string
  arguments: { [name: string]: Json }
  answerDueMs: number
}

export interface AnswerHostToolCallRequest {
  runId: string
  callKey: string
  text?: string
  structured?: Json
  error?: { code?: string; message: string }
}

export interface ToolSummary {
  id: string
  title?: string
  description: string
  inputSchema: Json
  [field: string]: unknown
}

export interface HostCommands {
  // Runs.
  start_agent_run: [StartRunRequest, AgentRun]
  resume_agent_run: [RunRef, AgentRun]
  cancel_agent_run: [RunRef, AgentRun]
  abandon_agent_run: [RunRef, AgentRun]
  fork_agent_run: [RunRef & ForkRunRequest, AgentRun]
  read_agent_run: [RunRef, AgentRun]
  wait_agent_run: [RunRef, AgentRun]
  read_agent_run_result: [RunRef, Json]
  list_agent_runs: [ListRunsRequest | null, AgentRun[]]
  list_unreadable_agent_runs: [null, { runId: string; code: string; message: string }[]]
  cancel_agent_task: [RunRef & { taskId: string }, Json]
  submit_agent_guidance: [
    RunRef & { text: string; clientGuidanceId?: string },
    { guidanceId: string; runId: string; pendingCount: number; pendingChars: number }
  ]
  // Reading a run.
  read_agent_run_events: [ReadEventsRequest, ReadEventsResponse]
  read_agent_timeline: [RunRef, TimelineProjection]
  read_agent_usage: [RunRef, Json]
  read_agent_conversation: [RunRef & { invocationId: string }, Json]
  check_agent_run: [RunRef, { runId: string; findings: { code: string; message: string }[]; [field: string]: unknown }]
  read_agent_run_failure: [RunRef, Json | null]
  export_agent_run_otel: [RunRef, Json]
  read_agent_workspace_file: [RunRef & { path: string }, WorkspaceFile]
  list_agent_workspace_files: [RunRef, string[]]
  read_agent_record: [RunRef & { reference: string }, Json]
  read_agent_transcript: [{ workspaceId: string }, Json[]]
  read_agent_persist_state: [{ stableChatId: string }, { stateId: string | null }]
  list_agent_connections: [null, Json[]]
  // What a run waits on the page for, and the answers.
  list_agent_chat_commits: [RunRef, ChatCommitRequest[]]
  resolve_agent_chat_commit: [ResolveChatCommitRequest, null]
  resolve_agent_persistent_state_metadata_update: [RunRef & { updateId: string; error?: string }, null]
  read_agent_prompt_assembly_request: [RunRef & { assemblyId: string }, Json]
  resolve_agent_prompt_assembly: [
    RunRef & { assemblyId: string; promptSnapshot?: Json; error?: string; [field: string]: Json | undefined },
    null
  ]
  list_agent_tool_approvals: [RunRef, PendingToolApproval[]]
  approve_agent_tool_call: [RunRef & { approvalId: string } & ResolveToolApprovalRequest, ToolApprovalReceipt]
  list_agent_host_tool_calls: [RunRef, PendingHostToolCall[]]
  answer_agent_host_tool_call: [AnswerHostToolCallRequest, null]
  list_agent_pending_requests: [RunRef, Json]
  // Profiles and skills.
  save_agent_profile: [{ [field: string]: Json }, null]
  list_agent_profiles: [null, Json[]]
  read_agent_profile: [{ profileId: string }, { [field: string]: Json }]
  delete_agent_profile: [{ profileId: string }, Json]
  save_agent_skill_file: [{ scope: { kind: string; [field: string]: Json }; skillId: string; path: string; text: string }, null]
  // Tools from outside.
  list_agent_host_tools: [null, ToolSummary[]]
  register_agent_host_tool: [
    {
      name: string
      title?: string
      description: string
      inputSchema: Json
      readsOnly?: boolean
      idempotent?: boolean
      askFirst?: boolean
      maxInlineResultBytes?: number
      answerTimeoutMs?: number
    },
    ToolSummary
  ]
  add_agent_mcp_server: [{ [field: string]: Json }, Json]
  list_agent_mcp_servers: [null, Json[]]
  read_agent_mcp_server: [{ name: string; refresh?: boolean }, Json]
  remove_agent_mcp_server: [{ name: string }, null]
  call_agent_mcp_tool: [{ server: string; tool: string; arguments?: Json }, Json]
}
