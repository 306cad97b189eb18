//! Shared state of one active run: its cancel signal, authoritative run record, commit ledger,
//! sessions and registration numbers. One agent's loop state is `engine::invocation`'s; the
//! run's task scheduler holds this context (`RunScheduler`), not the other way round.

use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex as StdMutex};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;
use tt_domain::event::EventLevel;
use tt_domain::event_payload as payload;
use tt_domain::ids::RunId;
use tt_domain::invocation::{AgentInvocation, InvocationStatus};
use tt_domain::run::{AgentRun, AgentRunStatus};
use tt_domain::workspace::PersistSnapshot;

use crate::engine::scheduler::TaskScheduler;
use crate::error::ApplicationResult;
use crate::events::EventSink;
use crate::services::RuntimeServices;

/// One host-confirmed chat commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CommitRecord {
    pub path: String,
    pub mode: String,
    pub message_id: String,
    pub round: u32,
}

/// The scheduler of a run's delegated tasks, serving a `RunContext` (the scheduler is generic
/// over its host so that it does not import this file; `engine::child` implements the host).
pub(crate) type RunScheduler = TaskScheduler<RunContext>;

/// Everything an active run shares across its invocations.
pub(crate) struct RunContext {
    pub run_id: RunId,
    pub services: RuntimeServices,
    pub events: Arc<EventSink>,
    /// Fires on run cancel; every wait listens to it.
    pub cancel: CancellationToken,
    /// The named connection the host chose for the conversation's current model (fixed for
    /// the run's life, so read without the run lock).
    pub connection_ref: Option<String>,
    run: Mutex<AgentRun>,
    /// The run's commit ledger, shared by every owner of the foreground.
    ledger: StdMutex<Vec<CommitRecord>>,
    pub persist_snapshot: PersistSnapshot,
    /// User guidance waiting for the foreground agent's next model request.
    pub guidance: crate::guidance::GuidanceMailbox,
    /// Tool calls waiting for a person's approval, and the answers given.
    pub approvals: crate::approvals::ApprovalBroker,
    /// The run's spend against `limits.askAboveTotalCostUsd`, and a person's answers.
    pub spend: crate::spend_limit::SpendLimit,
    /// Provider sessions opened by this run's invocations, closed when it ends.
    sessions: StdMutex<Vec<(String, Arc<dyn tt_ports::ModelProvider>)>>,
    /// The next registration number of a task and its invocation; read from the stored
    /// records at the first registration of this active run.
    creation_seq: Mutex<Option<u64>>,
    /// The workspace keys given to the run's tasks (`engine::workspace_keys`).
    pub workspace_keys: Arc<crate::engine::workspace_keys::WorkspaceKeys>,
    /// Stored steps of resumed delegated agents, taken by their workers (`resume_run`).
    replays:
        StdMutex<std::collections::HashMap<tt_domain::ids::InvocationId, crate::replay::Replay>>,
    /// A resumed run whose interrupted process had journaled its `persist/` promotion:
    /// finishing again reads that state back and does not journal it twice.
    promoted_before: std::sync::atomic::AtomicBool,
    /// The host is shutting down: the stopped run ends `interrupted`, not `cancelled`.
    shutting_down: std::sync::atomic::AtomicBool,
    /// The run's `delegation.maxDelegationDepth`, read once per active run
    /// (`engine::child::max_delegation_depth`).
    pub(crate) max_delegation_depth: tokio::sync::OnceCell<u32>,
    /// Results handed back in this process and not shown yet to the agent that delegated
    /// them, by the returning agent: a capsule takes its entry's result from here instead of
    /// parsing the result document back (`engine::tasks::results`).
    returned_results: StdMutex<KeptResults>,
}

/// How much of the results handed back a run keeps in memory for its capsules, counted as the
/// length of their documents: a fan-out of 256 small results fits, a few large ones do not.
const KEPT_RESULTS_BYTES: usize = 256 * 1024;

