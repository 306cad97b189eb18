//! `resume_run`: reopens an interrupted run from its records and journal, rebuilds the agents
//! that were working, and hands the root to the executor again. Its own file because it is
//! the longest job of the facade and changes for its own reasons.
use std::sync::Arc;
use tt_domain::event::EventLevel;
use tt_domain::event_payload as payload;
use tt_domain::ids::{InvocationId, RunId, TaskId};
use tt_domain::invocation::{AgentInvocation, ExitPolicy, InvocationStatus};
use tt_domain::model::AgentModelMessage;
use tt_domain::profile::ResolvedProfile;
use tt_domain::run::{AgentRun, AgentRunStatus};
use tt_domain::task::{AgentTaskRecord, TaskContinuation, TaskStatus};
use tt_ports::RunDocument;

use crate::engine::context::{RunContext, RunScheduler};
use crate::engine::invocation::InvocationRuntime;
use crate::engine::scheduler::TaskScheduler;
use crate::error::ApplicationResult;
use crate::handoff_chain::prepare_handoff;
use crate::prompt_input::PromptSnapshot;
use crate::registry::build_tool_snapshot;
use crate::resume;

use super::AgentRunService;
use super::executor::{RootAssembly, start_root};
use super::reopen_run::Reopening;

/// What `resume_run` read and checked before writing anything: the run reopened in memory
/// where its end stopped it, its agents and tasks, and what each resumed agent needs.
struct ResumePlan {
    run: AgentRun,
    invocations: Vec<AgentInvocation>,
    tasks: Vec<AgentTaskRecord>,
    reopening: Option<Reopening>,
    root: AgentInvocation,
    /// The agent the last handoff brought in and the task that brought it, when it is not the
    /// root that holds the foreground.
    handoff: Option<(AgentTaskRecord, AgentInvocation)>,
    profile: ResolvedProfile,
    prompt_snapshot: PromptSnapshot,
    journal: resume::JournalState,
    persist_snapshot: tt_domain::workspace::PersistSnapshot,
    /// Interrupted delegations whose agent had started (continued where it was) and those
    /// still waiting in line.
    running: Vec<AgentTaskRecord>,
    waiting: Vec<AgentTaskRecord>,
}

impl AgentRunService {
    /// Resumes an `interrupted`, `failed` or `cancelled` run in this process (docs/resume.md):
    /// takes the run's owner lock again, reopens what a failed or cancelled run's end stopped
    /// (`reopen_run`), journals `run_resumed`, puts its unfinished agents and tasks back to work
    /// (`agent_invocation_resumed`, `agent_task_resumed`) and continues each agent from its
    /// stored model responses and tool results. Returns the run as resumed; it then executes
    /// in the background like a started run (`wait_for_run`, `subscribe`).
    ///
    /// Refused with `agent.run_not_resumable` (the run completed, was abandoned, or runs here
    /// already), `agent.resume_profile_changed` (a profile no longer gives an agent the tool
    /// snapshot it was frozen with) or `agent.run_locked` (another process owns the run).
    pub async fn resume_run(self: &Arc<Self>, run_id: &RunId) -> ApplicationResult<AgentRun> {
        let plan = self.plan_resume(run_id).await?;
        self.apply_resume(plan).await
    }

