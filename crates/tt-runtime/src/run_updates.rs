//! [`RunUpdates`]: a live feed of run status changes, so a host's runs list follows runs as
//! they start, change status and end instead of polling `list_runs`.
//!
//! It is fed by the events this runtime journals: a run-status event (`run_created`,
//! `status_changed`, `run_cancel_requested`, a terminal `run_*` event) yields the run as it is
//! now. Runs another process writes are not seen here (no notification crosses processes): a
//! host that also shows those re-reads `list_runs` now and then.

use serde::{Deserialize, Serialize};
use std::sync::Arc;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use tt_application::AgentRunService;
use tt_domain::event::{AgentRunEvent, RunEventType};
use tt_domain::run::AgentRun;

/// One item of [`RunUpdates`]. On the wire: `{"type": "changed", "run": {…}}` or
/// `{"type": "lagged"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "run", rename_all = "camelCase")]
#[non_exhaustive]
pub enum RunUpdate {
    /// A run started or changed status: the run as it is now.
    Changed(Box<AgentRun>),
    /// The feed fell behind (a burst of events while the host did not read) and some changes
    /// were skipped: re-read `list_runs`, then go on reading.
    Lagged,
}

/// A live feed of run status changes; see [`crate::AgentRuntime::run_updates`].
pub struct RunUpdates {
    events: broadcast::Receiver<AgentRunEvent>,
    service: Arc<AgentRunService>,
    streams_end: CancellationToken,
}

impl std::fmt::Debug for RunUpdates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunUpdates").finish_non_exhaustive()
    }
}

/// Whether an event changes what a runs list shows of its run.
fn changes_run_status(event_type: &RunEventType) -> bool {
    *event_type == RunEventType::StatusChanged || event_type.is_run_lifecycle()
}

impl RunUpdates {
    pub(crate) fn new(
        events: broadcast::Receiver<AgentRunEvent>,
        service: Arc<AgentRunService>,
        streams_end: CancellationToken,
    ) -> Self {
        Self {
            events,
            service,
            streams_end,
        }
    }

    /// The next change, or `None` once the runtime has shut down.
    pub async fn next(&mut self) -> Option<RunUpdate> {
        loop {
            // Biased: once the runtime has shut down, updates still buffered are not given.
            let received = tokio::select! {
                biased;
                () = self.streams_end.cancelled() => return None,
                received = self.events.recv() => received,
            };
            match received {
                Ok(event) if changes_run_status(&event.event_type) => {
                    // A run that cannot be read right now (a storage hiccup) is skipped: its
                    // next change, or the host's next `list_runs`, shows it.
                    if let Ok(run) = self.service.get_run(&event.run_id).await {
                        return Some(RunUpdate::Changed(Box::new(run)));
                    }
                }
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(_)) => return Some(RunUpdate::Lagged),
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{RunEventType, changes_run_status};

    #[test]
    fn only_run_status_events_change_the_runs_list() {
        for changing in [
            "run_created",
            "status_changed",
            "run_cancel_requested",
            "run_completed",
            "run_failed",
            "run_interrupted",
        ] {
            assert!(
                changes_run_status(&RunEventType::from_name(changing)),
                "{changing}"
            );
        }
        for other in [
            "agent_model_delta",
            "agent_task_started",
            "workspace_file_written",
            "no_such_event",
        ] {
            assert!(
                !changes_run_status(&RunEventType::from_name(other)),
                "{other}"
            );
        }
    }
}
