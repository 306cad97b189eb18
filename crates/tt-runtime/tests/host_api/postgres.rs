//! PostgreSQL for embedders (docs/host-api.md): two runtimes on one database, each with its own
//! store, as two processes would be. A runtime that waits on or follows a run whose owner dies
//! sees it `interrupted` (stored record and journal's end agreeing), and a runtime that reads
//! another's live run reads the status its journal says; a connection one host stores is
//! listed by another, with no data dir holding it. The cluster is a throwaway one the
//! tests start (`TestCluster`); every test gets its own database.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tempfile::TempDir;
use tt_adapter_storage_postgres::cluster::TestCluster;
use tt_runtime::{
    AgentRunEvent, AgentRunStatus, AgentRuntime, AgentRuntimeBuilder, CommitBridgeChoice,
    ModelProvider, StoreOptions,
};
use tt_testkit::fakes::ShapedModel;

use super::{committing_writer, hanging_model, journal, request, start, wait_for_event};

/// Turns a hang into a failure; never reached when the behaviour holds (no timing is asserted).
const HANG_GUARD: Duration = Duration::from_secs(120);

fn cluster() -> &'static TestCluster {
    static CLUSTER: OnceLock<TestCluster> = OnceLock::new();
    CLUSTER.get_or_init(|| {
        tokio::task::block_in_place(|| TestCluster::start(false)).expect("start a PostgreSQL")
    })
}

async fn fresh_database() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let name = format!("tt_embed_{}", NEXT.fetch_add(1, Ordering::Relaxed));
    cluster().create_database(&name).await.unwrap()
}

/// A runtime on the database at `url` holding its runs for an hour, and the id of its run,
/// whose model call has started and never answers.
async fn owner_waiting_on_the_model(url: &str, dir: &std::path::Path) -> (AgentRuntime, String) {
    let lease = Some(Duration::from_secs(3_600));
    let owner = pg_runtime(url, dir, hanging_model(), lease).await;
    let run_id = start(&owner).await;
    wait_for_event(&owner, &run_id, "model_call_attempt_started").await;
    (owner, run_id)
}

/// Another host of the database at `url`, with a data dir of its own and a model that never
/// answers: one that only reads, waits on and follows what other hosts run.
async fn watching_host(url: &str) -> (TempDir, Arc<AgentRuntime>) {
    let dir = TempDir::new().unwrap();
    let runtime = pg_runtime(url, dir.path(), hanging_model(), None).await;
    (dir, Arc::new(runtime))
}

/// A runtime on the database at `url`, as an embedder makes one (`open_store_url_with`).
async fn pg_runtime(
    url: &str,
    dir: &std::path::Path,
    provider: Arc<dyn ModelProvider>,
    lease: Option<Duration>,
) -> AgentRuntime {
    open_on_postgres(url, dir, provider, lease).await.unwrap()
}

/// The docs' recipe (docs/host-api.md, "PostgreSQL for embedders").
async fn open_on_postgres(
    url: &str,
    data_dir: &std::path::Path,
    model: Arc<dyn ModelProvider>,
    lease: Option<Duration>,
) -> tt_runtime::HostResult<AgentRuntime> {
    // ANCHOR: postgres_store
    // `url`: postgres://user:pass@host:5432/db (tt-agent reads it from TT_STORE_URL).
    // `lease`: how long a stalled owner keeps its runs (None: the store's 15 s).
    let store = tt_runtime::open_store_url_with(url, &StoreOptions { lease }).await?;
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(data_dir) // nothing is kept here: the store keeps it all
        .store(store) // runs, journal, workspace, profiles, skills, transcripts, MCP servers,
        // connections, preset templates
        .provider(model)
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()?;
    // ANCHOR_END: postgres_store
    Ok(runtime)
}

/// Waits on and follows, from `viewer`, a run whose owner is gone or going: both end with the
/// run `interrupted`, and the stored record and the journal's end agree.
async fn assert_seen_interrupted(
    viewer: &Arc<AgentRuntime>,
    run_id: &str,
    waiting: tokio::task::JoinHandle<tt_runtime::HostResult<tt_runtime::AgentRun>>,
    following: tokio::task::JoinHandle<Vec<AgentRunEvent>>,
) {
    let followed = both_end_interrupted(waiting, following, "owner_exited").await;
    // The stored record and the journal's end agree.
    assert_eq!(
        viewer.get_run(run_id).await.unwrap().status,
        AgentRunStatus::Interrupted
    );
    let journaled = journal(viewer, run_id).await;
    assert_eq!(journaled.last().unwrap().event_type, "run_interrupted");
    assert_eq!(journaled.len(), followed.len());
}

