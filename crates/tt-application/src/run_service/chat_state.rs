//! A conversation's persistent state (`persist/`, docs/storage.md): which promoted state is the
//! chat's latest, and the one-writer rule that keeps two runs of one chat from dropping each
//! other's update and lets exactly one of several runs finishing at once win. Both read the
//! conversation's runs (`list_chat_runs`, never the other chats'), each candidate run's promoted
//! manifest and the chat's head through the ports, and the head moves by the store's
//! compare-and-swap, so they hold on every store and across processes.

use tt_domain::ids::RunId;
use tt_domain::run::{AgentRun, AgentRunStatus};
use tt_domain::workspace::PersistentChangeSet;
use tt_ports::StorageError;

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
    /// Completed runs, and only states with changes: the update a run about to take the
    /// chat's head must not overwrite.
    ChangesOfCompleted,
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
    /// with changes to `persist/`; when no run changed anything, the newest completed run's
    /// state, which holds the files it started from (for `Counting::Completed` only).
    /// `exclude` leaves one run out (the one asking).
    pub(crate) async fn latest_chat_state(
        &self,
        stable_chat_id: &str,
        counting: Counting,
        exclude: Option<&RunId>,
    ) -> ApplicationResult<Option<PromotedState>> {
        // Only this conversation's runs: the cost does not grow with the other chats'.
        let mut candidates: Vec<AgentRun> = self
            .services
            .runs
            .list_chat_runs(stable_chat_id)
            .await?
            .into_iter()
            .filter(|run| Some(&run.id) != exclude && counts(run.status, counting))
            .collect();
        // Newest first, ties by id, as the run index lists them.
        candidates.sort_by(|a, b| {
            (std::cmp::Reverse(a.created_at), &a.id).cmp(&(std::cmp::Reverse(b.created_at), &b.id))
        });
        // By when they completed; the index lists newest runs first, which breaks ties.
        candidates.sort_by_key(|run| std::cmp::Reverse(run.updated_at));
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

    /// The one-writer rule, checked right after `run` promoted `promoted`: a run that changed
    /// `persist/` becomes the chat's state only by taking the chat's head from the run that
    /// holds it, in one compare-and-swap of the store, and only while the state it started
    /// from still is the chat's latest. Of several runs finishing at once, the first swap the
    /// store orders wins; the others then find a head held by a run still finishing and are
    /// refused, so an update is never silently replaced and never refused by both sides. A
    /// branch (`forkedFrom`) is an alternative take of its source's turn and may replace a
    /// state built on the same base as its own (docs/storage.md, "One writer per
    /// conversation").
    pub(crate) async fn check_single_writer(
        &self,
        run: &AgentRun,
        promoted: &PersistentChangeSet,
    ) -> ApplicationResult<()> {
        if promoted.changes.is_empty() {
            return Ok(());
        }
        let workspace = &self.services.workspace;
        let mut refusal = None;
        // A swap lost to a run that moved the head meanwhile is judged again against that
        // run, which is then still finishing: the next round refuses.
        for _ in 0..HEAD_ROUNDS {
            let head = workspace.chat_head(&run.workspace_id).await?;
            if head.as_ref() == Some(&run.id) {
                return Ok(());
            }
            if let Some(refused) = self.judge_head(run, head.as_ref()).await? {
                refusal = Some(refused);
                break;
            }
            if workspace
                .swap_chat_head(&run.workspace_id, head.as_ref(), &run.id)
                .await?
            {
                return Ok(());
            }
        }
        let reason = refusal.unwrap_or_else(|| {
            "other runs of this conversation kept saving persistent state meanwhile".to_owned()
        });
        Err(ApplicationError::fatal(
            tt_domain::error_codes::AGENT_PERSISTENT_STATE_CONFLICT,
            format!(
                "{reason}; this run started from {} and its changes to persist/ ({} file(s)) \
                 were not made the conversation's state and stay in this run's workspace",
                run.persist_base_state_id.as_deref().unwrap_or("no state"),
                promoted.changes.len()
            ),
        ))
    }

    /// Whether `run` may take the chat's head from `head`: `None` when it may, else why not.
    /// A head held by a run still working is that run's (it promoted and is finishing, or
    /// will be resumed); a head held by a completed run names the chat's latest state; a head
    /// held by a run that ended otherwise (or is gone) counts for nothing, and the latest
    /// state is then that of the run that most recently completed with changes.
    async fn judge_head(
        &self,
        run: &AgentRun,
        head: Option<&RunId>,
    ) -> ApplicationResult<Option<String>> {
        let holder = match head {
            Some(head) => match self.services.runs.load_run(head).await {
                Ok(holder) => Some(holder),
                Err(StorageError::NotFound { .. }) => None,
                Err(error) => return Err(error.into()),
            },
            None => None,
        };
        let latest = match holder {
            Some(holder) if !holder.status.is_terminal() => {
                return Ok(Some(format!(
                    "run {} of this conversation is saving its own changes to persistent \
                     state and took the conversation's state first",
                    holder.id
                )));
            }
            Some(holder) if holder.status == AgentRunStatus::Completed => self
                .services
                .workspace
                .promoted_state(&holder.id)
                .await?
                .map(|change_set| PromotedState {
                    run_id: holder.id.clone(),
                    change_set,
                }),
            Some(_) | None => {
                self.latest_chat_state(
                    &run.stable_chat_id,
                    Counting::ChangesOfCompleted,
                    Some(&run.id),
                )
                .await?
            }
        };
        let Some(latest) = latest else {
            return Ok(None);
        };
        let base = run.persist_base_state_id.as_deref();
        if Some(latest.change_set.state_id.as_str()) == base
            || (run.forked_from.is_some() && latest.change_set.base_state_id.as_deref() == base)
        {
            return Ok(None);
        }
        Ok(Some(format!(
            "run {} of this conversation saved persistent state {} after this run started",
            latest.run_id, latest.change_set.state_id
        )))
    }
}

/// Rounds of reading and swapping the chat's head before a run gives up (each lost swap means
/// another run took the head meanwhile, which the next round refuses on).
const HEAD_ROUNDS: usize = 3;

fn counts(status: AgentRunStatus, counting: Counting) -> bool {
    match counting {
        Counting::Completed => status == AgentRunStatus::Completed,
        Counting::ChangesOfCompleted => status == AgentRunStatus::Completed,
    }
}
