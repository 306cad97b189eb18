//! The run service: start a run, execute its foreground invocation to a terminal state, cancel
//! it, and read what it wrote. This is the application's facade for the composition root.

use crate::error::BestEffort;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex as StdMutex};
use tokio::sync::watch;
use tracing::Instrument;
use tt_domain::event::{AgentRunEvent, EventLevel};
use tt_domain::event_payload as payload;
use tt_domain::ids::{InvocationId, RunId, TaskId};
use tt_domain::invocation::{AgentInvocation, ExitPolicy, InvocationStatus};
use tt_domain::model::AgentModelMessage;
use tt_domain::profile::ResolvedProfile;
use tt_domain::run::{
    AgentRun, AgentRunStatus, ConversationKind, derive_workspace_id, normalize_stable_chat_id,
};
use tt_domain::task::TaskStatus;
use tt_domain::workspace::{RunManifest, WorkspacePath};
use tt_ports::{EventPage, FileContent, RunDocument, RunListPage};

use crate::engine::context::{InvocationRuntime, RunContext};
use crate::engine::tool_loop::{LoopOutcome, run_tool_loop};
use crate::error::{ApplicationError, ApplicationResult};
use crate::events::{EventSink, RunEventStream};
use crate::handoff_chain::{prepare_handoff, settle_open_handoffs, settle_task};
use crate::prompt_input::{PromptMessage, PromptSnapshot};
use crate::registry::build_tool_snapshot;
use crate::services::RuntimeServices;

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

/// What `prepare_root` hands to the executor.
type PreparedRoot = (
    Arc<RunContext>,
    InvocationRuntime,
    Vec<AgentModelMessage>,
    Option<RootAssembly>,
);

/// A root prompt still to be assembled by the host (`preset.mode = "ref"`).
struct RootAssembly {
    system_prompt: String,
}

/// Prepares the root agent (at run start, and again at a resume) from the run's frozen
/// conversation: its loop state, first messages, and the assembly still to ask the host for.
async fn start_root(
    ctx: &RunContext,
    root: AgentInvocation,
    profile: &ResolvedProfile,
    presentation: tt_domain::run::Presentation,
    prompt_snapshot: &PromptSnapshot,
) -> ApplicationResult<(
    InvocationRuntime,
    Vec<AgentModelMessage>,
    Option<RootAssembly>,
)> {
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
    let inv = InvocationRuntime::start(root, profile.clone(), &prepared, ctx.cancel.clone(), None);
    Ok((inv, prepared.messages, assembly))
}

/// How many files `list_workspace_files` returns at most.
pub(crate) const MAX_LISTED_FILES: usize = 10_000;

struct ActiveRun {
    ctx: Arc<RunContext>,
    done: watch::Receiver<bool>,
}

