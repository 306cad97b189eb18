// The serde shapes (camelCase JSON) of the runtime's types that a shell's webview works with
// most: runs, events, commits, approvals, the agent tree. The full list of event payloads is
// docs/events.md; fields this file does not name are still present on the objects.

/** JSON as the runtime sends it. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

/** An RFC 3339 UTC timestamp with milliseconds. */
export type Timestamp = string

export type AgentRunStatus =
  | 'created'
  | 'initializing_workspace'
  | 'assembling_context'
  | 'calling_model'
  | 'dispatching_tool'
  | 'applying_workspace_patch'
  | 'creating_checkpoint'
  | 'awaiting_host_commit'
  | 'awaiting_approval'
  | 'finishing'
  | 'completed'
  | 'partial_success'
  | 'cancelling'
  | 'cancelled'
  | 'failed'
  | 'interrupted'

export type PromptRole = 'system' | 'user' | 'assistant'

export interface PromptMessage {
  role: PromptRole
  content: string
}

/** `start_agent_run`'s request (docs/host-api.md, "StartRunRequest"). */
export interface StartRunRequest {
  stableChatId: string
  userRequest: string
  conversationKind?: string
  chatRef?: Json
  generationType?: Json
  profileId?: string | null
  history?: PromptMessage[]
  persistBaseStateId?: string | null
  skillScopeRefs?: { preset?: { apiId: string; name: string }; characterId?: string }
  connectionRef?: string | null
  generation?: { [setting: string]: Json }
}

export interface AgentRun {
  id: string
  workspaceId: string
  stableChatId: string
  conversationKind: string
  chatRef: Json
  generationType: Json
  profileId: string | null
  persistBaseStateId: string | null
  connectionRef?: string
  status: AgentRunStatus
  inputMessageCount: number
  forkedFrom?: { runId: string; seq: number }
  abandonedAt?: Timestamp
  unrecordedEnd?: { type: string; payload: Json; unrecordedBecause: string }
  rebuilt?: { from: string; because: string }
  createdAt: Timestamp
  updatedAt: Timestamp
  [field: string]: unknown
}

export type EventLevel = 'debug' | 'info' | 'warn' | 'error'

/** One journal event (docs/events.md lists every `type` and its payload). */
export interface AgentRunEvent {
  seq: number
  id: string
  runId: string
  timestamp: Timestamp
  level: EventLevel
  type: string
  payload: { eventScope?: { invocationId: string; relatedInvocationIds?: string[] } } & {
    [field: string]: Json | undefined
  }
}

/** A commit waiting for the shell (`pending_agent_commits`). */
export interface ChatCommitRequest {
  commitId: string
  runId: string
  invocationId: string
  callId: string
  workspaceId: string
  stableChatId: string
  chatRef: Json
  generationType: Json
  profileId: string | null
  path: string
  mode: 'replace' | 'append'
  reason: string | null
  /** The text to publish. */
  content: string
  chars: number
  words: number
  sha256: string
  checkpointId: string
}

/** The answer to a commit: a message id once published, or an error. */
export type ResolveChatCommitRequest =
  | { runId: string; commitId: string; messageId: string }
  | { runId: string; commitId: string; error: string }

/** A tool call waiting for a person (`pending_agent_approvals`). */
export interface PendingToolApproval {
  approvalId: string
  invocationId: string
  profileId: string
  round: number
  callId: string
  tool: string
  arguments: Json
  reason: string
  timeoutMs?: number
  /** `agent.delegate` only: what the delegation is expected to cost. */
  estimate?: DelegationEstimate
}

/** What a delegation is expected to cost; a dollar figure without a price is `'unknown'`. */
export interface DelegationEstimate {
  targetProfileId: string
  firstRequestTokens: number
  firstRequestUsd: number | 'unknown'
  maxRounds: number
  budgetTokens?: number
  budgetUsd: number | 'unknown'
  estimatedUsd: number | 'unknown'
}