    /// Reads the run and checks that it can be resumed as it is, writing nothing: its status,
    /// its foreground agent, every resumed agent's frozen tools, its snapshots and journal.
    async fn plan_resume(&self, run_id: &RunId) -> ApplicationResult<ResumePlan> {
        let run = self.resumable_run(run_id).await?;
        let services = &self.services;
        let mut invocations = services.invocations.list_invocations(run_id).await?;
        let mut tasks = services.invocations.list_tasks(run_id).await?;
        // A failed or cancelled run, or an interrupted one whose end was never written, is read
        // as interrupted where its end stopped it; nothing is written before the checks below
        // pass.
        let reopening = if run.status == AgentRunStatus::Interrupted
            && super::reopen_run::unwritten_end(&run, &invocations, &tasks).is_none()
        {
            None
        } else {
            Some(super::reopen_run::plan(services, &run, &mut invocations, &mut tasks).await?)
        };
        let root = invocations
            .iter()
            .find(|invocation| invocation.id.is_root())
            .cloned()
            .ok_or_else(|| resume::not_resumable(&run, "it has no root agent"))?;
        let handoff = foreground_handoff(&run, &root, &invocations, &tasks)?;
        let profile = crate::profiles::resolve(
            services.profiles.as_ref(),
            run.profile_id
                .as_ref()
                .map(tt_domain::ids::ProfileId::as_str),
        )
        .await?;
        crate::profiles::check_model_configured(&profile)?;
        self.check_foreground_tools(&run, &root, &profile, handoff.as_ref())
            .await?;
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
        let journal = resume::read_journal(services, run_id).await?;
        // The context exists before anything is written, to check the delegated agents' tools.
        let ctx = RunContext::new(
            run.clone(),
            services.clone(),
            Arc::clone(&self.events),
            persist_snapshot.clone(),
        );
        let mut running = Vec::new();
        let mut waiting = Vec::new();
        for task in resume::interrupted_delegations(&tasks) {
            if journal.started.contains(&task.child_invocation_id) {
                let (child, child_snapshot) = resume::child_profile(&ctx, &task).await?;
                resume::check_snapshot(
                    services,
                    run_id,
                    &task.child_invocation_id,
                    &child_snapshot,
                )
                .await?;
                crate::engine::fork_prefix::check_resumable(
                    &ctx,
                    &child,
                    &task.child_invocation_id,
                )
                .await?;
                running.push(task);
            } else {
                waiting.push(task);
            }
        }
        Ok(ResumePlan {
            run,
            invocations,
            tasks,
            reopening,
            root,
            handoff,
            profile,
            prompt_snapshot,
            journal,
            persist_snapshot,
            running,
            waiting,
        })
    }

    /// The run if its status lets it be resumed here: ended (a run that looks live elsewhere is
    /// `agent.run_locked`), not abandoned, and interrupted, failed or cancelled.
    async fn resumable_run(&self, run_id: &RunId) -> ApplicationResult<AgentRun> {
        let running_here = self.lock_active().contains_key(run_id);
        if running_here {
            let run = self.services.runs.load_run(run_id).await?;
            return Err(resume::not_resumable(&run, "it is running in this process"));
        }
        let run = self.load_settled_run(run_id).await?;
        if !run.status.is_terminal() {
            // Unfinished but not executing here: a live process owns it (or the data dir was
            // opened read-only, and nothing marked it interrupted).
            return Err(super::locked_elsewhere(&run, "resumed"));
        }
        if run.abandoned_at.is_some() {
            return Err(resume::not_resumable(&run, "it was abandoned"));
        }
        if !run.is_resumable() {
            return Err(resume::not_resumable(
                &run,
                &format!(
                    "it is {}; only an interrupted, failed or cancelled run can be resumed",
                    run.status.as_str()
                ),
            ));
        }
        Ok(run)
    }

    /// The foreground agent's tools as its profile gives them now, against the snapshot its
    /// history was made with (`agent.resume_profile_changed` when they differ).
    async fn check_foreground_tools(
        &self,
        run: &AgentRun,
        root: &AgentInvocation,
        profile: &ResolvedProfile,
        handoff: Option<&(AgentTaskRecord, AgentInvocation)>,
    ) -> ApplicationResult<()> {
        let services = &self.services;
        // The root's tools are built even when another agent holds the foreground: a profile
        // that no longer builds refuses the resume either way.
        let external =
            crate::registry::external_definitions(services, &run.id, &root.id, profile).await?;
        let mut snapshot = build_tool_snapshot(
            profile,
            &root.id,
            ExitPolicy::RunFinishAllowed,
            run.presentation,
            &external,
        )?;
        let profiles = services.profiles.as_ref();
        crate::engine::fork_prefix::offer_fork_mode(profiles, profile, &mut snapshot).await?;
        let Some((task, owner)) = handoff else {
            return resume::check_snapshot(services, &run.id, &root.id, &snapshot).await;
        };
        let target = crate::profiles::resolve(
            services.profiles.as_ref(),
            Some(task.target_profile_id.as_str()),
        )
        .await?;
        let external =
            crate::registry::external_definitions(services, &run.id, &owner.id, &target).await?;
        let mut owner_snapshot = build_tool_snapshot(
            &target,
            &owner.id,
            ExitPolicy::RunFinishAllowed,
            run.presentation,
            &external,
        )?;
        crate::engine::fork_prefix::offer_fork_mode(profiles, &target, &mut owner_snapshot).await?;
        resume::check_snapshot(services, &run.id, &owner.id, &owner_snapshot).await
    }

