//! Following a run another process writes (`RunEventStream::following_other_process`): the
//! writer saves the run's terminal status a few writes before it journals the run's end, and a
//! follower that sees the status in between waits for that end instead of stopping short of it.
//! The "other process" is a second in-memory store that the test fills from a finished run, so
//! the follower sees exactly the moment between the status and the end.

use std::sync::Arc;
use std::time::Duration;

use tt_application::{EventSink, RunEventStream};
use tt_domain::event::{AgentRunEvent, NewRunEvent};
use tt_domain::ids::RunId;
use tt_domain::run::AgentRunStatus;
use tt_ports::{AgentRunRepository, RunJournal};
use tt_testkit::fakes::{InMemoryStore, ManualClock, SequentialIds};

use crate::support::*;

/// A completed run of the happy script, and a second store holding its record (completed) and
/// its journal up to the `status_changed` that completed it: the writer's state just before it
/// journals the run's end. Returns the second store, the run id and the events still to come.
async fn writer_between_status_and_end() -> (Arc<InMemoryStore>, RunId, Vec<AgentRunEvent>) {
    let h = happy_harness();
    let run = h.service.start_run(request(None)).await.unwrap();
    let run = h.service.wait_for_run(&run.id).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);
    let events = h.store.events(&run.id);
    let completed_at = events
        .iter()
        .rposition(|event| {
            event.event_type == "status_changed" && event.payload["status"] == "completed"
        })
        .expect("the run journals its completion");
    assert_eq!(events.last().unwrap().event_type, "run_completed");

    let other = InMemoryStore::new();
    let manifest = h.store.load_manifest(&run.id).await.unwrap();
    other.create_run(&run, &manifest).await.unwrap();
    for event in &events[..=completed_at] {
        append(&other, event).await;
    }
    other.save_run(&run).await.unwrap();
    (other, run.id, events[completed_at + 1..].to_vec())
}

async fn append(store: &InMemoryStore, event: &AgentRunEvent) {
    RunJournal::append(
        store,
        NewRunEvent {
            id: event.id.clone(),
            run_id: event.run_id.clone(),
            timestamp: event.timestamp,
            level: event.level,
            event_type: event.event_type.clone(),
            payload: (&event.payload).into(),
        },
    )
    .await
    .unwrap();
}

fn follower(store: &Arc<InMemoryStore>, run_id: &RunId) -> RunEventStream {
    let sink = EventSink::new(store.clone(), ManualClock::ticking(), SequentialIds::new());
    RunEventStream::new(&sink, run_id.clone(), 0, None, None).following_other_process(store.clone())
}

#[tokio::test(start_paused = true)]
async fn a_follower_waits_for_the_end_the_writer_journals_after_the_terminal_status() {
    let (store, run_id, tail) = writer_between_status_and_end().await;
    assert!(!tail.is_empty());
    let mut stream = follower(&store, &run_id);
    let mut seen = Vec::new();
    // Everything journaled so far, then the stream waits: the record says completed, but the
    // journal's end is still to come.
    loop {
        match tokio::time::timeout(Duration::from_millis(1000), stream.next()).await {
            Ok(Ok(Some(event))) => seen.push(event.event_type.to_string()),
            Ok(Ok(None)) => panic!("the stream ended before the run's end: {seen:?}"),
            Ok(Err(error)) => panic!("{error}"),
            Err(_) => break,
        }
    }
    assert_eq!(seen.last().map(String::as_str), Some("status_changed"));
    for event in &tail {
        append(&store, event).await;
    }
    while let Some(event) = stream.next().await.unwrap() {
        seen.push(event.event_type.to_string());
    }
    assert_eq!(seen.last().map(String::as_str), Some("run_completed"));
    assert_eq!(seen.len(), store.events(&run_id).len());
}

#[tokio::test(start_paused = true)]
async fn a_follower_of_a_writer_that_died_before_the_end_stops_after_a_quiet_while() {
    let (store, run_id, _tail) = writer_between_status_and_end().await;
    let mut stream = follower(&store, &run_id);
    let mut last = None;
    while let Some(event) = stream.next().await.unwrap() {
        last = Some(event.event_type.to_string());
    }
    assert_eq!(last.as_deref(), Some("status_changed"));
}
