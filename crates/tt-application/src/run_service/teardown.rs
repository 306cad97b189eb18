//! How a run ends: finishing (promotion of `persist/`, the run record, closing sessions),
//! cancel and failure. Every way out of the executor goes through here; cancel and failure
//! share one path (`finalize_stopped`), so their steps cannot drift apart.
use crate::error::BestEffort;
use serde_json::{Value, json};
use tt_domain::error_codes;
use tt_domain::event::EventLevel;
use tt_domain::event_payload as payload;
use tt_domain::event_payload::EventPayload;
use tt_domain::ids::TaskId;
use tt_domain::invocation::{AgentInvocation, InvocationStatus};
use tt_domain::run::AgentRunStatus;
use tt_domain::task::TaskStatus;

use crate::engine::context::{RunContext, RunScheduler};
use crate::engine::invocation::InvocationRuntime;
use crate::error::{ApplicationError, ApplicationResult};
use crate::handoff_chain::{settle_open_handoffs, settle_task};

use super::{AgentRunService, RunEnd};

/// The `reason` of the `run_interrupted` a run ends with when its host shuts down.
const HOST_SHUTDOWN: &str = "host_shutdown";

impl AgentRunService {
    /// `workspace.finish` accepted: promote `persist/`, complete the run.
    pub(super) async fn finish_run(
        &self,
        ctx: &RunContext,
        inv: &mut InvocationRuntime,
        incoming: Option<&TaskId>,
    ) -> ApplicationResult<()> {
        inv.scheduler
            .cancel_all_unfinished(crate::engine::scheduler::RUN_STOPPED_REASON)
            .await?;
        ctx.guidance
            .close(
                &self.events,
                &ctx.run_id,
                "run_finished_before_next_model_request",
            )
            .await?;
        if !ctx.try_set_status(AgentRunStatus::Finishing).await? {
            return Err(ApplicationError::cancelled());
        }
        let (change_set, journal) = match self.promote(ctx).await {
            Ok(promoted) => promoted,
            Err(error) => {
                self.events
                    .record(
                        &ctx.run_id,
                        EventLevel::Warn,
                        &payload::PersistentChangesCommitFailed {
                            message: error.to_string(),
                        },
                    )
                    .await?;
                return Err(error);
            }
        };
        if journal {
            self.journal_promoted(ctx, &change_set).await?;
        }
        crate::persist_metadata::bind_state_to_last_commit(
            ctx,
            &change_set,
            &promoted_changes(&change_set),
        )
        .await?;
        if ctx.cancel.is_cancelled() || !ctx.try_set_status(AgentRunStatus::Completed).await? {
            return Err(ApplicationError::cancelled());
        }
        ctx.set_invocation_status(&mut inv.invocation, InvocationStatus::Completed)
            .await?;
        if let Some(task_id) = incoming {
            settle_task(ctx, task_id, TaskStatus::Completed, None).await?;
        }
        self.events
            // An object payload, so the run's end carries `eventScope` (inv_root) and shows in
            // a journal view filtered to the root (the contract's payload is null).
            .record(
                &ctx.run_id,
                EventLevel::Info,
                &payload::RunCompleted {
                    status: AgentRunStatus::Completed,
                    commit_count: ctx.commit_count() as u64,
                },
            )
            .await?;
        Ok(())
    }

    /// Promotes the run's `persist/` and checks the one-writer rule (`chat_state`); returns the
    /// change set and whether `persistent_changes_committed` is still to be journaled (not when
    /// the interrupted process of a resumed run had journaled it).
    async fn promote(
        &self,
        ctx: &RunContext,
    ) -> ApplicationResult<(tt_domain::workspace::PersistentChangeSet, bool)> {
        let promoted = match self
            .services
            .workspace
            .promote_persist(
                &ctx.run_id,
                &ctx.persist_snapshot,
                self.services.clock.now(),
            )
            .await
        {
            Ok(change_set) => {
                tracing::debug!(
                    state_id = change_set.state_id.as_str(),
                    changes = change_set.changes.len(),
                    "persist/ promoted; journaling it"
                );
                (change_set, true)
            }
            // Resumed after the interrupted process had promoted `persist/`: that state is
            // this run's. It is read back; its event is journaled if the process died before
            // journaling it, and the host binding is asked for again.
            Err(error)
                if error.code() == error_codes::AGENT_PERSISTENT_STATE_EXISTS
                    && let Some(change_set) =
                        self.services.workspace.promoted_state(&ctx.run_id).await? =>
            {
                (change_set, !ctx.promoted_before())
            }
            Err(error) => return Err(error.into()),
        };
        self.check_single_writer(&ctx.run_snapshot().await, &promoted.0)
            .await?;
        Ok(promoted)
    }

