//! Every write the store makes fails in turn (ENOSPC, EIO, EROFS, EACCES; once, or from then on
//! like a disk that stays full): the run always reaches a terminal status within a bounded
//! (paused) time, and when the disk lets the runtime say why, `run_failed` carries
//! `agent.storage_io` with the OS error and the path.

use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tt_application::AgentRunService;
use tt_domain::run::AgentRunStatus;
use tt_testkit::fakes::{DiskFault, FakeModel, FaultPlan, FaultyStore, InMemoryStore};

use crate::support::*;

struct FaultyHarness {
    inner: Arc<InMemoryStore>,
    faulty: Arc<FaultyStore<InMemoryStore>>,
    service: Arc<AgentRunService>,
}

fn faulty_harness(model: Arc<FakeModel>) -> FaultyHarness {
    let inner = InMemoryStore::new();
    let faulty = FaultyStore::wrap(Arc::clone(&inner));
    let services = faulty_services(&inner, &faulty, model);
    FaultyHarness {
        inner,
        faulty,
        service: AgentRunService::new(services),
    }
}

/// What one faulty run came to.
#[derive(Debug)]
struct Ending {
    /// The status the host gets from `wait_for_run` (when `start_run` succeeded; otherwise the
    /// host got the error).
    status: Option<AgentRunStatus>,
    stored_status: Option<AgentRunStatus>,
    /// `run_failed` / `run_partial_success` payload, if one was written.
    failure: Option<serde_json::Value>,
    start_error: Option<String>,
}

