//! The run executor: prepares the root agent (at start and at a resume), runs it in the
//! background to a terminal state, and hands the outcome to teardown.
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::watch;
use tracing::Instrument;
use tt_domain::error_codes;
use tt_domain::event::EventLevel;
use tt_domain::event_payload as payload;
use tt_domain::ids::{InvocationId, RunId, TaskId};
use tt_domain::invocation::{AgentInvocation, ExitPolicy, InvocationStatus};
use tt_domain::model::AgentModelMessage;
use tt_domain::profile::ResolvedProfile;
use tt_domain::run::{AgentRun, AgentRunStatus};
use tt_domain::task::TaskStatus;
use tt_ports::RunDocument;

use crate::engine::context::{RunContext, RunScheduler};
use crate::engine::invocation::InvocationRuntime;
use crate::engine::scheduler::TaskScheduler;
use crate::engine::tool_loop::{LoopOutcome, run_tool_loop};
use crate::error::{ApplicationError, ApplicationResult, BestEffort};
use crate::handoff_chain::{prepare_handoff, settle_task};
use crate::prompt_input::PromptSnapshot;

use super::{ActiveRun, AgentRunService, RunEnd, StartRunRequest};

/// What `prepare_root` hands to the executor: the root's loop state (which holds the run's
/// scheduler, and through it the run's context), its first messages and its prompt assembly.
pub(super) type PreparedRoot = (
    InvocationRuntime,
    Vec<AgentModelMessage>,
    Option<RootAssembly>,
);

/// A root prompt still to be assembled by the host (`preset.mode = "ref"`).
pub(super) struct RootAssembly {
    pub(super) system_prompt: String,
}

/// Prepares the root agent (at run start, and again at a resume) from the run's frozen
/// conversation: its loop state, first messages, and the assembly still to ask the host for. It
/// runs on the run `scheduler` serves.
pub(super) async fn start_root(
    scheduler: &Arc<RunScheduler>,
    root: AgentInvocation,
    profile: &ResolvedProfile,
    presentation: tt_domain::run::Presentation,
    prompt_snapshot: &PromptSnapshot,
) -> ApplicationResult<(
    InvocationRuntime,
    Vec<AgentModelMessage>,
    Option<RootAssembly>,
)> {
    let ctx = scheduler.host().as_ref();
    let prepared = crate::engine::invocation_setup::prepare_invocation(
        ctx,
        crate::engine::invocation_setup::InvocationSetup {
            invocation: &root,
            profile,
            exit_policy: ExitPolicy::RunFinishAllowed,
            presentation,
            origin: crate::engine::invocation_setup::Origin::Root {
                conversation: prompt_snapshot.model_messages(),
            },
        },
        &ctx.cancel,
    )
    .await?;
    let assembly = prepared
        .assembly_pending
        .clone()
        .map(|system_prompt| RootAssembly { system_prompt });
    let inv = InvocationRuntime::start(
        root,
        profile.clone(),
        &prepared,
        ctx.cancel.clone(),
        None,
        Arc::clone(scheduler),
    );
    Ok((inv, prepared.messages, assembly))
}

impl AgentRunService {
    /// Registers the run of `inv` (its scheduler's) as active and runs its executor in the
    /// background under `span`; the run leaves the active set's `done` signal raised when the
    /// executor has ended.
    pub(super) fn spawn_executor(
        self: &Arc<Self>,
        inv: InvocationRuntime,
        messages: Vec<AgentModelMessage>,
        root_assembly: Option<RootAssembly>,
        incoming: Option<TaskId>,
        span: tracing::Span,
    ) {
        let (done_tx, done_rx) = watch::channel(false);
        let scheduler = Arc::clone(&inv.scheduler);
        self.lock_active().insert(
            scheduler.host().run_id.clone(),
            ActiveRun {
                scheduler: Arc::clone(&scheduler),
                done: done_rx,
            },
        );
        let service = Arc::clone(self);
        tokio::spawn(
            async move {
                service
                    .execute(scheduler, inv, messages, root_assembly, incoming)
                    .await;
                let _ = done_tx.send(true);
            }
            .instrument(span),
        );
    }

