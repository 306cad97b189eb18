//! A PostgreSQL server restarted under a 64-agent fan-out (issue #41): the server is stopped
//! with `pg_ctl stop -m immediate` (every session cut off, as in a crash) while the run works,
//! and started again on the same port and data dir a second later. The store reconnects and
//! retries what was in flight, so the run completes without a resume, its journal gapless and
//! every turn answered once (docs/storage.md, "A server restart").
//!
//! The model answers the first `STOP_AT` calls, then holds every later call until the server
//! is down, so the run is mid-flight for the whole outage, with answers arriving while the
//! server cannot be reached.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::{Notify, watch};
use tt_adapter_storage_postgres::PostgresStore;
use tt_adapter_storage_postgres::cluster::TestCluster;
use tt_domain::ids::RunId;
use tt_domain::model::{AgentModelRequest, AgentModelResponse};
use tt_ports::{CancellationToken, EventPage, ModelError, ModelProvider};
use tt_runtime::{AgentRunStatus, AgentRuntimeBuilder, CommitBridgeChoice};

use crate::multi_host::fanout_model::{CHILD_TURNS, FanoutModel, ROOT_TURNS, Turn, decide};
use crate::multi_host::{CHILDREN, profiles, start_request};

/// The server goes down after this many answers (of 323).
const STOP_AT: usize = 80;

struct HoldingModel {
    inner: FanoutModel,
    calls: AtomicUsize,
    answered: Mutex<Vec<String>>,
    reached: Arc<Notify>,
    /// `true` once the server is down: held calls go on.
    down: watch::Receiver<bool>,
}

fn turn_key(request: &AgentModelRequest) -> String {
    match decide(request, CHILDREN) {
        Ok(Turn::WriteNote { tag, round }) => format!("{}/{round}", tag.name()),
        Ok(Turn::Return { tag }) => format!("{}/{CHILD_TURNS}", tag.name()),
        Ok(_) | Err(_) => format!("root/{}", request.round),
    }
}

#[async_trait]
impl ModelProvider for HoldingModel {
    fn name(&self) -> &str {
        "holding-fanout"
    }

    async fn complete(
        &self,
        request: &AgentModelRequest,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        if call == STOP_AT {
            self.reached.notify_one();
        }
        if call >= STOP_AT {
            let mut down = self.down.clone();
            let _ = down.wait_for(|down| *down).await;
        }
        self.answered.lock().unwrap().push(turn_key(request));
        self.inner.complete(request, cancel).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fan_out_completes_across_a_server_restart_without_a_resume() {
    // Durable commits (`fsync`, `synchronous_commit` on): with them off, a crash loses the
    // commits of its last moments, which no client can ride out (docs/storage.md, Durability).
    let cluster = tokio::task::block_in_place(|| TestCluster::start(true)).unwrap();
    let url = cluster.create_database("tt_restart").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let reached = Arc::new(Notify::new());
    let (went_down, down) = watch::channel(false);
    let model = Arc::new(HoldingModel {
        inner: FanoutModel::new(CHILDREN),
        calls: AtomicUsize::new(0),
        answered: Mutex::new(Vec::new()),
        reached: Arc::clone(&reached),
        down,
    });
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .store(tt_runtime::open_store_url(&url).await.unwrap())
        .provider(model.clone())
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap();
    for profile in profiles() {
        runtime.save_profile(profile).await.unwrap();
    }
    let run_id = runtime
        .start_run(start_request())
        .await
        .unwrap()
        .id
        .to_string();

    reached.notified().await;
    tokio::task::block_in_place(|| cluster.stop_immediately()).unwrap();
    went_down.send(true).unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    tokio::task::block_in_place(|| cluster.start_again()).unwrap();

    let done = tokio::time::timeout(Duration::from_secs(300), runtime.wait_for_run(&run_id))
        .await
        .expect("the run ended")
        .unwrap();
    assert_eq!(done.status, AgentRunStatus::Completed, "{done:?}");

    // Every turn answered once: nothing was asked again.
    let answered = model.answered.lock().unwrap().clone();
    let distinct: BTreeSet<&String> = answered.iter().collect();
    assert_eq!(distinct.len(), answered.len(), "a turn was asked twice");
    assert_eq!(
        answered.len(),
        (ROOT_TURNS + CHILDREN * CHILD_TURNS) as usize
    );

    // The journal, read by another store: gapless, each event once, never interrupted.
    let reader = PostgresStore::open(&url).await.unwrap();
    let run_id = RunId::from_raw(run_id);
    let mut events = Vec::new();
    loop {
        let page = EventPage {
            after_seq: Some(events.last().map_or(0, |(seq, _, _)| *seq)),
            limit: Some(500),
            ..EventPage::default()
        };
        let read = tt_ports::RunJournal::read(&reader, &run_id, &page)
            .await
            .unwrap();
        if read.is_empty() {
            break;
        }
        events.extend(
            read.into_iter()
                .map(|e| (e.seq, e.event_type.to_string(), e.id.to_string())),
        );
    }
    let seqs: Vec<u64> = events.iter().map(|(seq, _, _)| *seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    let ids: BTreeSet<&String> = events.iter().map(|(_, _, id)| id).collect();
    assert_eq!(ids.len(), events.len(), "an event was journaled twice");
    let types: BTreeSet<&str> = events.iter().map(|(_, kind, _)| kind.as_str()).collect();
    assert!(!types.contains("run_interrupted"), "{types:?}");
    assert!(!types.contains("run_resumed"), "{types:?}");
    assert_eq!(events.last().unwrap().1, "run_completed");
    drop(cluster);
}
