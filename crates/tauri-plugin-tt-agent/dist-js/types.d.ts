/** JSON as the runtime sends it. */
export type Json = null | boolean | number | string | Json[] | {
    [key: string]: Json;
};
/** An RFC 3339 UTC timestamp with milliseconds. */
export type Timestamp = string;
export type AgentRunStatus = 'created' | 'initializing_workspace' | 'assembling_context' | 'calling_model' | 'dispatching_tool' | 'applying_workspace_patch' | 'creating_checkpoint' | 'awaiting_host_commit' | 'awaiting_approval' | 'finishing' | 'completed' | 'partial_success' | 'cancelling' | 'cancelled' | 'failed' | 'interrupted';
export type PromptRole = 'system' | 'user' | 'assistant';
export interface PromptMessage {
    role: PromptRole;
    content: string;
}
/** `start_agent_run`'s request (docs/host-api.md, "StartRunRequest"). */
export interface StartRunRequest {
    stableChatId: string;
    userRequest: string;
    conversationKind?: string;
    chatRef?: Json;
    generationType?: Json;
    profileId?: string | null;
    history?: PromptMessage[];
    persistBaseStateId?: string | null;
    skillScopeRefs?: {
        preset?: {
            apiId: string;
            name: string;
        };
        characterId?: string;
    };
    connectionRef?: string | null;
    generation?: {
        [setting: string]: Json;
    };
}
export interface AgentRun {
    id: string;
    workspaceId: string;
    stableChatId: string;
    conversationKind: string;
    chatRef: Json;
    generationType: Json;
    profileId: string | null;
    persistBaseStateId: string | null;
    connectionRef?: string;
    status: AgentRunStatus;
    inputMessageCount: number;
    forkedFrom?: {
        runId: string;
        seq: number;
    };
    abandonedAt?: Timestamp;
    unrecordedEnd?: {
        type: string;
        payload: Json;
        unrecordedBecause: string;
    };
    rebuilt?: {
        from: string;
        because: string;
    };
    createdAt: Timestamp;
    updatedAt: Timestamp;
    [field: string]: unknown;
}
export type EventLevel = 'debug' | 'info' | 'warn' | 'error';
/** One journal event (docs/events.md lists every `type` and its payload). */
export interface AgentRunEvent {
    seq: number;
    id: string;
    runId: string;
    timestamp: Timestamp;
    level: EventLevel;
    type: string;
    payload: {
        eventScope?: {
            invocationId: string;
            relatedInvocationIds?: string[];
        };
    } & {
        [field: string]: Json | undefined;
    };
}
/** A commit waiting for the shell (`pending_agent_commits`). */
export interface ChatCommitRequest {
    commitId: string;
    runId: string;
    invocationId: string;
    callId: string;
    workspaceId: string;
    stableChatId: string;
    chatRef: Json;
    generationType: Json;
    profileId: string | null;
    path: string;
    mode: 'replace' | 'append';
    reason: string | null;
    /** The text to publish. */
    content: string;
    chars: number;
    words: number;
    sha256: string;
    checkpointId: string;
}
/** The answer to a commit: a message id once published, or an error. */
export type ResolveChatCommitRequest = {
    runId: string;
    commitId: string;
    messageId: string;
} | {
    runId: string;
    commitId: string;
    error: string;
};
/** A tool call waiting for a person (`pending_agent_approvals`). */
export interface PendingToolApproval {
    approvalId: string;
    invocationId: string;
    profileId: string;
    round: number;
    callId: string;
    tool: string;
    arguments: Json;
    reason: string;
    timeoutMs?: number;
    /** `agent.delegate` only: what the delegation is expected to cost. */
    estimate?: DelegationEstimate;
}
/** What a delegation is expected to cost; a dollar figure without a price is `'unknown'`. */
export interface DelegationEstimate {
    targetProfileId: string;
    firstRequestTokens: number;
    firstRequestUsd: number | 'unknown';
    maxRounds: number;
    budgetTokens?: number;
    budgetUsd: number | 'unknown';
    estimatedUsd: number | 'unknown';
}
export type ApprovalDecision = {
    decision: 'approve';
} | {
    decision: 'approve_with_arguments';
    arguments: Json;
} | {
    decision: 'deny';
    message?: string;
};
export type ResolveToolApprovalRequest = ApprovalDecision & {
    decidedBy?: string;
};
export interface ToolApprovalReceipt {
    approvalId: string;
    decision: string;
    decidedBy: string;
    alreadyResolved: boolean;
}
export type InvocationStatus = string;
export interface TimelineInvocation {
    invocationId: string;
    parentInvocationId: string | null;
    profileId: string;
    kind: 'root' | 'subagent' | 'handoff';
    status: InvocationStatus;
    exitPolicy: string;
    createdAt: Timestamp;
    updatedAt: Timestamp;
}
export interface DelegationEdge {
    taskId: string;
    sourceInvocationId: string;
    targetInvocationId: string;
    targetProfileId: string;
    workspaceKey: string;
    continuation: string;
    status: string;
    resultRef: string | null;
    error: string | null;
    createdAt: Timestamp;
    updatedAt: Timestamp;
}
/** The agent tree (`read_agent_timeline`). */
export interface TimelineProjection {
    foregroundInvocationIds: string[];
    invocations: TimelineInvocation[];
    delegationEdges: DelegationEdge[];
    damage?: {
        code: string;
        message: string;
    }[];
}
/** Where a branch starts (docs/branching.md). */
export type ForkPoint = {
    kind: 'seq';
    seq: number;
} | {
    kind: 'lastCommit';
} | {
    kind: 'agentRound';
    invocationId: string;
    round: number;
};
export interface ForkRunRequest {
    at: ForkPoint;
    changes?: {
        guidance?: string;
        connectionRef?: string;
        generation?: {
            [setting: string]: Json;
        };
        [change: string]: Json | undefined;
    };
}
export interface WorkspaceFile {
    path: string;
    text: string;
    sha256: string;
}
export interface ReadEventsRequest {
    runId: string;
    afterSeq?: number;
    beforeSeq?: number;
    limit?: number;
    invocationId?: string;
    includeTimelineProjection?: boolean;
}
export interface ReadEventsResponse {
    events: AgentRunEvent[];
    missingSeqs?: number[];
    timelineProjection?: TimelineProjection;
    [field: string]: unknown;
}
export interface ListRunsRequest {
    offset?: number;
    limit?: number;
}
