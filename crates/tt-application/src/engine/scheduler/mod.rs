//! The run-scoped scheduler of delegated tasks: one background worker per task, a cancel
//! handle per task, and a change counter that wakes `agent.await` without polling.
//!
//! Cancelling a task signals its worker, waits for the worker to stop, and only then records
//! `cancelled`, so nothing a cancelled agent does is written after its cancellation.
//!
//! The scheduler is its own object, one per active run, shared as an `Arc` by whoever needs it
//! (each agent's loop state, the run service's active run, each worker); it holds the run it
//! serves (its `TaskHost`) and passes itself to every worker it starts.
//!
//! Here: the admission queue, workers and the cancel tree. Token and cost budgets are in
//! `budgets`, the deadline and idle watches in `deadlines`.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use tt_domain::cost::Usd;
use tt_domain::error_codes;
use tt_domain::event::EventLevel;
use tt_domain::event_payload as payload;
use tt_domain::ids::{InvocationId, RunId, TaskId};
use tt_domain::invocation::{AgentInvocation, InvocationStatus};
use tt_domain::task::{AgentTaskRecord, TaskContinuation, TaskStatus, TaskTransition};

use crate::error::{ApplicationError, ApplicationResult};
use crate::events::{Durable, EventSink};
use crate::services::RuntimeServices;

pub(crate) mod budgets;
mod deadlines;
mod host_cancel;
mod waits;
mod watchdog;
pub(crate) use host_cancel::cancel_task_as_host;
pub(crate) use waits::Wait;

/// Reason recorded when the delegating agent finishes the run.
pub(crate) const CALLER_FINISHED_REASON: &str =
    "cancelled because the agent that delegated it finished the run";
/// Reason recorded when the run stops (finish, failure or cancel).
pub(crate) const RUN_STOPPED_REASON: &str = "cancelled because the Agent run stopped";
/// Reason recorded for a task whose delegating task was cancelled.
pub(crate) const DELEGATOR_CANCELLED_REASON: &str =
    "cancelled because the task that delegated it was stopped";
/// Who cancelled a task, as `agent_task_cancelled.by` records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CancelledBy {
    /// The delegating agent, through `agent.cancel_task` (its invocation id).
    Agent(InvocationId),
    /// The host, through `cancel_task`.
    Host,
    /// The runtime: the delegating agent finished, or the run stopped.
    Runtime,
    /// The task's deadline or idle limit passed.
    Deadline,
}

impl CancelledBy {
    /// `agent_task_cancelled.by`: the cancelling invocation's id, `host` or `runtime`.
    pub(crate) fn as_str(&self) -> &str {
        match self {
            CancelledBy::Agent(invocation) => invocation.as_str(),
            CancelledBy::Host => "host",
            CancelledBy::Runtime => "runtime",
            CancelledBy::Deadline => "deadline",
        }
    }
}

/// The run a scheduler serves, as the scheduler sees it: the run's ports and journal, its
/// cancel signal, and the runner of the delegated worker it starts. The engine's run context
/// implements it (`engine::child`), so the scheduler knows neither the run context nor the
/// tool loop its workers run, and no engine file it uses uses it back.
pub(crate) trait TaskHost: Send + Sync + Sized + 'static {
    fn run_id(&self) -> &RunId;
    fn services(&self) -> &RuntimeServices;
    fn events(&self) -> &EventSink;
    /// Fires on run cancel; each worker's token is a child of it.
    fn cancel(&self) -> &CancellationToken;
    /// Saves an invocation status change and journals it.
    fn set_invocation_status(
        &self,
        invocation: &mut AgentInvocation,
        status: InvocationStatus,
    ) -> impl Future<Output = ApplicationResult<bool>> + Send;
    /// Runs a delegated task to a terminal state, in the worker `scheduler` started for it
    /// (`started`: admission already marked it running). Returns `false` when its end could
    /// not be recorded.
    fn run_task(
        scheduler: Arc<TaskScheduler<Self>>,
        task: AgentTaskRecord,
        cancel: CancellationToken,
        started: bool,
    ) -> impl Future<Output = bool> + Send;
    /// Ends `task` and its invocation `failed` with `error` (a task past its budget).
    fn fail_task(
        &self,
        task: &AgentTaskRecord,
        error: &ApplicationError,
    ) -> impl Future<Output = ApplicationResult<()>> + Send;
}