/// [`RunContext`]'s results not shown yet, each with its document's length, and the sum.
#[derive(Default)]
struct KeptResults {
    results: std::collections::HashMap<
        tt_domain::ids::InvocationId,
        (crate::delegation::task_return::ReturnedResult, usize),
    >,
    bytes: usize,
}

impl KeptResults {
    /// Keeps `result` unless that would pass [`KEPT_RESULTS_BYTES`] (replacing one kept for
    /// the same agent).
    fn keep(
        &mut self,
        returner: tt_domain::ids::InvocationId,
        result: crate::delegation::task_return::ReturnedResult,
        document_bytes: usize,
    ) {
        let replaced = self.results.get(&returner).map_or(0, |(_, bytes)| *bytes);
        let total = self.bytes - replaced;
        if total.saturating_add(document_bytes) > KEPT_RESULTS_BYTES {
            return;
        }
        self.results.insert(returner, (result, document_bytes));
        self.bytes = total + document_bytes;
    }

    fn take(
        &mut self,
        returner: &tt_domain::ids::InvocationId,
    ) -> Option<crate::delegation::task_return::ReturnedResult> {
        let (result, bytes) = self.results.remove(returner)?;
        self.bytes -= bytes;
        Some(result)
    }
}

impl std::fmt::Debug for RunContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunContext")
            .field("run_id", &self.run_id)
            .finish_non_exhaustive()
    }
}

impl RunContext {
    pub(crate) fn new(
        run: AgentRun,
        services: RuntimeServices,
        events: Arc<EventSink>,
        persist_snapshot: PersistSnapshot,
    ) -> Arc<Self> {
        Arc::new(Self {
            run_id: run.id.clone(),
            services,
            events,
            cancel: CancellationToken::new(),
            connection_ref: run.connection_ref.clone(),
            run: Mutex::new(run),
            ledger: StdMutex::new(Vec::new()),
            persist_snapshot,
            guidance: Default::default(),
            approvals: Default::default(),
            spend: Default::default(),
            sessions: StdMutex::new(Vec::new()),
            creation_seq: Mutex::new(None),
            workspace_keys: Arc::default(),
            replays: StdMutex::new(std::collections::HashMap::new()),
            promoted_before: std::sync::atomic::AtomicBool::new(false),
            shutting_down: std::sync::atomic::AtomicBool::new(false),
            max_delegation_depth: tokio::sync::OnceCell::new(),
            returned_results: StdMutex::new(KeptResults::default()),
        })
    }

    /// Stops the run because its host is shutting down: every wait aborts as on a cancel, and
    /// the run ends `interrupted` (see `AgentRunService::interrupt_for_shutdown`).
    pub(crate) fn stop_for_shutdown(&self) {
        self.shutting_down
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.cancel.cancel();
    }

    /// Whether [`stop_for_shutdown`](Self::stop_for_shutdown) stopped the run.
    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The registration number of the next task and its invocation
    /// (`AgentInvocation::creation_seq`): one past the highest stored, found once per active run
    /// (so a run resumed in a new process goes on from its records), then counted here.
    pub(crate) async fn next_creation_seq(&self) -> ApplicationResult<u64> {
        let mut next = self.creation_seq.lock().await;
        let seq = match *next {
            Some(seq) => seq,
            None => {
                let repo = &self.services.invocations;
                let invocations = repo.list_invocations(&self.run_id).await?;
                let tasks = repo.list_tasks(&self.run_id).await?;
                let highest = invocations
                    .iter()
                    .map(|invocation| invocation.creation_seq)
                    .chain(tasks.iter().map(|task| task.creation_seq))
                    .max()
                    .unwrap_or(0);
                highest + 1
            }
        };
        *next = Some(seq + 1);
        Ok(seq)
    }

