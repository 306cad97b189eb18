//! The agent tools that start agents or wait for them: `agent.delegate` and `agent.await`
//! (for agents that may delegate), per reference §2.1–2.5; and the engine's side of three tools
//! that run below it: `agent.list` and `agent.cancel_task` ([`RunTaskView`], the view of the
//! caller's tasks that `crate::delegation::list` and `crate::delegation::cancel` read, and
//! stopping one), and `task.return` (settling the task whose result
//! `crate::delegation::task_return` wrote).

use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tt_domain::brief::StoredBrief;
use tt_domain::error_codes;
use tt_domain::event::EventLevel;
use tt_domain::event_payload as payload;
use tt_domain::ids::{ProfileId, TaskId};
use tt_domain::profile::{AgentProfileDefinition, ResolvedProfile};
use tt_domain::task::{AgentTaskBudget, AgentTaskRecord, TaskContinuation, TaskStatus};
use tt_domain::tool::{AgentToolCall, ToolName};

use super::results::{await_view, capsule_entry, delegated_by, reader_state};
use super::targets::{NewTask, open_task, registered, resolve_target};
use crate::delegation::args::{
    AwaitArgs, AwaitMode, DelegateArgs, parse_await_args, parse_delegate_args,
};
use crate::delegation::cancel::TaskControl;
use crate::delegation::list::TaskView;
use crate::delegation::policy::{Operation, admit, admit_caller};
use crate::delegation::rendering::{CapsuleEntry, render_capsule};
use crate::delegation::task_return::{
    TaskReturnEnv, TaskReturned, already_finished, write_task_return,
};
use crate::engine::context::RunContext;
use crate::engine::invocation::InvocationRuntime;
use crate::engine::scheduler::Wait;
use crate::engine::scheduler::{Admission, CancelledBy, transition_task};
use crate::error::{ApplicationError, ApplicationResult, ToolCallError, ToolError};
use crate::events::EventSink;
use crate::tools::{ToolEffect, ToolSuccess};

/// The caller's tasks and budgets as `agent.list` reads them, from the run's records and its
/// scheduler.
pub(crate) struct RunTaskView<'a> {
    pub ctx: &'a RunContext,
    pub inv: &'a InvocationRuntime,
}

impl TaskView for RunTaskView<'_> {
    async fn delegated_tasks(&self) -> ApplicationResult<Vec<AgentTaskRecord>> {
        delegated_by(self.ctx, self.inv).await
    }

    fn queue_position(&self, task: &AgentTaskRecord) -> Option<usize> {
        self.inv.scheduler.queue_position(task)
    }

    fn task_tokens(&self) -> Option<(u64, u64)> {
        self.inv.scheduler.task_tokens(&self.inv.invocation.id)
    }

    fn run_tokens(&self) -> (u64, Option<u64>) {
        self.inv.scheduler.run_tokens()
    }
}

impl TaskControl for RunTaskView<'_> {
    async fn run_tasks(&self) -> ApplicationResult<Vec<AgentTaskRecord>> {
        Ok(self
            .ctx
            .services
            .invocations
            .list_tasks(&self.ctx.run_id)
            .await?)
    }

    async fn stop(
        &self,
        task_id: &TaskId,
        reason: &str,
    ) -> ApplicationResult<tt_ports::TaskTransitionOutcome> {
        self.inv
            .scheduler
            .cancel_task_by(
                task_id,
                reason,
                CancelledBy::Agent(self.inv.invocation.id.clone()),
            )
            .await
    }
}