/// A started task's budgets (model tokens, money), charged with its own model answers and
/// those of every task below it.
struct TaskTokens {
    task: TaskId,
    used: u64,
    /// `None`: only its cost is bounded.
    limit: Option<u64>,
    /// Cost so far, in millionths of a dollar, and its limit.
    cost: Usd,
    cost_limit: Option<Usd>,
    /// Some of the spending came from tasks it delegated.
    from_below: bool,
}

impl TaskTokens {
    fn over_tokens(&self) -> bool {
        self.limit.is_some_and(|limit| self.used > limit)
    }

    fn over_cost(&self) -> bool {
        self.cost_limit.is_some_and(|limit| self.cost > limit)
    }
}

struct Worker {
    cancel: CancellationToken,
    handle: Option<JoinHandle<()>>,
    /// The delegating agent, whose slot this worker holds.
    delegator: InvocationId,
}

/// A delegated task waiting for a free slot of its delegating agent.
struct Pending {
    task: AgentTaskRecord,
    /// The delegating agent's `maxConcurrentInvocations` when it delegated.
    limit: u32,
}

/// How `submit` admitted a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// A worker started at once.
    Started,
    /// Every slot of the delegating agent is busy: the task waits, at this 1-based position
    /// of that agent's queue, and starts by itself when a slot frees.
    Queued { position: usize },
}

#[derive(Default)]
struct State {
    workers: HashMap<TaskId, Worker>,
    /// Running workers per delegating agent (its busy slots).
    busy: HashMap<InvocationId, u32>,
    /// Tasks waiting for a slot, FIFO per delegating agent. Each agent has its own slots, so
    /// one agent's queue never holds back another's.
    queues: HashMap<InvocationId, VecDeque<Pending>>,
    /// Delegating agents whose waiting tasks must not start any more (the agent finished).
    closed: HashSet<InvocationId>,
    /// The run is stopping: no waiting task starts any more.
    all_closed: bool,
    /// Last model progress of started tasks that have an idle limit, by their invocation.
    progress: HashMap<InvocationId, tokio::time::Instant>,
    /// Agents waiting for a person's approval: their idle limit does not run meanwhile.
    awaiting_person: std::collections::HashSet<InvocationId>,
    /// What the agents' inactivity watchdogs read (`watchdog`).
    watchdog: waits::WatchdogState,
    /// Stops the deadline watch of a task once it ends.
    watches: HashMap<TaskId, CancellationToken>,
    /// Token budgets of running tasks that have one, by invocation.
    tokens: HashMap<InvocationId, TaskTokens>,
    /// The delegating agent of each delegated invocation, so a model answer is charged to
    /// every task budget above it (a task's budget counts its whole sub-tree).
    delegators: HashMap<InvocationId, InvocationId>,
    /// Tokens the whole run used, and its `limits.maxTotalTokens`.
    run_tokens: (u64, Option<u64>),
    /// Cost of the run so far and its limit (`limits.maxTotalCostUsd`).
    run_cost: (Usd, Option<Usd>),
    /// Tasks whose worker ended without its end being recorded (the store refused the
    /// write): nothing will ever finish them, so waits must not wait for them.
    lost: HashSet<TaskId>,
}

impl State {
    /// Frees the slot held by `task_id`'s worker, if it still has one.
    fn release(&mut self, task_id: &TaskId) -> Option<Worker> {
        let worker = self.workers.remove(task_id)?;
        if let Some(busy) = self.busy.get_mut(&worker.delegator) {
            *busy = busy.saturating_sub(1);
        }
        Some(worker)
    }

