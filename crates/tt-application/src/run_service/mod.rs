//! The run service: the application's facade for the composition root. Here: start a run,
//! cancel it, guide it, and read what it wrote. The jobs behind it have their own files: the
//! executor (`executor`), how a run ends (`teardown`) and resuming one (`resume_run`).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex as StdMutex};
use tokio::sync::watch;
use tt_domain::error_codes;
use tt_domain::event::{AgentRunEvent, EventLevel};
use tt_domain::event_payload as payload;
use tt_domain::ids::{InvocationId, RunId};
use tt_domain::profile::ResolvedProfile;
use tt_domain::run::{
    AgentRun, AgentRunStatus, ConversationKind, derive_workspace_id, normalize_stable_chat_id,
};
use tt_domain::workspace::{RunManifest, WorkspacePath};
use tt_ports::{EventPage, FileContent, RunListPage};

use crate::engine::context::{RunContext, RunScheduler};
use crate::engine::scheduler::TaskScheduler;
use crate::error::{ApplicationError, ApplicationResult};
use crate::events::{EventSink, RunEventStream};
use crate::prompt_input::{PromptMessage, PromptSnapshot};
use crate::services::RuntimeServices;

mod approvals;
mod chat_state;
mod check;
mod conversation;
mod executor;
mod fork_run;
mod otel_content;
mod otel_export;
mod profiles;
mod records;
mod reopen_run;
mod resume_run;
mod teardown;

/// How a run that does not finish ends (`teardown::finalize_stopped`). Here, not in
/// `teardown`, because this file ends runs too and `teardown` uses this file.
#[derive(Debug, Clone, Copy)]
enum RunEnd<'a> {
    /// The host cancelled it (or its root was left unfinished): `run_cancelled`.
    Cancelled,
    /// A fail-fast error ended it: `run_failed`, or `run_partial_success` when something was
    /// already published.
    Failed(&'a ApplicationError),
    /// Its host shut down (`interrupt_for_shutdown`): `run_interrupted {reason:
    /// host_shutdown}`, resumable as after an owner exit.
    ShutDown,
}

pub use conversation::{
    AgentConversation, ConversationEntry, ConversationToolCall, InheritedAnswers,
    InjectedTaskResult,
};
pub use profiles::{ProfileDeleted, ProfileSummary};

/// What a host asks for when it starts a run. `Default` is an empty request (no chat id yet);
/// [`StartRunRequest::new`] and its setters (`start_request.rs`) build one in code.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StartRunRequest {
    /// The host's stable conversation id; the workspace id is derived from it.
    pub stable_chat_id: String,
    #[serde(default = "default_conversation_kind")]
    pub conversation_kind: ConversationKind,
    /// Opaque host metadata carried to events and bridges.
    #[serde(default)]
    pub chat_ref: Value,
    #[serde(default)]
    pub generation_type: Value,
    /// `None` uses the built-in `default-writer`.
    #[serde(default)]
    pub profile_id: Option<String>,
    /// Conversation so far, oldest first.
    #[serde(default)]
    pub history: Vec<PromptMessage>,
    /// The user's request for this run.
    #[serde(default)]
    pub user_request: Option<String>,
    /// A persistent state whose `persist/` this run starts from.
    #[serde(default)]
    pub persist_base_state_id: Option<String>,
    /// The preset and character this conversation runs with (skill scopes).
    #[serde(default)]
    pub skill_scope_refs: tt_domain::skill::SkillScopeRefs,
    /// A named model connection (registered with the runtime or a connection file) that
    /// stands for the conversation's current model in this run: profiles whose `model.mode` is
    /// `currentPromptSnapshot` talk to it. `None`: the runtime's default model.
    #[serde(default)]
    pub connection_ref: Option<String>,
    /// Generation settings for every agent of the run, over those of their connection,
    /// profile and prompt assembly (docs/profiles.md, "Generation settings").
    #[serde(default)]
    pub generation: tt_domain::generation::GenerationSettings,
}

fn default_conversation_kind() -> ConversationKind {
    ConversationKind::Character
}

/// How many files `list_workspace_files` returns at most.
pub(crate) const MAX_LISTED_FILES: usize = 10_000;

/// A run executing in this process: its scheduler (which holds the run's context) and the
/// executor's end signal.
struct ActiveRun {
    scheduler: Arc<RunScheduler>,
    done: watch::Receiver<bool>,
}