    /// Writes the resume planned: reopens the run, journals `run_resumed`, puts every
    /// unfinished agent and task back to work and starts the foreground agent's executor.
    async fn apply_resume(self: &Arc<Self>, plan: ResumePlan) -> ApplicationResult<AgentRun> {
        let ResumePlan {
            mut run,
            invocations,
            tasks,
            reopening,
            mut root,
            handoff,
            profile,
            prompt_snapshot,
            mut journal,
            persist_snapshot,
            running,
            waiting,
        } = plan;
        let services = &self.services;
        let run_id = run.id.clone();
        // From here on this process owns the run: the first write takes its lock
        // (`agent.run_locked` when another process holds it).
        if let Some(reopening) = &reopening {
            self.reopen(&mut run, reopening).await?;
            journal.from_seq = reopening.last_seq;
        }
        run.resume(services.clock.now())?;
        services.runs.save_run(&run).await?;
        let ctx = RunContext::new(
            run.clone(),
            services.clone(),
            Arc::clone(&self.events),
            persist_snapshot,
        );
        let scheduler = TaskScheduler::new(Arc::clone(&ctx));
        ctx.guidance
            .restore(
                journal.guidance_submitted,
                std::mem::take(&mut journal.pending_guidance),
            )
            .await;
        let owner_id = handoff
            .as_ref()
            .map_or_else(|| root.id.clone(), |(_, owner)| owner.id.clone());
        self.journal_resumed(&run, &journal, &owner_id, &running)
            .await?;
        resume_foreground(&ctx, &mut root, handoff.as_ref(), &tasks, &owner_id).await?;
        close_ended_delegations(&ctx, &tasks, &invocations).await?;
        let child_replays =
            resume_running_children(&ctx, &running, &invocations, &mut journal).await?;
        let owner_replay =
            resume::load_replay(services, &run_id, &owner_id, &invocations, &mut journal).await?;
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
        let (mut inv, messages, root_assembly, incoming) = start_foreground(
            &scheduler,
            root,
            handoff.as_ref(),
            &profile,
            &run,
            &prompt_snapshot,
        )
        .await?;
        inv.replay = Some(owner_replay);
        // The run's limits before its tasks go back to work (their watchdog reads the run's);
        // its spend approval where the journal left it (parked stays parked).
        ctx.spend.restore(
            profile.definition.limits.ask_above_total_cost_usd,
            journal.spend,
        );
        super::executor::apply_run_limits(&scheduler, &profile.definition.limits);
        // Tasks go back to work: running ones where they were, waiting ones in line.
        for (task, replay) in child_replays {
            let task = resume::resume_task(&ctx, &task, TaskStatus::Running).await?;
            ctx.leave_replay(task.child_invocation_id.clone(), replay);
            scheduler.resume_running(task);
        }
        for task in waiting {
            let task = resume::resume_task(&ctx, &task, TaskStatus::Queued).await?;
            let limit = self
                .delegator_concurrency(&invocations, &task, &profile)
                .await?;
            let stored = crate::events::Durable::stored();
            scheduler.submit(task, limit, false, stored).await?;
        }
        let span = tracing::info_span!(
            "run",
            run_id = run_id.as_str(),
            profile = inv.profile.id().as_str(),
            resumed = true,
        );
        self.spawn_executor(inv, messages, root_assembly, incoming, span);
        self.load_run(&run_id).await
    }

