import type { AgentRun, StartRunRequest } from './types.js';
export interface HostCommands {
    start_agent_run: [StartRunRequest, AgentRun];
    cancel_agent_run: [{
        runId: string;
    }, AgentRun];
    list_agent_runs: [null, AgentRun[]];
}