impl ActiveRun {
    fn ctx(&self) -> Arc<RunContext> {
        Arc::clone(self.scheduler.host())
    }
}

/// Starts, runs and cancels runs over the ports in [`RuntimeServices`].
pub struct AgentRunService {
    services: RuntimeServices,
    events: Arc<EventSink>,
    active: StdMutex<HashMap<RunId, ActiveRun>>,
    /// Runs whose executor ended in a terminal status the store could not record (a full or
    /// read-only disk): what `wait_for_run` reports for them instead of the stale record.
    unrecorded: StdMutex<HashMap<RunId, AgentRun>>,
    /// The `run_failed` / `run_partial_success` events the journal refused, by run (also
    /// kept on the run record when it can be written, `AgentRun::unrecorded_end`).
    unrecorded_failures: StdMutex<HashMap<RunId, tt_domain::run::UnrecordedEnd>>,
}

impl std::fmt::Debug for AgentRunService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRunService").finish_non_exhaustive()
    }
}

impl AgentRunService {
    pub fn new(services: RuntimeServices) -> Arc<Self> {
        let events = Arc::new(EventSink::new(
            Arc::clone(&services.journal),
            Arc::clone(&services.clock),
            Arc::clone(&services.ids),
        ));
        Arc::new(Self {
            services,
            events,
            active: StdMutex::new(HashMap::new()),
            unrecorded: StdMutex::new(HashMap::new()),
            unrecorded_failures: StdMutex::new(HashMap::new()),
        })
    }

    pub fn services(&self) -> &RuntimeServices {
        &self.services
    }

    pub fn event_sink(&self) -> &Arc<EventSink> {
        &self.events
    }

    /// Validates the request, creates the run and its root invocation, and starts executing it
    /// in the background. Returns the run as created.
    pub async fn start_run(
        self: &Arc<Self>,
        request: StartRunRequest,
    ) -> ApplicationResult<AgentRun> {
        let (stable_chat_id, profile) = self.check_start_request(&request).await?;
        let run = self.new_run(&request, &profile, stable_chat_id);
        let (run_id, now, presentation) = (run.id.clone(), run.created_at, run.presentation);
        let manifest = RunManifest {
            schema_version: 1,
            run_id: run_id.clone(),
            workspace_id: run.workspace_id.clone(),
            stable_chat_id: run.stable_chat_id.clone(),
            roots: profile.access_policy().manifest_roots(),
            created_at: now,
        };
        self.services.runs.create_run(&run, &manifest).await?;
        // From here on the run exists on disk: any failure ends it visibly (below).
        let prepared = async {
            self.events
                .record(
                    &run_id,
                    EventLevel::Info,
                    &payload::RunCreated {
                        workspace_id: run.workspace_id.to_string(),
                        stable_chat_id: run.stable_chat_id.clone(),
                        persist_base_state_id: run.persist_base_state_id.clone(),
                        presentation: json!(presentation).as_str().unwrap_or_default().to_owned(),
                        chat_ref: run.chat_ref.clone(),
                        generation_type: run.generation_type.clone(),
                        forked_from: None,
                    },
                )
                .await?;
            self.prepare_root(run.clone(), &profile, &request).await
        };
        match prepared.await {
            Ok((inv, messages, root_assembly)) => {
                // The root of every span of this run: invocations, model and tool calls.
                let span = tracing::info_span!(
                    "run",
                    run_id = run_id.as_str(),
                    profile = inv.profile.id().as_str(),
                );
                self.spawn_executor(inv, messages, root_assembly, None, span);
                self.load_run(&run_id).await
            }
            Err(error) => {
                // The run exists on disk: end it visibly instead of leaving it dangling.
                let ctx = RunContext::new(
                    run,
                    self.services.clone(),
                    Arc::clone(&self.events),
                    Default::default(),
                );
                self.finalize_stopped(&TaskScheduler::new(ctx), None, RunEnd::Failed(&error))
                    .await;
                Err(error)
            }
        }
    }

