//! Crash safety on PostgreSQL: a `tt-bench fanout --store postgres://…` process is killed with
//! SIGKILL at a spread of points of its run; afterwards every run in the database has a whole,
//! gapless journal from seq 1 (each event parses), is `completed` or not terminal (its lease
//! expires and it is then resumable), and a new run on the same database completes.
//!
//! The server: `TT_CRASH_STORE_URL` (what `cargo xtask soak crash --store URL` passes), else a
//! throwaway cluster this test starts. `TT_CRASH_TRIALS` sets the number of trials (default 3).

use std::process::Command;
use std::time::Duration;

use tt_adapter_storage_postgres::PostgresStore;
use tt_adapter_storage_postgres::cluster::TestCluster;
use tt_ports::{AgentRunRepository, EventPage, RunJournal, RunListPage};
use tt_runtime::AgentRunStatus;

use super::trials;

/// How many events of the new run trial `n` waits for before the kill: spread over a 48-child
/// run's life (about a thousand events). Trial 0 kills before the run exists.
fn kill_at_events(n: u64) -> u64 {
    if n == 0 { 0 } else { 1 + (n * 7_919) % 1_000 }
}

/// The crash test's fan-out on the PostgreSQL store at `url`, its files in `data_dir`.
fn fanout(url: &str, children: u32, data_dir: &std::path::Path) -> Command {
    let mut command = super::fanout(data_dir, children);
    command.args(["--store", url]);
    command
}

async fn all_runs(store: &PostgresStore) -> Vec<tt_runtime::AgentRun> {
    store.list_runs(RunListPage::first(10_000)).await.unwrap()
}

/// Waits until a run that was not in `before` has journaled `events` (or the process ended).
async fn wait_for_progress(
    store: &PostgresStore,
    before: usize,
    child: &mut std::process::Child,
    events: u64,
) {
    if events == 0 {
        return;
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let runs = all_runs(store).await;
        if runs.len() > before {
            let newest = &runs[0];
            if store.last_seq(&newest.id).await.unwrap() >= events {
                return;
            }
        }
        if child.try_wait().unwrap().is_some() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the run made no progress"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Reads `run_id`'s whole journal, checking it is gapless from seq 1; returns the last seq read
/// and the last event's type.
async fn read_journal(store: &PostgresStore, run_id: &tt_runtime::RunId) -> (u64, String) {
    let mut next = 1;
    let mut last_type = String::new();
    loop {
        let page = RunJournal::read(
            store,
            run_id,
            &EventPage {
                after_seq: Some(next - 1),
                limit: Some(500),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        if page.is_empty() {
            return (next - 1, last_type);
        }
        for event in page {
            assert_eq!(event.seq, next, "run {run_id} has a gap");
            next += 1;
            last_type = event.event_type.to_string();
        }
    }
}

/// Every run: a gapless journal from 1 to its last seq, and a status that is `completed` or
/// not terminal. Returns how many were left unfinished.
///
/// A killed host's statements already sent still commit on the server for a moment after the
/// SIGKILL, so the journal is read until it stops growing: its length must then equal the
/// store's last seq.
async fn check_store(store: &PostgresStore) -> usize {
    let mut unfinished = 0;
    for run in all_runs(store).await {
        let mut settled = None;
        for _ in 0..100 {
            let (read, last_type) = read_journal(store, &run.id).await;
            let last = store.last_seq(&run.id).await.unwrap();
            if read == last {
                settled = Some(last_type);
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let last_type =
            settled.unwrap_or_else(|| panic!("run {}: last seq and journal disagree", run.id));
        // The record is read after the journal settled.
        let run = store.load_run(&run.id).await.unwrap();
        match run.status {
            AgentRunStatus::Completed => assert_eq!(last_type, "run_completed", "run {}", run.id),
            status if !status.is_terminal() || status == AgentRunStatus::Interrupted => {
                unfinished += 1;
            }
            status => panic!("run {} ended {}", run.id, status.as_str()),
        }
    }
    unfinished
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_fan_out_run_on_postgres_leaves_whole_journals_and_a_usable_store() {
    let (_cluster, url) = match std::env::var("TT_CRASH_STORE_URL") {
        Ok(url) if !url.trim().is_empty() => (None, url),
        _ => {
            let cluster = TestCluster::start(false).unwrap();
            let url = cluster.create_database("tt_crash").await.unwrap();
            (Some(cluster), url)
        }
    };
    let store = PostgresStore::open(&url).await.unwrap();
    let temp = tempfile::tempdir().unwrap();
    let mut unfinished = 0;
    for trial in 0..trials() {
        let before = all_runs(&store).await.len();
        let mut child = fanout(&url, 48, temp.path()).spawn().unwrap();
        wait_for_progress(&store, before, &mut child, kill_at_events(trial)).await;
        // SIGKILL: no destructor, no flush, nothing the process can do about it.
        child.kill().unwrap();
        child.wait().unwrap();
        unfinished = check_store(&store).await;

        let status = fanout(&url, 4, temp.path()).status().unwrap();
        assert!(
            status.success(),
            "trial {trial}: a new run did not complete"
        );
        check_store(&store).await;
    }
    assert!(trials() < 2 || unfinished > 0, "no trial interrupted a run");
}
