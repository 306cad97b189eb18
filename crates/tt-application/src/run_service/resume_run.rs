//! `resume_run`: reopens an interrupted run from its records and journal, rebuilds the agents
//! that were working, and hands the root to the executor again. Its own file because it is
//! the longest job of the facade and changes for its own reasons.
use std::sync::Arc;
use tt_domain::event::EventLevel;
use tt_domain::event_payload as payload;
use tt_domain::ids::RunId;
use tt_domain::invocation::{ExitPolicy, InvocationStatus};
use tt_domain::run::{AgentRun, AgentRunStatus};
use tt_domain::task::TaskStatus;
use tt_ports::RunDocument;

use crate::engine::context::RunContext;
use crate::engine::scheduler::TaskScheduler;
use crate::error::{ApplicationError, ApplicationResult};
use crate::handoff_chain::prepare_handoff;
use crate::prompt_input::PromptSnapshot;
use crate::registry::build_tool_snapshot;

use super::AgentRunService;
use super::executor::start_root;

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
        use crate::resume;
        let running_here = self.lock_active().contains_key(run_id);
        if running_here {
            let run = self.services.runs.load_run(run_id).await?;
            return Err(resume::not_resumable(&run, "it is running in this process"));
        }
        let mut run = self.load_settled_run(run_id).await?;
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
        let external =
            crate::registry::external_definitions(services, run_id, &root.id, &profile).await?;
        let snapshot = build_tool_snapshot(
            &profile,
            &root.id,
            ExitPolicy::RunFinishAllowed,
            run.presentation,
            &external,
        )?;
        match &handoff {
            None => resume::check_snapshot(services, run_id, &root.id, &snapshot).await?,
            Some((task, owner)) => {
                let target = crate::profiles::resolve(
                    services.profiles.as_ref(),
                    Some(task.target_profile_id.as_str()),
                )
                .await?;
                let external =
                    crate::registry::external_definitions(services, run_id, &owner.id, &target)
                        .await?;
                let owner_snapshot = build_tool_snapshot(
                    &target,
                    &owner.id,
                    ExitPolicy::RunFinishAllowed,
                    run.presentation,
                    &external,
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
        if let Some(reopening) = &reopening {
            self.reopen(&mut run, reopening).await?;
            journal.from_seq = reopening.last_seq;
        }
        let now = services.clock.now();
        run.resume(now)?;
        services.runs.save_run(&run).await?;
        let ctx = RunContext::new(
            run.clone(),
            services.clone(),
            Arc::clone(&self.events),
            ctx.persist_snapshot.clone(),
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
                let (inv, messages, root_assembly) = start_root(
                    &scheduler,
                    root,
                    &profile,
                    run.presentation,
                    &prompt_snapshot,
                )
                .await?;
                (inv, messages, root_assembly, None)
            }
            Some((task, owner)) => {
                let (inv, messages) = prepare_handoff(&scheduler, &task.id, &owner.id).await?;
                (inv, messages, None, Some(task.id.clone()))
            }
        };
        inv.replay = Some(owner_replay);
        // Tasks go back to work: running ones where they were, waiting ones in line.
        for (task, replay) in child_replays {
            let task = resume::resume_task(&ctx, &task, TaskStatus::Running).await?;
            ctx.leave_replay(task.child_invocation_id.clone(), replay);
            scheduler.resume_running(task);
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
            scheduler.submit(task, limit, false).await?;
        }
        let span = tracing::info_span!(
            "run",
            run_id = run_id.as_str(),
            profile = inv.profile.id().as_str(),
            resumed = true,
        );
        self.spawn_executor(inv, messages, root_assembly, incoming, span);
        self.load_run(run_id).await
    }
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