    pub(super) async fn prepare_root(
        &self,
        run: AgentRun,
        profile: &ResolvedProfile,
        request: &StartRunRequest,
    ) -> ApplicationResult<PreparedRoot> {
        let ctx = self.init_workspace(&run, profile).await?;
        let scheduler = TaskScheduler::new(Arc::clone(&ctx));
        let prompt_snapshot = self.freeze_prompt(&run, profile, request).await?;
        let invocation = self.create_root_invocation(&run.id, profile).await?;
        ctx.try_set_status(AgentRunStatus::AssemblingContext)
            .await?;
        start_root(
            &scheduler,
            invocation,
            profile,
            run.presentation,
            &prompt_snapshot,
        )
        .await
    }

    /// The run's first steps: its profile resolved and stored, its workspace and persistent
    /// projection initialized. The run's context, with the projection's snapshot.
    async fn init_workspace(
        &self,
        run: &AgentRun,
        profile: &ResolvedProfile,
    ) -> ApplicationResult<Arc<RunContext>> {
        let run_id = run.id.clone();
        let services = &self.services;
        let provisional = RunContext::new(
            run.clone(),
            services.clone(),
            Arc::clone(&self.events),
            Default::default(),
        );
        self.events
            .record(
                &run_id,
                EventLevel::Info,
                &payload::ProfileResolved {
                    profile_id: profile.id().clone(),
                    source: profile.source_trace.profile_source.clone(),
                },
            )
            .await?;
        provisional
            .try_set_status(AgentRunStatus::InitializingWorkspace)
            .await?;
        services
            .runs
            .write_document(
                &run_id,
                &RunDocument::ResolvedProfile,
                &serde_json::to_value(profile).unwrap_or(Value::Null),
            )
            .await?;
        self.events
            .record(
                &run_id,
                EventLevel::Info,
                &payload::WorkspaceInitialized {
                    workspace_id: run.workspace_id.to_string(),
                    stable_chat_id: run.stable_chat_id.clone(),
                },
            )
            .await?;
        let persist_snapshot = services
            .workspace
            .init_persist_projection(&run_id, run.persist_base_state_id.as_deref())
            .await?;
        let persist_roots: Vec<_> = profile
            .access_policy()
            .manifest_roots()
            .into_iter()
            .filter(|root| root.path.is_persistent())
            .collect();
        self.events
            .record(
                &run_id,
                EventLevel::Info,
                &payload::PersistentProjectionInitialized {
                    roots: json!(persist_roots),
                    base_state_id: persist_snapshot.base_state_id.clone(),
                    file_count: persist_snapshot.files.len() as u64,
                },
            )
            .await?;
        Ok(RunContext::new(
            provisional.run_snapshot().await,
            services.clone(),
            Arc::clone(&self.events),
            persist_snapshot,
        ))
    }

    /// Freezes the conversation the run starts from (`RunDocument::PromptSnapshot`) and
    /// journals the generation intent.
    async fn freeze_prompt(
        &self,
        run: &AgentRun,
        profile: &ResolvedProfile,
        request: &StartRunRequest,
    ) -> ApplicationResult<PromptSnapshot> {
        let run_id = run.id.clone();
        let prompt_snapshot = PromptSnapshot::freeze(
            profile.definition.context,
            &request.history,
            request.user_request.as_deref(),
        );
        self.services
            .runs
            .write_document(
                &run_id,
                &RunDocument::PromptSnapshot,
                &serde_json::to_value(&prompt_snapshot).unwrap_or(Value::Null),
            )
            .await?;
        let intent = tt_domain::event_payload::GenerationIntentRecorded {
            kind: tt_domain::event_payload::GENERATION_INTENT_KIND.to_owned(),
            run_id: run_id.clone(),
            stable_chat_id: run.stable_chat_id.clone(),
            conversation_kind: run.conversation_kind,
            chat_ref: run.chat_ref.clone(),
            generation_type: run.generation_type.clone(),
            profile_id: profile.id().to_string(),
            preset_mode: profile.definition.preset.mode,
            preset_ref: profile.definition.preset.preset_ref.clone(),
            model_id: profile.definition.model.model_id.clone(),
            user_request: request.user_request.clone(),
            input_message_count: prompt_snapshot.messages.len() as u64,
        };
        self.events
            .record_in(&run_id, EventLevel::Info, &intent, &InvocationId::root())
            .await?;
        Ok(prompt_snapshot)
    }