/// `agent.delegate`: validates in the contract's order, records the task and its invocation,
/// and hands the task to the scheduler. The task's unit is committed without waiting for it
/// (`crate::engine::held_writes`): the scheduler starts its agent once it is stored.
pub(crate) async fn agent_delegate(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    round: u32,
    call: &AgentToolCall,
    held: &mut Vec<tt_ports::RunWrite>,
) -> Result<ToolSuccess, ToolCallError> {
    let args = parse_delegate_args(&call.arguments)?;
    let caller = &inv.profile.definition.delegation;
    let (max_invocations, max_concurrent) = (
        caller.max_invocations_per_run,
        caller.max_concurrent_invocations,
    );
    caller_admitted(inv, Operation::Delegate)?;
    let (resolved, delegated, workspace_key) =
        delegation_reads(ctx, inv, round, &args.agent_id).await;
    let (agent_id, target) = resolved?;
    inv.targets.remember(
        round,
        &args.agent_id,
        (agent_id.clone(), Arc::clone(&target)),
    );
    target_admitted(inv, &target, &agent_id, Operation::Delegate)?;
    check_fork(&args, &target.definition, &agent_id)?;
    let budget = task_budget(&args, &target.definition, &agent_id)?;
    let delegated = delegated.map_err(crate::error::ApplicationError::from)?;
    inv.delegations = Some(delegated);
    if delegated >= u64::from(max_invocations) {
        return Err(ToolError::with_reason(
            error_codes::AGENT_DELEGATION_BUDGET_EXHAUSTED,
            error_codes::AGENT_MAX_INVOCATIONS_PER_RUN_EXHAUSTED,
            &format!("you have already delegated {delegated} tasks, the most you can in this job."),
        )
        .into());
    }
    let new = NewTask {
        target: agent_id.clone(),
        continuation: TaskContinuation::ReturnToParent,
        brief: StoredBrief::Task(args.task.clone()),
        budget,
        workspace_key: workspace_key.map_err(crate::error::ApplicationError::from)?,
    };
    let (task, mut unit, key) = open_task(ctx, inv, call, new).await?;
    if args.fork {
        // The prefix document is not a unit of the chain.
        crate::engine::held_writes::settle(inv).await?;
    }
    let started = delegate_started(ctx, inv, &task, args.fork).await?;
    // The agent's and the task's records and events, one unit: one commit, after what the
    // calling agent held back (the call's start, the end of its previous delegation:
    // `crate::engine::held_writes`).
    unit.push(registered(ctx, &task)?);
    unit.push(started);
    let unit = std::mem::take(held).into_iter().chain(unit).collect();
    let stored = ctx
        .events
        .commit_chained(&ctx.run_id, unit, &inv.chain)
        .await?;
    key.keep();
    inv.in_flight = Some(stored.clone());
    inv.delegations = Some(delegated + 1);
    let task_id = task.id.clone();
    // A waiting task's `agent_task_queued {queuePosition}` is journaled by the scheduler.
    let admission = inv
        .scheduler
        .submit(task, max_concurrent, true, stored)
        .await?;
    let (content, structured) = delegate_answer(admission, &agent_id, &task_id, max_concurrent);
    Ok(ToolSuccess::new(content, structured))
}

/// How many of its tasks an agent has running before each further delegation of its reply
/// yields once (`delegation_reads`).
const YIELD_AT_RUNNING: u32 = 8;

