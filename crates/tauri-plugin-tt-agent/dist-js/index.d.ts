import type { AgentRun, AgentRunEvent } from './types.js';
import type { HostCommands, PendingHostToolCall } from './commands.js';
export * from './types.js';
export * from './commands.js';
/** The plugin's name in `plugin:tt-agent|…` and `tt-agent:…` permissions. */
export declare const PLUGIN = "tt-agent";
/** A refusal: the runtime's error code (docs/errors.md) and a readable message. */
export declare class HostError extends Error {
    readonly code: string;
    constructor(code: string, message: string);
}
/** Invokes a command of the host command table. */
export declare function command<K extends keyof HostCommands>(name: K, ...request: HostCommands[K][0] extends null ? [] | [null] : [HostCommands[K][0]]): Promise<HostCommands[K][1]>;
/** One message of a run's event stream. */
export type RunStreamMessage = {
    kind: 'event';
    event: AgentRunEvent;
} | {
    kind: 'end';
} | {
    kind: 'error';
    code: string;
    message: string;
};
/** One message of the runs list's stream. */
export type RunUpdatesMessage = {
    kind: 'changed';
    run: AgentRun;
} | {
    kind: 'lagged';
} | {
    kind: 'end';
};
/** `subscribe_agent_run_events`'s request. */
export interface SubscribeRunEventsRequest {
    runId: string;
    /** The last seq seen; 0 (the default) replays the whole journal. */
    afterSeq?: number;
    /** Only this agent's events. */
    invocationId?: string | null;
    /** Follow past an end a resume may undo. */
    throughResumes?: boolean;
}
/** What `followRun` calls back with. */
export interface RunFollower {
    onEvent(event: AgentRunEvent): void;
    /** The run ended (after its terminal event) or the runtime shut down. */
    onEnd?(): void;
    /** The stream failed; `followRun` again from `lastSeq`. */
    onError?(error: HostError): void;
}
/** An open stream. */
export interface Stream {
    readonly streamId: number;
    /** The last seq delivered (runs only). */
    readonly lastSeq: number;
    close(): Promise<boolean>;
}
/**
 * Follows a run: its events after `afterSeq` (replayed from the journal), then live, in seq
 * order, until its end. An unknown run rejects with `agent.not_found`.
 */
export declare function followRun(request: SubscribeRunEventsRequest, follower: RunFollower): Promise<Stream>;
/**
 * Follows the runs list: each run of this runtime that starts or changes status, and each run
 * another process or host writes in the same store as it is created or changes.
 */
export declare function followRunUpdates(onMessage: (message: RunUpdatesMessage) => void): Promise<Stream>;
/** One message of the host-tool calls stream. */
export type HostToolCallsMessage = {
    kind: 'call';
    call: PendingHostToolCall;
} | {
    kind: 'lagged';
} | {
    kind: 'end';
};
/**
 * Follows the calls of host-answered tools as they start waiting, in any run; answer each with
 * `command('answer_agent_host_tool_call', {runId, callKey, text})`.
 */
export declare function followHostToolCalls(onMessage: (message: HostToolCallsMessage) => void): Promise<Stream>;
/** Closes a stream; `false` when it had ended already. */
export declare function unsubscribe(streamId: number): Promise<boolean>;
