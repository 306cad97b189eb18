//! The timeline projection a host draws an agent graph from: which invocations owned the
//! foreground, every invocation (with the fallback models it moved to), and every
//! delegation/handoff edge (reference §7).

use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use tt_domain::error_codes;
use tt_domain::ids::{InvocationId, ProfileId, RunId, TaskId};
use tt_domain::invocation::{ExitPolicy, InvocationKind, InvocationStatus};
use tt_domain::task::{TaskContinuation, TaskStatus};
use tt_domain::time::Timestamp;
use tt_ports::AgentInvocationRepository;

use crate::error::{ApplicationError, ApplicationResult};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimelineInvocation {
    pub invocation_id: InvocationId,
    pub parent_invocation_id: Option<InvocationId>,
    pub profile_id: ProfileId,
    pub kind: InvocationKind,
    pub status: InvocationStatus,
    pub exit_policy: ExitPolicy,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// The fallback models it moved to, in order (`agent_model_fallback_switched`; the last
    /// one's `to` is the model in force). Filled by `AgentRunService::timeline_projection`
    /// from the journal; empty when it stayed on its profile's model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub model_switches: Vec<TimelineModelSwitch>,
}

/// One move of an agent to the next model of its profile's fallback chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimelineModelSwitch {
    /// The journal event that recorded it.
    pub seq: u64,
    /// The round whose call failed and was made again on the new model.
    pub round: u32,
    /// Which entry of `model.fallbacks` it moved to (1 = the first).
    pub fallback_index: u32,
    pub from: tt_domain::event_payload::BindingRef,
    pub to: tt_domain::event_payload::BindingRef,
    /// `retries_exhausted`, `call_deadline_exceeded`, `model_not_found` or `rate_limited`.
    pub reason: String,
    /// The error code of the failure that moved it.
    pub code: String,
}

impl TimelineProjection {
    /// Adds to each invocation the fallback switches `events` journal (any events of the run;
    /// others are skipped).
    pub(crate) fn add_model_switches(&mut self, events: &[tt_domain::event::AgentRunEvent]) {
        use tt_domain::event_payload::RunEventPayload;
        for event in events {
            if event.event_type != tt_domain::event::RunEventType::AgentModelFallbackSwitched {
                continue;
            }
            let Some(Ok(RunEventPayload::AgentModelFallbackSwitched(switched))) =
                event.typed_payload()
            else {
                continue;
            };
            if let Some(invocation) = self
                .invocations
                .iter_mut()
                .find(|inv| inv.invocation_id == switched.invocation_id)
            {
                invocation.model_switches.push(TimelineModelSwitch {
                    seq: event.seq,
                    round: switched.round,
                    fallback_index: switched.fallback_index,
                    from: switched.from,
                    to: switched.to,
                    reason: switched.reason,
                    code: switched.code,
                });
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DelegationEdge {
    pub task_id: TaskId,
    pub source_invocation_id: InvocationId,
    pub target_invocation_id: InvocationId,
    pub target_profile_id: ProfileId,
    pub workspace_key: String,
    pub continuation: TaskContinuation,
    pub status: TaskStatus,
    pub result_ref: Option<String>,
    pub error: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimelineProjection {
    pub foreground_invocation_ids: Vec<InvocationId>,
    pub invocations: Vec<TimelineInvocation>,
    pub delegation_edges: Vec<DelegationEdge>,
    /// What the run record and these records show wrong with the run (records that stop short
    /// of the run's recorded end, an end the journal refused): the cheap part of
    /// `check_run`, which reads no journal. Filled by `AgentRunService::timeline_projection`;
    /// empty when nothing was found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub damage: Vec<tt_domain::damage::DamageFinding>,
}

/// Builds the projection from the invocation and task stores (not from the journal).
pub async fn timeline_projection(
    repo: &dyn AgentInvocationRepository,
    run_id: &RunId,
) -> ApplicationResult<TimelineProjection> {
    let mut invocations = repo.list_invocations(run_id).await?;
    invocations.sort_by(|a, b| a.creation_order().cmp(&b.creation_order()));
    let mut tasks = repo.list_tasks(run_id).await?;
    tasks.sort_by(|a, b| a.creation_order().cmp(&b.creation_order()));
    let known: HashSet<&InvocationId> = invocations.iter().map(|inv| &inv.id).collect();
    for task in &tasks {
        if !known.contains(&task.child_invocation_id) || !known.contains(&task.parent_invocation_id)
        {
            return Err(ApplicationError::fatal(
                error_codes::AGENT_TIMELINE_PROJECTION_INVALID,
                format!("task {} points at a missing invocation", task.id),
            ));
        }
    }
    // In registration order (`creationSeq`; `createdAt` for records written before it).
    let mut foreground: Vec<(u64, Timestamp, InvocationId)> = Vec::new();
    // The agents control was transferred to, once (not a scan of the tasks per agent).
    let transfer_targets: HashSet<&InvocationId> = tasks
        .iter()
        .filter(|task| task.continuation == TaskContinuation::TransferControl)
        .map(|task| &task.child_invocation_id)
        .collect();
    for inv in &invocations {
        let transfer_target = transfer_targets.contains(&inv.id);
        if inv.id.is_root() || inv.kind == InvocationKind::Handoff || transfer_target {
            foreground.push((inv.creation_seq, inv.created_at, inv.id.clone()));
        }
    }
    foreground.sort();
    let mut foreground_ids: Vec<InvocationId> = vec![InvocationId::root()];
    for (_, _, id) in foreground {
        if !foreground_ids.contains(&id) {
            foreground_ids.push(id);
        }
    }
    Ok(TimelineProjection {
        foreground_invocation_ids: foreground_ids,
        invocations: invocations
            .into_iter()
            .map(|inv| TimelineInvocation {
                invocation_id: inv.id,
                parent_invocation_id: inv.parent_invocation_id,
                profile_id: inv.profile_id,
                kind: inv.kind,
                status: inv.status,
                exit_policy: inv.exit_policy,
                created_at: inv.created_at,
                updated_at: inv.updated_at,
                model_switches: Vec::new(),
            })
            .collect(),
        delegation_edges: tasks
            .into_iter()
            .map(|task| DelegationEdge {
                task_id: task.id,
                source_invocation_id: task.parent_invocation_id,
                target_invocation_id: task.child_invocation_id,
                target_profile_id: task.target_profile_id,
                workspace_key: task.workspace_key,
                continuation: task.continuation,
                status: task.status,
                result_ref: task.result_ref,
                error: task.error,
                created_at: task.created_at,
                updated_at: task.updated_at,
            })
            .collect(),
        damage: Vec::new(),
    })
}

impl TimelineProjection {
    /// Whether these records contradict the end `run` records (`records_finding`): an agent or
    /// task that never ended in a run that completed, or no root agent.
    pub(crate) fn records_finding(
        &self,
        run: &tt_domain::run::AgentRun,
    ) -> Option<tt_domain::damage::DamageFinding> {
        let has_root = self
            .invocations
            .iter()
            .any(|inv| inv.invocation_id.is_root());
        let unfinished: Vec<String> = self
            .invocations
            .iter()
            .filter(|inv| !inv.status.is_terminal())
            .map(|inv| format!("agent {} ({})", inv.invocation_id, inv.status.as_str()))
            .chain(
                self.delegation_edges
                    .iter()
                    .filter(|edge| !edge.status.is_terminal())
                    .map(|edge| format!("task {} ({})", edge.task_id, edge.status.as_str())),
            )
            .collect();
        tt_domain::damage::records_finding(run, has_root, &unfinished)
    }
}