/// What a delegation to `agent_id` reads, together: the target, how many tasks the agent
/// delegated, and a workspace key. The key is reserved from the run's keys (read once per
/// agent id), the target's profile read once per reply, the agent's delegations counted by
/// the store once, then by the agent. The caller looks at the answers in the contract's order
/// (a read whose check comes after one that fails is wasted, and a key reserved for a refused
/// call is given back).
async fn delegation_reads(
    ctx: &RunContext,
    inv: &InvocationRuntime,
    round: u32,
    agent_id: &str,
) -> (
    Result<(ProfileId, Arc<ResolvedProfile>), ToolCallError>,
    tt_ports::StorageResult<u64>,
    tt_ports::StorageResult<Option<crate::engine::workspace_keys::KeyReservation>>,
) {
    let key_base = ProfileId::parse(agent_id).ok();
    tokio::join!(
        async {
            match inv.targets.get(round, agent_id) {
                // Once the agent has many tasks running, yields once, as a read of the
                // profile would: a reply of many delegations lets the agents it started run
                // between them instead of starting all of them before any runs (peak
                // memory, docs/benchmarks.md). A few tasks, and the admission queue, go on
                // as without it.
                Some(target) => {
                    if inv.scheduler.running_for(&inv.invocation.id) >= YIELD_AT_RUNNING {
                        tokio::task::yield_now().await;
                    }
                    Ok(target)
                }
                None => resolve_target(ctx, agent_id, Operation::Delegate)
                    .await
                    .map(|(id, profile)| (id, Arc::new(profile))),
            }
        },
        async {
            match inv.delegations {
                Some(count) => Ok(count),
                // A count, not a listing.
                None => {
                    ctx.services
                        .invocations
                        .count_delegations_by_parent(&ctx.run_id, &inv.invocation.id)
                        .await
                }
            }
        },
        async {
            match &key_base {
                Some(base) => ctx
                    .workspace_keys
                    .reserve(&*ctx.services.invocations, &ctx.run_id, base.as_str())
                    .await
                    .map(Some),
                None => Ok(None),
            }
        },
    )
}

/// `agent_delegate_started` of `task`, stamped now; in fork mode, after storing the prefix its
/// agent reads (before the task is registered: its agent, whenever it starts, finds it).
async fn delegate_started(
    ctx: &RunContext,
    inv: &InvocationRuntime,
    task: &AgentTaskRecord,
    fork: bool,
) -> ApplicationResult<tt_ports::RunWrite> {
    if fork {
        crate::engine::fork_mode::store_prefix(ctx, inv, &task.child_invocation_id).await?;
    }
    let started = payload::AgentDelegateStarted {
        task_id: task.id.clone(),
        parent_invocation_id: task.parent_invocation_id.clone(),
        child_invocation_id: task.child_invocation_id.clone(),
        target_profile_id: task.target_profile_id.clone(),
        workspace_key: task.workspace_key.clone(),
        mode: fork.then(|| "fork".to_owned()),
    };
    let started = EventSink::pending(EventLevel::Info, &started)?;
    Ok(ctx.events.stamp(&ctx.run_id, started))
}

/// Fork mode only for a target whose profile allows it (`delegation.allowFork`).
fn check_fork(
    args: &DelegateArgs,
    target: &AgentProfileDefinition,
    agent_id: &ProfileId,
) -> Result<(), ToolError> {
    if args.fork && !target.delegation.allow_fork {
        return Err(ToolError::with_reason(
            error_codes::AGENT_DELEGATION_POLICY_DENIED,
            error_codes::AGENT_TARGET_FORK_DENIED,
            &format!(
                "`{agent_id}` cannot start from your conversation; delegate to it with `mode: \"brief\"`."
            ),
        ));
    }
    Ok(())
}

/// The calling agent's own profile may do `operation`: else its tool's policy error, with the
/// policy's reason.
pub(crate) fn caller_admitted(
    inv: &InvocationRuntime,
    operation: Operation,
) -> Result<(), ToolError> {
    let refusal = match operation {
        Operation::Delegate => "you cannot give tasks to other agents.",
        Operation::Handoff => "you cannot hand this job to another agent.",
    };
    admit_caller(&inv.profile, operation)
        .map_err(|denial| policy_denied(operation, denial, refusal))
}

/// The calling agent may give `target` (`agent_id`) what `operation` hands over: else its
/// tool's policy error, with the policy's reason.
pub(crate) fn target_admitted(
    inv: &InvocationRuntime,
    target: &ResolvedProfile,
    agent_id: &ProfileId,
    operation: Operation,
) -> Result<(), ToolError> {
    admit(&inv.profile, target, operation).map_err(|denial| {
        let cannot = match operation {
            Operation::Delegate => "cannot take tasks from you",
            Operation::Handoff => "cannot take this job over from you",
        };
        let refusal = format!(
            "`{agent_id}` {cannot}. Use `{}` to see who can.",
            ToolName::AgentList.model_alias()
        );
        policy_denied(operation, denial, &refusal)
    })
}