    /// The checks of a start request before anything is written: its chat id, its profile
    /// (runnable directly, with a model), its connection, generation and base state.
    async fn check_start_request(
        &self,
        request: &StartRunRequest,
    ) -> ApplicationResult<(String, ResolvedProfile)> {
        let stable_chat_id = normalize_stable_chat_id(&request.stable_chat_id)?;
        let profile = crate::profiles::resolve(
            self.services.profiles.as_ref(),
            request.profile_id.as_deref(),
        )
        .await?;
        if !profile.definition.run.direct_runnable {
            return Err(ApplicationError::fatal(
                error_codes::AGENT_PROFILE_NOT_DIRECT_RUNNABLE,
                format!(
                    "profile `{}` can only be used by other agents",
                    profile.id()
                ),
            ));
        }
        crate::profiles::check_model_configured(&profile)?;
        if let Some(name) = &request.connection_ref
            && self.services.connections.resolve(name).await?.is_none()
        {
            return Err(crate::engine::binding::connection_not_found(name));
        }
        request
            .generation
            .validate("the run request's generation")?;
        if let Some(base) = &request.persist_base_state_id
            && !tt_domain::ids::is_valid_storage_segment(base)
        {
            return Err(ApplicationError::fatal(
                error_codes::AGENT_PERSIST_BASE_STATE_MISMATCH,
                format!("`{base}` is not a state id"),
            ));
        }
        Ok((stable_chat_id, profile))
    }

    /// The run a checked start request creates, with a new id, `created`.
    fn new_run(
        &self,
        request: &StartRunRequest,
        profile: &ResolvedProfile,
        stable_chat_id: String,
    ) -> AgentRun {
        let now = self.services.clock.now();
        let run_id = RunId::generate(self.services.ids.next_token());
        let presentation = profile.definition.run.presentation;
        AgentRun {
            id: run_id.clone(),
            workspace_id: derive_workspace_id(request.conversation_kind, &stable_chat_id),
            stable_chat_id,
            conversation_kind: request.conversation_kind,
            chat_ref: request.chat_ref.clone(),
            generation_type: request.generation_type.clone(),
            profile_id: Some(profile.id().clone()),
            persist_base_state_id: request.persist_base_state_id.clone(),
            skill_scope_refs: request.skill_scope_refs.clone(),
            connection_ref: request.connection_ref.clone(),
            generation: request.generation.clone(),
            presentation,
            status: AgentRunStatus::Created,
            input_message_count: PromptSnapshot::freeze(
                profile.definition.context,
                &request.history,
                request.user_request.as_deref(),
            )
            .messages
            .len(),
            forked_from: None,
            profile_models: Default::default(),
            abandoned_at: None,
            unrecorded_end: None,
            rebuilt: None,
            created_at: now,
            updated_at: now,
        }
    }

    /// Gives up a run that ended without finishing its work (`interrupted`, `failed` or
    /// `cancelled`): journals `run_abandoned` and records `abandonedAt`; its status stays and
    /// `resume_run` refuses it from now on (docs/resume.md). `agent.run_not_abandonable` for
    /// any other run (one that completed, is working, or was abandoned already).
    pub async fn abandon_run(&self, run_id: &RunId) -> ApplicationResult<AgentRun> {
        if self.lock_active().contains_key(run_id) {
            return Err(ApplicationError::fatal(
                error_codes::AGENT_RUN_NOT_ABANDONABLE,
                format!("run {run_id} is running in this process; cancel it first"),
            ));
        }
        let mut run = self.services.runs.load_run(run_id).await?;
        if !run.status.is_terminal() {
            return Err(locked_elsewhere(&run, "abandoned"));
        }
        run.abandon(self.services.clock.now())?;
        // The first write takes the run's lock; the record is saved once the event is
        // journaled, so a crash in between leaves the run resumable, never half abandoned.
        self.events
            .record(
                run_id,
                EventLevel::Warn,
                &payload::RunAbandoned { status: run.status },
            )
            .await?;
        self.services.runs.save_run(&run).await?;
        Ok(run)
    }

    /// Requests cancellation. An active run is interrupted at once (model calls and host waits
    /// abort) and ends `cancelled`; a terminal run is returned unchanged.
    /// Stops a run this process executes because its host is shutting down. Nothing is
    /// journaled up front (no `run_cancel_requested`): every wait aborts as on a cancel, the
    /// work under way is stopped as a cancel stops it, and the run ends `interrupted`
    /// (`run_interrupted {reason: "host_shutdown"}`), so a later `resume_run` continues it where
    /// it stopped, as after an owner exit (docs/resume.md). Returns the signal that turns true
    /// once its executor has ended; `None` when no executor runs it here.
    pub fn interrupt_for_shutdown(&self, run_id: &RunId) -> Option<watch::Receiver<bool>> {
        let (ctx, done) = {
            let active = self.lock_active();
            let run = active.get(run_id)?;
            (run.ctx(), run.done.clone())
        };
        ctx.stop_for_shutdown();
        Some(done)
    }

