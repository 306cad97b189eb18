//! The run indexes (docs/storage.md, "The run indexes"): recovery reads only the runs marked
//! unfinished, a crash between any two writes never hides an unfinished run from it, a missing
//! or damaged index is rebuilt from the runs, and listings page from the run log in the order
//! a scan gives.

use super::{Fixture, event_ids};
use std::path::Path;
use tt_adapter_storage_userdata::UserDataStore;
use tt_domain::ids::RunId;
use tt_domain::run::{AgentRun, AgentRunStatus};
use tt_domain::time::Timestamp;
use tt_ports::{AgentRunRepository, RunListPage};
use tt_testkit::contract::{manifest_for, sample_run};

fn ts(ms: i64) -> Timestamp {
    Timestamp::from_unix_millis(ms)
}

/// The run ids marked unfinished (the completeness marker left out).
fn marked(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root.join("index/unfinished"))
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|entry| entry.file_name().to_str().map(str::to_owned))
                .filter(|name| !name.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// A fresh store opened as a runtime opens a data dir (recovery run once), so its (empty)
/// indexes are complete.
fn opened_fixture() -> Fixture {
    let fx = Fixture::new();
    fx.store
        .recover_interrupted_runs(ts(1), event_ids())
        .unwrap();
    fx
}

async fn finish(store: &UserDataStore, run: &AgentRun, status: AgentRunStatus) {
    let mut done = run.clone();
    done.status = status;
    done.updated_at = ts(50_000);
    store.save_run(&done).await.unwrap();
}

async fn all_listed(store: &UserDataStore) -> Vec<RunId> {
    store
        .list_runs(RunListPage::first(10_000))
        .await
        .unwrap()
        .into_iter()
        .map(|run| run.id)
        .collect()
}

#[tokio::test]
async fn a_run_is_marked_from_its_creation_to_its_end_and_recovery_reads_only_the_marked() {
    let mut fx = opened_fixture();
    let (open, _) = fx.run(1).await;
    let (done, _) = fx.run(2).await;
    let (failed, failed_dir) = fx.run(3).await;
    assert_eq!(
        marked(&fx.data_root()),
        [open.id.as_str(), done.id.as_str(), failed.id.as_str()]
    );
    finish(&fx.store, &done, AgentRunStatus::Completed).await;
    finish(&fx.store, &failed, AgentRunStatus::Failed).await;
    assert_eq!(marked(&fx.data_root()), [open.id.as_str()]);
    // A finished run is never read by recovery: even one whose record is now damaged.
    std::fs::write(failed_dir.join("run.json"), b"{ not json").unwrap();
    let (_store, recovered) = fx.reopen_and_recover();
    assert_eq!(
        recovered.iter().map(|run| &run.run_id).collect::<Vec<_>>(),
        [&open.id]
    );
    assert!(marked(&fx.data_root()).is_empty());
    assert_eq!(
        std::fs::read(failed_dir.join("run.json")).unwrap(),
        b"{ not json",
        "recovery did not touch a finished run"
    );
}

#[tokio::test]
async fn a_crash_between_the_end_and_the_unmarking_leaves_no_stale_marker() {
    let mut fx = Fixture::new();
    let (run, _) = fx.run(1).await;
    finish(&fx.store, &run, AgentRunStatus::Completed).await;
    // As if the process died after the record said `completed` but before the marker went.
    std::fs::write(
        fx.data_root()
            .join("index/unfinished")
            .join(run.id.as_str()),
        run.workspace_id.as_str(),
    )
    .unwrap();
    let (store, recovered) = fx.reopen_and_recover();
    assert!(recovered.is_empty());
    assert!(marked(&fx.data_root()).is_empty());
    assert_eq!(
        store.load_run(&run.id).await.unwrap().status,
        AgentRunStatus::Completed
    );
}

#[tokio::test]
async fn a_crash_while_creating_a_run_leaves_nothing_recovery_does_not_clear() {
    let mut fx = Fixture::new();
    let (run, dir) = fx.run(1).await;
    drop(fx.store.clone());
    // Died before the record was written: the directory holds only creation leftovers.
    std::fs::remove_file(dir.join("run.json")).unwrap();
    std::fs::remove_file(
        fx.data_root()
            .join("index/runs")
            .join(format!("{}.json", run.id)),
    )
    .unwrap();
    // And a marker whose directory never came to be (or was removed).
    std::fs::write(
        fx.data_root().join("index/unfinished/run_never_made"),
        run.workspace_id.as_str(),
    )
    .unwrap();
    let (store, recovered) = fx.reopen_and_recover();
    assert!(recovered.is_empty());
    assert!(!dir.exists());
    assert!(marked(&fx.data_root()).is_empty());
    assert!(all_listed(&store).await.is_empty());
}

#[tokio::test]
async fn a_marker_whose_content_is_damaged_still_finds_its_run() {
    let mut fx = Fixture::new();
    let (run, _) = fx.run(1).await;
    std::fs::write(
        fx.data_root()
            .join("index/unfinished")
            .join(run.id.as_str()),
        b"\0\0\0",
    )
    .unwrap();
    let (_store, recovered) = fx.reopen_and_recover();
    assert_eq!(recovered.len(), 1);
    assert_eq!(recovered[0].run_id, run.id);
}

#[tokio::test]
async fn a_missing_index_is_rebuilt_from_the_runs_and_recovery_finds_every_unfinished_run() {
    let mut fx = Fixture::new();
    let mut unfinished = Vec::new();
    for n in 1..=6 {
        let (run, _) = fx.run(n).await;
        if n % 2 == 0 {
            finish(&fx.store, &run, AgentRunStatus::Completed).await;
        } else {
            unfinished.push(run.id);
        }
    }
    let before = all_listed(&fx.store).await;
    // A data dir written before the indexes, or one whose indexes were deleted.
    let root = fx.data_root();
    std::fs::remove_dir_all(root.join("index/unfinished")).unwrap();
    std::fs::remove_file(root.join("index/runs.log")).unwrap();
    // A reader lists from a scan meanwhile, in the same order.
    let reader = UserDataStore::open_read_only(&root);
    assert_eq!(all_listed(&reader).await, before);
    let store = fx.reopen();
    let recovered: Vec<RunId> = store
        .recover_interrupted_runs(ts(100), event_ids())
        .unwrap()
        .into_iter()
        .map(|run| run.run_id)
        .collect();
    assert_eq!(recovered, unfinished);
    assert!(root.join("index/unfinished/.complete").is_file());
    assert!(marked(&root).is_empty());
    assert_eq!(all_listed(&store).await, before);
    let log = std::fs::read_to_string(root.join("index/runs.log")).unwrap();
    assert!(log.starts_with("tt-run-log 1\n"), "{log}");
    assert_eq!(log.lines().count(), 7);
}

#[tokio::test]
async fn a_log_appended_to_after_it_went_missing_is_rebuilt_with_every_line() {
    let mut fx = Fixture::new();
    let (first, _) = fx.run(1).await;
    let root = fx.data_root();
    std::fs::remove_file(root.join("index/runs.log")).unwrap();
    // Created while the log was missing: its line starts a log without a header.
    let (second, _) = fx.run(2).await;
    assert!(
        !std::fs::read_to_string(root.join("index/runs.log"))
            .unwrap()
            .starts_with("tt-run-log")
    );
    let (store, _) = fx.reopen_and_recover();
    assert_eq!(all_listed(&store).await, [second.id, first.id]);
}

#[tokio::test]
async fn pages_from_the_log_are_the_pages_a_scan_gives() {
    let fx = Fixture::new();
    // Created out of order (within the log's slack), two at the same millisecond; enough runs
    // that the log is read in several chunks (4, 8, then 16 KiB), with lines cut between them.
    let mut runs = Vec::new();
    for n in 0..250u32 {
        let mut run = sample_run(n + 1);
        let created = i64::from((n * 7) % 250) * 100;
        run.created_at = ts(created);
        run.updated_at = ts(created);
        fx.store
            .create_run(&run, &manifest_for(&run))
            .await
            .unwrap();
        runs.push(run);
    }
    let mut twin = sample_run(999);
    twin.created_at = runs[5].created_at;
    fx.store
        .create_run(&twin, &manifest_for(&twin))
        .await
        .unwrap();
    runs.push(twin);
    runs.sort_by(|a, b| {
        (std::cmp::Reverse(a.created_at), &a.id).cmp(&(std::cmp::Reverse(b.created_at), &b.id))
    });
    let expected: Vec<RunId> = runs.iter().map(|run| run.id.clone()).collect();
    assert_eq!(all_listed(&fx.store).await, expected);
    for (offset, limit) in [
        (0, 1),
        (0, 20),
        (3, 7),
        (20, 20),
        (38, 10),
        (41, 5),
        (60, 40),
        (110, 20),
        (200, 60),
        (251, 5),
    ] {
        let page: Vec<RunId> = fx
            .store
            .list_runs(RunListPage { offset, limit })
            .await
            .unwrap()
            .into_iter()
            .map(|run| run.id)
            .collect();
        let want: Vec<RunId> = expected.iter().skip(offset).take(limit).cloned().collect();
        assert_eq!(page, want, "offset {offset}, limit {limit}");
    }
}

#[tokio::test]
async fn a_conversation_lists_only_its_own_runs() {
    let fx = Fixture::new();
    let (mine, _) = fx.run(1).await;
    let mut other = sample_run(2);
    other.stable_chat_id = "another-chat".to_owned();
    other.workspace_id =
        tt_domain::run::derive_workspace_id(other.conversation_kind, "another-chat");
    fx.store
        .create_run(&other, &manifest_for(&other))
        .await
        .unwrap();
    let listed: Vec<RunId> = fx
        .store
        .list_chat_runs(&mine.stable_chat_id)
        .await
        .unwrap()
        .into_iter()
        .map(|run| run.id)
        .collect();
    assert_eq!(listed, [mine.id]);
}

#[tokio::test]
async fn a_run_resumed_after_its_end_is_marked_again_before_its_record_says_so() {
    let mut fx = opened_fixture();
    let (run, _) = fx.run(1).await;
    finish(&fx.store, &run, AgentRunStatus::Interrupted).await;
    assert!(marked(&fx.data_root()).is_empty());
    let mut resumed = run.clone();
    resumed.status = AgentRunStatus::CallingModel;
    fx.store.save_run(&resumed).await.unwrap();
    assert_eq!(marked(&fx.data_root()), [run.id.as_str()]);
    // Its process dies: the next start finds it.
    let (_store, recovered) = fx.reopen_and_recover();
    assert_eq!(recovered.len(), 1);
    assert_eq!(recovered[0].run_id, run.id);
}
