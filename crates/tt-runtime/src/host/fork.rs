//! The host side of branching a run (docs/branching.md): `fork_run`, next to `resume_run`,
//! which the branch goes through. Its handle form, `fork`, is with the other handle forms in
//! `run_handle`.

use std::sync::atomic::Ordering;
use tt_application::ForkRunRequest;
use tt_domain::ids::RunId;
use tt_domain::run::AgentRun;

use super::{AgentRuntime, shut_down_error};
use crate::dto::HostResult;

impl AgentRuntime {
    /// Branches run `run_id` into a new run of the same chat (docs/branching.md): the branch
    /// shares the source's journal up to the fork point (`forkedFrom {runId, seq}` on its
    /// `run.json` and `run_created`), its workspace as the source's checkpoints held it then,
    /// and its agents replay their stored steps up to there (no model call, no tool run again)
    /// before they continue live, with `request.changes` applied. Returns the branch as
    /// resumed; follow it like any run. The source is only read; it may still be running.
    ///
    /// Errors: `agent.not_found`, `agent.fork_point_invalid`, `agent.fork_source_unavailable`,
    /// the guidance codes (`agent.guidance_empty`, `agent.guidance_too_large`),
    /// `agent.model_connection_not_found`, and the resume codes (`agent.resume_profile_changed`).
    pub async fn fork_run(&self, run_id: &str, request: ForkRunRequest) -> HostResult<AgentRun> {
        self.ensure_open()?;
        let run = self
            .service
            .fork_run(&RunId::from_raw(run_id), request)
            .await?;
        self.started_runs().push(run.id.clone());
        if self.shut_down.load(Ordering::SeqCst) {
            self.stop_late_run(&run.id).await;
            return Err(shut_down_error());
        }
        Ok(run)
    }
}