/// A writer that delegates a review, awaits it, then writes, publishes and finishes.
fn delegating_model() -> Arc<FakeModel> {
    by_agent(vec![
        (
            "writer",
            publish_after(
                vec![
                    turn(vec![write("d", "output/main.md", "Draft.")]),
                    turn(vec![delegate("d1", "critic", "Review output/main.md.")]),
                    turn(vec![call("a", "agent_await", json!({}))]),
                ],
                "Final scene.",
            ),
        ),
        (
            "critic",
            vec![
                turn(vec![write("n", "scratch/notes.md", "Fine.")]),
                task_return("r", "The draft holds together."),
            ],
        ),
    ])
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scenario {
    /// write, commit, finish
    Writer,
    /// with a delegated reviewer the writer awaits
    Delegating,
}

async fn run_with(scenario: Scenario, plan: Option<FaultPlan>) -> (Ending, u64) {
    let h = match scenario {
        Scenario::Writer => faulty_harness(by_turn(happy_turns())),
        Scenario::Delegating => {
            let h = faulty_harness(delegating_model());
            h.inner.put_profile(delegator("writer"));
            h.inner.put_profile(reviewer("critic"));
            h
        }
    };
    let profile = match scenario {
        Scenario::Writer => None,
        Scenario::Delegating => Some("writer"),
    };
    h.faulty.set_plan(plan);
    let ending = tokio::time::timeout(Duration::from_secs(3600), async {
        let started = h.service.start_run(request(profile)).await;
        let (status, start_error) = match started {
            Ok(run) => {
                // A follower (as the CLI is) sees the stream end even when the disk kept the
                // terminal event from the journal.
                let mut stream = h.service.subscribe(run.id.clone(), 0, None);
                while stream.next().await.unwrap().is_some() {}
                (
                    Some(h.service.wait_for_run(&run.id).await.unwrap().status),
                    None,
                )
            }
            Err(error) => (None, Some(format!("{}: {error}", error.code()))),
        };
        let stored = tt_ports::AgentRunRepository::list_runs(
            h.inner.as_ref(),
            tt_ports::RunListPage {
                offset: 0,
                limit: 10,
            },
        )
        .await
        .unwrap()
        .into_iter()
        .next();
        let failure = stored.as_ref().and_then(|run| {
            h.inner
                .events(&run.id)
                .into_iter()
                .find_map(|event| {
                    matches!(
                        event.event_type.as_str(),
                        "run_failed" | "run_partial_success"
                    )
                    .then_some(event.payload)
                })
                .or_else(|| h.service.unrecorded_failure(&run.id))
        });
        Ending {
            status,
            stored_status: stored.map(|run| run.status),
            failure,
            start_error,
        }
    })
    .await
    .expect("the run did not end within an hour of paused time");
    (ending, h.faulty.writes())
}

#[tokio::test(start_paused = true)]
async fn every_failing_write_ends_the_run_with_storage_io() {
    every_failing_write(Scenario::Writer, &DiskFault::ALL).await;
}

#[tokio::test(start_paused = true)]
async fn every_failing_write_ends_a_delegating_run_and_nothing_waits_on_a_dead_worker() {
    // The four faults take the same paths (the writer test covers each); one keeps this short.
    every_failing_write(Scenario::Delegating, &[DiskFault::NoSpace]).await;
}

async fn every_failing_write(scenario: Scenario, faults: &[DiskFault]) {
    let (clean, writes) = run_with(scenario, None).await;
    assert_eq!(clean.status, Some(AgentRunStatus::Completed));
    assert!(writes > 20, "{writes} writes");
    let mut explained = 0;
    for &fault in faults {
        for at_write in 1..=writes {
            for sticky in [false, true] {
                let plan = FaultPlan {
                    at_write,
                    sticky,
                    fault,
                };
                let (ending, _) = run_with(scenario, Some(plan)).await;
                let context = format!("{plan:?}: {ending:?}");
                if let Some(error) = &ending.start_error {
                    assert!(error.starts_with("agent.storage_io"), "{context}");
                    assert!(error.contains(fault.os_message()), "{context}");
                }
                // The host always learns a terminal status.
                if let Some(status) = ending.status {
                    assert!(status.is_terminal(), "{context}");
                }
                if sticky {
                    // The disk stays full: the reason may only be known in memory, but it is.
                    if let Some(status) = ending.status
                        && status != AgentRunStatus::Completed
                        && status != AgentRunStatus::Cancelled
                    {
                        let failure = ending.failure.as_ref().expect(&context);
                        assert_eq!(failure["code"], "agent.storage_io", "{context}");
                    }
                    continue;
                }
                // A single failure: the disk works again, so the record says how it ended.
                if let Some(stored) = ending.stored_status {
                    assert!(stored.is_terminal(), "{context}");
                    if stored != AgentRunStatus::Completed {
                        let failure = ending.failure.as_ref().expect(&context);
                        assert_eq!(failure["code"], "agent.storage_io", "{context}");
                        let technical = failure["technicalMessage"].as_str().unwrap();
                        assert!(technical.contains(fault.os_message()), "{context}");
                        assert!(
                            technical.contains("runs/") || technical.contains("persistent-states/"),
                            "{context}"
                        );
                        explained += 1;
                    }
                }
            }
        }
    }
    // Most single failures end the run with a reason (some hit writes whose failure a run
    // survives, such as a delegated agent's, or the very last ones).
    let cases = writes * faults.len() as u64;
    assert!(explained * 2 > cases, "{explained} of {cases} explained");
}

/// The journal refuses the run's `run_failed` (the disk is full for that one append): the
/// end is written to the run record instead, and a new service over the same store (a later
/// process) reads it back from there: `check_run`, the timeline's `damage`, the record itself.
#[tokio::test(start_paused = true)]
async fn an_end_the_journal_refused_is_kept_on_the_run_record_for_the_next_reader() {
    let failing = || {
        FakeModel::sequence(vec![Err(tt_ports::ModelError::Other(
            "the model server broke".to_owned(),
        ))])
    };
    // A clean failing run: its last write is the `run_failed` append.
    let clean = faulty_harness(failing());
    let run = clean.service.start_run(request(None)).await.unwrap();
    let ended = clean.service.wait_for_run(&run.id).await.unwrap();
    assert_eq!(ended.status, AgentRunStatus::Failed);
    assert!(ended.unrecorded_end.is_none());
    let damage = clean.service.check_run(&run.id).await.unwrap();
    assert!(damage.findings.is_empty(), "{damage:?}");
    let last_write = clean.faulty.writes();

    let h = faulty_harness(failing());
    h.faulty.set_plan(Some(FaultPlan {
        at_write: last_write,
        sticky: false,
        fault: DiskFault::NoSpace,
    }));
    let run = h.service.start_run(request(None)).await.unwrap();
    h.service.wait_for_run(&run.id).await.unwrap();
    assert!(
        !h.inner
            .events(&run.id)
            .iter()
            .any(|event| event.event_type == "run_failed")
    );
    // A later process: a new service over the same store, nothing in memory.
    let services = h.service.services().clone();
    let later = AgentRunService::new(services);
    let stored = later.get_run(&run.id).await.unwrap();
    assert_eq!(stored.status, AgentRunStatus::Failed);
    let end = stored.unrecorded_end.expect("the end is on the run record");
    assert_eq!(end.event_type, "run_failed");
    assert!(
        end.unrecorded_because.contains("No space left on device"),
        "{end:?}"
    );
    let damage = later.check_run(&run.id).await.unwrap();
    let codes: Vec<&str> = damage.findings.iter().map(|f| f.code.as_str()).collect();
    assert_eq!(codes, ["agent.run_end_unrecorded"], "{damage:?}");
    assert!(
        damage.findings[0]
            .message
            .contains("the model server broke"),
        "{damage:?}"
    );
    assert_eq!(damage.unrecorded_end.as_ref(), Some(&end));
    let projection = later.timeline_projection(&run.id).await.unwrap();
    assert_eq!(projection.damage, damage.findings);
}

/// A whole run, completed or failed, has nothing to report.
#[tokio::test(start_paused = true)]
async fn a_whole_run_has_no_damage() {
    let h = faulty_harness(by_turn(happy_turns()));
    let run = h.service.start_run(request(None)).await.unwrap();
    assert_eq!(
        h.service.wait_for_run(&run.id).await.unwrap().status,
        AgentRunStatus::Completed
    );
    let damage = h.service.check_run(&run.id).await.unwrap();
    assert!(damage.findings.is_empty(), "{damage:?}");
    assert!(damage.event_count > 10 && damage.last_seq == damage.event_count);
    assert!(
        h.service
            .timeline_projection(&run.id)
            .await
            .unwrap()
            .damage
            .is_empty()
    );
}
