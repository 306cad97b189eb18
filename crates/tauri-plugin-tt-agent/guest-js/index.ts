// The typed JavaScript API of tauri-plugin-tt-agent.
//
// `command(name, request)` invokes one command of the runtime's host command table
// (`plugin:tt-agent|<name>` with `{request}`), typed by `HostCommands`; a refusal rejects with
// a `HostError {code, message}`. `followRun`, `followRunUpdates` and `followHostToolCalls`
// stream over a Tauri
// `Channel`, live; `followRun` resumes after the last seq it delivered when the page comes
// back (keep `lastSeq` across a reload, e.g. in sessionStorage, and pass it as `afterSeq`).

import { Channel, invoke } from '@tauri-apps/api/core'
import type { AgentRun, AgentRunEvent } from './types.js'
import type { HostCommands, PendingHostToolCall } from './commands.js'

export * from './types.js'
export * from './commands.js'

/** The plugin's name in `plugin:tt-agent|…` and `tt-agent:…` permissions. */
export const PLUGIN = 'tt-agent'

/** A refusal: the runtime's error code (docs/errors.md) and a readable message. */
export class HostError extends Error {
  readonly code: string
  constructor(code: string, message: string) {
    super(message)
    this.name = 'HostError'
    this.code = code
  }
}

function toHostError(err: unknown): HostError {
  if (err !== null && typeof err === 'object' && 'code' in err && 'message' in err) {
    const { code, message } = err as { code: unknown; message: unknown }
    return new HostError(String(code), String(message))
  }
  // Tauri's own refusals (a command the window's capability does not allow) are strings.
  return new HostError('tauri.refused', String(err))
}

async function call<T>(name: string, args: Record<string, unknown>): Promise<T> {
  try {
    return await invoke<T>(`plugin:${PLUGIN}|${name}`, args)
  } catch (err) {
    throw toHostError(err)
  }
}

/** Invokes a command of the host command table. */
export async function command<K extends keyof HostCommands>(
  name: K,
  ...request: HostCommands[K][0] extends null ? [] | [null] : [HostCommands[K][0]]
): Promise<HostCommands[K][1]> {
  return call<HostCommands[K][1]>(name, { request: request[0] ?? null })
}

/** One message of a run's event stream. */
export type RunStreamMessage =
  | { kind: 'event'; event: AgentRunEvent }
  | { kind: 'end' }
  | { kind: 'error'; code: string; message: string }

/** One message of the runs list's stream. */
export type RunUpdatesMessage =
  | { kind: 'changed'; run: AgentRun }
  | { kind: 'lagged' }
  | { kind: 'end' }

/** `subscribe_agent_run_events`'s request. */
export interface SubscribeRunEventsRequest {
  runId: string
  /** The last seq seen; 0 (the default) replays the whole journal. */
  afterSeq?: number
  /** Only this agent's events. */
  invocationId?: string | null
  /** Follow past an end a resume may undo. */
  throughResumes?: boolean
}

/** What `followRun` calls back with. */
export interface RunFollower {
  onEvent(event: AgentRunEvent): void
  /** The run ended (after its terminal event) or the runtime shut down. */
  onEnd?(): void
  /** The stream failed; `followRun` again from `lastSeq`. */
  onError?(error: HostError): void
}

/** An open stream. */
export interface Stream {
  readonly streamId: number
  /** The last seq delivered (runs only). */
  readonly lastSeq: number
  close(): Promise<boolean>
}

/**
 * Follows a run: its events after `afterSeq` (replayed from the journal), then live, in seq
 * order, until its end. An unknown run rejects with `agent.not_found`.
 */
export async function followRun(
  request: SubscribeRunEventsRequest,
  follower: RunFollower
): Promise<Stream> {
  let lastSeq = request.afterSeq ?? 0
  const channel = new Channel<RunStreamMessage>()
  channel.onmessage = (message) => {
    switch (message.kind) {
      case 'event':
        lastSeq = message.event.seq
        follower.onEvent(message.event)
        break
      case 'end':
        follower.onEnd?.()
        break
      case 'error':
        follower.onError?.(new HostError(message.code, message.message))
        break
    }
  }
  const streamId = await call<number>('subscribe_agent_run_events', {
    request,
    onEvent: channel
  })
  return {
    streamId,
    get lastSeq() {
      return lastSeq
    },
    close: () => unsubscribe(streamId)
  }
}

/**
 * Follows the runs list: each run of this runtime that starts or changes status, and each run
 * another process or host writes in the same store as it is created or changes.
 */
export async function followRunUpdates(
  onMessage: (message: RunUpdatesMessage) => void
): Promise<Stream> {
  const channel = new Channel<RunUpdatesMessage>()
  channel.onmessage = onMessage
  const streamId = await call<number>('subscribe_agent_run_updates', { onUpdate: channel })
  return { streamId, lastSeq: 0, close: () => unsubscribe(streamId) }
}

/** One message of the host-tool calls stream. */
export type HostToolCallsMessage =
  | { kind: 'call'; call: PendingHostToolCall }
  | { kind: 'lagged' }
  | { kind: 'end' }

/**
 * Follows the calls of host-answered tools as they start waiting, in any run; answer each with
 * `command('answer_agent_host_tool_call', {runId, callKey, text})`.
 */
export async function followHostToolCalls(
  onMessage: (message: HostToolCallsMessage) => void
): Promise<Stream> {
  const channel = new Channel<HostToolCallsMessage>()
  channel.onmessage = onMessage
  const streamId = await call<number>('subscribe_agent_host_tool_calls', { onCall: channel })
  return { streamId, lastSeq: 0, close: () => unsubscribe(streamId) }
}

/** Closes a stream; `false` when it had ended already. */
export async function unsubscribe(streamId: number): Promise<boolean> {
  return call<boolean>('unsubscribe_agent_stream', { request: { streamId } })
}