/// `agent.delegation_policy_denied` or `agent.handoff_policy_denied`, by `operation`.
fn policy_denied(
    operation: Operation,
    denial: crate::delegation::policy::Denial,
    refusal: &str,
) -> ToolError {
    let code = match operation {
        Operation::Delegate => error_codes::AGENT_DELEGATION_POLICY_DENIED,
        Operation::Handoff => error_codes::AGENT_HANDOFF_POLICY_DENIED,
    };
    ToolError::with_reason(code, denial.code(), refusal)
}

/// `tool.invalid_arguments` when the call asked for more of `field` than `limit`.
fn at_most<T: PartialOrd + std::fmt::Display>(
    field: &str,
    asked: Option<T>,
    limit: T,
    agent_id: &ProfileId,
) -> Result<(), ToolError> {
    match asked {
        Some(asked) if asked > limit => Err(ToolError::invalid_arguments(format!(
            "`{field}` can be at most {limit} for `{agent_id}`"
        ))),
        _ => Ok(()),
    }
}

/// The task's budget: what the call asked for, checked against what the target's profile
/// allows (`tool.invalid_arguments` past it), with the profile's defaults for the rest.
fn task_budget(
    args: &DelegateArgs,
    target: &AgentProfileDefinition,
    agent_id: &ProfileId,
) -> Result<Option<AgentTaskBudget>, ToolError> {
    if let Some(budget) = &args.budget {
        let limits = &target.tools;
        at_most(
            "budget.maxRounds",
            budget.max_rounds,
            limits.max_rounds,
            agent_id,
        )?;
        if let Some(limit) = target.delegation.max_task_tokens {
            at_most("budget.maxTokens", budget.max_tokens, limit, agent_id)?;
        }
        let calls = limits.max_calls_per_run;
        at_most(
            "budget.maxToolCalls",
            budget.max_tool_calls,
            calls,
            agent_id,
        )?;
    }
    let limit = target.delegation.task_timeout_limit();
    at_most("timeoutSeconds", args.timeout_seconds, limit, agent_id)?;
    let timeout_seconds = args
        .timeout_seconds
        .or(target.delegation.task_timeout_seconds);
    let idle_timeout_seconds = target.delegation.idle_timeout_seconds;
    let max_tokens = args
        .budget
        .and_then(|budget| budget.max_tokens)
        .or(target.delegation.max_task_tokens);
    Ok(
        if timeout_seconds.is_some() || idle_timeout_seconds.is_some() || max_tokens.is_some() {
            Some(AgentTaskBudget {
                timeout_seconds,
                idle_timeout_seconds,
                max_tokens,
                ..args.budget.unwrap_or_default()
            })
        } else {
            args.budget
        },
    )
}

/// What `agent.delegate` answers: the task started, or where it waits in the caller's line.
fn delegate_answer(
    admission: Admission,
    agent_id: &ProfileId,
    task_id: &TaskId,
    max_concurrent: u32,
) -> (String, serde_json::Value) {
    match admission {
        Admission::Started => started_answer(agent_id.as_str(), task_id),
        Admission::Queued { position } => (
            format!(
                "Task accepted for `{agent_id}` (task id `{task_id}`), waiting to start: all {max_concurrent} of your task slots are busy, and it is number {position} in your waiting line. It starts by itself when one of your tasks ends, so keep working; its result reaches you like any other."
            ),
            json!({"taskId": task_id, "status": "queued", "agentId": agent_id, "queuePosition": position}),
        ),
    }
}

