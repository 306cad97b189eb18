//! Reopening a `failed` or `cancelled` run for `resume_run` (docs/resume.md, "Resuming a
//! failed or cancelled run"): the agents and tasks the run's end stopped become `interrupted`,
//! as if the process had died at that moment, and the resume continues them like any
//! interrupted run. Only what the run's end stopped is reopened: a task the lead cancelled, a
//! delegated agent that failed on its own or one that completed stays as it ended. An
//! `interrupted` run whose end was never written (its foreground agent failed or was
//! cancelled, but the disk refused the run's end; `unwritten_end`) is reopened the same way.

use serde_json::Value;
use std::collections::HashSet;
use tt_domain::event::{EventLevel, RunEventType};
use tt_domain::event_payload as payload;
use tt_domain::ids::{InvocationId, TaskId};
use tt_domain::invocation::{AgentInvocation, InvocationStatus};
use tt_domain::run::{AgentRun, AgentRunStatus};
use tt_domain::task::{AgentTaskRecord, TaskContinuation, TaskStatus, TaskTransition};
use tt_ports::EventPage;

use crate::engine::scheduler::{DELEGATOR_CANCELLED_REASON, RUN_STOPPED_REASON};
use crate::error::ApplicationResult;
use crate::events::EventSink;
use crate::services::RuntimeServices;

use super::AgentRunService;

/// The `reason` of the `run_interrupted` a reopened run journals.
const REOPENED_AFTER_FAILURE: &str = "resumed_after_failure";
const REOPENED_AFTER_CANCEL: &str = "resumed_after_cancel";

/// The error a reopened task carries while it waits to be taken up again.
const REOPENED_TASK_NOTE: &str = "the run stopped before this task finished";

/// What the run's end stopped: reopened in memory first (so the resume's checks read the run
/// as interrupted without writing anything), then in the store by [`AgentRunService::reopen`].
#[derive(Debug, Default)]
pub(super) struct Reopening {
    previous_status: Option<AgentRunStatus>,
    invocations: Vec<InvocationId>,
    tasks: Vec<TaskId>,
    /// The last seq the run's end wrote: the resume continues from there.
    pub last_seq: u64,
}

/// Finds what `run`'s end stopped and marks it `interrupted` in `invocations` and `tasks`.
pub(super) async fn plan(
    services: &RuntimeServices,
    run: &AgentRun,
    invocations: &mut [AgentInvocation],
    tasks: &mut [AgentTaskRecord],
) -> ApplicationResult<Reopening> {
    let last_seq = services.journal.last_seq(&run.id).await?;
    // A failed run settled its open handoffs with the failure's own message.
    let failure = if run.status == AgentRunStatus::Failed {
        failure_message(services, run, last_seq).await?
    } else {
        None
    };
    let mut reopening = Reopening {
        previous_status: Some(run.status),
        last_seq,
        ..Reopening::default()
    };
    let stopped_by_end = |task: &AgentTaskRecord| match task.status {
        TaskStatus::Interrupted => true,
        TaskStatus::Cancelled => task.error.as_deref() == Some(RUN_STOPPED_REASON),
        TaskStatus::Failed => task.error.is_some() && task.error == failure,
        _ => false,
    };
    let reopenable_agent = |id: &InvocationId, invocations: &[AgentInvocation]| {
        agent_in(id, invocations, &REOPENABLE_ENDS)
    };
    let (owner, incoming) = foreground(invocations, tasks);
    if reopenable_agent(&owner, invocations) {
        reopening.invocations.push(owner.clone());
        if let Some(task) = incoming
            .as_ref()
            .and_then(|id| tasks.iter().find(|task| &task.id == id))
            && task.status != TaskStatus::Completed
        {
            reopening.tasks.push(task.id.clone());
        }
    }
    // Tasks in creation order, so a delegating task is decided before the ones it delegated.
    let mut order: Vec<usize> = (0..tasks.len()).collect();
    order.sort_by(|&a, &b| tasks[a].creation_order().cmp(&tasks[b].creation_order()));
    let mut reopened_agents: HashSet<InvocationId> =
        reopening.invocations.iter().cloned().collect();
    for index in order {
        let task = &tasks[index];
        if reopening.tasks.contains(&task.id) {
            continue;
        }
        let reopen = match task.continuation {
            // A handoff the foreground agent had registered, waiting for it to hand over.
            TaskContinuation::TransferControl => {
                task.parent_invocation_id == owner && stopped_by_end(task)
            }
            TaskContinuation::ReturnToParent => {
                let delegator_reopened = reopened_agents.contains(&task.parent_invocation_id);
                delegator_reopened
                    && (stopped_by_end(task)
                        || (task.status == TaskStatus::Cancelled
                            && task.error.as_deref() == Some(DELEGATOR_CANCELLED_REASON)))
                    && reopenable_or_unstarted(&task.child_invocation_id, invocations)
            }
        };
        if reopen {
            reopening.tasks.push(task.id.clone());
            if reopenable_agent(&task.child_invocation_id, invocations) {
                reopened_agents.insert(task.child_invocation_id.clone());
                reopening.invocations.push(task.child_invocation_id.clone());
            }
        }
    }
    for task in tasks.iter_mut() {
        if reopening.tasks.contains(&task.id) {
            task.status = TaskStatus::Interrupted;
        }
    }
    for invocation in invocations.iter_mut() {
        if reopening.invocations.contains(&invocation.id) {
            invocation.status = InvocationStatus::Interrupted;
        }
    }
    Ok(reopening)
}