    pub async fn cancel_run(&self, run_id: &RunId) -> ApplicationResult<AgentRun> {
        // Look up the executor before loading the record: an executor writes the terminal state
        // before it leaves the active set, so "not active and not terminal" means orphaned.
        let active = self.lock_active().get(run_id).map(ActiveRun::ctx);
        let run = self.services.runs.load_run(run_id).await?;
        if run.status.is_terminal() {
            return Ok(run);
        }
        // The stored record lags behind a live run's transient statuses.
        let previous_status = match &active {
            Some(ctx) => ctx.run_snapshot().await.status,
            None => run.status,
        };
        let requested = self
            .events
            .record(
                run_id,
                EventLevel::Info,
                &payload::RunCancelRequested { previous_status },
            )
            .await;
        match active {
            Some(ctx) => {
                // The cancel reaches the run whatever the disk says: a write that fails here
                // (a full or read-only disk) is returned, but never leaves the run going.
                let closed = match &requested {
                    Ok(_) => {
                        ctx.guidance
                            .close(&self.events, run_id, "run_cancel_requested")
                            .await
                    }
                    Err(_) => Ok(()),
                };
                let cancelling = ctx.try_set_status(AgentRunStatus::Cancelling).await;
                ctx.cancel.cancel();
                requested?;
                closed?;
                cancelling?;
            }
            None => {
                requested?;
                // Nothing is executing this run (for example after a host restart).
                let ctx = RunContext::new(
                    run,
                    self.services.clone(),
                    Arc::clone(&self.events),
                    Default::default(),
                );
                let mut root = self
                    .services
                    .invocations
                    .load_invocation(run_id, &InvocationId::root())
                    .await
                    .ok();
                self.finalize_stopped(
                    &TaskScheduler::new(ctx),
                    root.as_mut().filter(|inv| !inv.status.is_terminal()),
                    RunEnd::Cancelled,
                )
                .await;
            }
        }
        self.load_run(run_id).await
    }

    /// Queues user guidance for the run's foreground agent, which sees it before its next model
    /// request. Refused with a coded error when the text is empty or over a limit, when the run
    /// has ended (`agent.guidance_mailbox_closed`), or when no executor in this process owns
    /// the run (`agent.guidance_run_not_owned`: another process, or none after a restart, is
    /// running it, and guidance does not cross processes).
    pub async fn submit_guidance(
        &self,
        run_id: &RunId,
        request: crate::guidance::SubmitGuidanceRequest,
    ) -> ApplicationResult<crate::guidance::GuidanceReceipt> {
        let active = self.lock_active().get(run_id).map(ActiveRun::ctx);
        match active {
            Some(ctx) => ctx.guidance.submit(&self.events, run_id, request).await,
            None => {
                let run = self.services.runs.load_run(run_id).await?;
                if run.status.is_terminal() {
                    Err(crate::guidance::mailbox_closed())
                } else {
                    Err(ApplicationError::fatal(
                        error_codes::AGENT_GUIDANCE_RUN_NOT_OWNED,
                        format!(
                            "run {run_id} is not executing in this process; guidance can only be \
                             sent to the process that runs it"
                        ),
                    ))
                }
            }
        }
    }

    /// Cancels one delegated task of a run executing in this process, and the tasks it
    /// delegated in turn, as the host (`by: "host"`). A run executing elsewhere is refused with
    /// `agent.run_locked`, a run that ended with `agent.run_not_running`.
    pub async fn cancel_task(
        &self,
        run_id: &RunId,
        task_id: &tt_domain::ids::TaskId,
    ) -> ApplicationResult<tt_domain::task::AgentTaskRecord> {
        let active = self
            .lock_active()
            .get(run_id)
            .map(|active| Arc::clone(&active.scheduler));
        match active {
            Some(scheduler) => {
                crate::engine::scheduler::cancel_task_as_host(&scheduler, task_id).await
            }
            None => {
                let run = self.services.runs.load_run(run_id).await?;
                Err(if run.status.is_terminal() {
                    ApplicationError::fatal(
                        error_codes::AGENT_RUN_NOT_RUNNING,
                        format!(
                            "run {run_id} has ended ({}); its tasks ended with it",
                            run.status.as_str()
                        ),
                    )
                } else {
                    ApplicationError::fatal(
                        error_codes::AGENT_RUN_LOCKED,
                        format!(
                            "run {run_id} is not executing in this process; one task can only be cancelled by the process that runs it (cancel the whole run there)"
                        ),
                    )
                })
            }
        }
    }