/// What `agent.delegate` answers for a task that started at once.
fn started_answer(agent_id: &str, task_id: &TaskId) -> (String, serde_json::Value) {
    (
        format!(
            "Task started for `{agent_id}` (task id `{task_id}`). It runs in the background, so keep working. Call `{}` only when your next decision depends on its result; finished results are also shown to you automatically.",
            ToolName::AgentAwait.model_alias()
        ),
        json!({"taskId": task_id, "status": "queued", "agentId": agent_id}),
    )
}

/// `agent.delegate` for a call of a resumed agent that had registered its task before the run
/// was interrupted: the task is not registered twice (docs/resume.md); the agent gets the
/// answer of a task that started.
pub(crate) async fn already_delegated(
    ctx: &RunContext,
    task_id: &TaskId,
) -> Result<ToolSuccess, ToolCallError> {
    let task = ctx
        .services
        .invocations
        .load_task(&ctx.run_id, task_id)
        .await
        .map_err(crate::error::ApplicationError::from)?;
    let (content, structured) = started_answer(task.target_profile_id.as_str(), &task.id);
    Ok(ToolSuccess::new(content, structured))
}

/// `agent.await`: waits on the scheduler's change signal (never polls) until the mode's
/// condition holds, the timeout passes, or the run is cancelled.
pub(crate) async fn agent_await(
    ctx: &RunContext,
    inv: &InvocationRuntime,
    call: &AgentToolCall,
) -> Result<ToolSuccess, ToolCallError> {
    let args = parse_await_args(&call.arguments)?;
    let mine = delegated_by(ctx, inv).await?;
    let selected = select_tasks(&args, &mine)?;
    let started = payload::AgentAwaitStarted {
        parent_invocation_id: inv.invocation.id.clone(),
        mode: args.mode.as_str().to_owned(),
        task_ids: selected.clone(),
        timeout_ms: args.timeout_ms,
    };
    ctx.events
        .record(&ctx.run_id, EventLevel::Info, &started)
        .await?;
    // The selected tasks in order.
    let current: Vec<AgentTaskRecord> = selected
        .iter()
        .filter_map(|id| mine.iter().find(|task| task.id == *id).cloned())
        .collect();
    // Waiting for its tasks is not the agent's inactivity (its watchdog pauses).
    inv.scheduler
        .set_waiting(&inv.invocation.id, Wait::Tasks, true);
    let waited = wait_for_tasks(ctx, inv, &args, current).await;
    inv.scheduler
        .set_waiting(&inv.invocation.id, Wait::Tasks, false);
    let (tasks, timed_out) = waited?;
    await_answer(ctx, inv, &args, &tasks, timed_out).await
}

/// The tasks an `agent.await` waits for, in the order they were delegated: those it names
/// (each must be one of the caller's, `agent.await_task_not_found`), else all of the caller's;
/// none is `agent.no_child_tasks`.
fn select_tasks(args: &AwaitArgs, mine: &[AgentTaskRecord]) -> Result<Vec<TaskId>, ToolError> {
    let selected: Vec<TaskId> = match &args.task_ids {
        None => mine.iter().map(|task| task.id.clone()).collect(),
        Some(ids) => {
            let mut chosen = Vec::with_capacity(ids.len());
            for id in ids {
                let Some(task) = mine.iter().find(|task| task.id.as_str() == id) else {
                    return Err(ToolError::new(
                        error_codes::AGENT_AWAIT_TASK_NOT_FOUND,
                        format!(
                            "`{id}` is not one of your delegated tasks. Omit `taskIds` to wait for all of them."
                        ),
                    ));
                };
                chosen.push(task);
            }
            chosen.sort_by(|a, b| a.creation_order().cmp(&b.creation_order()));
            chosen.into_iter().map(|task| task.id.clone()).collect()
        }
    };
    if selected.is_empty() {
        return Err(ToolError::new(
            error_codes::AGENT_NO_CHILD_TASKS,
            "No delegated tasks are selected.",
        ));
    }
    Ok(selected)
}