    /// Journals `run_resumed {fromSeq, invocations}` (the foreground agent and the running
    /// delegated ones) and the run's status.
    async fn journal_resumed(
        &self,
        run: &AgentRun,
        journal: &resume::JournalState,
        owner_id: &InvocationId,
        running: &[AgentTaskRecord],
    ) -> ApplicationResult<()> {
        let mut resumed_ids = vec![owner_id.clone()];
        resumed_ids.extend(running.iter().map(|task| task.child_invocation_id.clone()));
        self.events
            .record(
                &run.id,
                EventLevel::Info,
                &payload::RunResumed {
                    from_seq: journal.from_seq,
                    invocations: resumed_ids,
                },
            )
            .await?;
        self.events
            .record(
                &run.id,
                EventLevel::Info,
                &payload::StatusChanged { status: run.status },
            )
            .await?;
        Ok(())
    }

    /// How many delegated agents the delegator of `task` may have at once: its own profile's
    /// limit (the run's `profile` when the root delegated).
    async fn delegator_concurrency(
        &self,
        invocations: &[AgentInvocation],
        task: &AgentTaskRecord,
        profile: &ResolvedProfile,
    ) -> ApplicationResult<u32> {
        let delegator = invocations
            .iter()
            .find(|invocation| invocation.id == task.parent_invocation_id)
            .map(|invocation| invocation.profile_id.clone());
        Ok(match delegator {
            Some(id) if id != *profile.id() => {
                crate::profiles::resolve(self.services.profiles.as_ref(), Some(id.as_str()))
                    .await?
                    .definition
                    .delegation
                    .max_concurrent_invocations
            }
            _ => profile.definition.delegation.max_concurrent_invocations,
        })
    }
}

/// The running delegated agents back to `running` (those still `interrupted`), each with the
/// stored steps it continues from.
async fn resume_running_children(
    ctx: &Arc<RunContext>,
    running: &[AgentTaskRecord],
    invocations: &[AgentInvocation],
    journal: &mut resume::JournalState,
) -> ApplicationResult<Vec<(AgentTaskRecord, crate::replay::Replay)>> {
    let mut child_replays = Vec::new();
    for task in running {
        if let Some(mut invocation) = invocations
            .iter()
            .find(|invocation| invocation.id == task.child_invocation_id)
            .cloned()
            && invocation.status == InvocationStatus::Interrupted
        {
            resume::resume_invocation(ctx, &mut invocation).await?;
        }
        let replay = resume::load_replay(
            &ctx.services,
            &ctx.run_id,
            &task.child_invocation_id,
            invocations,
            journal,
        )
        .await?;
        child_replays.push((task.clone(), replay));
    }
    Ok(child_replays)
}

/// The foreground agent's loop state and first messages: the root's as the first process
/// started it, from the frozen conversation (a host-assembled prompt is read back, or asked for
/// again when the process died before it was stored, by the executor); or the agent a handoff
/// brought in, with its task.
async fn start_foreground(
    scheduler: &Arc<RunScheduler>,
    root: AgentInvocation,
    handoff: Option<&(AgentTaskRecord, AgentInvocation)>,
    profile: &ResolvedProfile,
    run: &AgentRun,
    prompt_snapshot: &PromptSnapshot,
) -> ApplicationResult<(
    InvocationRuntime,
    Vec<AgentModelMessage>,
    Option<RootAssembly>,
    Option<TaskId>,
)> {
    match handoff {
        None => {
            let (inv, messages, root_assembly) =
                start_root(scheduler, root, profile, run.presentation, prompt_snapshot).await?;
            Ok((inv, messages, root_assembly, None))
        }
        Some((task, owner)) => {
            let (inv, messages) = prepare_handoff(scheduler, &task.id, &owner.id).await?;
            Ok((inv, messages, None, Some(task.id.clone())))
        }
    }
}