    /// Journals `persistent_changes_committed` for `change_set`.
    async fn journal_promoted(
        &self,
        ctx: &RunContext,
        change_set: &tt_domain::workspace::PersistentChangeSet,
    ) -> ApplicationResult<()> {
        self.events
            .record(
                &ctx.run_id,
                EventLevel::Info,
                &payload::PersistentChangesCommitted {
                    state_id: change_set.state_id.clone(),
                    base_state_id: change_set.base_state_id.clone(),
                    change_count: change_set.changes.len() as u64,
                    changes: json!(promoted_changes(change_set)),
                },
            )
            .await?;
        Ok(())
    }

    /// Ends the run `scheduler` serves, which stops without finishing, as `end` says: closes
    /// the guidance mailbox, cancels unfinished tasks, marks the foreground `invocation`,
    /// settles open handoffs, then sets the terminal status and journals the run's end last.
    /// Best effort: a broken journal must not hide the status change.
    pub(super) async fn finalize_stopped(
        &self,
        scheduler: &std::sync::Arc<RunScheduler>,
        invocation: Option<&mut AgentInvocation>,
        end: RunEnd<'_>,
    ) {
        let ctx = scheduler.host().as_ref();
        // How far the run got and the last seq it wrote before its stop, for a shutdown's
        // `run_interrupted` (as a recovery states them for an owner that went away).
        let previous_status = ctx.run_snapshot().await.status;
        let last_seq = match end {
            RunEnd::ShutDown => self
                .services
                .journal
                .last_seq(&ctx.run_id)
                .await
                .unwrap_or_default(),
            _ => 0,
        };
        let discard_reason = match end {
            RunEnd::Cancelled => "run_cancel_requested",
            RunEnd::ShutDown => "host_shutdown",
            RunEnd::Failed(_) if ctx.commits().is_empty() => "run_failed_before_next_model_request",
            RunEnd::Failed(_) => "run_partial_success_before_next_model_request",
        };
        ctx.guidance
            .close(&self.events, &ctx.run_id, discard_reason)
            .await
            .best_effort("discard pending guidance");
        scheduler
            .cancel_all_unfinished(crate::engine::scheduler::RUN_STOPPED_REASON)
            .await
            .best_effort("cancel unfinished tasks");
        if let Some(invocation) = invocation {
            // A shutdown stops the agent as a cancel does: `resume_run` reopens an
            // `interrupted` run whose foreground agent ended so where it stopped
            // (`reopen_run::unwritten_end`).
            let (status, step) = match end {
                RunEnd::Cancelled | RunEnd::ShutDown => {
                    (InvocationStatus::Cancelled, "mark the invocation cancelled")
                }
                RunEnd::Failed(_) => (InvocationStatus::Failed, "mark the invocation failed"),
            };
            ctx.set_invocation_status(invocation, status)
                .await
                .best_effort(step);
        }
        // The active owner first, so its own invocation is not settled twice.
        let (task_status, reason) = match end {
            RunEnd::Cancelled | RunEnd::ShutDown => (
                TaskStatus::Cancelled,
                "cancelled because the Agent run stopped".to_owned(),
            ),
            RunEnd::Failed(error) => (TaskStatus::Failed, error.to_string()),
        };
        settle_open_handoffs(ctx, task_status, &reason)
            .await
            .best_effort("settle open handoffs");
        self.journal_stop(ctx, end, previous_status, last_seq).await;
    }