export type ApprovalDecision =
  | { decision: 'approve' }
  | { decision: 'approve_with_arguments'; arguments: Json }
  | { decision: 'deny'; message?: string }

export type ResolveToolApprovalRequest = ApprovalDecision & { decidedBy?: string }

export interface ToolApprovalReceipt {
  approvalId: string
  decision: string
  decidedBy: string
  alreadyResolved: boolean
}

/** A run parked at its spend limit (`limits.askAboveTotalCostUsd`). */
export interface PendingSpendLimit {
  spentUsd: number
  limitUsd: number
}

/** A person's answer to a run parked at its spend limit. */
export type SpendLimitDecision = { decision: 'raise'; limitUsd: number } | { decision: 'refuse' }

export type AnswerSpendLimitRequest = SpendLimitDecision & { decidedBy?: string }

export interface SpendLimitReceipt {
  /** `raise` or `refuse`. */
  decision: string
  /** The limit in force after the answer. */
  limitUsd: number
  spentUsd: number
  decidedBy: string
}

export type InvocationStatus = string

export interface TimelineInvocation {
  invocationId: string
  parentInvocationId: string | null
  profileId: string
  kind: 'root' | 'subagent' | 'handoff'
  status: InvocationStatus
  exitPolicy: string
  createdAt: Timestamp
  updatedAt: Timestamp
  /** The fallback models it moved to, in order; absent when it stayed on its profile's. */
  modelSwitches?: TimelineModelSwitch[]
}

/** One side of a model switch: the connection and model an agent talks to. */
export interface BindingRef {
  connectionRef?: string
  modelId: string | null
  provider: string
}

/** One move of an agent to the next model of its profile's fallback chain. */
export interface TimelineModelSwitch {
  seq: number
  round: number
  fallbackIndex: number
  from: BindingRef
  to: BindingRef
  /** `retries_exhausted`, `call_deadline_exceeded`, `model_not_found` or `rate_limited`. */
  reason: string
  code: string
}

export interface DelegationEdge {
  taskId: string
  sourceInvocationId: string
  targetInvocationId: string
  targetProfileId: string
  workspaceKey: string
  continuation: string
  status: string
  resultRef: string | null
  error: string | null
  createdAt: Timestamp
  updatedAt: Timestamp
}

/** The agent tree (`read_agent_timeline`). */
export interface TimelineProjection {
  foregroundInvocationIds: string[]
  invocations: TimelineInvocation[]
  delegationEdges: DelegationEdge[]
  damage?: { code: string; message: string }[]
}

/** Where a branch starts (docs/branching.md). */
export type ForkPoint =
  | { kind: 'seq'; seq: number }
  | { kind: 'lastCommit' }
  | { kind: 'agentRound'; invocationId: string; round: number }

export interface ForkRunRequest {
  at: ForkPoint
  changes?: {
    guidance?: string
    connectionRef?: string
    generation?: { [setting: string]: Json }
    [change: string]: Json | undefined
  }
}

export interface WorkspaceFile {
  path: string
  text: string
  sha256: string
}

export interface ReadEventsRequest {
  runId: string
  afterSeq?: number
  beforeSeq?: number
  limit?: number
  invocationId?: string
  includeTimelineProjection?: boolean
}

export interface ReadEventsResponse {
  events: AgentRunEvent[]
  missingSeqs?: number[]
  timelineProjection?: TimelineProjection
  [field: string]: unknown
}

export interface ListRunsRequest {
  offset?: number
  limit?: number
}

/** Tokens of one model call, or summed over several. */
export interface ModelUsage {
  /** Every prompt token, cached or not; the two cache figures are parts of it. */
  inputTokens: number
  outputTokens: number
  /** Absent when 0. */
  cachedInputTokens?: number
  /** Absent when 0. */
  cacheWriteTokens?: number
}