/// Waits on the scheduler's change signal until the await's mode holds or its timeout passes
/// (`true` beside the tasks then); the tasks as they are at that moment.
async fn wait_for_tasks(
    ctx: &RunContext,
    inv: &InvocationRuntime,
    args: &AwaitArgs,
    mut current: Vec<AgentTaskRecord>,
) -> Result<(Vec<AgentTaskRecord>, bool), ToolCallError> {
    let mut changes = inv.scheduler.subscribe();
    let deadline = tokio::time::Instant::now() + Duration::from_millis(args.timeout_ms);
    loop {
        if inv.cancel.is_cancelled() {
            return Err(ApplicationError::cancelled().into());
        }
        changes.borrow_and_update();
        // Read after marking the change signal seen, so no change between the two is missed.
        // The run's agent ends the run once its tasks crossed the run's token budget, without
        // waiting for the rest of them (the run's end cancels them).
        if inv.owns_run()
            && let Some(exhausted) = inv.scheduler.run_budget_exhausted()
        {
            return Err(exhausted.into());
        }
        refresh_open_tasks(ctx, &mut current).await?;
        // A result counts as new until this agent has seen it (here or by injection), so
        // `nextCompleted` waits for the next result it has not seen yet.
        let fresh =
            |task: &AgentTaskRecord| task.status.is_terminal() && !inv.delivered.contains(&task.id);
        // A task whose end the store could not record will not end: do not wait for it.
        let all_finished = current
            .iter()
            .all(|task| task.status.is_terminal() || inv.scheduler.is_lost(&task.id));
        let done = match args.mode {
            AwaitMode::StatusOnly => true,
            AwaitMode::NextCompleted => all_finished || current.iter().any(fresh),
            AwaitMode::AllCompleted => all_finished,
        };
        if done {
            return Ok((current, false));
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok((current, true));
        }
        tokio::select! {
            biased;
            () = inv.cancel.cancelled() => return Err(ApplicationError::cancelled().into()),
            changed = changes.changed() => {
                if changed.is_err() {
                    return Err(ApplicationError::fatal(error_codes::AGENT_TASK_SCHEDULER_CLOSED, "the task scheduler stopped").into());
                }
            }
            () = tokio::time::sleep_until(deadline) => {}
        }
    }
}

/// Reloads the open tasks whose status moved. Every change of any task wakes an await: it
/// asks for statuses and loads a record only when its status moved (copying every open record
/// each time made a fan-out's await O(N²) in record copies); a terminal task never changes
/// again (first terminal write wins). What is reported of an open task is its status and
/// place in the line, which this keeps current.
async fn refresh_open_tasks(
    ctx: &RunContext,
    current: &mut [AgentTaskRecord],
) -> ApplicationResult<()> {
    for task in current.iter_mut().filter(|task| !task.status.is_terminal()) {
        let status = ctx
            .services
            .invocations
            .task_status(&ctx.run_id, &task.id)
            .await?;
        if status != task.status {
            *task = ctx
                .services
                .invocations
                .load_task(&ctx.run_id, &task.id)
                .await?;
        }
    }
    Ok(())
}