/// The foreground agent of a run: the root or, after handoffs, the agent the last one brought
/// in, with the handoff task that brought it in.
pub(super) fn foreground(
    invocations: &[AgentInvocation],
    tasks: &[AgentTaskRecord],
) -> (InvocationId, Option<TaskId>) {
    let mut owner = InvocationId::root();
    let mut incoming: Option<TaskId> = None;
    while let Some(invocation) = invocations.iter().find(|inv| inv.id == owner)
        && invocation.status == InvocationStatus::Transferred
    {
        let Some(task) = tasks.iter().rfind(|task| {
            task.continuation == TaskContinuation::TransferControl
                && task.parent_invocation_id == owner
        }) else {
            break;
        };
        incoming = Some(task.id.clone());
        owner = task.child_invocation_id.clone();
    }
    (owner, incoming)
}

/// The foreground agent of an `interrupted` run and how it ended, when it ended `failed` or
/// `cancelled`: the run's end was under way (that is what ends the foreground agent so) but
/// reached neither the journal nor the run record (the disk refused them, or the process
/// stopped first), and the next runtime marked the run `interrupted`. The journal and records
/// are the truth: such a run is reopened where its end stopped it, as a failed or cancelled
/// run is. `None` for any other run.
pub(super) fn unwritten_end(
    run: &AgentRun,
    invocations: &[AgentInvocation],
    tasks: &[AgentTaskRecord],
) -> Option<(InvocationId, InvocationStatus)> {
    if run.status != AgentRunStatus::Interrupted {
        return None;
    }
    let (owner, _) = foreground(invocations, tasks);
    invocations
        .iter()
        .find(|invocation| invocation.id == owner)
        .filter(|invocation| {
            matches!(
                invocation.status,
                InvocationStatus::Failed | InvocationStatus::Cancelled
            )
        })
        .map(|invocation| (owner, invocation.status))
}

/// Whether a delegated agent may be reopened with its task: it ended by the run's end or never
/// got to start (`created`, which the resume starts from its queue).
fn reopenable_or_unstarted(id: &InvocationId, invocations: &[AgentInvocation]) -> bool {
    agent_in(id, invocations, &REOPENABLE_ENDS)
        || agent_in(id, invocations, &[InvocationStatus::Created])
}

/// The ends an agent may be reopened from (those the run's end leaves it in).
const REOPENABLE_ENDS: [InvocationStatus; 3] = [
    InvocationStatus::Failed,
    InvocationStatus::Cancelled,
    InvocationStatus::Interrupted,
];

/// Whether the agent `id` is among `invocations` in one of `statuses`.
fn agent_in(
    id: &InvocationId,
    invocations: &[AgentInvocation],
    statuses: &[InvocationStatus],
) -> bool {
    invocations
        .iter()
        .any(|invocation| &invocation.id == id && statuses.contains(&invocation.status))
}

/// `technicalMessage` of the run's last `run_failed`, which its open handoffs were settled with.
async fn failure_message(
    services: &RuntimeServices,
    run: &AgentRun,
    last_seq: u64,
) -> ApplicationResult<Option<String>> {
    let tail = services
        .journal
        .read(
            &run.id,
            &EventPage {
                before_seq: Some(last_seq + 1),
                limit: Some(tt_ports::journal::MAX_EVENT_PAGE_LIMIT),
                ..EventPage::default()
            },
        )
        .await?;
    Ok(tail
        .iter()
        .rev()
        .find(|event| event.event_type == RunEventType::RunFailed)
        .and_then(|event| event.payload.get("technicalMessage"))
        .and_then(Value::as_str)
        .map(str::to_owned))
}

