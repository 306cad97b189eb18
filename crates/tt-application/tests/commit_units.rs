//! What goes to the store together: a lead's delegations of one reply are one commit each
//! (the call's start, the new agent and task, and the end of the delegation before it), the
//! last delegation's end is written before the lead's next model call, and the journal keeps
//! every agent's own order; and the lead does not wait for one delegation's unit to be stored
//! before the next, while no delegated agent starts before its task's unit is stored.

use async_trait::async_trait;
use serde_json::json;
use std::sync::{Arc, Mutex};
use tt_application::{AgentRunService, RuntimeServices};
use tt_domain::event::{AgentRunEvent, NewRunEvent, RecordedEvent};
use tt_domain::ids::RunId;
use tt_domain::run::AgentRunStatus;
use tt_ports::{EventPage, RunJournal, RunWrite, StorageResult};
use tt_testkit::fakes::InMemoryStore;

use crate::support::*;

/// The journal of an in-memory store that remembers each unit committed by the lead: the
/// types of its events, in order.
struct UnitLog {
    inner: Arc<InMemoryStore>,
    units: Mutex<Vec<Vec<String>>>,
}

impl UnitLog {
    fn over(store: &Arc<InMemoryStore>) -> Arc<Self> {
        Arc::new(Self {
            inner: Arc::clone(store),
            units: Mutex::new(Vec::new()),
        })
    }
}

#[async_trait]
impl RunJournal for UnitLog {
    async fn append(&self, event: NewRunEvent) -> StorageResult<RecordedEvent> {
        self.inner.append(event).await
    }

    async fn commit(
        &self,
        run_id: &RunId,
        writes: Vec<RunWrite>,
    ) -> StorageResult<Vec<RecordedEvent>> {
        let lead = writes.iter().any(|write| {
            matches!(write, RunWrite::Event(event)
                if event.payload.to_value().is_ok_and(|payload| payload["invocationId"] == json!("inv_root")))
        });
        if lead {
            let types = writes
                .iter()
                .filter_map(|write| match write {
                    RunWrite::Event(event) => Some(event.event_type.as_str().to_owned()),
                    _ => None,
                })
                .collect();
            self.units.lock().unwrap().push(types);
        }
        self.inner.commit(run_id, writes).await
    }

    async fn read(&self, run_id: &RunId, page: &EventPage) -> StorageResult<Vec<AgentRunEvent>> {
        self.inner.read(run_id, page).await
    }

    async fn last_seq(&self, run_id: &RunId) -> StorageResult<u64> {
        self.inner.last_seq(run_id).await
    }
}

const START: [&str; 2] = ["tool_call_requested", "tool_call_started"];
const TASK: [&str; 3] = [
    "agent_invocation_created",
    "agent_task_registered",
    "agent_delegate_started",
];
const END: [&str; 2] = ["tool_result_stored", "tool_call_completed"];

fn types(parts: &[&[&str]]) -> Vec<String> {
    parts
        .iter()
        .flat_map(|part| part.iter().map(|name| (*name).to_owned()))
        .collect()
}

/// The writer delegates `delegations` in one reply, waits for them all and publishes; the
/// critic returns at once. Runs on `store` with `journal` in place of the store's own.
async fn delegate_in_one_reply(
    store: &Arc<InMemoryStore>,
    journal: Arc<dyn RunJournal>,
    delegations: Vec<(String, String, serde_json::Value)>,
) -> tt_domain::run::AgentRun {
    let model = by_agent(vec![
        (
            "writer",
            publish_after(
                vec![turn(delegations), await_turn("a", "allCompleted")],
                "Reviewed.",
            ),
        ),
        ("critic", vec![task_return("r", "Fine.")]),
    ]);
    let service = AgentRunService::new(RuntimeServices {
        journal,
        ..in_memory_services(store, model)
    });
    for profile in [delegator("writer"), reviewer("critic")] {
        store.put_profile(profile);
    }
    start_and_wait(&service, request(Some("writer"))).await
}

