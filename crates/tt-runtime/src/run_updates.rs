//! [`RunUpdates`]: a live feed of run status changes, so a host's runs list follows runs as
//! they start, change status and end instead of polling `list_runs`.
//!
//! It is fed by the events this runtime journals: a run-status event (`run_created`,
//! `status_changed`, `run_cancel_requested`, a terminal `run_*` event) yields the run as it is
//! now; and by the store's watch of the runs other processes or hosts write
//! (`AgentRunRepository::watch_runs`: on the file store a poll of the run index and of those
//! runs' journals, on PostgreSQL LISTEN/NOTIFY), each change of one of those yielding that run
//! as it is now.

use serde::{Deserialize, Serialize};
use std::sync::Arc;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use tt_application::AgentRunService;
use tt_domain::event::{AgentRunEvent, RunEventType};
use tt_domain::run::AgentRun;
use tt_ports::{RunChange, RunWatch};

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
    /// The runs other writers of the store change; `None` when the store cannot watch.
    others: Option<Box<dyn RunWatch>>,
    service: Arc<AgentRunService>,
    streams_end: CancellationToken,
}

/// Where a change came from.
enum Source {
    Here(Result<AgentRunEvent, broadcast::error::RecvError>),
    Elsewhere(Option<RunChange>),
}

/// The next change another writer made; never, without a watch.
async fn next_elsewhere(others: &mut Option<Box<dyn RunWatch>>) -> Option<RunChange> {
    match others {
        Some(watch) => watch.next().await,
        None => std::future::pending().await,
    }
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
        let others = service.services().runs.watch_runs();
        Self {
            events,
            others,
            service,
            streams_end,
        }
    }

    /// The next change, or `None` once the runtime has shut down.
    pub async fn next(&mut self) -> Option<RunUpdate> {
        loop {
            // Biased: once the runtime has shut down, updates still buffered are not given.
            let source = tokio::select! {
                biased;
                () = self.streams_end.cancelled() => return None,
                received = self.events.recv() => Source::Here(received),
                change = next_elsewhere(&mut self.others) => Source::Elsewhere(change),
            };
            let changed = match source {
                Source::Here(Ok(event)) if changes_run_status(&event.event_type) => event.run_id,
                Source::Here(Ok(_)) => continue,
                Source::Here(Err(broadcast::error::RecvError::Lagged(_)))
                | Source::Elsewhere(Some(RunChange::Lagged)) => return Some(RunUpdate::Lagged),
                Source::Here(Err(broadcast::error::RecvError::Closed)) => return None,
                Source::Elsewhere(Some(RunChange::Changed(run_id))) => run_id,
                // The store's watch ended: this process's own changes still come.
                Source::Elsewhere(None) => {
                    self.others = None;
                    continue;
                }
            };
            // A run that cannot be read right now (a storage hiccup) is skipped: its next
            // change, or the host's next `list_runs`, shows it.
            if let Ok(run) = self.service.get_run(&changed).await {
                return Some(RunUpdate::Changed(Box::new(run)));
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
