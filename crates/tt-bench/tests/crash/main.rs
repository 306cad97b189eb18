//! Crash safety on the real binary: a fan-out run of `tt-bench` is killed with SIGKILL at a
//! spread of points of its work; reopening the data dir must find the run `interrupted` (or `completed`,
//! if the kill came late), every journal, record and blob line whole and parseable, seqs
//! gapless from 1, no temp files, and a new run in the same data dir must complete.
//!
//! `TT_CRASH_TRIALS` sets the number of trials (default 3; `cargo xtask soak crash --trials N`
//! runs many).

// Test helpers outside #[test] functions may unwrap: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod postgres;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;
use tt_runtime::{
    AgentRunStatus, AgentRuntimeBuilder, CommitBridgeChoice, ListRunsRequest, ReadEventsRequest,
    ScriptedProvider,
};

const BENCH: &str = env!("CARGO_BIN_EXE_tt-bench");

fn trials() -> u64 {
    std::env::var("TT_CRASH_TRIALS")
        .ok()
        .and_then(|raw| raw.parse().ok())
        .unwrap_or(3)
}

/// How far into the run trial `n` kills the process, as a journal size in bytes: spread over
/// the run's life (a 48-child run journals about 1.6 MB), so the kill lands at a different point
/// of the work whatever the speed of the machine. Trial 0 kills before the run exists.
fn kill_at_journal_bytes(n: u64) -> u64 {
    if n == 0 {
        0
    } else {
        1 + (n * 104_729) % 1_600_000
    }
}

/// Waits until the run's journal holds `bytes` (or the process has ended by itself).
async fn wait_for_progress(dir: &Path, child: &mut std::process::Child, bytes: u64) {
    if bytes == 0 {
        return;
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let mut files = Vec::new();
        files_under(&dir.join("chats"), &mut files);
        let journaled: u64 = files
            .iter()
            .filter(|file| file.ends_with("events.jsonl"))
            .filter_map(|file| std::fs::metadata(file).ok())
            .map(|meta| meta.len())
            .sum();
        if journaled >= bytes || child.try_wait().unwrap().is_some() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the run made no progress"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

fn fanout(dir: &Path, children: u32) -> Command {
    let mut command = Command::new(BENCH);
    command
        .args(["fanout", "--children", &children.to_string(), "--data-dir"])
        .arg(dir)
        .arg("--reuse-data-dir")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// Every line of a segment file is a whole JSON document and the file ends with a newline.
fn assert_whole_lines(path: &Path) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "{}",
        path.display()
    );
    for (n, line) in text.lines().enumerate() {
        serde_json::from_str::<serde_json::Value>(line)
            .unwrap_or_else(|err| panic!("{} line {}: {err}", path.display(), n + 1));
    }
}

/// Checks a reopened data dir; returns how many runs were interrupted.
async fn check_reopened(dir: &Path) -> usize {
    let idle = ScriptedProvider::from_json_str(r#"{"schemaVersion":1,"agents":{}}"#).unwrap();
    // Building a read-write runtime marks what the killed process left `interrupted`.
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir)
        .provider(Arc::new(idle))
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap();
    let runs = runtime
        .list_runs(ListRunsRequest {
            offset: 0,
            limit: 100,
        })
        .await
        .unwrap();
    for run in &runs {
        assert!(
            matches!(
                run.status,
                AgentRunStatus::Interrupted | AgentRunStatus::Completed
            ),
            "run {} is {}",
            run.id,
            run.status.as_str()
        );
        let mut next = 1;
        let mut last_type = String::new();
        loop {
            let page = runtime
                .read_events(ReadEventsRequest {
                    run_id: run.id.to_string(),
                    after_seq: Some(next - 1),
                    limit: Some(500),
                    ..Default::default()
                })
                .await
                .unwrap();
            if page.events.is_empty() {
                break;
            }
            for event in page.events {
                assert_eq!(event.seq, next, "run {} has a gap", run.id);
                next += 1;
                last_type = event.event_type.to_string();
            }
        }
        let expected = match run.status {
            AgentRunStatus::Interrupted => "run_interrupted",
            _ => "run_completed",
        };
        assert_eq!(last_type, expected, "run {}", run.id);
    }
    // No run lost its record: a killed process leaves either a whole run or creation
    // leftovers, which the reopening removed.
    let unreadable = runtime.unreadable_runs().await.unwrap();
    assert!(unreadable.is_empty(), "{unreadable:?}");
    assert!(runs.iter().all(|run| run.rebuilt.is_none()), "{runs:?}");
    let interrupted = runs
        .iter()
        .filter(|run| run.status == AgentRunStatus::Interrupted)
        .count();
    let mut files = Vec::new();
    files_under(dir, &mut files);
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy();
        assert!(
            !name.contains(".tt-tmp-"),
            "temp file left: {}",
            file.display()
        );
        if matches!(
            name.as_ref(),
            "events.jsonl" | "records.jsonl" | "blobs.jsonl"
        ) {
            assert_whole_lines(file);
        }
    }
    interrupted
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_fan_out_run_is_interrupted_and_the_data_dir_stays_usable() {
    let mut interrupted = 0;
    for trial in 0..trials() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("data");
        let mut child = fanout(&dir, 48).spawn().unwrap();
        wait_for_progress(&dir, &mut child, kill_at_journal_bytes(trial)).await;
        // SIGKILL: no destructor, no flush, nothing the process can do about it.
        child.kill().unwrap();
        child.wait().unwrap();

        interrupted += check_reopened(&dir).await;
        let status = fanout(&dir, 4).status().unwrap();
        assert!(
            status.success(),
            "trial {trial}: a new run did not complete"
        );
        check_reopened(&dir).await;
    }
    // The kill points are spread so that some land in the middle of the run.
    assert!(
        trials() < 2 || interrupted > 0,
        "no trial interrupted a run"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_process_cannot_write_a_run_a_live_process_owns() {
    use tt_domain::event::{EventLevel, NewRunEvent, RunEventType};
    use tt_domain::ids::{EventId, RunId};
    use tt_domain::time::Timestamp;
    use tt_ports::RunJournal;

    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    let mut child = fanout(&dir, 400).spawn().unwrap();
    let index = dir.join("index").join("runs");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let run_id = loop {
        let found = std::fs::read_dir(&index).ok().and_then(|mut entries| {
            let name = entries.next()?.ok()?.file_name();
            name.to_string_lossy()
                .strip_suffix(".json")
                .map(str::to_owned)
        });
        if let Some(found) = found {
            break found;
        }
        assert!(std::time::Instant::now() < deadline, "no run appeared");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let store = tt_runtime::UserDataStore::open(&dir).unwrap();
    let attempt = store
        .append(NewRunEvent {
            id: EventId::from_raw("evt_intruder"),
            run_id: RunId::from_raw(run_id),
            timestamp: Timestamp::from_unix_millis(0),
            level: EventLevel::Info,
            event_type: RunEventType::StatusChanged,
            payload: serde_json::json!({}).into(),
        })
        .await;
    // A 400-child run takes far longer than the few milliseconds the attempt needs.
    let still_running = child.try_wait().unwrap().is_none();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        still_running,
        "the fan-out ended before the second writer tried"
    );
    match attempt {
        Err(tt_ports::StorageError::Locked { owner_pid, .. }) => {
            assert_eq!(owner_pid, Some(child.id()));
        }
        other => panic!("expected agent.run_locked, got {other:?}"),
    }
}