#[tokio::test]
async fn a_replys_delegations_are_one_commit_each() {
    let store = InMemoryStore::new();
    let log = UnitLog::over(&store);
    let delegations = vec![
        delegate("d1", "critic", "Check the opening."),
        delegate("d2", "critic", "Check the middle."),
        // Refused (no such agent): its end goes out with what was held.
        delegate("d3", "nobody", "Check the end."),
        delegate("d4", "critic", "Check the end."),
    ];
    let run = delegate_in_one_reply(&store, log.clone(), delegations).await;
    assert_eq!(run.status, AgentRunStatus::Completed);

    // The lead's units around its four delegations, as committed.
    let units = log.units.lock().unwrap().clone();
    let first = units
        .iter()
        .position(|unit| unit.first().map(String::as_str) == Some("tool_call_requested"))
        .unwrap();
    let refused_end = ["tool_result_stored", "tool_call_failed"];
    assert_eq!(
        units[first..first + 5].to_vec(),
        vec![
            types(&[&START, &TASK]),
            types(&[&END, &START, &TASK]),
            // The refused call: what was held, its start and its end, at once.
            types(&[&END, &START, &refused_end]),
            types(&[&START, &TASK]),
            // The last delegation's end, before anything else the lead writes.
            types(&[&END]),
        ]
    );

    // In the journal every call still reads start, work, end, and the last end comes before
    // the lead's next model request.
    let events = store.events(&run.id);
    // The lead's own events and those of the tasks it registers.
    let lead: Vec<&AgentRunEvent> = events
        .iter()
        .filter(|event| {
            event.payload["invocationId"] == json!("inv_root")
                || (TASK.contains(&event.event_type.as_str())
                    && event.payload["parentInvocationId"] == json!("inv_root"))
        })
        .collect();
    let expected = types(&[
        &START,
        &TASK,
        &END,
        &START,
        &TASK,
        &END,
        &START,
        &refused_end,
        &START,
        &TASK,
        &END,
    ]);
    let calls: Vec<String> = lead
        .iter()
        .map(|event| event.event_type.as_str().to_owned())
        .skip_while(|name| name != "tool_call_requested")
        .take(expected.len())
        .collect();
    assert_eq!(calls, expected);
    let seq_of = |name: &str, nth: usize| {
        lead.iter()
            .filter(|event| event.event_type.as_str() == name)
            .nth(nth)
            .map(|event| event.seq)
            .unwrap()
    };
    assert!(seq_of("tool_call_completed", 2) < seq_of("model_request_created", 1));
}

/// A workspace write's end and its `workspace_file_written` are one unit, and the file's
/// checkpoint follows at that event; a model answer's document and its events are one unit.
#[tokio::test]
async fn a_writes_end_and_its_change_are_one_commit() {
    let store = InMemoryStore::new();
    let log = UnitLog::over(&store);
    let service = AgentRunService::new(RuntimeServices {
        journal: log.clone(),
        ..in_memory_services(&store, by_turn(happy_turns()))
    });
    let run = start_and_wait(&service, request(None)).await;
    assert_eq!(run.status, AgentRunStatus::Completed);
    let units = log.units.lock().unwrap().clone();
    let written = units
        .iter()
        .position(|unit| unit.contains(&"workspace_file_written".to_owned()))
        .unwrap();
    assert_eq!(
        units[written - 1..=written].to_vec(),
        vec![
            types(&[&START]),
            types(&[&END, &["workspace_file_written"]]),
        ]
    );
    let answered = types(&[&[
        "model_response_stored",
        "provider_state_updated",
        "model_completed",
    ]]);
    assert_eq!(units.iter().filter(|unit| **unit == answered).count(), 3);
    let events = store.events(&run.id);
    let change = events
        .iter()
        .find(|event| event.event_type.as_str() == "workspace_file_written")
        .unwrap();
    let checkpoint = events
        .iter()
        .find(|event| event.event_type.as_str() == "checkpoint_created")
        .unwrap();
    assert_eq!(checkpoint.payload["eventSeq"], json!(change.seq));
}

