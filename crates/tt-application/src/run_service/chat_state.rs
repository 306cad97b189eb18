//! A conversation's persistent state (`persist/`, docs/storage.md): which promoted state is the
//! chat's latest, and the one-writer rule that keeps two runs of one chat from dropping each
//! other's update. Both read the run index and each candidate run's promoted manifest through
//! the ports, so they hold on every store.

use tt_domain::ids::RunId;
use tt_domain::run::{AgentRun, AgentRunStatus};
use tt_domain::workspace::PersistentChangeSet;
use tt_ports::RunListPage;

use crate::error::{ApplicationError, ApplicationResult};

use super::AgentRunService;

/// A state some run of the chat promoted.
#[derive(Debug, Clone)]
pub(crate) struct PromotedState {
    pub run_id: RunId,
    pub change_set: PersistentChangeSet,
}

/// Which runs count when looking for a chat's latest state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counting {
    /// Completed runs only: what a host should start the chat's next run from.
    Completed,
    /// Completed runs and runs still working that have promoted (finishing now), and only
    /// states with changes: the update a run about to promote must not overwrite.
    ChangesOfCompletedOrFinishing,
}

impl AgentRunService {
    /// The newest promoted `persist/` state of a conversation, which its next run names as
    /// `persistBaseStateId`: the state of the run that most recently completed with changes to
    /// `persist/` or, when no completed run changed anything, the newest completed run's
    /// state. `None` when no completed run of the conversation has one (docs/storage.md).
    pub async fn latest_persist_state(
        &self,
        stable_chat_id: &str,
    ) -> ApplicationResult<Option<String>> {
        Ok(self
            .latest_chat_state(stable_chat_id, Counting::Completed, None)
            .await?
            .map(|state| state.change_set.state_id))
    }

    /// The chat's latest promoted state: the state of the run that most recently completed
    /// with changes to `persist/` (a run still finishing counts as the most recent when
    /// `counting` says so); when no run changed anything, the newest completed run's state,
    /// which holds the files it started from (for `Counting::Completed` only). `exclude` leaves one run out (the one asking).
    pub(crate) async fn latest_chat_state(
        &self,
        stable_chat_id: &str,
        counting: Counting,
        exclude: Option<&RunId>,
    ) -> ApplicationResult<Option<PromotedState>> {
        let mut candidates: Vec<AgentRun> = Vec::new();
        const PAGE: usize = 200;
        let mut offset = 0;
        loop {
            let runs = self
                .services
                .runs
                .list_runs(RunListPage {
                    offset,
                    limit: PAGE,
                })
                .await?;
            let fetched = runs.len();
            candidates.extend(runs.into_iter().filter(|run| {
                run.stable_chat_id == stable_chat_id
                    && Some(&run.id) != exclude
                    && counts(run.status, counting)
            }));
            if fetched < PAGE {
                break;
            }
            offset += fetched;
        }
        // Runs still working first (they promoted after every completed one), then by when they
        // completed; the index lists newest runs first, which breaks ties.
        candidates.sort_by_key(|run| (run.status.is_terminal(), std::cmp::Reverse(run.updated_at)));
        let mut newest_unchanged = None;
        for run in candidates {
            let Some(change_set) = self.services.workspace.promoted_state(&run.id).await? else {
                continue;
            };
            let state = PromotedState {
                run_id: run.id.clone(),
                change_set,
            };
            if !state.change_set.changes.is_empty() {
                return Ok(Some(state));
            }
            if newest_unchanged.is_none()
                && counting == Counting::Completed
                && run.status == AgentRunStatus::Completed
            {
                newest_unchanged = Some(state);
            }
        }
        Ok(newest_unchanged)
    }

    /// The one-writer rule, checked under the chat's lock right after `run` promoted
    /// `promoted`: a run that changed `persist/` may become the chat's latest state only when
    /// the state it started from still is, so an update made meanwhile by another run of the
    /// chat is never silently replaced. A branch (`forkedFrom`) is an alternative take of its
    /// source's turn and may replace a state built on the same base as its own.
    pub(crate) async fn check_single_writer(
        &self,
        run: &AgentRun,
        promoted: &PersistentChangeSet,
    ) -> ApplicationResult<()> {
        if promoted.changes.is_empty() {
            return Ok(());
        }
        let Some(latest) = self
            .latest_chat_state(
                &run.stable_chat_id,
                Counting::ChangesOfCompletedOrFinishing,
                Some(&run.id),
            )
            .await?
        else {
            return Ok(());
        };
        let base = run.persist_base_state_id.as_deref();
        if Some(latest.change_set.state_id.as_str()) == base {
            return Ok(());
        }
        if run.forked_from.is_some() && latest.change_set.base_state_id.as_deref() == base {
            return Ok(());
        }
        Err(ApplicationError::fatal(
            tt_domain::error_codes::AGENT_PERSISTENT_STATE_CONFLICT,
            format!(
                "run {} of this conversation saved persistent state {} after this run started \
                 from {}; this run's changes to persist/ ({} file(s)) were not made the \
                 conversation's state and stay in this run's workspace",
                latest.run_id,
                latest.change_set.state_id,
                base.unwrap_or("no state"),
                promoted.changes.len()
            ),
        ))
    }

    /// The lock one chat's finishing runs take in turn, so that the rule above sees what the
    /// other run promoted (runs of one chat in other processes are not covered: docs/storage.md).
    pub(crate) fn chat_lock(&self, stable_chat_id: &str) -> std::sync::Arc<tokio::sync::Mutex<()>> {
        let mut locks = self
            .chat_locks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Locks of chats nobody holds are dropped so the map stays small.
        locks.retain(|_, lock| std::sync::Arc::strong_count(lock) > 1);
        std::sync::Arc::clone(locks.entry(stable_chat_id.to_owned()).or_default())
    }
}

fn counts(status: AgentRunStatus, counting: Counting) -> bool {
    match counting {
        Counting::Completed => status == AgentRunStatus::Completed,
        Counting::ChangesOfCompletedOrFinishing => {
            status == AgentRunStatus::Completed || !status.is_terminal()
        }
    }
}