    /// Journals the end of a run that stopped without finishing: `run_cancelled`,
    /// `run_interrupted` for a shutdown, else `run_failed` (or `run_partial_success` when
    /// something was published, which stays), each after the terminal status.
    async fn journal_stop(
        &self,
        ctx: &RunContext,
        end: RunEnd<'_>,
        previous_status: AgentRunStatus,
        last_seq: u64,
    ) {
        let error = match end {
            RunEnd::Cancelled => {
                let cancelled = payload::RunCancelled {
                    message: "The run was cancelled.".to_owned(),
                };
                // A cancel that cannot be journaled is only logged; a failure is kept below.
                let ended = AgentRunStatus::Cancelled;
                self.journal_end_or_log(ctx, ended, &cancelled, "journal run_cancelled")
                    .await;
                return;
            }
            RunEnd::ShutDown => {
                let interrupted = payload::RunInterrupted {
                    reason: HOST_SHUTDOWN.to_owned(),
                    last_seq,
                    previous_status,
                };
                let ended = AgentRunStatus::Interrupted;
                self.journal_end_or_log(ctx, ended, &interrupted, "journal run_interrupted")
                    .await;
                return;
            }
            RunEnd::Failed(error) => error,
        };
        let commits = ctx.commits();
        let failed = payload::RunFailed {
            code: error.host_code().to_string(),
            message: error.detail(),
            technical_message: error.to_string(),
            retryable: error.is_retryable(),
            user_retryable: error.user_retryable(),
            details: error.model_detail().unwrap_or_else(|| json!({})),
        };
        let unrecorded = if commits.is_empty() {
            self.journal_end(ctx, AgentRunStatus::Failed, EventLevel::Error, &failed)
                .await
                .and_then(Result::err)
                .map(|unrecorded| ("run_failed", json!(failed), unrecorded))
        } else {
            // What was published stays: retrying would publish it again.
            let partial = payload::RunPartialSuccess {
                code: failed.code,
                message: failed.message,
                technical_message: failed.technical_message,
                retryable: false,
                user_retryable: false,
                details: failed.details,
                preserved_commit_count: commits.len() as u64,
                preserved_commits: serde_json::to_value(&commits).unwrap_or(Value::Null),
            };
            let ended = AgentRunStatus::PartialSuccess;
            self.journal_end(ctx, ended, EventLevel::Warn, &partial)
                .await
                .and_then(Result::err)
                .map(|unrecorded| ("run_partial_success", json!(partial), unrecorded))
        };
        if let Some((event_type, payload, unrecorded)) = unrecorded {
            self.keep_unrecorded_failure(ctx, event_type, payload, &unrecorded)
                .await;
        }
    }

    /// Moves the run to its terminal `status` and journals `end`. `None` when the run had
    /// already ended some other way (its terminal event stays last), else what journaling
    /// `end` gave. Journaled even when the status could not be saved: the run ends so in
    /// memory.
    /// [`Self::journal_end`] at warning level for an end that is only logged (`what`) when
    /// it cannot be journaled.
    async fn journal_end_or_log<P: EventPayload>(
        &self,
        ctx: &RunContext,
        status: AgentRunStatus,
        end: &P,
        what: &'static str,
    ) {
        if let Some(Err(unjournaled)) = self.journal_end(ctx, status, EventLevel::Warn, end).await {
            Err::<(), _>(unjournaled).best_effort(what);
        }
    }

    async fn journal_end<P: EventPayload>(
        &self,
        ctx: &RunContext,
        status: AgentRunStatus,
        level: EventLevel,
        end: &P,
    ) -> Option<ApplicationResult<()>> {
        if matches!(ctx.try_set_status(status).await, Ok(false)) {
            return None;
        }
        Some(self.events.record(&ctx.run_id, level, end).await.map(drop))
    }
}

/// The changes of a promoted state as events and the host binding show them.
fn promoted_changes(change_set: &tt_domain::workspace::PersistentChangeSet) -> Vec<Value> {
    change_set
        .changes
        .iter()
        .map(|change| json!({"path": change.path, "kind": change.kind, "sha256": change.sha256}))
        .collect()
}
