//! Branches at pseudo-random seqs (fixed seed) of the resume tests' fan-out (a lead delegates
//! 16 notes, awaits them, publishes a summary): of a finished run, and of a run whose process
//! was killed while the lead waited. Every branch must complete with a valid journal (gapless,
//! documented, typed), each of the 16 results delivered once, and the workspace and published
//! text an uninterrupted run leaves; the source's files must be byte for byte as before. The
//! writers' room (skills, an assembled prompt, a nested delegation, a handoff) is branched the
//! same way on its own script. `TT_FORK_TRIALS=N` (`cargo xtask soak fork`) runs N branches per
//! source.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use tt_runtime::{AgentRunStatus, AgentRuntime, ForkChanges, ForkPoint, ForkRunRequest};

use crate::delegation::all_events;
use crate::fork::{all_files, assert_gapless};
use crate::resume::{
    Host, N, Point, deliveries, install, request_for, runtime, stopped_first_process, workspace,
};

/// A small linear congruential generator: the same seqs in every run of the test.
struct Seeded(u64);

impl Seeded {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % bound
    }
}

/// Branches `source_id` at `trials` pseudo-random seqs (and at its last commit) and checks each
/// branch against `expected` (the workspace of an uninterrupted run) and the source's files.
async fn branch_at_random_seqs(
    runtime: &AgentRuntime,
    host: &Host,
    dir: &std::path::Path,
    source_id: &str,
    expected: &std::collections::BTreeMap<String, String>,
    seed: u64,
    trials: usize,
) {
    // `TT_FORK_TRIALS=N` runs N trials instead (a longer soak).
    let trials = std::env::var("TT_FORK_TRIALS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(trials);
    let source_files = all_files(dir, source_id);
    let last = all_events(runtime, source_id).await.len() as u64;
    let mut random = Seeded(seed);
    let mut points: Vec<ForkPoint> = (0..trials)
        .map(|_| ForkPoint::Seq {
            seq: 1 + random.below(last),
        })
        .collect();
    points.push(ForkPoint::Seq { seq: last });
    let mut branched = 0;
    for at in points {
        let request = ForkRunRequest {
            at: at.clone(),
            changes: ForkChanges::default(),
        };
        let branch = match runtime.fork_run(source_id, request).await {
            Ok(branch) => branch,
            // Only a point before the lead started is refused.
            Err(error) => {
                assert_eq!(error.code, "agent.fork_point_invalid", "{at:?}: {error:?}");
                continue;
            }
        };
        branched += 1;
        let branch_id = branch.id.to_string();
        let ended = runtime.wait_for_run(&branch_id).await.unwrap();
        assert_eq!(ended.status, AgentRunStatus::Completed, "{at:?}");
        let events = all_events(runtime, &branch_id).await;
        assert_gapless(&events);
        let delivered = deliveries(&events);
        assert_eq!(delivered.len(), N, "{at:?}");
        assert!(delivered.values().all(|count| *count == 1), "{at:?}");
        if &workspace(dir, &branch_id) != expected {
            // What surrounds the cut, to see which step it split.
            let source_events = all_events(runtime, source_id).await;
            let cut = usize::try_from(ended.forked_from.as_ref().unwrap().seq).unwrap();
            let around = cut.saturating_sub(30)..(cut + 10).min(source_events.len());
            for event in source_events[around].iter().chain(&events[cut..]) {
                eprintln!("{} {} {}", event.seq, event.event_type, event.payload);
            }
        }
        assert_eq!(&workspace(dir, &branch_id), expected, "{at:?}");
        let published = host.offered.lock().unwrap().last().unwrap().1.clone();
        assert_eq!(published, "Sixteen notes, 16 of them.\n", "{at:?}");
    }
    assert!(branched >= trials / 2, "only {branched} branches");
    assert_eq!(all_files(dir, source_id), source_files);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn branches_at_random_seqs_of_a_finished_fan_out_complete_and_leave_the_source_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let host = Arc::new(Host::default());
    let calls = Arc::new(AtomicU64::new(0));
    let runtime = runtime(dir.path(), None, &calls, &Arc::default(), &host);
    install(&runtime).await;
    let run = runtime.start_run(request_for("lead")).await.unwrap();
    let run_id = run.id.to_string();
    let done = runtime.wait_for_run(&run_id).await.unwrap();
    assert_eq!(done.status, AgentRunStatus::Completed);
    let expected = workspace(dir.path(), &run_id);
    branch_at_random_seqs(&runtime, &host, dir.path(), &run_id, &expected, 0x5eed, 6).await;
}

#[test]
fn branches_at_random_seqs_of_an_interrupted_fan_out_complete_and_leave_the_source_as_it_was() {
    // The expected end: an uninterrupted run's workspace.
    let expected = {
        let dir = tempfile::tempdir().unwrap();
        let host = Arc::new(Host::default());
        tokio_runtime().block_on(async {
            let runtime = runtime(dir.path(), None, &Arc::default(), &Arc::default(), &host);
            install(&runtime).await;
            let run = runtime.start_run(request_for("lead")).await.unwrap();
            runtime.wait_for_run(run.id.as_str()).await.unwrap();
            workspace(dir.path(), run.id.as_str())
        })
    };
    let dir = tempfile::tempdir().unwrap();
    let (mut child, run_id) = stopped_first_process(dir.path(), Point::WhileRootAwaits);
    child.kill().unwrap();
    child.wait().unwrap();
    let host = Arc::new(Host::default());
    tokio_runtime().block_on(async {
        let runtime = runtime(dir.path(), None, &Arc::default(), &Arc::default(), &host);
        let source = runtime.get_run(&run_id).await.unwrap();
        assert_eq!(source.status, AgentRunStatus::Interrupted);
        branch_at_random_seqs(&runtime, &host, dir.path(), &run_id, &expected, 0xf0e1, 5).await;
        // The source itself is still interrupted, and still resumable.
        let source = runtime.get_run(&run_id).await.unwrap();
        assert_eq!(source.status, AgentRunStatus::Interrupted);
    });
}

fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The writers' room (skills, a host-assembled prompt, a nested delegation, a handoff) branched
/// at pseudo-random seqs on its own script: each branch completes and publishes the source's
/// text again, as a new message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn branches_at_random_seqs_of_the_writers_room_end_as_the_source_did() {
    use crate::delegation::{WRITERS_ROOM_SCRIPT, install_writers_room};
    let dir = tempfile::tempdir().unwrap();
    let runtime = tt_runtime::AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(Arc::new(
            tt_runtime::ScriptedProvider::from_json_str(WRITERS_ROOM_SCRIPT).unwrap(),
        ))
        .commit_bridge(tt_runtime::CommitBridgeChoice::Transcript)
        .prompt_broker(tt_runtime::PromptBrokerChoice::Templates)
        .build()
        .unwrap();
    install_writers_room(&runtime, dir.path()).await;
    let mut request = crate::support::start_request();
    request.profile_id = Some("writer".into());
    let source = runtime.start_run(request).await.unwrap();
    let source_id = source.id.to_string();
    let source = runtime.wait_for_run(&source_id).await.unwrap();
    assert_eq!(source.status, AgentRunStatus::Completed);
    let source_files = all_files(dir.path(), &source_id);
    let workspace_id = source.workspace_id.to_string();
    let published = async |runtime: &AgentRuntime| {
        runtime
            .transcript(&workspace_id)
            .await
            .unwrap()
            .into_iter()
            .map(|entry| entry.content)
            .collect::<Vec<_>>()
    };
    let text = published(&runtime).await[0].clone();
    let last = all_events(&runtime, &source_id).await.len() as u64;
    let trials = std::env::var("TT_FORK_TRIALS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(6);
    let mut random = Seeded(0x00c0_ffee);
    for _ in 0..trials {
        let at = ForkPoint::Seq {
            seq: 1 + random.below(last),
        };
        let request = ForkRunRequest {
            at: at.clone(),
            changes: ForkChanges::default(),
        };
        let branch = match runtime.fork_run(&source_id, request).await {
            Ok(branch) => branch,
            Err(error) => {
                assert_eq!(error.code, "agent.fork_point_invalid", "{at:?}: {error:?}");
                continue;
            }
        };
        let ended = runtime.wait_for_run(branch.id.as_str()).await.unwrap();
        assert_eq!(ended.status, AgentRunStatus::Completed, "{at:?}");
        assert_gapless(&all_events(&runtime, branch.id.as_str()).await);
        assert_eq!(published(&runtime).await.last(), Some(&text), "{at:?}");
    }
    assert_eq!(all_files(dir.path(), &source_id), source_files);
}