    /// The next waiting task of `delegator` that may start now, taking its slot.
    fn next_admitted(&mut self, delegator: &InvocationId) -> Option<AgentTaskRecord> {
        if self.all_closed || self.closed.contains(delegator) {
            return None;
        }
        let busy = self.busy.get(delegator).copied().unwrap_or(0);
        let queue = self.queues.get_mut(delegator)?;
        if busy >= queue.front()?.limit {
            return None;
        }
        let pending = queue.pop_front()?;
        *self.busy.entry(delegator.clone()).or_default() += 1;
        Some(pending.task)
    }
}

/// Background workers of one run, and the admission queue of tasks waiting for a slot. Made
/// once per active run (`TaskScheduler::new`) and shared as an `Arc`: the methods that start
/// workers or watches hand them a clone of that `Arc`.
pub(crate) struct TaskScheduler<H> {
    /// The run this scheduler serves.
    host: Arc<H>,
    state: Mutex<State>,
    /// Serializes starting waiting tasks, so they start (and journal `agent_task_started`) in
    /// the order they were queued.
    admitting: tokio::sync::Mutex<()>,
    changes: watch::Sender<u64>,
}

impl<H: TaskHost> std::fmt::Debug for TaskScheduler<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskScheduler")
            .field("workers", &self.lock().workers.len())
            .finish()
    }
}

impl<H: TaskHost> TaskScheduler<H> {
    /// The scheduler of the run `host`, with no task yet.
    pub(crate) fn new(host: Arc<H>) -> Arc<Self> {
        Arc::new(Self {
            host,
            state: Mutex::new(State::default()),
            admitting: tokio::sync::Mutex::new(()),
            changes: watch::Sender::new(0),
        })
    }