/// The foreground belongs to the root or, after handoffs, to the agent the last handoff
/// brought in: the first agent down the chain that was not `transferred`. That agent (with the
/// task that brought it in, `None` for the root) must have been interrupted, else the run
/// cannot be resumed.
fn foreground_handoff(
    run: &AgentRun,
    root: &AgentInvocation,
    invocations: &[AgentInvocation],
    tasks: &[AgentTaskRecord],
) -> ApplicationResult<Option<(AgentTaskRecord, AgentInvocation)>> {
    let mut owner = root.clone();
    let mut incoming = None;
    while owner.status == InvocationStatus::Transferred {
        let next = tasks
            .iter()
            .rfind(|task| {
                task.continuation == TaskContinuation::TransferControl
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
            run,
            &format!(
                "its root agent is {} and no agent it handed the run to was interrupted",
                root.status.as_str()
            ),
        ));
    }
    Ok(incoming.map(|task| (task, owner)))
}

/// Puts the foreground agent back to work (`root` is updated when it is the root; an agent a
/// handoff brought in is started from its record again later), and queues again a handoff
/// it had registered when the process died: its call runs again with this task (no second
/// handoff), which waits in line for the owner to be transferred.
async fn resume_foreground(
    ctx: &Arc<RunContext>,
    root: &mut AgentInvocation,
    handoff: Option<&(AgentTaskRecord, AgentInvocation)>,
    tasks: &[AgentTaskRecord],
    owner_id: &InvocationId,
) -> ApplicationResult<()> {
    match handoff {
        None => resume::resume_invocation(ctx, root).await?,
        Some((task, owner)) => {
            resume::resume_invocation(ctx, &mut owner.clone()).await?;
            resume::resume_task(ctx, task, TaskStatus::Running).await?;
        }
    }
    if let Some(pending) = tasks.iter().find(|task| {
        task.continuation == TaskContinuation::TransferControl
            && task.parent_invocation_id == *owner_id
            && task.status == TaskStatus::Interrupted
    }) {
        resume::resume_task(ctx, pending, TaskStatus::Queued).await?;
    }
    Ok(())
}

/// A delegated agent whose task ended (it returned, failed or was cancelled) just before the
/// interruption ends the same way, instead of staying `interrupted`.
async fn close_ended_delegations(
    ctx: &Arc<RunContext>,
    tasks: &[AgentTaskRecord],
    invocations: &[AgentInvocation],
) -> ApplicationResult<()> {
    for task in tasks.iter().filter(|task| {
        task.continuation == TaskContinuation::ReturnToParent
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
            resume::resume_invocation(ctx, &mut invocation).await?;
            let status = match task.status {
                TaskStatus::Completed => InvocationStatus::Completed,
                TaskStatus::Cancelled => InvocationStatus::Cancelled,
                _ => InvocationStatus::Failed,
            };
            ctx.set_invocation_status(&mut invocation, status).await?;
        }
    }
    Ok(())
}

/// How long `resume_run` re-reads a run that looks live elsewhere before refusing it: a store
/// shared between hosts learns that a killed host is gone only once the database notices its
/// session closed, a few milliseconds after the kill (docs/resume.md).
const OWNER_EXIT_GRACE: std::time::Duration = std::time::Duration::from_secs(2);
/// How often the run is read again meanwhile.
const OWNER_EXIT_POLL: std::time::Duration = std::time::Duration::from_millis(50);

impl AgentRunService {
    /// The run as the store reads it, read again for up to [`OWNER_EXIT_GRACE`] while it is
    /// unfinished (owned by a live process as far as the store can tell), so that a resume
    /// right after the owner was killed finds it `interrupted` rather than locked.
    async fn load_settled_run(&self, run_id: &RunId) -> ApplicationResult<AgentRun> {
        let give_up = tokio::time::Instant::now() + OWNER_EXIT_GRACE;
        loop {
            let run = self.services.runs.load_run(run_id).await?;
            if run.status.is_terminal() || tokio::time::Instant::now() >= give_up {
                return Ok(run);
            }
            tokio::time::sleep(OWNER_EXIT_POLL).await;
        }
    }
}