    /// The root agent's invocation, saved and journaled.
    async fn create_root_invocation(
        &self,
        run_id: &RunId,
        profile: &ResolvedProfile,
    ) -> ApplicationResult<AgentInvocation> {
        let now = self.services.clock.now();
        let invocation = AgentInvocation::new_root(run_id.clone(), profile.id().clone(), now);
        self.services
            .invocations
            .save_invocation(&invocation)
            .await?;
        self.events
            .record(
                run_id,
                EventLevel::Info,
                &payload::AgentInvocationCreated {
                    invocation_id: invocation.id.clone(),
                    parent_invocation_id: None,
                    profile_id: invocation.profile_id.clone(),
                    kind: invocation.kind,
                    status: invocation.status,
                    exit_policy: invocation.exit_policy,
                    task_id: None,
                },
            )
            .await?;
        Ok(invocation)
    }

    /// `context_assembled` for the root invocation.
    pub(super) async fn root_context_assembled(
        &self,
        run_id: &RunId,
        profile: &ResolvedProfile,
        model: &crate::engine::binding::ModelBinding,
        snapshot: &tt_domain::tool::InvocationToolSnapshot,
        message_count: usize,
    ) -> ApplicationResult<()> {
        self.events
            .record(
                run_id,
                EventLevel::Info,
                &crate::engine::invocation_setup::context_assembled(
                    profile,
                    model,
                    snapshot,
                    message_count,
                    None,
                ),
            )
            .await?;
        Ok(())
    }

    /// The host-assembled prompt of a root profile with `preset.mode = "ref"`: the frozen
    /// conversation already ends with the user's request, so the root has no separate task
    /// prompt; the assembled prompt must contain the agent system prompt.
    pub(super) async fn assemble_root_prompt(
        &self,
        ctx: &RunContext,
        inv: &mut InvocationRuntime,
        root: RootAssembly,
    ) -> ApplicationResult<Vec<AgentModelMessage>> {
        let input = crate::engine::prompt_assembly::AssemblyInput {
            invocation: &inv.invocation,
            profile: &inv.profile,
            task_id: None,
            system_prompt: &root.system_prompt,
            task_prompt: "",
            model_id: inv.profile.definition.model.model_id.clone(),
        };
        let assembled = crate::engine::prompt_assembly::assemble(ctx, &input, &ctx.cancel).await?;
        let messages = assembled.messages;
        // The root's binding was resolved before its prompt was: the preset's settings join it
        // now, before its first request.
        inv.model.assembled_generation = assembled.generation;
        self.root_context_assembled(
            &ctx.run_id,
            &inv.profile,
            &inv.model,
            &inv.snapshot,
            messages.len(),
        )
        .await?;
        Ok(messages)
    }

