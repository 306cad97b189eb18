//! Two hosts on one PostgreSQL database (issue #24): host A starts a 64-agent fan-out and dies
//! mid-run (its tokio runtime, with every task, connection and heartbeat of it, is shut down
//! at once); a follower on a third store streams the journal throughout; once A's lease has
//! expired (ended by hand on the server, so nothing waits 15 s), host B opens the store, finds
//! the run `interrupted`, resumes it and completes it. No model call A got an answer to is made
//! again, and the follower's stream ends with the run's end with no gap and no duplicate seq.
//!
//! The model is the fan-out benchmark's (shared with `tt-bench`); A's model stops answering
//! after a fixed number of calls, and A is killed only once every answer it gave is stored, so
//! the split between A and B is the same on every run.
//!
//! The same with real processes and SIGKILL is `crates/tt-cli/tests/multi_host.rs`; this one
//! covers the takeover after a lease expired (a host that stalled), that one the owner lock of
//! a host that was killed.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tt_adapter_storage_postgres::PostgresStore;
use tt_adapter_storage_postgres::cluster::TestCluster;
use tt_domain::ids::RunId;
use tt_domain::model::{AgentModelRequest, AgentModelResponse};
use tt_ports::{AgentRunRepository, CancellationToken, EventPage, ModelError, ModelProvider};
use tt_runtime::{
    AgentProfileDefinition, AgentRunStatus, AgentRuntime, AgentRuntimeBuilder, CommitBridgeChoice,
    StartRunRequest,
};

// The benchmark's scripted model, compiled in here as well (tt-bench is a binary crate).
#[path = "../../crates/tt-bench/src/model.rs"]
#[allow(dead_code, unreachable_pub)]
// the benchmark uses parts this test does not; its API is the bench crate's
pub(crate) mod fanout_model;

use fanout_model::{CHILD_TURNS, FanoutModel, ROOT_TURNS, Turn, decide};

pub(crate) const CHILDREN: u32 = 64;
/// Host A answers this many model calls, then none: the root's first turn and part of the
/// children's work.
const ANSWERED_BY_A: usize = 120;

/// The fan-out model, recording which turn (agent and round) it answered.
struct RecordingModel {
    inner: FanoutModel,
    answered: Arc<Mutex<Vec<String>>>,
    /// Calls beyond this never return (the host is "frozen" before it dies).
    limit: Option<usize>,
    frozen: Arc<AtomicBool>,
    on_freeze: Arc<Notify>,
}

fn turn_key(request: &AgentModelRequest) -> String {
    match decide(request, CHILDREN) {
        Ok(Turn::WriteNote { tag, round }) => format!("{}/{round}", tag.name()),
        Ok(Turn::Return { tag }) => format!("{}/{CHILD_TURNS}", tag.name()),
        Ok(_) | Err(_) => format!("root/{}", request.round),
    }
}

#[async_trait]
impl ModelProvider for RecordingModel {
    fn name(&self) -> &str {
        "recording-fanout"
    }

    async fn complete(
        &self,
        request: &AgentModelRequest,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        let key = turn_key(request);
        let answers = {
            let mut answered = self.answered.lock().unwrap();
            let answers = self.limit.is_none_or(|limit| answered.len() < limit);
            if answers {
                answered.push(key);
            }
            answers
        };
        if !answers {
            self.frozen.store(true, Ordering::SeqCst);
            self.on_freeze.notify_one();
            return std::future::pending().await;
        }
        self.inner.complete(request, cancel).await
    }
}

pub(crate) fn profiles() -> Vec<AgentProfileDefinition> {
    let mut root: Value = serde_json::from_str(include_str!(
        "../../crates/tt-bench/profiles/fanout-root.json"
    ))
    .unwrap();
    root["delegation"]["maxInvocationsPerRun"] = json!(CHILDREN);
    root["delegation"]["maxConcurrentInvocations"] = json!(CHILDREN);
    root["tools"]["maxCallsPerRun"] = json!(CHILDREN + 16);
    let child: Value = serde_json::from_str(include_str!(
        "../../crates/tt-bench/profiles/fanout-child.json"
    ))
    .unwrap();
    [root, child]
        .into_iter()
        .map(|profile| serde_json::from_value(profile).unwrap())
        .collect()
}