    /// The run this scheduler serves.
    pub(crate) fn host(&self) -> &Arc<H> {
        &self.host
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A receiver that changes whenever a task is submitted, ends or is cancelled.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Wakes every waiter.
    pub(crate) fn notify(&self) {
        self.changes.send_modify(|seq| *seq += 1);
    }

    /// How many of `delegator`'s tasks hold a slot (running, or started and not yet ended).
    pub(crate) fn running_for(&self, delegator: &InvocationId) -> u32 {
        self.lock().busy.get(delegator).copied().unwrap_or(0)
    }

    /// 1-based position of a waiting task in its delegating agent's queue; `None` when it is
    /// not waiting.
    pub(crate) fn queue_position(&self, task: &AgentTaskRecord) -> Option<usize> {
        self.lock()
            .queues
            .get(&task.parent_invocation_id)?
            .iter()
            .position(|pending| pending.task.id == task.id)
            .map(|index| index + 1)
    }

    /// Admits `task`: a worker starts at once while its delegating agent has fewer than
    /// `limit` running tasks; otherwise the task waits in that agent's queue, and with
    /// `journal_queued` its `agent_task_queued {queuePosition}` is journaled here. Admission
    /// holds the admission lock throughout, so the busy count it reads is the one it acts on
    /// (the limit is never exceeded) and a waiting task cannot start before its
    /// `agent_task_queued` is in the journal.
    pub(crate) async fn submit(
        self: &Arc<Self>,
        task: AgentTaskRecord,
        limit: u32,
        journal_queued: bool,
        stored: Durable,
    ) -> ApplicationResult<Admission> {
        let _admitting = self.admitting.lock().await;
        {
            let state = self.lock();
            if state.workers.contains_key(&task.id)
                || state
                    .queues
                    .get(&task.parent_invocation_id)
                    .is_some_and(|queue| queue.iter().any(|p| p.task.id == task.id))
            {
                return Err(ApplicationError::fatal(
                    error_codes::AGENT_TASK_ALREADY_SCHEDULED,
                    format!("task {} is already scheduled", task.id),
                ));
            }
        }
        // The deadline counts from delegation, waiting for a slot included.
        self.watch_limits(&task);
        let queued = {
            let mut state = self.lock();
            let delegator = task.parent_invocation_id.clone();
            state
                .delegators
                .insert(task.child_invocation_id.clone(), delegator.clone());
            let busy = state.busy.get(&delegator).copied().unwrap_or(0);
            let queue_empty = state.queues.get(&delegator).is_none_or(VecDeque::is_empty);
            if busy < limit && queue_empty {
                *state.busy.entry(delegator).or_default() += 1;
                self.spawn_worker(&mut state, task, false, stored.clone());
                None
            } else {
                let announced = task.clone();
                let queue = state.queues.entry(delegator).or_default();
                queue.push_back(Pending { task, limit });
                Some((announced, queue.len()))
            }
        };
        let admission = match queued {
            None => Admission::Started,
            Some((task, position)) => {
                // Stored before it may be admitted (which takes the lock held here).
                stored.wait().await?;
                if journal_queued {
                    let queued = payload::AgentTaskQueued {
                        task_id: task.id,
                        parent_invocation_id: task.parent_invocation_id,
                        child_invocation_id: task.child_invocation_id,
                        target_profile_id: task.target_profile_id,
                        status: TaskStatus::Queued,
                        result_ref: None,
                        error: None,
                        queue_position: Some(position as u64),
                    };
                    self.host
                        .events()
                        .record(self.host.run_id(), EventLevel::Info, &queued)
                        .await?;
                }
                Admission::Queued { position }
            }
        };
        self.notify();
        Ok(admission)
    }

    /// Starts again a task that was running when its run was interrupted (`resume_run`): it
    /// takes back its delegating agent's slot, whatever the limit (it held one then), and its
    /// worker goes on from the agent's stored steps (`RunContext::take_replay`).
    pub(crate) fn resume_running(self: &Arc<Self>, task: AgentTaskRecord) {
        // Its deadline and idle limit count again from now: the time the run was down is
        // not the task's.
        self.watch_limits(&task);
        {
            let mut state = self.lock();
            *state
                .busy
                .entry(task.parent_invocation_id.clone())
                .or_default() += 1;
            self.spawn_worker(&mut state, task, true, Durable::stored());
        }
        self.notify();
    }

    /// Starts the waiting tasks of `delegator` that its free slots admit, in queue order: each
    /// is marked running before the next is taken, under one lock, so starts are journaled in
    /// FIFO order.
    async fn admit_waiting(self: &Arc<Self>, delegator: &InvocationId) {
        let _admitting = self.admitting.lock().await;
        loop {
            let Some(task) = self.lock().next_admitted(delegator) else {
                return;
            };
            let started = transition_task(
                self.host.as_ref(),
                &task.id,
                TaskStatus::Running,
                None,
                None,
            )
            .await;
            match started {
                Ok(outcome) if outcome.changed => {
                    self.spawn_worker(&mut self.lock(), task, true, Durable::stored());
                    self.notify();
                }
                // Ended while waiting, or the store refused: give the slot back.
                _ => {
                    let mut state = self.lock();
                    if let Some(busy) = state.busy.get_mut(delegator) {
                        *busy = busy.saturating_sub(1);
                    }
                }
            }
        }
    }

    async fn worker_exited(self: &Arc<Self>, task_id: &TaskId) {
        self.stop_watch(task_id);
        let delegator = self.lock().release(task_id).map(|worker| worker.delegator);
        self.notify();
        if let Some(delegator) = delegator {
            self.admit_waiting(&delegator).await;
        }
    }

    /// Spawns the worker of an admitted task (its slot is already counted) and hands it this
    /// scheduler. `started`: the task was already marked running by the admission queue.
    /// A task whose unit was committed without waiting runs once it is `stored`; one whose
    /// unit was not stored never runs (nothing of it is in the store to run).
    fn spawn_worker(
        self: &Arc<Self>,
        state: &mut State,
        task: AgentTaskRecord,
        started: bool,
        stored: Durable,
    ) {
        let task_id = task.id.clone();
        let delegator = task.parent_invocation_id.clone();
        let cancel = self.host.cancel().child_token();
        let worker_cancel = cancel.clone();
        let worker_task_id = task_id.clone();
        let scheduler = Arc::clone(self);
        // The worker's span is a child of the span that admitted it (the delegating agent's
        // `agent.delegate` call, or the worker whose end freed the slot), so each agent's spans
        // form one tree under the run.
        let span = tracing::info_span!(
            "task_worker",
            run_id = self.host.run_id().as_str(),
            task_id = task_id.as_str(),
            profile = task.target_profile_id.as_str(),
        );
        let handle = tokio::spawn(
            async move {
                if stored.wait().await.is_err() {
                    scheduler.worker_exited(&worker_task_id).await;
                    return;
                }
                // Boxed here, not inline: the agent's whole future (kilobytes) is
                // allocated once it may run, not while its unit waits to be stored.
                let recorded = Box::pin(H::run_task(
                    Arc::clone(&scheduler),
                    task,
                    worker_cancel,
                    started,
                ))
                .await;
                if !recorded {
                    scheduler.lock().lost.insert(worker_task_id.clone());
                }
                scheduler.worker_exited(&worker_task_id).await;
            }
            .instrument(span),
        );
        state.workers.insert(
            task_id,
            Worker {
                cancel,
                handle: Some(handle),
                delegator,
            },
        );
    }

    /// Takes `task_id` out of its line, or signals its worker and waits for it to stop.
    /// Returns the delegating agent whose slot it freed.
    async fn stop_worker(&self, task_id: &TaskId) -> Option<InvocationId> {
        self.stop_watch(task_id);
        let (worker, freed) = {
            let mut state = self.lock();
            for queue in state.queues.values_mut() {
                queue.retain(|pending| &pending.task.id != task_id);
            }
            let worker = state.release(task_id);
            let freed = worker.as_ref().map(|worker| worker.delegator.clone());
            (worker, freed)
        };
        if let Some(mut worker) = worker {
            worker.cancel.cancel();
            if let Some(handle) = worker.handle.take() {
                // The worker stops at its next await point; a panic is contained here.
                let _ = handle.await;
            }
        }
        freed
    }

    /// Cancels the unfinished tasks `task` delegated, each with its own sub-tree first.
    async fn cancel_below(
        self: &Arc<Self>,
        task: &AgentTaskRecord,
        by: &CancelledBy,
    ) -> ApplicationResult<()> {
        // A run's tasks are few, so one listing per cancelled level is cheap and happens only
        // on cancel.
        for below in unfinished_delegations(self.host.as_ref()).await? {
            if below.parent_invocation_id == task.child_invocation_id {
                Box::pin(self.cancel_task_by(&below.id, DELEGATOR_CANCELLED_REASON, by.clone()))
                    .await?;
            }
        }
        Ok(())
    }

    /// Whether `task_id`'s worker ended without its end being recorded.
    pub(crate) fn is_lost(&self, task_id: &TaskId) -> bool {
        self.lock().lost.contains(task_id)
    }

    /// Stops starting waiting tasks of `delegator` (it finished), or of every agent (`None`:
    /// the run is stopping); they are cancelled by the caller.
    pub(crate) fn close_queue(&self, delegator: Option<&InvocationId>) {
        let mut state = self.lock();
        match delegator {
            Some(delegator) => {
                state.closed.insert(delegator.clone());
            }
            None => state.all_closed = true,
        }
    }

    /// Cancels one task: stops its worker, then records `cancelled` for the task and its
    /// invocation unless it already ended. Never waits for the task's work to complete.
    pub(crate) async fn cancel_task(
        self: &Arc<Self>,
        task_id: &TaskId,
        reason: &str,
    ) -> ApplicationResult<()> {
        self.cancel_task_by(task_id, reason, CancelledBy::Runtime)
            .await
            .map(drop)
    }

    /// Cancels one task and its sub-tree on behalf of `by`: stops the task's worker first (so
    /// it delegates nothing more), then cancels the tasks it delegated, deepest first, and only
    /// then records `cancelled` for the task and its invocation. So no `cancelled` event of an
    /// agent is written before those of the agents below it, and nothing a cancelled agent does
    /// is written after its own. Returns the task as it ended and whether this call ended it.
    pub(crate) async fn cancel_task_by(
        self: &Arc<Self>,
        task_id: &TaskId,
        reason: &str,
        by: CancelledBy,
    ) -> ApplicationResult<tt_ports::TaskTransitionOutcome> {
        let ctx = self.host.as_ref();
        let (_, freed) = self.stop_sub_tree(task_id, &by).await?;
        let cancelled = TaskTransition {
            status: TaskStatus::Cancelled,
            result_ref: None,
            error: Some(reason.to_owned()),
        };
        let outcome = store_transition(ctx, task_id, &cancelled).await?;
        if outcome.changed {
            emit_cancelled_event(ctx, &outcome.task, reason, &by).await?;
            let mut invocation = ctx
                .services()
                .invocations
                .load_invocation(ctx.run_id(), &outcome.task.child_invocation_id)
                .await?;
            if !invocation.status.is_terminal() {
                ctx.set_invocation_status(&mut invocation, InvocationStatus::Cancelled)
                    .await?;
            }
        }
        self.after_stop(freed).await;
        Ok(outcome)
    }

    /// Stops `task_id`'s worker and, while the task has not ended, cancels the tasks it
    /// delegated, deepest first. Returns the task as it was loaded then, and the delegating
    /// agent whose slot the stop freed (for [`Self::after_stop`]).
    async fn stop_sub_tree(
        self: &Arc<Self>,
        task_id: &TaskId,
        by: &CancelledBy,
    ) -> ApplicationResult<(AgentTaskRecord, Option<InvocationId>)> {
        let ctx = self.host.as_ref();
        let freed = self.stop_worker(task_id).await;
        let task = ctx
            .services()
            .invocations
            .load_task(ctx.run_id(), task_id)
            .await?;
        if !task.status.is_terminal() {
            // The task's own delegations go first.
            self.cancel_below(&task, by).await?;
        }
        Ok((task, freed))
    }

    /// Wakes whoever watches the tasks and, when a stop freed a delegating agent's slot,
    /// starts that agent's next waiting task.
    async fn after_stop(self: &Arc<Self>, freed: Option<InvocationId>) {
        self.notify();
        if let Some(delegator) = freed {
            self.admit_waiting(&delegator).await;
        }
    }

    /// Cancels the unfinished delegated tasks created by `parent`.
    pub(crate) async fn cancel_unfinished_for_parent(
        self: &Arc<Self>,
        parent: &InvocationId,
        reason: &str,
    ) -> ApplicationResult<()> {
        self.close_queue(Some(parent));
        for task in unfinished_delegations(self.host.as_ref()).await? {
            if &task.parent_invocation_id == parent {
                self.cancel_task(&task.id, reason).await?;
            }
        }
        Ok(())
    }

    /// Cancels every unfinished delegated task of the run, then waits for every worker to
    /// exit, those whose task had already ended too: a worker that returned its result still
    /// closes its agent (`agent_loop_finished`, `agent_invocation_completed`), and the run's
    /// end must come after that, so that no agent of an ended run is left `running` and no
    /// event follows the run's terminal one.
    pub(crate) async fn cancel_all_unfinished(
        self: &Arc<Self>,
        reason: &str,
    ) -> ApplicationResult<()> {
        self.close_queue(None);
        for task in unfinished_delegations(self.host.as_ref()).await? {
            self.cancel_task(&task.id, reason).await?;
        }
        self.join_workers().await;
        Ok(())
    }

    /// Waits until no worker of the run runs. Each is told to stop at its next wait first
    /// (its task has ended, so it has nothing left to wait for); its closing writes still
    /// happen.
    async fn join_workers(&self) {
        loop {
            let next = {
                let mut state = self.lock();
                state.workers.values_mut().find_map(|worker| {
                    worker.cancel.cancel();
                    worker.handle.take()
                })
            };
            let Some(handle) = next else { break };
            // A panic in the worker is contained here, like in `cancel_task`.
            let _ = handle.await;
        }
    }
}

async fn unfinished_delegations<C: TaskHost>(ctx: &C) -> ApplicationResult<Vec<AgentTaskRecord>> {
    Ok(ctx
        .services()
        .invocations
        .list_tasks(ctx.run_id())
        .await?
        .into_iter()
        .filter(|task| {
            task.continuation == TaskContinuation::ReturnToParent && !task.status.is_terminal()
        })
        .collect())
}

/// Moves a task to `status` through the repository's conditional transition (first terminal
/// write wins) and journals `agent_task_<status>` when it changed.
pub(crate) async fn transition_task<C: TaskHost>(
    ctx: &C,
    task_id: &TaskId,
    status: TaskStatus,
    result_ref: Option<String>,
    error: Option<String>,
) -> ApplicationResult<tt_ports::TaskTransitionOutcome> {
    let transition = TaskTransition {
        status,
        result_ref,
        error,
    };
    let outcome = store_transition(ctx, task_id, &transition).await?;
    if outcome.changed {
        emit_task_event(ctx, &outcome.task).await?;
    }
    Ok(outcome)
}

/// The repository's conditional transition of a task (first terminal write wins),
/// at the clock's now; journals nothing.
async fn store_transition<C: TaskHost>(
    ctx: &C,
    task_id: &TaskId,
    transition: &TaskTransition,
) -> ApplicationResult<tt_ports::TaskTransitionOutcome> {
    let now = ctx.services().clock.now();
    Ok(ctx
        .services()
        .invocations
        .transition_task(ctx.run_id(), task_id, transition, now)
        .await?)
}

/// Journals `agent_task_cancelled`: the §1 payload plus `reason` and `by`.
async fn emit_cancelled_event<C: TaskHost>(
    ctx: &C,
    task: &AgentTaskRecord,
    reason: &str,
    by: &CancelledBy,
) -> ApplicationResult<()> {
    let cancelled = payload::AgentTaskCancelled {
        reason: Some(reason.to_owned()),
        by: Some(by.as_str().to_owned()),
        ..payload::AgentTaskCancelled::of(task)
    };
    ctx.events()
        .record(ctx.run_id(), EventLevel::Warn, &cancelled)
        .await?;
    Ok(())
}

/// Journals `agent_task_<status>` for a task that just changed.
pub(crate) async fn emit_task_event<C: TaskHost>(
    ctx: &C,
    task: &AgentTaskRecord,
) -> ApplicationResult<()> {
    let events = &ctx.events();
    let run_id = ctx.run_id();
    macro_rules! record {
        ($level:ident, $payload:ident) => {
            events
                .record(run_id, EventLevel::$level, &payload::$payload::of(task))
                .await?
        };
    }
    match task.status {
        TaskStatus::Queued => record!(Info, AgentTaskQueued),
        TaskStatus::Running => record!(Info, AgentTaskStarted),
        TaskStatus::Completed => record!(Info, AgentTaskCompleted),
        TaskStatus::Failed => record!(Warn, AgentTaskFailed),
        TaskStatus::Cancelled => record!(Warn, AgentTaskCancelled),
        TaskStatus::Interrupted => record!(Warn, AgentTaskInterrupted),
    };
    Ok(())
}
