//! STAND-IN for the host command table until it lands in tt-runtime (removed then).

use serde::{Deserialize, Serialize};
use tt_runtime::{AgentRun, AgentRuntime, HostResult, StartRunRequest};

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunRef {
    pub run_id: String,
}

#[derive(Debug, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct NoInput {}

pub const HOST_COMMANDS: &[&str] = &["start_agent_run", "cancel_agent_run", "list_agent_runs"];

macro_rules! for_each_host_command {
    ($m:ident) => {
        $m! {
            (start_agent_run, tt_runtime::StartRunRequest, tt_runtime::AgentRun),
            (cancel_agent_run, crate::table::RunRef, tt_runtime::AgentRun),
            (list_agent_runs, crate::table::NoInput, Vec<tt_runtime::AgentRun>),
        }
    };
}
pub(crate) use for_each_host_command;

pub mod host_commands {
    use super::*;
    pub async fn start_agent_run(rt: &AgentRuntime, r: StartRunRequest) -> HostResult<AgentRun> {
        rt.start_run(r).await
    }
    pub async fn cancel_agent_run(rt: &AgentRuntime, r: RunRef) -> HostResult<AgentRun> {
        rt.cancel_run(&r.run_id).await
    }
    pub async fn list_agent_runs(rt: &AgentRuntime, _r: NoInput) -> HostResult<Vec<AgentRun>> {
        rt.list_runs(Default::default()).await
    }
}
