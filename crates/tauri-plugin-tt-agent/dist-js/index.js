// The typed JavaScript API of tauri-plugin-tt-agent.
//
// `command(name, request)` invokes one command of the runtime's host command table
// (`plugin:tt-agent|<name>` with `{request}`), typed by `HostCommands`; a refusal rejects with
// a `HostError {code, message}`. `followRun`, `followRunUpdates` and `followHostToolCalls`
// stream over a Tauri
// `Channel`, live; `followRun` resumes after the last seq it delivered when the page comes
// back (keep `lastSeq` across a reload, e.g. in sessionStorage, and pass it as `afterSeq`).
import { Channel, invoke } from '@tauri-apps/api/core';
export * from './types.js';
export * from './commands.js';
/** The plugin's name in `plugin:tt-agent|…` and `tt-agent:…` permissions. */
export const PLUGIN = 'tt-agent';
/** A refusal: the runtime's error code (docs/errors.md) and a readable message. */
export class HostError extends Error {
    constructor(code, message) {
        super(message);
        this.name = 'HostError';
        this.code = code;
    }
}
function toHostError(err) {
    if (err !== null && typeof err === 'object' && 'code' in err && 'message' in err) {
        const { code, message } = err;
        return new HostError(String(code), String(message));
    }
    // Tauri's own refusals (a command the window's capability does not allow) are strings.
    return new HostError('tauri.refused', String(err));
}
async function call(name, args) {
    try {
        return await invoke(`plugin:${PLUGIN}|${name}`, args);
    }
    catch (err) {
        throw toHostError(err);
    }
}
/** Invokes a command of the host command table. */
export async function command(name, ...request) {
    return call(name, { request: request[0] ?? null });
}
/**
 * Follows a run: its events after `afterSeq` (replayed from the journal), then live, in seq
 * order, until its end. An unknown run rejects with `agent.not_found`.
 */
export async function followRun(request, follower) {
    let lastSeq = request.afterSeq ?? 0;
    const channel = new Channel();
    channel.onmessage = (message) => {
        switch (message.kind) {
            case 'event':
                lastSeq = message.event.seq;
                follower.onEvent(message.event);
                break;
            case 'end':
                follower.onEnd?.();
                break;
            case 'error':
                follower.onError?.(new HostError(message.code, message.message));
                break;
        }
    };
    const streamId = await call('subscribe_agent_run_events', {
        request,
        onEvent: channel
    });
    return {
        streamId,
        get lastSeq() {
            return lastSeq;
        },
        close: () => unsubscribe(streamId)
    };
}
/**
 * Follows the runs list: each run of this runtime that starts or changes status, and each run
 * another process or host writes in the same store as it is created or changes.
 */
export async function followRunUpdates(onMessage) {
    const channel = new Channel();
    channel.onmessage = onMessage;
    const streamId = await call('subscribe_agent_run_updates', { onUpdate: channel });
    return { streamId, lastSeq: 0, close: () => unsubscribe(streamId) };
}
/**
 * Follows the calls of host-answered tools as they start waiting, in any run; answer each with
 * `command('answer_agent_host_tool_call', {runId, callKey, text})`.
 */
export async function followHostToolCalls(onMessage) {
    const channel = new Channel();
    channel.onmessage = onMessage;
    const streamId = await call('subscribe_agent_host_tool_calls', { onCall: channel });
    return { streamId, lastSeq: 0, close: () => unsubscribe(streamId) };
}
/** Closes a stream; `false` when it had ended already. */
export async function unsubscribe(streamId) {
    return call('unsubscribe_agent_stream', { request: { streamId } });
}
