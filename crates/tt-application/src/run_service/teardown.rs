//! How a run ends: finishing (promotion of `persist/`, the run record, closing sessions),
//! cancel and failure. Every way out of the executor goes through here.
use crate::error::BestEffort;
use serde_json::{Value, json};
use tt_domain::error_codes;
use tt_domain::event::EventLevel;
use tt_domain::event_payload as payload;
use tt_domain::ids::TaskId;
use tt_domain::invocation::{AgentInvocation, InvocationStatus};
use tt_domain::run::AgentRunStatus;
use tt_domain::task::TaskStatus;

use crate::engine::context::RunContext;
use crate::engine::invocation::InvocationRuntime;
use crate::error::{ApplicationError, ApplicationResult};
use crate::handoff_chain::{settle_open_handoffs, settle_task};

use super::AgentRunService;

impl AgentRunService {
    /// `workspace.finish` accepted: promote `persist/`, complete the run.
    pub(super) async fn finish_run(
        &self,
        ctx: &RunContext,
        inv: &mut InvocationRuntime,
        incoming: Option<&TaskId>,
    ) -> ApplicationResult<()> {
        ctx.scheduler
            .cancel_all_unfinished(ctx, crate::engine::scheduler::RUN_STOPPED_REASON)
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
        // One finishing run of a chat at a time in this process, from the promotion until it
        // is journaled, so the one-writer rule sees what the other promoted.
        let chat_lock = self.chat_lock(&ctx.run_snapshot().await.stable_chat_id);
        let chat_guard = chat_lock.lock().await;
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
        drop(chat_guard);
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

    pub(super) async fn finalize_cancelled(
        &self,
        ctx: &RunContext,
        invocation: Option<&mut AgentInvocation>,
    ) {
        ctx.guidance
            .close(&self.events, &ctx.run_id, "run_cancel_requested")
            .await
            .best_effort("discard pending guidance");
        ctx.scheduler
            .cancel_all_unfinished(ctx, crate::engine::scheduler::RUN_STOPPED_REASON)
            .await
            .best_effort("cancel unfinished tasks");
        if let Some(invocation) = invocation {
            ctx.set_invocation_status(invocation, InvocationStatus::Cancelled)
                .await
                .best_effort("mark the invocation cancelled");
        }
        // The active owner first, so its own invocation is not settled twice.
        settle_open_handoffs(
            ctx,
            TaskStatus::Cancelled,
            "cancelled because the Agent run stopped",
        )
        .await
        .best_effort("settle open handoffs");
        // Ok(false): the run already ended some other way; its terminal event stays last.
        if !matches!(
            ctx.try_set_status(AgentRunStatus::Cancelled).await,
            Ok(false)
        ) {
            self.events
                .record(
                    &ctx.run_id,
                    EventLevel::Warn,
                    &payload::RunCancelled {
                        message: "The run was cancelled.".to_owned(),
                    },
                )
                .await
                .best_effort("journal run_cancelled");
        }
    }

    /// Ends a run after a fail-fast error: `failed`, or `partial_success` when something was
    /// already published. Best effort: a broken journal must not hide the status change.
    pub(super) async fn finalize_failure(
        &self,
        ctx: &RunContext,
        invocation: Option<&mut AgentInvocation>,
        error: &ApplicationError,
    ) {
        let discard_reason = if ctx.commits().is_empty() {
            "run_failed_before_next_model_request"
        } else {
            "run_partial_success_before_next_model_request"
        };
        ctx.guidance
            .close(&self.events, &ctx.run_id, discard_reason)
            .await
            .best_effort("discard pending guidance");
        ctx.scheduler
            .cancel_all_unfinished(ctx, crate::engine::scheduler::RUN_STOPPED_REASON)
            .await
            .best_effort("cancel unfinished tasks");
        if let Some(invocation) = invocation {
            ctx.set_invocation_status(invocation, InvocationStatus::Failed)
                .await
                .best_effort("mark the invocation failed");
        }
        settle_open_handoffs(ctx, TaskStatus::Failed, &error.to_string())
            .await
            .best_effort("settle open handoffs");
        let commits = ctx.commits();
        let failed = payload::RunFailed {
            code: error.host_code().to_owned(),
            message: error.detail(),
            technical_message: error.to_string(),
            retryable: error.is_retryable(),
            user_retryable: error.user_retryable(),
            details: error.model_detail().unwrap_or_else(|| json!({})),
        };
        // Ok(false) below: the run already ended some other way; its terminal event stays last.
        if commits.is_empty() {
            if matches!(ctx.try_set_status(AgentRunStatus::Failed).await, Ok(false)) {
                return;
            }
            if let Err(unrecorded) = self
                .events
                .record(&ctx.run_id, EventLevel::Error, &failed)
                .await
            {
                self.keep_unrecorded_failure(ctx, "run_failed", json!(failed), &unrecorded)
                    .await;
            }
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
            if matches!(
                ctx.try_set_status(AgentRunStatus::PartialSuccess).await,
                Ok(false)
            ) {
                return;
            }
            if let Err(unrecorded) = self
                .events
                .record(&ctx.run_id, EventLevel::Warn, &partial)
                .await
            {
                self.keep_unrecorded_failure(
                    ctx,
                    "run_partial_success",
                    json!(partial),
                    &unrecorded,
                )
                .await;
            }
        }
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