pub(crate) fn start_request() -> StartRunRequest {
    let mut request = crate::support::start_request();
    request.profile_id = Some(fanout_model::ROOT_PROFILE.to_owned());
    request.user_request = Some(format!(
        "Investigate {CHILDREN} topics in parallel and collect short notes on each."
    ));
    request
}

async fn host_runtime(url: &str, dir: &std::path::Path, model: RecordingModel) -> AgentRuntime {
    let store = tt_runtime::open_store_url(url).await.unwrap();
    AgentRuntimeBuilder::new()
        .data_dir(dir)
        .store(store)
        .provider(Arc::new(model))
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap()
}

/// Reads the run's journal from the start until the run has completed and every event up to
/// its last seq was read; returns the seqs and event types in the order read.
async fn follow(store: Arc<PostgresStore>, run_id: RunId) -> Vec<(u64, String)> {
    let mut seen: Vec<(u64, String)> = Vec::new();
    loop {
        let after = seen.last().map_or(0, |(seq, _)| *seq);
        let page = EventPage {
            after_seq: Some(after),
            limit: Some(500),
            ..EventPage::default()
        };
        let events = tt_ports::RunJournal::read(&*store, &run_id, &page)
            .await
            .unwrap();
        if events.is_empty() {
            let run = store.load_run(&run_id).await.unwrap();
            let last = tt_ports::RunJournal::last_seq(&*store, &run_id)
                .await
                .unwrap();
            if run.status == AgentRunStatus::Completed && after == last {
                return seen;
            }
            tt_ports::RunJournal::wait_for_append(
                &*store,
                &run_id,
                after,
                Duration::from_millis(500),
            )
            .await;
            continue;
        }
        seen.extend(
            events
                .into_iter()
                .map(|e| (e.seq, e.event_type.to_string())),
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_host_resumes_a_64_agent_fan_out_after_the_first_dies() {
    let cluster = tokio::task::block_in_place(|| TestCluster::start(false)).unwrap();
    let url = cluster.create_database("tt_multi_host").await.unwrap();
    let dir_a = tempfile::tempdir().unwrap();
    let dir_b = tempfile::tempdir().unwrap();

    // Host A, on a tokio runtime of its own so that it can die all at once.
    let host_a = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let answered_a = Arc::new(Mutex::new(Vec::new()));
    let frozen_a = Arc::new(AtomicBool::new(false));
    let on_freeze = Arc::new(Notify::new());
    let model_a = RecordingModel {
        inner: FanoutModel::new(CHILDREN),
        answered: Arc::clone(&answered_a),
        limit: Some(ANSWERED_BY_A),
        frozen: Arc::clone(&frozen_a),
        on_freeze: Arc::clone(&on_freeze),
    };
    let (started, run_id) = tokio::sync::oneshot::channel();
    {
        let url = url.clone();
        let dir = dir_a.path().to_path_buf();
        host_a.spawn(async move {
            let runtime = host_runtime(&url, &dir, model_a).await;
            for profile in profiles() {
                runtime.save_profile(profile).await.unwrap();
            }
            let run = runtime.start_run(start_request()).await.unwrap();
            started.send(run.id.to_string()).unwrap();
            // The host lives until its runtime is shut down.
            std::future::pending::<()>().await;
            drop(runtime);
        });
    }
    let run_id = RunId::from_raw(run_id.await.unwrap());

    // The follower streams the journal from the first event to the run's end.
    let follower_store = Arc::new(PostgresStore::open(&url).await.unwrap());
    let follower = tokio::spawn(follow(Arc::clone(&follower_store), run_id.clone()));

    // A freezes after its answers; it dies once every answer it gave is stored.
    tokio::time::timeout(Duration::from_secs(120), async {
        while !frozen_a.load(Ordering::SeqCst) {
            on_freeze.notified().await;
        }
        loop {
            let stored = stored_responses(&follower_store, &run_id).await;
            if stored == answered_a.lock().unwrap().len() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("host A froze with its answers stored");
    host_a.shutdown_background();
    let answered_by_a: BTreeSet<String> = answered_a.lock().unwrap().iter().cloned().collect();
    assert_eq!(answered_by_a.len(), ANSWERED_BY_A);
    // A died mid-run: its record never ended. (A reader that finds A's sessions gone reads the
    // run `interrupted`; this bare store records nothing, docs/storage.md.)
    let status = follower_store.load_run(&run_id).await.unwrap().status;
    assert!(
        !status.is_terminal() || status == AgentRunStatus::Interrupted,
        "{status:?}"
    );

    // A's lease runs out; host B opens the store and finds the run interrupted.
    TestCluster::expire_lease(&url, run_id.as_str())
        .await
        .unwrap();
    let answered_b = Arc::new(Mutex::new(Vec::new()));
    let model_b = RecordingModel {
        inner: FanoutModel::new(CHILDREN),
        answered: Arc::clone(&answered_b),
        limit: None,
        frozen: Arc::new(AtomicBool::new(false)),
        on_freeze: Arc::new(Notify::new()),
    };
    let host_b = host_runtime(&url, dir_b.path(), model_b).await;
    assert_eq!(
        follower_store.load_run(&run_id).await.unwrap().status,
        AgentRunStatus::Interrupted
    );
    host_b.resume_run(run_id.as_str()).await.unwrap();
    let done = tokio::time::timeout(
        Duration::from_secs(300),
        host_b.wait_for_run(run_id.as_str()),
    )
    .await
    .expect("host B finished the run")
    .unwrap();
    assert_eq!(done.status, AgentRunStatus::Completed);

    // Every turn was answered once, by A or by B.
    let answered_by_b: Vec<String> = answered_b.lock().unwrap().clone();
    let repeated: Vec<&String> = answered_by_b
        .iter()
        .filter(|key| answered_by_a.contains(*key))
        .collect();
    assert!(repeated.is_empty(), "B asked again: {repeated:?}");
    let distinct_b: BTreeSet<&String> = answered_by_b.iter().collect();
    assert_eq!(
        distinct_b.len(),
        answered_by_b.len(),
        "B asked a turn twice"
    );
    assert_eq!(
        answered_by_a.len() + answered_by_b.len(),
        (ROOT_TURNS + CHILDREN * CHILD_TURNS) as usize
    );

    // The follower's stream: gapless, no duplicate, and it ended with the run's end.
    let stream = tokio::time::timeout(Duration::from_secs(60), follower)
        .await
        .expect("the follower ended with the run")
        .unwrap();
    let seqs: Vec<u64> = stream.iter().map(|(seq, _)| *seq).collect();
    let expected: Vec<u64> = (1..=seqs.len() as u64).collect();
    assert_eq!(
        seqs, expected,
        "the follower's stream has a gap or a duplicate"
    );
    let types: Vec<&str> = stream.iter().map(|(_, kind)| kind.as_str()).collect();
    assert!(types.contains(&"run_interrupted"));
    assert!(types.contains(&"run_resumed"));
    drop(cluster);
}

async fn stored_responses(store: &PostgresStore, run_id: &RunId) -> usize {
    let mut count = 0;
    let mut after = 0;
    loop {
        let page = EventPage {
            after_seq: Some(after),
            limit: Some(500),
            ..EventPage::default()
        };
        let events = tt_ports::RunJournal::read(store, run_id, &page)
            .await
            .unwrap();
        let Some(last) = events.last() else {
            return count;
        };
        after = last.seq;
        count += events
            .iter()
            .filter(|e| e.event_type == "model_response_stored")
            .count();
    }
}