    /// The run as it is now: live state for a run executing in this process, else the stored
    /// record.
    pub async fn load_run(&self, run_id: &RunId) -> ApplicationResult<AgentRun> {
        let active = self.lock_active().get(run_id).map(ActiveRun::ctx);
        match active {
            Some(ctx) => Ok(ctx.run_snapshot().await),
            None => Ok(self.services.runs.load_run(run_id).await?),
        }
    }

    /// One run by id: live state for a run executing in this process, else the stored record
    /// (`agent.not_found` when there is none). The host API's `get_run`.
    pub async fn get_run(&self, run_id: &RunId) -> ApplicationResult<AgentRun> {
        self.load_run(run_id).await
    }

    /// Validates a profile definition and stores it; invalid definitions are refused with the
    /// violated rule's code and nothing is written.
    pub async fn save_profile(
        &self,
        definition: tt_domain::profile::AgentProfileDefinition,
    ) -> ApplicationResult<ResolvedProfile> {
        let source = tt_domain::profile::ProfileSource::file(&definition.id);
        let resolved = tt_domain::profile::resolve_profile(definition, source)?;
        self.services
            .profiles
            .save_profile(&resolved.definition)
            .await?;
        Ok(resolved)
    }

    /// Waits until the run is no longer executing, then returns its stored record.
    pub async fn wait_for_run(&self, run_id: &RunId) -> ApplicationResult<AgentRun> {
        let active = self
            .lock_active()
            .get(run_id)
            .map(|active| (active.done.clone(), active.ctx()));
        let Some((mut done, ctx)) = active else {
            let stored = self.services.runs.load_run(run_id).await;
            let unrecorded = self
                .unrecorded
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get(run_id)
                .cloned();
            return match (stored, unrecorded) {
                (Ok(stored), _) if stored.status.is_terminal() => Ok(stored),
                (_, Some(live)) => Ok(live),
                // Another process runs it: follow its journal to its end (docs/host-api.md).
                (Ok(_), None) => {
                    let after = self.services.journal.last_seq(run_id).await?;
                    let mut stream = self.subscribe(run_id.clone(), after, None);
                    while stream.next().await?.is_some() {}
                    Ok(self.services.runs.load_run(run_id).await?)
                }
                (Err(error), None) => Err(error.into()),
            };
        };
        // A closed channel means the executor ended too.
        let _ = done.wait_for(|finished| *finished).await;
        // When the disk refused to record the end (full, read-only, …), the host still learns
        // the terminal status the run reached in memory.
        let live = ctx.run_snapshot().await;
        match self.services.runs.load_run(run_id).await {
            Ok(stored) if stored.status.is_terminal() || !live.status.is_terminal() => Ok(stored),
            Ok(_) | Err(_) if live.status.is_terminal() => Ok(live),
            Ok(stored) => Ok(stored),
            Err(error) => Err(error.into()),
        }
    }

    /// One page of a run's journal. `invocationId` must be a plain id.
    pub async fn read_events(
        &self,
        run_id: &RunId,
        page: &EventPage,
    ) -> ApplicationResult<Vec<AgentRunEvent>> {
        if let Some(id) = &page.invocation_id
            && (id.trim().is_empty() || id.contains('/') || id.contains('\\'))
        {
            return Err(ApplicationError::fatal(
                error_codes::AGENT_READ_EVENTS_INVOCATION_ID_INVALID,
                "invocationId must be a non-empty id without path separators",
            ));
        }
        self.services.runs.load_run(run_id).await?;
        Ok(self.services.journal.read(run_id, page).await?)
    }

    /// A live, resumable stream of a run's events after `after_seq`.
    pub fn subscribe(
        &self,
        run_id: RunId,
        after_seq: u64,
        invocation_id: Option<String>,
    ) -> RunEventStream {
        let executor_done = self
            .lock_active()
            .get(&run_id)
            .map(|active| active.done.clone());
        // A run whose end this process knows but could not record is over: drain and stop.
        let ended_here = self
            .unrecorded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains_key(&run_id);
        let running_elsewhere = executor_done.is_none() && !ended_here;
        let stream = RunEventStream::new(
            &self.events,
            run_id,
            after_seq,
            invocation_id,
            executor_done,
        );
        if running_elsewhere {
            stream.following_other_process(Arc::clone(&self.services.runs))
        } else {
            stream
        }
    }