/** What model calls spent: every usage view adds these up. */
export interface ModelSpend {
  modelCalls: number
  inputTokens: number
  outputTokens: number
  cachedInputTokens: number
  cacheWriteTokens: number
  /** US dollars for the priced calls; `null` when none had a price. */
  costUsd: number | null
  unpricedModelCalls: number
}

/** The figures of a part of a run: its model calls' spend and its tool calls. */
export interface UsageFigures extends ModelSpend {
  toolCalls: number
}

/** One agent's share of `RunUsage`. */
export interface InvocationUsage extends UsageFigures {
  invocationId: string
  failedModelCalls: number
  wallTimeMs: number
  /** The agent that delegated it (absent for the root). */
  parentInvocationId?: string
  /** Its own figures plus those of every agent under it, at any depth. */
  subtree: UsageTotals
}

/** Summed figures of a sub-tree of agents. */
export interface UsageTotals extends UsageFigures {
  /** From the first start to the last end of any agent in it. */
  wallTimeMs: number
  /** Every agent's wall time, added up. */
  agentTimeMs: number
}

/** What a branch's source had paid up to the fork point (docs/branching.md). */
export interface InheritedUsage extends UsageFigures {
  runId: string
  seq: number
  failedModelCalls: number
}

/** `read_agent_usage`: what a run used (a branch: what it paid itself; `inherited` apart). */
export interface RunUsage extends ModelSpend {
  failedModelCalls: number
  byInvocation: InvocationUsage[]
  inherited?: InheritedUsage
}

/** A tool call of an assistant turn, as the model wrote it. */
export interface ConversationToolCall {
  callId: string
  name: string
  arguments: Json
}

/** A delegated task whose result was added to the agent's next request. */
export interface InjectedTaskResult {
  taskId: string
  profileId: string
  status: string
  summary?: string
}

/** A branch agent's answers its source paid for (up to the fork point). */
export interface InheritedAnswers {
  seq: number
  modelCalls: number
  usage: ModelUsage
  costUsd: number | null
}

export interface ConversationSystem {
  kind: 'system'
  text: string
}
export interface ConversationBrief {
  kind: 'brief'
  text: string
}
export interface ConversationHistory {
  kind: 'history'
  role: string
  text: string
}
export interface ConversationGuidance {
  kind: 'guidance'
  round: number
  text: string
}
export interface ConversationRequested {
  kind: 'requested'
  round: number
  messageCount: number
}
export interface ConversationModelError {
  kind: 'modelError'
  round: number
  code: string
  message: string
  willRetry: boolean
}
export interface ConversationAssistant {
  kind: 'assistant'
  round: number
  text: string
  /** Absent when empty. */
  reasoning?: string
  toolCalls: ConversationToolCall[]
  usage?: ModelUsage
  costUsd: number | null
  model?: string
}
export interface ConversationToolResult {
  kind: 'toolResult'
  round: number
  callId: string
  tool: string
  text: string
  isError: boolean
  errorCode?: string
}
export interface ConversationInjectedResults {
  kind: 'injectedResults'
  round: number
  tasks: InjectedTaskResult[]
}
export interface ConversationReminder {
  kind: 'reminder'
  round: number
  attempt: number
  reasonCode: string
  text: string
}
export interface ConversationContext {
  kind: 'context'
  round: number
  text: string
}
export interface ConversationResult {
  kind: 'result'
  status: string
  result: Json
}

/** One step of an agent's conversation (`kind` tells which). */
export type ConversationEntry =
  | ConversationSystem
  | ConversationBrief
  | ConversationHistory
  | ConversationGuidance
  | ConversationRequested
  | ConversationModelError
  | ConversationAssistant
  | ConversationToolResult
  | ConversationInjectedResults
  | ConversationReminder
  | ConversationContext
  | ConversationResult