impl AgentRunService {
    /// Writes `reopening`: each reopened task and agent becomes `interrupted` with its event,
    /// then the run, with `run_reopened {previousStatus, …}` and
    /// `run_interrupted {reason: resumed_after_failure | resumed_after_cancel}` in one append.
    /// The first write takes the run's lock. Written in an order a crash can cut anywhere: a
    /// later resume plans again and finds the records already reopened.
    pub(super) async fn reopen(
        &self,
        run: &mut AgentRun,
        reopening: &Reopening,
    ) -> ApplicationResult<()> {
        let services = &self.services;
        let now = services.clock.now();
        for task_id in &reopening.tasks {
            let outcome = services
                .invocations
                .transition_task(
                    &run.id,
                    task_id,
                    &TaskTransition {
                        status: TaskStatus::Interrupted,
                        result_ref: None,
                        error: Some(REOPENED_TASK_NOTE.to_owned()),
                    },
                    now,
                )
                .await?;
            if outcome.changed {
                let task = outcome.task;
                self.events
                    .record(
                        &run.id,
                        EventLevel::Warn,
                        &payload::AgentTaskInterrupted::of(&task),
                    )
                    .await?;
            }
        }
        for id in &reopening.invocations {
            let mut invocation = services.invocations.load_invocation(&run.id, id).await?;
            if invocation.transition(InvocationStatus::Interrupted, now)? {
                services.invocations.save_invocation(&invocation).await?;
                self.events
                    .record(
                        &run.id,
                        EventLevel::Warn,
                        &payload::AgentInvocationInterrupted::of(&invocation),
                    )
                    .await?;
            }
        }
        if run.status == AgentRunStatus::Interrupted {
            // A run whose end was never written (`unwritten_end`) is interrupted already: its
            // agents are reopened, the run needs nothing more.
            return Ok(());
        }
        let previous = run.reopen(now)?;
        services.runs.save_run(run).await?;
        let terminal = reopening.previous_status.unwrap_or(previous);
        let reason = match terminal {
            AgentRunStatus::Cancelled => REOPENED_AFTER_CANCEL,
            _ => REOPENED_AFTER_FAILURE,
        };
        let reopened = EventSink::pending(
            EventLevel::Warn,
            &payload::RunReopened {
                previous_status: terminal,
                last_seq: reopening.last_seq,
                reopened_task_ids: reopening.tasks.clone(),
                reopened_invocation_ids: reopening.invocations.clone(),
            },
        )?;
        let interrupted = EventSink::pending(
            EventLevel::Warn,
            &payload::RunInterrupted {
                reason: reason.to_owned(),
                last_seq: reopening.last_seq,
                previous_status: previous,
            },
        )?;
        self.events
            .record_all(&run.id, vec![reopened, interrupted])
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tt_testkit::contract::{invocation, sample_run, task};

    fn with_status(mut inv: AgentInvocation, status: InvocationStatus) -> AgentInvocation {
        inv.status = status;
        inv
    }

    #[test]
    fn an_interrupted_run_whose_foreground_agent_failed_lost_its_end() {
        let mut run = sample_run(1);
        run.status = AgentRunStatus::Interrupted;
        let root = |status| vec![with_status(invocation(&run, "inv_root", 1), status)];
        // The ordinary interruption: the root was interrupted with the run.
        assert_eq!(
            unwritten_end(&run, &root(InvocationStatus::Interrupted), &[]),
            None
        );
        let lost = unwritten_end(&run, &root(InvocationStatus::Failed), &[]);
        assert_eq!(lost, Some((InvocationId::root(), InvocationStatus::Failed)));
        // After a handoff the agent that took the run over is the one that counts.
        let mut handoff = task(&run, "task_h", 2);
        handoff.continuation = TaskContinuation::TransferControl;
        handoff.status = TaskStatus::Failed;
        let editor = handoff.child_invocation_id.clone();
        let mut agents = root(InvocationStatus::Transferred);
        agents.push(with_status(
            invocation(&run, editor.as_str(), 2),
            InvocationStatus::Cancelled,
        ));
        assert_eq!(
            unwritten_end(&run, &agents, std::slice::from_ref(&handoff)),
            Some((editor, InvocationStatus::Cancelled))
        );
        // Only an interrupted run: a failed one is reopened as such.
        let failed_root = root(InvocationStatus::Failed);
        run.status = AgentRunStatus::Failed;
        assert_eq!(unwritten_end(&run, &failed_root, &[]), None);
    }
}
