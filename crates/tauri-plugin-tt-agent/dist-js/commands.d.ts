import type { AgentConversation, AgentRun, AgentTaskRecord, AnswerSpendLimitRequest, ChatCommitRequest, ForkRunRequest, Json, ListRunsRequest, McpCallOutput, McpServerConfig, McpServerEntry, PendingSpendLimit, PendingToolApproval, PersistentStateMetadataUpdate, PromptAssemblyRequest, ReadEventsRequest, ReadEventsResponse, ResolveChatCommitRequest, ResolveToolApprovalRequest, RunRecord, RunUsage, SpendLimitReceipt, StartRunRequest, TimelineProjection, ToolApprovalReceipt, WorkspaceFile } from './types.js';
/** A run by id. */
export interface RunRef {
    runId: string;
}
/** A call of a host-answered tool waiting for the page. */
export interface PendingHostToolCall {
    runId: string;
    callKey: string;
    tool: string;
    arguments: {
        [name: string]: Json;
    };
    answerDueMs: number;
}
export interface AnswerHostToolCallRequest {
    runId: string;
    callKey: string;
    text?: string;
    structured?: Json;
    error?: {
        code?: string;
        message: string;
    };
}
export interface ToolSummary {
    id: string;
    title?: string;
    description: string;
    inputSchema: Json;
    [field: string]: unknown;
}
/** `list_agent_pending_requests`: everything a run waits on the host for now. */
export interface PendingHostRequests {
    /** Commits to publish, oldest first, with their text. */
    commits: ChatCommitRequest[];
    /** Persistent-state metadata updates to acknowledge. */
    metadataUpdates: PersistentStateMetadataUpdate[];
    /** Prompts to assemble. */
    promptAssemblies: PromptAssemblyRequest[];
    /** Tool calls waiting for a person's approval, oldest first. */
    approvals: PendingToolApproval[];
    /** Calls of host-answered tools waiting for an answer. */
    hostToolCalls: PendingHostToolCall[];
    /** The run is parked at its spend limit until a person raises it or refuses. */
    spendLimit?: PendingSpendLimit;
}
/** Why a run failed: the code and messages of its `run_failed` or `run_partial_success`. */
export interface RunFailure {
    /** `run_failed` or `run_partial_success`. */
    eventType: string;
    code: string;
    message: string;
    technicalMessage: string;
    /** Set when the journal kept this end out (a full or read-only disk): why. */
    unrecordedBecause?: string;
}
/** One commit the host published. */
export interface PublishedCommit {
    commitId: string;
    messageId: string;
    /** The workspace file it published (`output/main.md`). */
    path: string;
    /** `replace` or `append`. */
    mode: string;
    /** The seq of its `chat_commit_completed`. */
    seq: number;
    /** The text published; absent when nothing holds it any more. */
    text?: string;
}
/** `read_agent_run_result`: how a run ended, what it published, why it failed. */
export interface RunResult {
    run: AgentRun;
    failure?: RunFailure;
    commits: PublishedCommit[];
    /** Its commits applied in order, as a chat shows the message. */
    publishedText?: string;
}
/** One profile as `list_agent_profiles` shows it. */
export interface ProfileSummary {
    id: string;
    displayName: string;
    description?: string;
    /** Built into the runtime: it cannot be deleted. */
    builtIn: boolean;
    /** A stored profile under a built-in's id. */
    replacesBuiltIn: boolean;
    /** Why a stored profile cannot be read or is not valid (`code: message`). */
    problem?: string;
}
/** `delete_agent_profile`: what was deleted. */
export interface ProfileDeleted {
    id: string;
    /** The built-in of this id is what runs naming it get from now on. */
    builtInRestored: boolean;
}
/** One published message, or one later commit to it (`read_agent_transcript`). */
export interface TranscriptEntry {
    messageId: string;
    runId: string;
    commitId: string;
    /** `replace` or `append`. */
    mode: string;
    path: string;
    content: string;
}
/** A named model connection (`list_agent_connections`). */
export interface ConnectionSummary {
    name: string;
    source: 'registered' | 'file';
    /** Non-secret: kind, base URL, model, the API key's variable name, streaming. */
    description: Json;
    /** Why a connection file cannot be used. */
    problem?: string;
}
export interface HostCommands {
    start_agent_run: [StartRunRequest, AgentRun];
    resume_agent_run: [RunRef, AgentRun];
    cancel_agent_run: [RunRef, AgentRun];
    abandon_agent_run: [RunRef, AgentRun];
    fork_agent_run: [RunRef & ForkRunRequest, AgentRun];
    read_agent_run: [RunRef, AgentRun];
    wait_agent_run: [RunRef, AgentRun];
    read_agent_run_result: [RunRef, RunResult];
    list_agent_runs: [ListRunsRequest | null, AgentRun[]];
    list_unreadable_agent_runs: [null, {
        runId: string;
        code: string;
        message: string;
    }[]];
    cancel_agent_task: [RunRef & {
        taskId: string;
    }, AgentTaskRecord];
    submit_agent_guidance: [
        RunRef & {
            text: string;
            clientGuidanceId?: string;
        },
        {
            guidanceId: string;
            runId: string;
            pendingCount: number;
            pendingChars: number;
        }
    ];
    read_agent_run_events: [ReadEventsRequest, ReadEventsResponse];
    read_agent_timeline: [RunRef, TimelineProjection];
    read_agent_usage: [RunRef, RunUsage];
    read_agent_conversation: [RunRef & {
        invocationId: string;
    }, AgentConversation];
    check_agent_run: [RunRef, {
        runId: string;
        findings: {
            code: string;
            message: string;
        }[];
        [field: string]: unknown;
    }];
    read_agent_run_failure: [RunRef, Json | null];
    export_agent_run_otel: [RunRef, Json];
    read_agent_workspace_file: [RunRef & {
        path: string;
    }, WorkspaceFile];
    list_agent_workspace_files: [RunRef, string[]];
    read_agent_record: [RunRef & {
        reference: string;
    }, RunRecord];
    read_agent_transcript: [{
        workspaceId: string;
    }, TranscriptEntry[]];
    read_agent_persist_state: [{
        stableChatId: string;
    }, {
        stateId: string | null;
    }];
    list_agent_connections: [null, ConnectionSummary[]];
    list_agent_chat_commits: [RunRef, ChatCommitRequest[]];
    resolve_agent_chat_commit: [ResolveChatCommitRequest, null];
    resolve_agent_persistent_state_metadata_update: [RunRef & {
        updateId: string;
        error?: string;
    }, null];
    read_agent_prompt_assembly_request: [RunRef & {
        assemblyId: string;
    }, PromptAssemblyRequest];
    resolve_agent_prompt_assembly: [
        RunRef & {
            assemblyId: string;
            promptSnapshot?: Json;
            error?: string;
            [field: string]: Json | undefined;
        },
        null
    ];
    list_agent_tool_approvals: [RunRef, PendingToolApproval[]];
    approve_agent_tool_call: [RunRef & {
        approvalId: string;
    } & ResolveToolApprovalRequest, ToolApprovalReceipt];
    read_agent_spend_limit: [RunRef, PendingSpendLimit | null];
    answer_agent_spend_limit: [RunRef & AnswerSpendLimitRequest, SpendLimitReceipt];
    list_agent_host_tool_calls: [RunRef, PendingHostToolCall[]];
    answer_agent_host_tool_call: [AnswerHostToolCallRequest, null];
    list_agent_pending_requests: [RunRef, PendingHostRequests];
    save_agent_profile: [{
        [field: string]: Json;
    }, null];
    list_agent_profiles: [null, ProfileSummary[]];
    read_agent_profile: [{
        profileId: string;
    }, {
        [field: string]: Json;
    }];
    delete_agent_profile: [{
        profileId: string;
    }, ProfileDeleted];
    save_agent_skill_file: [{
        scope: {
            kind: string;
            [field: string]: Json;
        };
        skillId: string;
        path: string;
        text: string;
    }, null];
    save_agent_connection: [{
        name: string;
        document: {
            [field: string]: Json;
        };
    }, ConnectionSummary];
    remove_agent_connection: [{
        name: string;
    }, null];
    save_agent_preset_template: [{
        apiId: string;
        name: string;
        template: {
            [field: string]: Json;
        };
    }, null];
    list_agent_host_tools: [null, ToolSummary[]];
    register_agent_host_tool: [
        {
            name: string;
            title?: string;
            description: string;
            inputSchema: Json;
            readsOnly?: boolean;
            idempotent?: boolean;
            askFirst?: boolean;
            maxInlineResultBytes?: number;
            answerTimeoutMs?: number;
        },
        ToolSummary
    ];
    add_agent_mcp_server: [McpServerConfig, McpServerEntry];
    list_agent_mcp_servers: [null, McpServerEntry[]];
    read_agent_mcp_server: [{
        name: string;
        refresh?: boolean;
    }, McpServerEntry];
    remove_agent_mcp_server: [{
        name: string;
    }, null];
    call_agent_mcp_tool: [{
        server: string;
        tool: string;
        arguments?: Json;
    }, McpCallOutput];
}
