//! `AgentRuntime::shutdown`: the runs this runtime executes are stopped and end `interrupted`
//! (resumable by the next runtime), within a bounded time; then the streams end.

use std::sync::atomic::Ordering;
use std::time::Duration;

use tt_domain::ids::RunId;
use tt_domain::run::AgentRun;

use super::AgentRuntime;
use crate::dto::{HostError, HostResult};

/// How long [`AgentRuntime::shutdown`] waits for the runs it stops (all of them together).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

impl AgentRuntime {
    /// Settles this runtime before the host exits: stops every run it executes, each ending
    /// `interrupted` (`run_interrupted {reason: "host_shutdown"}`, resumable with
    /// [`resume_run`](Self::resume_run) by the next runtime, as after an owner exit), waits for
    /// them to stop (at most [`SHUTDOWN_GRACE`]), makes their writes durable and releases them
    /// in the store (the file store's run locks, PostgreSQL's leases), then ends every open
    /// subscription. A run this runtime no longer executes
    /// (ended, or taken over by another host) is left as it is. Returns the final records of
    /// the runs it stopped. Afterwards every call fails with `agent.runtime_shut_down` (a later
    /// `shutdown` returns an empty list); the data dir can be opened again by a new runtime.
    pub async fn shutdown(&self) -> HostResult<Vec<AgentRun>> {
        if self.shut_down.swap(true, Ordering::SeqCst) {
            return Ok(Vec::new());
        }
        let started: Vec<RunId> = std::mem::take(&mut *self.started_runs());
        // Every run is told at once; then each is waited for, all within one deadline.
        let stopping: Vec<(RunId, Option<tokio::sync::watch::Receiver<bool>>)> = started
            .into_iter()
            .map(|run_id| {
                let done = self.service.interrupt_for_shutdown(&run_id);
                (run_id, done)
            })
            .collect();
        let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
        let mut stopped = Vec::new();
        let mut first_error = None;
        for (run_id, done) in &stopping {
            let Some(mut done) = done.clone() else {
                if let Err(error) = self.release_run(run_id).await {
                    first_error.get_or_insert(error);
                }
                continue;
            };
            let ended = tokio::time::timeout_at(deadline, done.wait_for(|done| *done)).await;
            if ended.is_err() {
                // Still stopping: left to the process's exit; the next start marks the run
                // interrupted (its lock is released with the process).
                first_error.get_or_insert(HostError::new(
                    tt_domain::error_codes::AGENT_RUNTIME_SHUTDOWN_TIMED_OUT,
                    format!(
                        "run {run_id} did not stop within {} s of shutdown",
                        SHUTDOWN_GRACE.as_secs()
                    ),
                ));
                continue;
            }
            match self.service.get_run(run_id).await {
                Ok(run) => stopped.push(run),
                Err(error) => {
                    first_error.get_or_insert(error.into());
                }
            }
            if let Err(error) = self.release_run(run_id).await {
                first_error.get_or_insert(error);
            }
        }
        // The live export's last post of each stopped run goes out before the streams end
        // (its task ends with them), within what is left of the grace: a host that exits
        // right after `shutdown` loses none of their spans.
        if let Some(otel) = &self.otel {
            for run in &stopped {
                let _ = tokio::time::timeout_at(deadline, otel.flush(&run.id)).await;
            }
        }
        self.streams_end.cancel();
        // The MCP servers this runtime started stop once no run can call them.
        self.tools.mcp.client().shutdown().await;
        match first_error {
            Some(error) => Err(error),
            None => Ok(stopped),
        }
    }

    /// Settles a run that started, resumed or branched while [`shutdown`](Self::shutdown) was
    /// under way (after it had taken the list of runs to stop): stopped as shutdown stops a
    /// run, so it ends `interrupted` (`run_interrupted {reason: "host_shutdown"}`) and the next
    /// runtime can resume it, never `cancelled`. Waits for its executor (at most
    /// [`SHUTDOWN_GRACE`]), then releases it in the store; one still stopping past that is left to
    /// the process's exit, as in `shutdown`.
    pub(super) async fn stop_late_run(&self, run_id: &RunId) {
        if let Some(mut done) = self.service.interrupt_for_shutdown(run_id) {
            let waited = tokio::time::timeout(SHUTDOWN_GRACE, done.wait_for(|done| *done)).await;
            if waited.is_err() {
                return;
            }
        }
        let _ = self.release_run(run_id).await;
    }

    /// Makes what this process wrote of `run_id` durable and lets the run go
    /// (`AgentRunRepository::release_run`: the file store's lock, PostgreSQL's lease), on
    /// whichever store the runtime keeps its runs in.
    async fn release_run(&self, run_id: &RunId) -> HostResult<()> {
        self.service
            .services()
            .runs
            .release_run(run_id)
            .await
            .map_err(|error| HostError::new(error.code(), error.to_string()))
    }
}