    /// Remembers a provider session (`runId:invocationId`) to close when the run ends.
    pub(crate) fn remember_session(
        &self,
        session_id: String,
        provider: Arc<dyn tt_ports::ModelProvider>,
    ) {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((session_id, provider));
    }

    /// Every session opened so far, once: taking them empties the list.
    pub(crate) fn take_sessions(&self) -> Vec<(String, Arc<dyn tt_ports::ModelProvider>)> {
        std::mem::take(
            &mut *self
                .sessions
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Leaves a resumed agent's stored steps for the worker that runs it again.
    pub(crate) fn leave_replay(
        &self,
        invocation: tt_domain::ids::InvocationId,
        replay: crate::replay::Replay,
    ) {
        self.replays
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(invocation, replay);
    }

    /// Remembers that an interrupted process journaled the run's promotion (`resume_run`).
    pub(crate) fn remember_promotion(&self) {
        self.promoted_before
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether an interrupted process journaled the run's promotion before this run was
    /// resumed.
    pub(crate) fn promoted_before(&self) -> bool {
        self.promoted_before
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The stored steps left for `invocation` by `resume_run`, once.
    pub(crate) fn take_replay(
        &self,
        invocation: &tt_domain::ids::InvocationId,
    ) -> Option<crate::replay::Replay> {
        self.replays
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(invocation)
    }

    pub(crate) async fn run_snapshot(&self) -> AgentRun {
        self.run.lock().await.clone()
    }

    /// Keeps the result `returner` handed back (its document, `document_bytes` long, is
    /// written) for the capsule that shows it, while the kept results' documents come to at
    /// most [`KEPT_RESULTS_BYTES`]; past that the capsule reads the document.
    pub(crate) fn remember_returned(
        &self,
        returner: tt_domain::ids::InvocationId,
        result: crate::delegation::task_return::ReturnedResult,
        document_bytes: usize,
    ) {
        self.returned_results
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .keep(returner, result, document_bytes);
    }

    /// The result `returner` handed back in this process, once: a later capsule of the same
    /// result, or one after a resume, reads its document.
    pub(crate) fn take_returned(
        &self,
        returner: &tt_domain::ids::InvocationId,
    ) -> Option<crate::delegation::task_return::ReturnedResult> {
        self.returned_results
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take(returner)
    }

    /// What `read` takes from the run as it is now, without copying the whole record.
    pub(crate) async fn read_run<T>(&self, read: impl FnOnce(&AgentRun) -> T) -> T {
        read(&*self.run.lock().await)
    }

    /// Notes on the run the end the journal refused; returns the run to store.
    pub(crate) async fn note_unrecorded_end(&self, end: tt_domain::run::UnrecordedEnd) -> AgentRun {
        let mut run = self.run.lock().await;
        run.unrecorded_end = Some(end);
        run.clone()
    }

    /// Moves the run to `status` if that is legal now, saves it and journals `status_changed`.
    /// Returns false (and changes nothing) when the move is not legal, e.g. while cancelling.
    pub(crate) async fn try_set_status(&self, status: AgentRunStatus) -> ApplicationResult<bool> {
        let mut run = self.run.lock().await;
        if run.status == status || !run.status.can_transition_to(status) {
            return Ok(false);
        }
        let mut next = run.clone();
        next.transition(status, self.services.clock.now())?;
        // Transient working states are journaled only; the stored record keeps the last
        // meaningful one (hosts read live runs through the runtime).
        if !status.is_transient()
            && let Err(error) = self.services.runs.save_run(&next).await
        {
            // A run that is ending in failure or cancel ends so in memory even when the disk
            // refuses the record; any other move is not made, so the failure can still end
            // the run (`completed` that could not be saved becomes `failed`).
            if status.is_terminal() && status != AgentRunStatus::Completed {
                *run = next;
            }
            return Err(error.into());
        }
        *run = next;
        self.events
            .record(
                &self.run_id,
                EventLevel::Info,
                &payload::StatusChanged { status },
            )
            .await?;
        Ok(true)
    }

    pub(crate) fn commit_count(&self) -> usize {
        self.ledger.lock().map(|ledger| ledger.len()).unwrap_or(0)
    }

    pub(crate) fn commits(&self) -> Vec<CommitRecord> {
        self.ledger
            .lock()
            .map(|ledger| ledger.clone())
            .unwrap_or_default()
    }

    pub(crate) fn record_commit(&self, record: CommitRecord) -> usize {
        match self.ledger.lock() {
            Ok(mut ledger) => {
                ledger.push(record);
                ledger.len()
            }
            Err(poisoned) => {
                let mut ledger = poisoned.into_inner();
                ledger.push(record);
                ledger.len()
            }
        }
    }

    /// Saves an invocation status change and journals `agent_invocation_<status>`. Parking for
    /// an approval and going on after it journal nothing here: the `tool_approval_*` events
    /// say it.
    pub(crate) async fn set_invocation_status(
        &self,
        invocation: &mut AgentInvocation,
        status: InvocationStatus,
    ) -> ApplicationResult<bool> {
        let previous = invocation.status;
        if !invocation.transition(status, self.services.clock.now())? {
            return Ok(false);
        }
        self.services
            .invocations
            .save_invocation(invocation)
            .await?;
        let level = match status {
            InvocationStatus::Failed | InvocationStatus::Cancelled => EventLevel::Warn,
            _ => EventLevel::Info,
        };
        macro_rules! record {
            ($payload:ident) => {
                self.events
                    .record(&self.run_id, level, &payload::$payload::of(invocation))
                    .await?
            };
        }
        match status {
            InvocationStatus::Running if previous == InvocationStatus::AwaitingApproval => {
                return Ok(true);
            }
            InvocationStatus::AwaitingApproval => return Ok(true),
            InvocationStatus::Running => record!(AgentInvocationStarted),
            InvocationStatus::Completed => record!(AgentInvocationCompleted),
            InvocationStatus::Failed => record!(AgentInvocationFailed),
            InvocationStatus::Cancelled => record!(AgentInvocationCancelled),
            InvocationStatus::Transferred => record!(AgentInvocationTransferred),
            InvocationStatus::Interrupted => record!(AgentInvocationInterrupted),
            InvocationStatus::Created => {
                self.events
                    .record(
                        &self.run_id,
                        level,
                        &payload::AgentInvocationCreated::of(invocation),
                    )
                    .await?
            }
        };
        Ok(true)
    }
}

#[cfg(test)]
mod kept_results_tests {
    use super::*;
    use crate::delegation::task_return::ReturnedResult;
    use tt_domain::ids::InvocationId;

    fn result(summary: &str) -> ReturnedResult {
        ReturnedResult {
            summary: summary.to_owned(),
            result: serde_json::json!({"summary": summary}),
        }
    }

    #[test]
    fn results_are_kept_up_to_the_bound_and_taken_once() {
        let mut kept = KeptResults::default();
        let (a, b, c) = (
            InvocationId::from_raw("inv_a"),
            InvocationId::from_raw("inv_b"),
            InvocationId::from_raw("inv_c"),
        );
        kept.keep(a.clone(), result("A"), KEPT_RESULTS_BYTES - 10);
        kept.keep(b.clone(), result("B"), 11);
        kept.keep(c.clone(), result("C"), 10);
        // B would pass the bound: its capsule reads the document.
        assert_eq!(kept.take(&b), None);
        assert_eq!(kept.take(&c), Some(result("C")));
        assert_eq!(kept.take(&c), None);
        // A result handed back again replaces the kept one.
        kept.keep(a.clone(), result("A2"), 5);
        assert_eq!(kept.bytes, 5);
        assert_eq!(kept.take(&a), Some(result("A2")));
        assert_eq!(kept.bytes, 0);
    }
}