/** `read_agent_conversation`: one agent's conversation, oldest first. */
export interface AgentConversation {
  runId: string
  invocationId: string
  profileId: string
  kind: 'root' | 'subagent' | 'handoff'
  status: string
  parentInvocationId?: string
  modelCalls: number
  usage: ModelUsage
  costUsd: number | null
  inherited?: InheritedAnswers
  entries: ConversationEntry[]
}

export type TaskStatus = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled' | 'interrupted'

export interface AgentTaskBudget {
  maxRounds?: number
  maxToolCalls?: number
  timeoutSeconds?: number
  idleTimeoutSeconds?: number
  maxTokens?: number
}

/** A delegated task or a handoff (`cancel_agent_task` answers it as cancelled). */
export interface AgentTaskRecord {
  id: string
  runId: string
  parentInvocationId: string
  childInvocationId: string
  targetProfileId: string
  workspaceKey: string
  continuation: 'return_to_parent' | 'transfer_control'
  status: TaskStatus
  /** The brief: `{objective, title?, context?, expectedOutput?, …}` for a delegation, a handoff's own fields for a handoff. */
  task: { [field: string]: Json }
  budget?: AgentTaskBudget
  createdByToolCallId?: string
  resultRef?: string
  error?: string
  creationSeq: number
  createdAt: Timestamp
  updatedAt: Timestamp
}

/**
 * `read_agent_record`: a record of the run named by the reference events carry
 * (`argumentsRef`, `modelResponsePath`, …): a stored JSON document, whose shape is its kind's
 * (a model response, tool arguments or result, a snapshot; docs/storage.md).
 */
export type RunRecord = { [field: string]: Json }

/** Who a prompt assembly is for. */
export interface PromptAssemblyScope {
  runId: string
  invocationId: string
  invocationKind: 'root' | 'subagent' | 'handoff'
  parentInvocationId: string | null
  taskId: string | null
  exitPolicy: 'taskReturnRequired' | 'runFinishAllowed'
}

export interface PromptAssemblyFingerprint {
  presetSha256: string
  frozenRunInputSnapshotSha256: string
  agentTaskPromptSha256: string
}

/** A prompt the page assembles (docs/prompt-assembly.md). */
export interface PromptAssemblyRequest {
  schemaVersion: number
  kind: string
  assemblyId: string
  scope: PromptAssemblyScope
  profileId: string
  generationType: Json
  frozenRunInputSnapshot: Json
  settings: Json
  modelId: string | null
  presetRef: Json
  agentContextPolicy: Json
  agentSystemPrompt: string
  agentTaskPrompt: string
  requiredAgentPromptComponents: string[]
  jsonSchema: Json | null
  fingerprint: PromptAssemblyFingerprint
}

/** A persistent-state metadata update the host acknowledges. */
export interface PersistentStateMetadataUpdate {
  updateId: string
  runId: string
  workspaceId: string
  stableChatId: string
  chatRef: Json
  generationType: Json
  profileId: string | null
  messageId: string
  stateId: string
  baseStateId: string | null
  changeCount: number
  changes: Json
}

/** How the runtime reaches an MCP server. */
export type McpTransport =
  | { type: 'stdio'; command: string; args?: string[]; env?: { [name: string]: string }; cwd?: string }
  | { type: 'http'; url: string; headers?: { [name: string]: string } }

/** One MCP server registration (`add_agent_mcp_server`'s request). */
export interface McpServerConfig {
  name: string
  transport: McpTransport
  callTimeoutMs: number
}

export interface McpToolInfo {
  name: string
  title?: string
  description: string
  inputSchema: Json
  readOnlyHint?: boolean
  idempotentHint?: boolean
  destructiveHint?: boolean
}

export interface McpCatalog {
  server: string
  fetchedAtMs: number
  tools: McpToolInfo[]
}

/** A registered MCP server and its last catalog. */
export interface McpServerEntry {
  config: McpServerConfig
  catalog?: McpCatalog
}

/** What an MCP tool call returned. */
export interface McpCallOutput {
  text: string
  structured?: Json
  isError: boolean
}