/// A journal whose chained units (`commit_chained`) wait in a queue until three are queued,
/// or until anything else is written; then they are written in order and their outcomes
/// answered. Records how many units each release wrote.
struct HeldQueue {
    inner: Arc<InMemoryStore>,
    queued: Mutex<Vec<QueuedUnit>>,
    releases: Mutex<Vec<usize>>,
}

type QueuedUnit = (
    RunId,
    Vec<RunWrite>,
    tokio::sync::oneshot::Sender<StorageResult<Vec<RecordedEvent>>>,
);

impl HeldQueue {
    async fn release(&self) {
        let queued = std::mem::take(&mut *self.queued.lock().unwrap());
        if queued.is_empty() {
            return;
        }
        self.releases.lock().unwrap().push(queued.len());
        for (run_id, writes, answer) in queued {
            let _ = answer.send(self.inner.commit(&run_id, writes).await);
        }
    }
}

#[async_trait]
impl RunJournal for HeldQueue {
    async fn append(&self, event: NewRunEvent) -> StorageResult<RecordedEvent> {
        self.release().await;
        self.inner.append(event).await
    }

    async fn append_all(&self, events: Vec<NewRunEvent>) -> StorageResult<Vec<RecordedEvent>> {
        self.release().await;
        self.inner.append_all(events).await
    }

    async fn commit(
        &self,
        run_id: &RunId,
        writes: Vec<RunWrite>,
    ) -> StorageResult<Vec<RecordedEvent>> {
        self.release().await;
        self.inner.commit(run_id, writes).await
    }

    async fn commit_chained(
        &self,
        run_id: &RunId,
        writes: Vec<RunWrite>,
        _chain: &tt_ports::CommitChain,
    ) -> StorageResult<tt_ports::ChainedCommit> {
        let (answer, outcome) = tokio::sync::oneshot::channel();
        let full = {
            let mut queued = self.queued.lock().unwrap();
            queued.push((run_id.clone(), writes, answer));
            queued.len() == 3
        };
        if full {
            self.release().await;
        }
        Ok(Box::pin(async move {
            outcome
                .await
                .unwrap_or_else(|_| Err(tt_ports::StorageError::Other("dropped".to_owned())))
        }))
    }

    async fn read(&self, run_id: &RunId, page: &EventPage) -> StorageResult<Vec<AgentRunEvent>> {
        self.inner.read(run_id, page).await
    }

    async fn last_seq(&self, run_id: &RunId) -> StorageResult<u64> {
        self.inner.last_seq(run_id).await
    }
}

#[tokio::test]
async fn a_replys_delegations_do_not_wait_for_each_other() {
    let store = InMemoryStore::new();
    let journal = Arc::new(HeldQueue {
        inner: Arc::clone(&store),
        queued: Mutex::new(Vec::new()),
        releases: Mutex::new(Vec::new()),
    });
    let delegations = vec![
        delegate("d1", "critic", "Check the opening."),
        delegate("d2", "critic", "Check the middle."),
        delegate("d3", "critic", "Check the end."),
    ];
    let run = delegate_in_one_reply(&store, journal.clone(), delegations).await;
    let failures: Vec<_> = store
        .events(&run.id)
        .into_iter()
        .filter(|event| event.event_type.as_str().contains("fail"))
        .map(|event| event.payload)
        .collect();
    assert_eq!(run.status, AgentRunStatus::Completed, "{failures:?}");

    // The three delegations' units were all queued before the first of them was stored.
    assert_eq!(journal.releases.lock().unwrap().clone(), vec![3]);
    // No delegated agent wrote anything before its task's unit was stored.
    let events = store.events(&run.id);
    let last_start = events
        .iter()
        .filter(|event| event.event_type.as_str() == "agent_delegate_started")
        .map(|event| event.seq)
        .max()
        .unwrap();
    let first_child = events
        .iter()
        .filter(|event| {
            !TASK.contains(&event.event_type.as_str())
                && event.payload["invocationId"]
                    .as_str()
                    .is_some_and(|id| id != "inv_root")
        })
        .map(|event| event.seq)
        .min()
        .unwrap();
    assert!(last_start < first_child, "{last_start} {first_child}");
}