/// The waiter and the subscriber of [`wait_and_follow`] both end with the run `interrupted`
/// (`run_interrupted {reason}` last, every seq followed); what the subscriber read.
async fn both_end_interrupted(
    waiting: tokio::task::JoinHandle<tt_runtime::HostResult<tt_runtime::AgentRun>>,
    following: tokio::task::JoinHandle<Vec<AgentRunEvent>>,
    reason: &str,
) -> Vec<AgentRunEvent> {
    let waited = tokio::time::timeout(HANG_GUARD, waiting)
        .await
        .expect("the waiter returned")
        .unwrap()
        .unwrap();
    assert_eq!(waited.status, AgentRunStatus::Interrupted);
    let followed = tokio::time::timeout(HANG_GUARD, following)
        .await
        .expect("the subscriber ended")
        .unwrap();
    let last = followed.last().unwrap();
    assert_eq!(last.event_type, "run_interrupted");
    assert_eq!(last.payload["reason"], reason);
    let seqs: Vec<u64> = followed.iter().map(|event| event.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    followed
}

/// Starts waiting on and following `run_id` from `viewer`; returns once the subscriber has read
/// the run's first event (the wait has begun while the owner lives).
async fn wait_and_follow(
    viewer: &Arc<AgentRuntime>,
    run_id: &str,
) -> (
    tokio::task::JoinHandle<tt_runtime::HostResult<tt_runtime::AgentRun>>,
    tokio::task::JoinHandle<Vec<AgentRunEvent>>,
) {
    let waiting = tokio::spawn({
        let viewer = Arc::clone(viewer);
        let run_id = run_id.to_owned();
        async move { viewer.wait_for_run(&run_id).await }
    });
    let mut events = viewer.subscribe(run_id, 0, None);
    let first = events.next().await.unwrap().unwrap();
    assert_eq!(first.seq, 1);
    let following = tokio::spawn(async move {
        let mut seen = vec![first];
        while let Some(event) = events.next().await.unwrap() {
            seen.push(event);
        }
        seen
    });
    (waiting, following)
}

/// A runtime that starts a run on a model that never answers, on a tokio runtime of its own
/// (so that it can die all at once) with an hour's lease (its heartbeat does not renew it
/// during a test). Returns once the run waits on its model.
async fn owner_on_its_own_runtime(
    url: &str,
    dir: &std::path::Path,
) -> (tokio::runtime::Runtime, String) {
    let owner_host = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (started, run_id) = tokio::sync::oneshot::channel();
    let url = url.to_owned();
    let dir = dir.to_path_buf();
    owner_host.spawn(async move {
        let lease = Some(Duration::from_secs(3_600));
        let owner = pg_runtime(&url, &dir, hanging_model(), lease).await;
        let run = owner.start_run(request()).await.unwrap();
        let run_id = run.id.to_string();
        wait_for_event(&owner, &run_id, "model_call_attempt_started").await;
        started.send(run_id).unwrap();
        // The owner lives until its runtime is torn down; it never shuts down cleanly.
        std::future::pending::<()>().await;
        drop(owner);
    });
    (owner_host, run_id.await.unwrap())
}

/// The owner's process dies (its tokio runtime, with every connection of its store, is shut
/// down at once, as a crash or `kill -9` closes them) while another runtime waits on the run
/// and follows it: both see it `interrupted`, at their next read after the owner's session
/// ended, long before its lease (an hour here) would run out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_and_a_subscriber_see_the_run_of_an_owner_that_died_interrupted() {
    let url = fresh_database().await;
    let owner_dir = TempDir::new().unwrap();
    let (owner_host, run_id) = owner_on_its_own_runtime(&url, owner_dir.path()).await;
    let (_viewer_dir, viewer) = watching_host(&url).await;
    assert!(!viewer.get_run(&run_id).await.unwrap().status.is_terminal());
    let (waiting, following) = wait_and_follow(&viewer, &run_id).await;

    owner_host.shutdown_background();
    assert_seen_interrupted(&viewer, &run_id, waiting, following).await;
    assert!(viewer.shutdown().await.unwrap().is_empty());
}