/// Starts, runs and cancels runs over the ports in [`RuntimeServices`].
pub struct AgentRunService {
    services: RuntimeServices,
    events: Arc<EventSink>,
    active: StdMutex<HashMap<RunId, ActiveRun>>,
    /// Runs whose executor ended in a terminal status the store could not record (a full or
    /// read-only disk): what `wait_for_run` reports for them instead of the stale record.
    unrecorded: StdMutex<HashMap<RunId, AgentRun>>,
    /// The `run_failed` / `run_partial_success` payloads the journal refused, by run.
    unrecorded_failures: StdMutex<HashMap<RunId, Value>>,
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
        let stable_chat_id = normalize_stable_chat_id(&request.stable_chat_id)?;
        let profile = crate::profiles::resolve(
            self.services.profiles.as_ref(),
            request.profile_id.as_deref(),
        )
        .await?;
        if !profile.definition.run.direct_runnable {
            return Err(ApplicationError::fatal(
                "agent.profile_not_direct_runnable",
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
                "agent.persist_base_state_mismatch",
                format!("`{base}` is not a state id"),
            ));
        }
        let now = self.services.clock.now();
        let run_id = RunId::generate(&self.services.ids.next_token());
        let presentation = profile.definition.run.presentation;
        let run = AgentRun {
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
            created_at: now,
            updated_at: now,
        };
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
                    },
                )
                .await?;
            self.prepare_root(run.clone(), &profile, &request).await
        };
        match prepared.await {
            Ok((ctx, inv, messages, root_assembly)) => {
                // The root of every span of this run: invocations, model and tool calls.
                let span = tracing::info_span!(
                    "run",
                    run_id = run_id.as_str(),
                    profile = inv.profile.id().as_str(),
                );
                self.spawn_executor(ctx, inv, messages, root_assembly, None, span);
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
                self.finalize_failure(&ctx, None, &error).await;
                Err(error)
            }
        }
    }

    /// Resumes an `interrupted` run in this process (docs/resume.md): takes the run's owner
    /// lock again, journals `run_resumed`, puts its unfinished agents and tasks back to work
    /// (`agent_invocation_resumed`, `agent_task_resumed`) and continues each agent from its
    /// stored model responses and tool results. Returns the run as resumed; it then executes
    /// in the background like a started run (`wait_for_run`, `subscribe`).
    ///
    /// Refused with `agent.run_not_resumable` (the run is not interrupted, or runs here
    /// already), `agent.resume_profile_changed` (a profile no longer gives an agent the tool
    /// snapshot it was frozen with) or `agent.run_locked` (another process owns the run).
    pub async fn resume_run(self: &Arc<Self>, run_id: &RunId) -> ApplicationResult<AgentRun> {
        use crate::resume;
        let mut run = self.services.runs.load_run(run_id).await?;
        if self.lock_active().contains_key(run_id) {
            return Err(resume::not_resumable(&run, "it is running in this process"));
        }
        if !run.status.is_terminal() {
            // Unfinished but not executing here: a live process owns it (or the data dir was
            // opened read-only, and nothing marked it interrupted).
            return Err(ApplicationError::fatal(
                "agent.run_locked",
                format!(
                    "run {run_id} is {} in another process; it can be resumed only once that \
                     process is gone",
                    run.status.as_str()
                ),
            ));
        }
        if run.status != AgentRunStatus::Interrupted {
            return Err(resume::not_resumable(
                &run,
                &format!(
                    "it is {}; only an interrupted run can be resumed",
                    run.status.as_str()
                ),
            ));
        }
        let services = &self.services;
        let invocations = services.invocations.list_invocations(run_id).await?;
        let tasks = services.invocations.list_tasks(run_id).await?;
        let mut root = invocations
            .iter()
            .find(|invocation| invocation.id.is_root())
            .cloned()
            .ok_or_else(|| resume::not_resumable(&run, "it has no root agent"))?;
        // The foreground belongs to the root or, after handoffs, to the agent the last handoff
        // brought in: the first agent down the chain that was not `transferred`.
        let handoff = {
            let mut owner = root.clone();
            let mut incoming = None;
            while owner.status == InvocationStatus::Transferred {
                let next = tasks
                    .iter()
                    .rfind(|task| {
                        task.continuation == tt_domain::task::TaskContinuation::TransferControl
                            && task.parent_invocation_id == owner.id
                    })
                    .and_then(|task| {
                        invocations
                            .iter()
                            .find(|invocation| invocation.id == task.child_invocation_id)
                            .map(|invocation| (task.clone(), invocation.clone()))
                    });
                let Some((task, next)) = next else { break };
                incoming = Some(task);
                owner = next;
            }
            let resumable = owner.status == InvocationStatus::Interrupted
                && incoming
                    .as_ref()
                    .is_none_or(|task| task.status == TaskStatus::Interrupted);
            if !resumable {
                return Err(resume::not_resumable(
                    &run,
                    &format!(
                        "its root agent is {} and no agent it handed the run to was interrupted",
                        root.status.as_str()
                    ),
                ));
            }
            incoming.map(|task| (task, owner))
        };
        let profile = crate::profiles::resolve(
            services.profiles.as_ref(),
            run.profile_id
                .as_ref()
                .map(tt_domain::ids::ProfileId::as_str),
        )
        .await?;
        crate::profiles::check_model_configured(&profile)?;
        let snapshot = build_tool_snapshot(
            &profile,
            &root.id,
            ExitPolicy::RunFinishAllowed,
            run.presentation,
        )?;
        match &handoff {
            None => resume::check_snapshot(services, run_id, &root.id, &snapshot).await?,
            Some((task, owner)) => {
                let target = crate::profiles::resolve(
                    services.profiles.as_ref(),
                    Some(task.target_profile_id.as_str()),
                )
                .await?;
                let owner_snapshot = build_tool_snapshot(
                    &target,
                    &owner.id,
                    ExitPolicy::RunFinishAllowed,
                    run.presentation,
                )?;
                resume::check_snapshot(services, run_id, &owner.id, &owner_snapshot).await?;
            }
        }
        let persist_snapshot: tt_domain::workspace::PersistSnapshot = services
            .runs
            .read_document(run_id, &RunDocument::PersistSnapshot)
            .await?
            .and_then(|value| serde_json::from_value(value).ok())
            .unwrap_or_default();
        let prompt_snapshot: PromptSnapshot = services
            .runs
            .read_document(run_id, &RunDocument::PromptSnapshot)
            .await?
            .and_then(|value| serde_json::from_value(value).ok())
            .ok_or_else(|| {
                resume::not_resumable(&run, "its input/prompt_snapshot.json is missing")
            })?;
        let mut journal = resume::read_journal(services, run_id).await?;
        // The context exists before anything is written, to check the delegated agents' tools.
        let ctx = RunContext::new(
            run.clone(),
            services.clone(),
            Arc::clone(&self.events),
            persist_snapshot,
        );
        let interrupted = resume::interrupted_delegations(&tasks);
        let mut running = Vec::new();
        let mut waiting = Vec::new();
        for task in interrupted {
            if journal.started.contains(&task.child_invocation_id) {
                let (_, child_snapshot) = resume::child_profile(&ctx, &task).await?;
                resume::check_snapshot(
                    services,
                    run_id,
                    &task.child_invocation_id,
                    &child_snapshot,
                )
                .await?;
                running.push(task);
            } else {
                waiting.push(task);
            }
        }
        // From here on this process owns the run: the first write takes its lock
        // (`agent.run_locked` when another process holds it).
        let now = services.clock.now();
        run.resume(now)?;
        services.runs.save_run(&run).await?;
        let ctx = RunContext::new(
            run.clone(),
            services.clone(),
            Arc::clone(&self.events),
            ctx.persist_snapshot.clone(),
        );
        ctx.guidance
            .restore(
                journal.guidance_submitted,
                std::mem::take(&mut journal.pending_guidance),
            )
            .await;
        let owner_id = handoff
            .as_ref()
            .map_or_else(|| root.id.clone(), |(_, owner)| owner.id.clone());
        let mut resumed_ids = vec![owner_id.clone()];
        resumed_ids.extend(running.iter().map(|task| task.child_invocation_id.clone()));
        self.events
            .record(
                run_id,
                EventLevel::Info,
                &payload::RunResumed {
                    from_seq: journal.from_seq,
                    invocations: resumed_ids,
                },
            )
            .await?;
        self.events
            .record(
                run_id,
                EventLevel::Info,
                &payload::StatusChanged { status: run.status },
            )
            .await?;
        match &handoff {
            None => resume::resume_invocation(&ctx, &mut root).await?,
            Some((task, owner)) => {
                resume::resume_invocation(&ctx, &mut owner.clone()).await?;
                resume::resume_task(&ctx, task, TaskStatus::Running).await?;
            }
        }
        // A handoff the owner had registered when the process died: its call runs again with
        // this task (no second handoff), which waits in line for the owner to be transferred.
        if let Some(pending) = tasks.iter().find(|task| {
            task.continuation == tt_domain::task::TaskContinuation::TransferControl
                && task.parent_invocation_id == owner_id
                && task.status == TaskStatus::Interrupted
        }) {
            resume::resume_task(&ctx, pending, TaskStatus::Queued).await?;
        }
        // A delegated agent whose task ended (it returned, failed or was cancelled) just
        // before the interruption ends the same way, instead of staying `interrupted`.
        for task in tasks.iter().filter(|task| {
            task.continuation == tt_domain::task::TaskContinuation::ReturnToParent
                && matches!(
                    task.status,
                    TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
                )
        }) {
            if let Some(mut invocation) = invocations
                .iter()
                .find(|invocation| invocation.id == task.child_invocation_id)
                .cloned()
                .filter(|invocation| invocation.status == InvocationStatus::Interrupted)
            {
                resume::resume_invocation(&ctx, &mut invocation).await?;
                let status = match task.status {
                    TaskStatus::Completed => InvocationStatus::Completed,
                    TaskStatus::Cancelled => InvocationStatus::Cancelled,
                    _ => InvocationStatus::Failed,
                };
                ctx.set_invocation_status(&mut invocation, status).await?;
            }
        }
        let mut child_replays = Vec::new();
        for task in &running {
            if let Some(mut invocation) = invocations
                .iter()
                .find(|invocation| invocation.id == task.child_invocation_id)
                .cloned()
                && invocation.status == InvocationStatus::Interrupted
            {
                resume::resume_invocation(&ctx, &mut invocation).await?;
            }
            let replay = resume::load_replay(
                services,
                run_id,
                &task.child_invocation_id,
                &invocations,
                &mut journal,
            )
            .await?;
            child_replays.push((task.clone(), replay));
        }
        let owner_replay =
            resume::load_replay(services, run_id, &owner_id, &invocations, &mut journal).await?;
        if journal.promoted {
            ctx.remember_promotion();
        }
        // Confirmed commits stay in the ledger (those of earlier owners too); one whose call
        // left no result is offered again.
        for (invocation, call_key, record) in std::mem::take(&mut journal.commits) {
            if invocation != owner_id || owner_replay.has_result(&call_key) {
                ctx.record_commit(record);
            }
        }
        let (mut inv, messages, root_assembly, incoming) = match &handoff {
            None => {
                // The same start as the first process's, from the frozen conversation; a
                // host-assembled prompt is read back (or asked for again when the process died
                // before it was stored) by the executor.
                let (inv, messages, root_assembly) =
                    start_root(&ctx, root, &profile, run.presentation, &prompt_snapshot).await?;
                (inv, messages, root_assembly, None)
            }
            Some((task, owner)) => {
                let (inv, messages) = prepare_handoff(&ctx, &task.id, &owner.id).await?;
                (inv, messages, None, Some(task.id.clone()))
            }
        };
        inv.replay = Some(owner_replay);
        // Tasks go back to work: running ones where they were, waiting ones in line.
        for (task, replay) in child_replays {
            let task = resume::resume_task(&ctx, &task, TaskStatus::Running).await?;
            ctx.leave_replay(task.child_invocation_id.clone(), replay);
            ctx.scheduler.resume_running(&ctx, task)?;
        }
        for task in waiting {
            let task = resume::resume_task(&ctx, &task, TaskStatus::Queued).await?;
            let delegator = invocations
                .iter()
                .find(|invocation| invocation.id == task.parent_invocation_id)
                .map(|invocation| invocation.profile_id.clone());
            let limit = match delegator {
                Some(id) if id != *profile.id() => {
                    crate::profiles::resolve(services.profiles.as_ref(), Some(id.as_str()))
                        .await?
                        .definition
                        .delegation
                        .max_concurrent_invocations
                }
                _ => profile.definition.delegation.max_concurrent_invocations,
            };
            ctx.scheduler.submit(&ctx, task, limit)?;
        }
        let span = tracing::info_span!(
            "run",
            run_id = run_id.as_str(),
            profile = inv.profile.id().as_str(),
            resumed = true,
        );
        self.spawn_executor(ctx, inv, messages, root_assembly, incoming, span);
        self.load_run(run_id).await
    }

    /// Registers the run as active and runs its executor in the background under `span`; the
    /// run leaves the active set's `done` signal raised when the executor has ended.
    fn spawn_executor(
        self: &Arc<Self>,
        ctx: Arc<RunContext>,
        inv: InvocationRuntime,
        messages: Vec<AgentModelMessage>,
        root_assembly: Option<RootAssembly>,
        incoming: Option<TaskId>,
        span: tracing::Span,
    ) {
        let (done_tx, done_rx) = watch::channel(false);
        self.lock_active().insert(
            ctx.run_id.clone(),
            ActiveRun {
                ctx: Arc::clone(&ctx),
                done: done_rx,
            },
        );
        let service = Arc::clone(self);
        tokio::spawn(
            async move {
                service
                    .execute(ctx, inv, messages, root_assembly, incoming)
                    .await;
                let _ = done_tx.send(true);
            }
            .instrument(span),
        );
    }

    async fn prepare_root(
        &self,
        run: AgentRun,
        profile: &ResolvedProfile,
        request: &StartRunRequest,
    ) -> ApplicationResult<PreparedRoot> {
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
        let ctx = RunContext::new(
            provisional.run_snapshot().await,
            services.clone(),
            Arc::clone(&self.events),
            persist_snapshot,
        );

        let prompt_snapshot = PromptSnapshot::freeze(
            profile.definition.context,
            &request.history,
            request.user_request.as_deref(),
        );
        services
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

        let now = services.clock.now();
        let invocation = AgentInvocation::new_root(run_id.clone(), profile.id().clone(), now);
        services.invocations.save_invocation(&invocation).await?;
        self.events
            .record(
                &run_id,
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
        ctx.try_set_status(AgentRunStatus::AssemblingContext)
            .await?;
        let (inv, messages, root_assembly) = start_root(
            &ctx,
            invocation,
            profile,
            run.presentation,
            &prompt_snapshot,
        )
        .await?;
        Ok((ctx, inv, messages, root_assembly))
    }

    /// `context_assembled` for the root invocation.
    async fn root_context_assembled(
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
    async fn assemble_root_prompt(
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

    /// Drives the foreground invocation to a terminal run state. Never returns an error: every
    /// outcome is written to the run record and the journal.
    async fn execute(
        &self,
        ctx: Arc<RunContext>,
        mut inv: InvocationRuntime,
        mut messages: Vec<AgentModelMessage>,
        root_assembly: Option<RootAssembly>,
        // The task that brought `inv` in, for a run resumed after a handoff.
        mut incoming: Option<TaskId>,
    ) {
        // The chain of foreground owners: the root, then each agent a handoff brings in. The
        // task that brought the current owner in completes when it finishes or hands off.
        let run_seconds = inv.profile.definition.limits.max_run_seconds;
        if let Some(limit) = inv.profile.definition.limits.max_total_tokens {
            ctx.scheduler.set_run_token_budget(limit);
        }
        if let Some(limit) = inv.profile.definition.limits.max_total_cost_usd {
            ctx.scheduler.set_run_cost_budget(limit);
        }
        let chain = async {
            if let Some(root) = root_assembly {
                messages = self.assemble_root_prompt(&ctx, &mut inv, root).await?;
            }
            loop {
                let outcome = async {
                    ctx.set_invocation_status(&mut inv.invocation, InvocationStatus::Running)
                        .await?;
                    run_tool_loop(&ctx, &mut inv, std::mem::take(&mut messages)).await
                }
                .await;
                match outcome {
                    Ok(LoopOutcome::Finished { .. }) => {
                        break self.finish_run(&ctx, &mut inv, incoming.as_ref()).await;
                    }
                    Ok(LoopOutcome::Transferred {
                        task_id,
                        new_invocation_id,
                        ..
                    }) => {
                        if let Some(previous) = incoming.take()
                            && let Err(error) =
                                settle_task(&ctx, &previous, TaskStatus::Completed, None).await
                        {
                            break Err(error);
                        }
                        match prepare_handoff(&ctx, &task_id, &new_invocation_id).await {
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
                            "agent.task_return_denied",
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
                        "agent.run_deadline_exceeded",
                        format!("the run did not finish within {seconds} s (limits.maxRunSeconds)"),
                    ))
                }
            },
        };
        if let Err(error) = result {
            if error.is_cancelled() || ctx.cancel.is_cancelled() {
                self.finalize_cancelled(&ctx, Some(&mut inv.invocation))
                    .await;
            } else {
                self.finalize_failure(&ctx, Some(&mut inv.invocation), &error)
                    .await;
            }
        }
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

    /// `workspace.finish` accepted: promote `persist/`, complete the run.
    async fn finish_run(
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
        match self
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
                self.persist_promoted(ctx, &change_set, true).await?;
            }
            // Resumed after the interrupted process had promoted `persist/`: that state is
            // this run's. It is read back; its event is journaled if the process died before
            // journaling it, and the host binding is asked for again.
            Err(error)
                if error.code() == "agent.persistent_state_exists"
                    && let Some(change_set) =
                        self.services.workspace.promoted_state(&ctx.run_id).await? =>
            {
                self.persist_promoted(ctx, &change_set, !ctx.promoted_before())
                    .await?;
            }
            Err(error) => {
                let error = ApplicationError::from(error);
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
        }
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

    /// Journals `persistent_changes_committed` for `change_set` (unless `journal` is false:
    /// the interrupted process of a resumed run had journaled it) and binds the state to the
    /// run's last commit.
    async fn persist_promoted(
        &self,
        ctx: &RunContext,
        change_set: &tt_domain::workspace::PersistentChangeSet,
        journal: bool,
    ) -> ApplicationResult<()> {
        let changes: Vec<Value> = change_set
            .changes
            .iter()
            .map(
                |change| json!({"path": change.path, "kind": change.kind, "sha256": change.sha256}),
            )
            .collect();
        if journal {
            self.events
                .record(
                    &ctx.run_id,
                    EventLevel::Info,
                    &payload::PersistentChangesCommitted {
                        state_id: change_set.state_id.clone(),
                        base_state_id: change_set.base_state_id.clone(),
                        change_count: changes.len() as u64,
                        changes: json!(changes),
                    },
                )
                .await?;
        }
        crate::persist_metadata::bind_state_to_last_commit(ctx, change_set, &changes).await
    }

    async fn finalize_cancelled(&self, ctx: &RunContext, invocation: Option<&mut AgentInvocation>) {
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
    async fn finalize_failure(
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
                self.keep_unrecorded_failure(&ctx.run_id, json!(failed), &unrecorded);
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
                self.keep_unrecorded_failure(&ctx.run_id, json!(partial), &unrecorded);
            }
        }
    }

    /// Requests cancellation. An active run is interrupted at once (model calls and host waits
    /// abort) and ends `cancelled`; a terminal run is returned unchanged.
    pub async fn cancel_run(&self, run_id: &RunId) -> ApplicationResult<AgentRun> {
        // Look up the executor before loading the record: an executor writes the terminal state
        // before it leaves the active set, so "not active and not terminal" means orphaned.
        let active = self
            .lock_active()
            .get(run_id)
            .map(|active| Arc::clone(&active.ctx));
        let run = self.services.runs.load_run(run_id).await?;
        if run.status.is_terminal() {
            return Ok(run);
        }
        // The stored record lags behind a live run's transient statuses.
        let previous_status = match &active {
            Some(ctx) => ctx.run_snapshot().await.status,
            None => run.status,
        };
        self.events
            .record(
                run_id,
                EventLevel::Info,
                &payload::RunCancelRequested { previous_status },
            )
            .await?;
        match active {
            Some(ctx) => {
                ctx.guidance
                    .close(&self.events, run_id, "run_cancel_requested")
                    .await?;
                ctx.try_set_status(AgentRunStatus::Cancelling).await?;
                ctx.cancel.cancel();
            }
            None => {
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
                self.finalize_cancelled(
                    &ctx,
                    root.as_mut().filter(|inv| !inv.status.is_terminal()),
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
        let active = self
            .lock_active()
            .get(run_id)
            .map(|active| Arc::clone(&active.ctx));
        match active {
            Some(ctx) => ctx.guidance.submit(&self.events, run_id, request).await,
            None => {
                let run = self.services.runs.load_run(run_id).await?;
                if run.status.is_terminal() {
                    Err(crate::guidance::mailbox_closed())
                } else {
                    Err(ApplicationError::fatal(
                        "agent.guidance_run_not_owned",
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
            .map(|active| Arc::clone(&active.ctx));
        match active {
            Some(ctx) => crate::engine::scheduler::cancel_task_as_host(&ctx, task_id).await,
            None => {
                let run = self.services.runs.load_run(run_id).await?;
                Err(if run.status.is_terminal() {
                    ApplicationError::fatal(
                        "agent.run_not_running",
                        format!(
                            "run {run_id} has ended ({}); its tasks ended with it",
                            run.status.as_str()
                        ),
                    )
                } else {
                    ApplicationError::fatal(
                        "agent.run_locked",
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
        let active = self
            .lock_active()
            .get(run_id)
            .map(|active| Arc::clone(&active.ctx));
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
            .map(|active| (active.done.clone(), Arc::clone(&active.ctx)));
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
                "agent.read_events_invocation_id_invalid",
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

    pub async fn list_runs(&self, page: RunListPage) -> ApplicationResult<Vec<AgentRun>> {
        let mut runs = self.services.runs.list_runs(page).await?;
        for run in &mut runs {
            let active = self
                .lock_active()
                .get(&run.id)
                .map(|active| Arc::clone(&active.ctx));
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
                "workspace.path_not_visible",
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
    /// (a full or read-only disk): that event's payload plus `unrecordedBecause`, the storage
    /// error. `None` for runs whose end was journaled.
    pub fn unrecorded_failure(&self, run_id: &RunId) -> Option<Value> {
        self.unrecorded_failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(run_id)
            .cloned()
    }

    fn keep_unrecorded_failure(&self, run_id: &RunId, mut payload: Value, why: &ApplicationError) {
        payload["unrecordedBecause"] = json!(why.to_string());
        self.unrecorded_failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(run_id.clone(), payload);
    }

    fn lock_active(&self) -> std::sync::MutexGuard<'_, HashMap<RunId, ActiveRun>> {
        self.active
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