    /// The stored runs whose record cannot be read (`list_runs` leaves them out).
    pub async fn unreadable_runs(
        &self,
    ) -> ApplicationResult<Vec<tt_domain::damage::UnreadableRun>> {
        Ok(self.services.runs.unreadable_runs().await?)
    }

    pub async fn list_runs(&self, page: RunListPage) -> ApplicationResult<Vec<AgentRun>> {
        let mut runs = self.services.runs.list_runs(page).await?;
        for run in &mut runs {
            let active = self.lock_active().get(&run.id).map(ActiveRun::ctx);
            if let Some(ctx) = active {
                *run = ctx.run_snapshot().await;
            }
        }
        Ok(runs)
    }

    /// Reads a workspace file of a run for the host (any of the model-visible roots).
    pub async fn read_workspace_file(
        &self,
        run_id: &RunId,
        path: &str,
    ) -> ApplicationResult<FileContent> {
        let path = WorkspacePath::parse(path)?;
        if path.root().is_none() {
            return Err(ApplicationError::fatal(
                error_codes::WORKSPACE_PATH_NOT_VISIBLE,
                format!("`{path}` is not a workspace file"),
            ));
        }
        Ok(self.services.workspace.read(run_id, &path).await?)
    }

    /// Every file under the workspace roots of a run, as logical paths sorted by path (at most
    /// [`MAX_LISTED_FILES`]). `agent.not_found` for an unknown run.
    pub async fn list_workspace_files(&self, run_id: &RunId) -> ApplicationResult<Vec<String>> {
        self.load_run(run_id).await?;
        let mut files: Vec<String> = self
            .services
            .workspace
            .walk_files(
                run_id,
                &tt_domain::workspace::WorkspaceRoot::ALL,
                u32::MAX,
                MAX_LISTED_FILES,
            )
            .await?
            .into_iter()
            .map(|path| path.to_string())
            .collect();
        files.sort();
        Ok(files)
    }

    /// Why a run ended, when the journal refused its `run_failed` / `run_partial_success`
    /// (a full or read-only disk) in this process: that event's payload plus
    /// `unrecordedBecause`, the storage error. `None` for runs whose end was journaled. A
    /// later process reads the same from the run record (`AgentRun::unrecorded_end`).
    pub fn unrecorded_failure(&self, run_id: &RunId) -> Option<Value> {
        self.unrecorded_failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(run_id)
            .map(|end| {
                let mut payload = end.payload.clone();
                payload["unrecordedBecause"] = json!(end.unrecorded_because);
                payload
            })
    }

    /// The journal refused the run's end (`event_type`, `payload`): keep it in memory, and on
    /// the run record, one small write that may succeed where the append did not, so a later
    /// process finds it. If the record refuses it too, only this process knows it.
    async fn keep_unrecorded_failure(
        &self,
        ctx: &RunContext,
        event_type: &str,
        payload: Value,
        why: &ApplicationError,
    ) {
        let end = tt_domain::run::UnrecordedEnd {
            event_type: event_type.to_owned(),
            payload,
            unrecorded_because: why.to_string(),
        };
        self.unrecorded_failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(ctx.run_id.clone(), end.clone());
        let run = ctx.note_unrecorded_end(end).await;
        if let Err(error) = self.services.runs.save_run(&run).await {
            tracing::warn!(
                run_id = ctx.run_id.as_str(),
                %error,
                "the run's end is neither in the journal nor in the run record; only this process knows it"
            );
        }
    }

    /// The live context of a run executing in this process.
    fn active_context(&self, run_id: &RunId) -> Option<Arc<RunContext>> {
        self.lock_active().get(run_id).map(ActiveRun::ctx)
    }

    fn lock_active(&self) -> std::sync::MutexGuard<'_, HashMap<RunId, ActiveRun>> {
        self.active
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// `agent.run_locked`: the unfinished `run` is not executing here, so a live process owns it
/// (or nothing marked it interrupted); it can be `action` (abandoned, resumed) only once that
/// process is gone.
fn locked_elsewhere(run: &AgentRun, action: &str) -> ApplicationError {
    ApplicationError::fatal(
        error_codes::AGENT_RUN_LOCKED,
        format!(
            "run {} is {} in another process; it can be {action} only once that process is gone",
            run.id,
            run.status.as_str()
        ),
    )
}