/// The owner lives but lost its lease (it stalled past it: the lease is ended by hand on the
/// server here, and the owner, on a tokio runtime of its own, never runs again): a runtime
/// waiting on and following the run sees it `interrupted`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_and_a_subscriber_see_the_run_of_an_owner_that_lost_its_lease_interrupted() {
    let url = fresh_database().await;
    let owner_dir = TempDir::new().unwrap();
    let (owner_host, run_id) = owner_on_its_own_runtime(&url, owner_dir.path()).await;
    let (_viewer_dir, viewer) = watching_host(&url).await;
    let (waiting, following) = wait_and_follow(&viewer, &run_id).await;

    TestCluster::expire_lease(&url, &run_id).await.unwrap();
    assert_seen_interrupted(&viewer, &run_id, waiting, following).await;
    assert!(viewer.shutdown().await.unwrap().is_empty());
    owner_host.shutdown_background();
}

/// The status the journal's last `status_changed` states.
fn journaled_status(events: &[AgentRunEvent]) -> Option<AgentRunStatus> {
    events
        .iter()
        .rev()
        .find(|event| event.event_type == "status_changed")
        .map(|event| serde_json::from_value(event.payload["status"].clone()).unwrap())
}

/// A runtime reading a run another runtime writes reads the status its journal says, at every
/// model call of the run (while the model is held) and at its end; so does its run list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_in_another_runtime_reads_the_status_the_journal_says() {
    let url = fresh_database().await;
    let owner_dir = TempDir::new().unwrap();
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let model = Arc::new(ShapedModel::around(committing_writer()).gated(Arc::clone(&gate)));
    let owner = pg_runtime(&url, owner_dir.path(), model, None).await;
    let (_reader_dir, reader) = watching_host(&url).await;
    let run_id = owner.start_run(request()).await.unwrap().id.to_string();

    let mut events = reader.subscribe(&run_id, 0, None);
    let mut calls = 0;
    let mut seen = Vec::new();
    while let Some(event) = events.next().await.unwrap() {
        let is_call = event.event_type == "model_call_attempt_started";
        seen.push(event);
        if !is_call {
            continue;
        }
        calls += 1;
        // The model holds the call: the run is quiet.
        let journaled = journaled_status(&journal(&reader, &run_id).await).unwrap();
        let read = reader.get_run(&run_id).await.unwrap().status;
        let listed = reader
            .list_runs(tt_runtime::ListRunsRequest::default())
            .await
            .unwrap();
        assert_eq!(read, journaled, "model call {calls}");
        assert_eq!(listed[0].status, journaled, "model call {calls}");
        assert_eq!(read, AgentRunStatus::CallingModel);
        gate.add_permits(1);
    }
    assert_eq!(calls, 3);
    assert_eq!(seen.last().unwrap().event_type, "run_completed");
    assert_eq!(
        reader.get_run(&run_id).await.unwrap().status,
        AgentRunStatus::Completed
    );
    assert_eq!(
        journaled_status(&journal(&reader, &run_id).await),
        Some(AgentRunStatus::Completed)
    );
    owner.shutdown().await.unwrap();
    reader.shutdown().await.unwrap();
}

/// A runtime that shuts down while it executes a run ends it `interrupted` (`reason:
/// host_shutdown`), recorded at once: a runtime waiting on and following it sees that end, and
/// resumes the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runtime_that_shuts_down_leaves_its_run_interrupted_for_another_to_resume() {
    let url = fresh_database().await;
    let owner_dir = TempDir::new().unwrap();
    let (owner, run_id) = owner_waiting_on_the_model(&url, owner_dir.path()).await;
    let (_viewer_dir, viewer) = watching_host(&url).await;
    let (waiting, following) = wait_and_follow(&viewer, &run_id).await;

    let stopped = tokio::time::timeout(HANG_GUARD, owner.shutdown())
        .await
        .expect("shutdown returned")
        .unwrap();
    assert_eq!(stopped.len(), 1);
    assert_eq!(stopped[0].status, AgentRunStatus::Interrupted);
    let followed = both_end_interrupted(waiting, following, "host_shutdown").await;
    let last = followed.last().unwrap();

    viewer.resume_run(&run_id).await.unwrap();
    let resumed = wait_for_event(&viewer, &run_id, "run_resumed").await;
    assert_eq!(resumed.payload["fromSeq"], last.seq);
    assert_eq!(viewer.shutdown().await.unwrap().len(), 1);
}

