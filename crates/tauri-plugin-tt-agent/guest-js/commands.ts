// The host command table, typed: each command's [request, answer] (`null`: no request).
// A test holds its keys equal to `tt_runtime::HOST_COMMANDS`.

import type { AgentRun, StartRunRequest } from './types.js'

export interface HostCommands {
  start_agent_run: [StartRunRequest, AgentRun]
  cancel_agent_run: [{ runId: string }, AgentRun]
  list_agent_runs: [null, AgentRun[]]
}