/// What `agent.await` answers: each task's capsule (a result already seen is reported by
/// status only, so each reaches the agent once), journaled `agent_await_completed` with the
/// results it delivered, and the results the agent has now seen.
async fn await_answer(
    ctx: &RunContext,
    inv: &InvocationRuntime,
    args: &AwaitArgs,
    tasks: &[AgentTaskRecord],
    timed_out: bool,
) -> Result<ToolSuccess, ToolCallError> {
    let mut entries = Vec::with_capacity(tasks.len());
    let mut views = Vec::with_capacity(tasks.len());
    for task in tasks {
        if task.status.is_terminal() && inv.delivered.contains(&task.id) {
            entries.push(CapsuleEntry {
                agent_id: task.target_profile_id.to_string(),
                task_id: task.id.to_string(),
                status: task.status,
                error: None,
                summary: Some(
                    "_You have already seen this result; it is not repeated here._".to_owned(),
                ),
                result: None,
                written: None,
                queue_position: None,
            });
            views.push(json!({
                "taskId": task.id, "agentId": task.target_profile_id, "status": task.status.as_str(),
                "alreadyDelivered": true,
            }));
        } else {
            let entry = capsule_entry(ctx, &inv.scheduler, task).await?;
            views.push(await_view(&entry));
            entries.push(entry);
        }
    }
    let content = render_capsule(&entries, timed_out, &reader_state(ctx, inv));
    // A task's result is final once it completed, failed or was cancelled. An interrupted
    // task's is not: a resumed run goes on with it.
    let is_final = |task: &&AgentTaskRecord| {
        matches!(
            task.status,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    };
    // Which final results this wait delivered, so a host can check each arrives once.
    let delivered: Vec<TaskId> = tasks
        .iter()
        .filter(is_final)
        .filter(|task| !inv.delivered.contains(&task.id))
        .map(|task| task.id.clone())
        .collect();
    let completed = payload::AgentAwaitCompleted {
        parent_invocation_id: inv.invocation.id.clone(),
        mode: args.mode.as_str().to_owned(),
        timed_out,
        task_count: tasks.len() as u64,
        delivered_task_ids: delivered,
    };
    let level = if timed_out {
        EventLevel::Warn
    } else {
        EventLevel::Info
    };
    ctx.events.record(&ctx.run_id, level, &completed).await?;
    // The results the agent has now seen (the ones it had seen before included, harmlessly):
    // the loop marks them so nothing shows them again.
    let seen = tasks
        .iter()
        .filter(is_final)
        .map(|task| task.id.clone())
        .collect();
    Ok(ToolSuccess::new(
        content,
        json!({"mode": args.mode.as_str(), "timedOut": timed_out, "tasks": views}),
    )
    .with_effect(ToolEffect::ResultsDelivered { task_ids: seen }))
}

/// `task.return`: past the profile's return gate, if it has one (`crate::engine::return_gate`),
/// the tool writes the result document and the summary file below the engine
/// (`crate::delegation::task_return`); the engine then moves the task to its final status
/// (first terminal write wins), journals `task_return_completed` and wakes the delegating
/// agent.
pub(crate) async fn task_return(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    round: u32,
    call: &AgentToolCall,
) -> Result<(ToolSuccess, TaskReturned), ToolCallError> {
    // A profile's return gate may send the result back or fail the task first.
    crate::engine::return_gate::check(ctx, inv, round, call).await?;
    let env = TaskReturnEnv {
        run_id: &ctx.run_id,
        invocations: ctx.services.invocations.as_ref(),
        runs: ctx.services.runs.as_ref(),
        workspace: ctx.services.workspace.as_ref(),
        invocation: &inv.invocation,
        policy: &inv.policy,
    };
    let written = write_task_return(&env, call).await?;
    let outcome = transition_task(
        ctx,
        &written.task.id,
        written.returned.status.task_status(),
        Some(written.returned.result_ref.clone()),
        None,
    )
    .await?;
    if !outcome.changed {
        return Err(already_finished());
    }
    ctx.remember_returned(
        inv.invocation.id.clone(),
        written.result,
        written.document_bytes,
    );
    let returned = payload::TaskReturnCompleted {
        task_id: written.task.id.clone(),
        parent_invocation_id: written.task.parent_invocation_id.clone(),
        child_invocation_id: inv.invocation.id.clone(),
        status: written.returned.status.task_status(),
        result_ref: written.returned.result_ref.clone(),
        summary_ref: written.summary_ref,
    };
    ctx.events
        .record(&ctx.run_id, EventLevel::Info, &returned)
        .await?;
    inv.scheduler.notify();
    Ok((written.success, written.returned))
}