    /// Drives the foreground invocation to a terminal run state on the run `scheduler` serves.
    /// Never returns an error: every outcome is written to the run record and the journal.
    pub(super) async fn execute(
        &self,
        scheduler: Arc<RunScheduler>,
        mut inv: InvocationRuntime,
        mut messages: Vec<AgentModelMessage>,
        root_assembly: Option<RootAssembly>,
        // The task that brought `inv` in, for a run resumed after a handoff.
        mut incoming: Option<TaskId>,
    ) {
        // The chain of foreground owners: the root, then each agent a handoff brings in. The
        // task that brought the current owner in completes when it finishes or hands off.
        let ctx = scheduler.host();
        let run_seconds = inv.profile.definition.limits.max_run_seconds;
        apply_run_limits(&scheduler, &inv.profile.definition.limits);
        let chain = async {
            if let Some(root) = root_assembly {
                messages = self.assemble_root_prompt(ctx, &mut inv, root).await?;
            }
            loop {
                let outcome = async {
                    ctx.set_invocation_status(&mut inv.invocation, InvocationStatus::Running)
                        .await?;
                    run_tool_loop(ctx, &mut inv, std::mem::take(&mut messages)).await
                }
                .await;
                match outcome {
                    Ok(LoopOutcome::Finished { .. }) => {
                        break self.finish_run(ctx, &mut inv, incoming.as_ref()).await;
                    }
                    Ok(LoopOutcome::Transferred {
                        task_id,
                        new_invocation_id,
                        ..
                    }) => {
                        if let Some(previous) = incoming.take()
                            && let Err(error) =
                                settle_task(ctx, &previous, TaskStatus::Completed, None).await
                        {
                            break Err(error);
                        }
                        match prepare_handoff(&scheduler, &task_id, &new_invocation_id).await {
                            Ok((next, next_messages)) => {
                                inv = next;
                                messages = next_messages;
                                incoming = Some(task_id);
                            }
                            Err(error) => break Err(error),
                        }
                    }
                    Ok(LoopOutcome::TaskReturned { .. }) => {
                        break Err(ApplicationError::fatal(
                            error_codes::AGENT_TASK_RETURN_DENIED,
                            "the foreground agent ended with task.return",
                        ));
                    }
                    Err(error) => break Err(error),
                }
            }
        };
        // `limits.maxRunSeconds` of the root profile bounds the whole chain; the chain is
        // dropped at its current wait, as a cancel would, and the run fails (or keeps its
        // commits as partial success).
        let result = match run_seconds {
            None => chain.await,
            Some(seconds) => tokio::select! {
                result = chain => result,
                () = tokio::time::sleep(std::time::Duration::from_secs(seconds)) => {
                    Err(ApplicationError::fatal(
                        error_codes::AGENT_RUN_DEADLINE_EXCEEDED,
                        format!("the run did not finish within {seconds} s (limits.maxRunSeconds)"),
                    ))
                }
            },
        };
        if let Err(error) = result {
            if error.is_cancelled() || ctx.cancel.is_cancelled() {
                let end = if ctx.is_shutting_down() {
                    RunEnd::ShutDown
                } else {
                    RunEnd::Cancelled
                };
                self.finalize_stopped(&scheduler, Some(&mut inv.invocation), end)
                    .await;
            } else {
                self.finalize_stopped(
                    &scheduler,
                    Some(&mut inv.invocation),
                    RunEnd::Failed(&error),
                )
                .await;
            }
        }
        self.release_ended(ctx).await;
    }

    /// After the run's end: keeps an end the store did not record (so reads still see it),
    /// lets other processes take the run, and closes its provider sessions.
    async fn release_ended(&self, ctx: &RunContext) {
        let live = ctx.run_snapshot().await;
        if live.status.is_terminal() {
            let recorded = self
                .services
                .runs
                .load_run(&ctx.run_id)
                .await
                .is_ok_and(|stored| stored.status.is_terminal());
            if !recorded {
                self.unrecorded
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(ctx.run_id.clone(), live);
            }
        }
        // Another process or host may resume or abandon the run from now on. Released while
        // the run still counts as active here, so no resume in this process can take it first.
        self.services
            .runs
            .release_run(&ctx.run_id)
            .await
            .best_effort("release the ended run to other processes");
        self.lock_active().remove(&ctx.run_id);
        // Provider sessions (`runId:invocationId`) are released in the background, each on the
        // provider that opened it (the default one or a named connection).
        let sessions = ctx.take_sessions();
        tokio::spawn(async move {
            for (session_id, provider) in sessions {
                provider.close_session(&session_id).await;
            }
        });
    }
}

/// The run-wide limits of the run's own profile, on the scheduler every agent of the run
/// shares: its token and cost budgets, its default inactivity watchdog and its spend limit.
pub(super) fn apply_run_limits(
    scheduler: &RunScheduler,
    limits: &tt_domain::profile::LimitsSection,
) {
    if let Some(limit) = limits.max_total_tokens {
        scheduler.set_run_token_budget(limit);
    }
    if let Some(limit) = limits.max_total_cost_usd {
        scheduler.set_run_cost_budget(limit);
    }
    if let Some(watchdog) = limits.watchdog {
        scheduler.set_run_watchdog(watchdog);
    }
    // A resumed run's spend approval is where its journal left it (`SpendLimit::restore`).
    scheduler
        .host()
        .spend
        .configure(limits.ask_above_total_cost_usd);
}