/// A run another host took over (its owner stalled past its lease, and the other host resumed
/// it) is not this runtime's to wait on: `shutdown` returns without following it to its end,
/// and the other host goes on with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_does_not_wait_on_a_run_another_host_took_over() {
    let url = fresh_database().await;
    let owner_dir = TempDir::new().unwrap();
    let (owner, run_id) = owner_waiting_on_the_model(&url, owner_dir.path()).await;
    TestCluster::expire_lease(&url, &run_id).await.unwrap();
    let (_taker_dir, taker) = watching_host(&url).await;
    taker.resume_run(&run_id).await.unwrap();
    wait_for_event(&taker, &run_id, "run_resumed").await;

    tokio::time::timeout(HANG_GUARD, owner.shutdown())
        .await
        .expect("shutdown returned")
        .ok();
    let run = taker.get_run(&run_id).await.unwrap();
    assert!(!run.status.is_terminal(), "{run:?}");
    assert_eq!(taker.shutdown().await.unwrap().len(), 1);
}

/// A run another host of the database starts (a second runtime with its own store, as another
/// process would be) shows in this runtime's run updates without any `list_runs`, over
/// LISTEN/NOTIFY: as soon as it exists, again while it works (its first model call answered:
/// its usage has moved), and at its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_updates_show_runs_another_host_writes() {
    let url = fresh_database().await;
    let dir = TempDir::new().unwrap();
    let viewer = pg_runtime(&url, dir.path(), committing_writer(), None).await;
    let other_dir = TempDir::new().unwrap();
    let (model, gate) = super::gated_held_writer();
    let other = pg_runtime(&url, other_dir.path(), model, None).await;
    super::another_writers_run_shows_in_run_updates(&viewer, &other, &gate).await;
}

/// Named connections and preset templates are shared state: what one host saves is offered
/// by another host (its own, empty data dir), removed for both by either, and no data dir
/// holds anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_one_host_stores_is_listed_by_another_and_no_data_dir_holds_it() {
    let url = fresh_database().await;
    let (dir_a, dir_b) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    let host_a = pg_runtime(&url, dir_a.path(), committing_writer(), None).await;
    let host_b = pg_runtime(&url, dir_b.path(), committing_writer(), None).await;
    let document =
        serde_json::json!({"connection": "openai:http://127.0.0.1:9/v1", "model": "house"});
    host_a.save_connection("shared", &document).await.unwrap();
    let template = serde_json::json!({"schemaVersion": 1, "messages": [
        {"role": "system", "content": "{{agentSystemPrompt}}"}]});
    host_a
        .save_preset_template("writers-room", "advisors", &template)
        .await
        .unwrap();
    for host in [&host_a, &host_b] {
        let listed = host.list_connections().await.unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].name, "shared");
        assert_eq!(listed[0].description["model"], "house");
        assert_eq!(listed[0].problem, None);
    }
    let tt_runtime::StoreChoice::Ports(ports) = tt_runtime::open_store_url(&url).await.unwrap()
    else {
        panic!("a URL opens a store of its own");
    };
    let kept = ports.preset_templates.clone().unwrap();
    let read = kept
        .read_preset_template(tt_ports::PresetKey::new("writers-room", "advisors"))
        .await;
    let read: serde_json::Value = serde_json::from_str(&read.unwrap().unwrap()).unwrap();
    assert_eq!(read, template);
    host_b.remove_connection("shared").await.unwrap();
    assert!(host_a.list_connections().await.unwrap().is_empty());
    for dir in [&dir_a, &dir_b] {
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }
    host_a.shutdown().await.unwrap();
    host_b.shutdown().await.unwrap();
}
