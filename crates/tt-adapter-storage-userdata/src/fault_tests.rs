//! The store's own write path failing at every point. A workload of journal appends, records,
//! tasks, workspace writes, checkpoints and terminal transitions runs once per injected fault:
//! the n-th append, `fdatasync` or temp-file replace under the test's directory fails (a torn
//! write, a torn write whose rollback fails too, an error). The workload goes on after a failed
//! step, as a runtime would until it gives up; then the process "dies" (the store is dropped
//! without closing anything more) and a new store opens the data root. It must always open,
//! mark the run interrupted, keep every step that reported success, and leave only whole,
//! parseable lines, gapless seqs and no temp files.

use serde_json::json;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use tt_domain::ids::{EventId, TaskId};
use tt_domain::run::AgentRun;
use tt_domain::task::TaskStatus;
use tt_domain::workspace::{CheckpointReason, WriteGuard};
use tt_ports::{
    AgentInvocationRepository, AgentRunRepository, RunDocument, RunJournal, WorkspaceRepository,
};
use tt_testkit::contract::{
    invocation, manifest_for, sample_run, task, tool_event, transition_to, ts, wp,
};
use tt_testkit::store_tests::{
    assert_documents_kept, assert_ends_interrupted, read_journal, task_ids,
};

use crate::UserDataStore;
use crate::faults::{self, Fault, Op};

const SEGMENTS: [&str; 3] = ["events.jsonl", "records.jsonl", "blobs.jsonl"];

/// What the workload saw succeed.
#[derive(Default)]
struct Acknowledged {
    events: BTreeSet<u64>,
    documents: Vec<String>,
    tasks: BTreeSet<String>,
    files: Vec<(String, String)>,
    failed_steps: usize,
}

impl Acknowledged {
    fn note<T>(&mut self, result: Result<T, tt_ports::StorageError>) -> Option<T> {
        match result {
            Ok(value) => Some(value),
            Err(err) => {
                assert!(!err.code().as_str().is_empty());
                self.failed_steps += 1;
                None
            }
        }
    }
}

async fn workload(store: &Arc<UserDataStore>, run: &AgentRun) -> Acknowledged {
    let mut seen = Acknowledged::default();
    let mut n = 0;
    for round in 0..3u64 {
        for _ in 0..3 {
            n += 1;
            let appended =
                RunJournal::append(store.as_ref(), tool_event(&run.id, n, "inv_root")).await;
            if seen.note(appended).is_some() {
                seen.events.insert(n);
            }
        }
        let key = format!("call_{round:016x}");
        let document = store
            .write_document(
                &run.id,
                &RunDocument::ToolArgs {
                    call_file_key: key.clone(),
                },
                &json!({"round": round, "text": "x".repeat(40 * round as usize)}),
            )
            .await;
        if seen.note(document).is_some() {
            seen.documents.push(format!("tool-args/{key}.json"));
        }
        let saved = store
            .save_invocation(&invocation(run, &format!("inv_{round}"), 2))
            .await;
        seen.note(saved);
        let id = format!("task_{round}");
        if seen
            .note(store.create_task(&task(run, &id, 3)).await)
            .is_some()
        {
            seen.tasks.insert(id.clone());
        }
        let path = wp(&format!("scratch/notes/{round}.md"));
        let text = format!("note {round}\n");
        if seen
            .note(store.write(&run.id, &path, &text, &WriteGuard::None).await)
            .is_some()
        {
            seen.files.push((path.to_string(), text));
        }
        let checkpoint = store
            .create_checkpoint(
                &run.id,
                CheckpointReason::ToolWorkspaceWrite,
                n,
                &[path],
                ts(4),
            )
            .await;
        seen.note(checkpoint);
        let transition = store
            .transition_task(
                &run.id,
                &TaskId::from_raw(&id),
                &transition_to(TaskStatus::Completed),
                ts(5),
            )
            .await;
        seen.note(transition);
        let mut saved_run = run.clone();
        saved_run.updated_at = ts(6 + round as i64);
        seen.note(store.save_run(&saved_run).await);
    }
    seen
}

fn event_ids() -> impl FnMut() -> EventId {
    let mut n = 0;
    move || {
        n += 1;
        EventId::from_raw(format!("evt_recovery_{n}"))
    }
}

fn files_named(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            files_named(&entry.path(), out);
        } else {
            out.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
}

/// One trial: the `fail_at`-th `op` fails with `fault`. Returns whether the fault fired.
async fn trial(op: Op, fault: Fault, fail_at: u64) -> bool {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let run = sample_run(1);
    let store = UserDataStore::open(&data).unwrap();
    store.create_run(&run, &manifest_for(&run)).await.unwrap();
    let run_dir = store.run_directory(&run.id).await.unwrap();
    faults::arm(root.path(), op, fail_at, fault);
    let seen = workload(&store, &run).await;
    let fired = faults::disarm(root.path());
    let what = format!("{op:?} #{fail_at} {fault:?}");
    if fired {
        assert!(
            seen.failed_steps > 0 || op == Op::Sync,
            "{what}: nothing failed"
        );
    }
    drop(store);

    let reopened = UserDataStore::open(&data).unwrap();
    let recovered = reopened
        .recover_interrupted_runs(ts(100), event_ids())
        .unwrap_or_else(|err| panic!("{what}: reopening failed: {err}"));
    assert_eq!(recovered.len(), 1, "{what}");
    let events = read_journal(reopened.as_ref(), &run.id).await;
    assert_ends_interrupted(&events, &what);
    let stored: BTreeSet<u64> = events
        .iter()
        .filter_map(|event| event.payload["n"].as_u64())
        .collect();
    assert!(stored.is_superset(&seen.events), "{what}: lost events");
    let tasks = task_ids(reopened.as_ref(), &run.id).await;
    assert!(tasks.is_superset(&seen.tasks), "{what}: lost tasks");
    assert_documents_kept(reopened.as_ref(), &run.id, &seen.documents, &what).await;
    for (path, text) in &seen.files {
        let file = WorkspaceRepository::read(reopened.as_ref(), &run.id, &wp(path))
            .await
            .unwrap();
        assert_eq!(&file.text, text, "{what}");
    }
    for name in SEGMENTS {
        let text = std::fs::read_to_string(run_dir.join(name)).unwrap_or_default();
        assert!(text.is_empty() || text.ends_with('\n'), "{what}: {name}");
        for line in text.lines() {
            serde_json::from_str::<serde_json::Value>(line)
                .unwrap_or_else(|err| panic!("{what}: {name}: {err}"));
        }
    }
    let mut names = Vec::new();
    files_named(&data, &mut names);
    assert!(
        !names.iter().any(|name| crate::fsutil::is_temp_name(name)),
        "{what}: temp files left: {names:?}"
    );
    fired
}

async fn every_point(op: Op, fault: Fault) {
    let mut fail_at = 1;
    while trial(op, fault, fail_at).await {
        fail_at += 1;
    }
    assert!(fail_at > 3, "{op:?} {fault:?}: only {} points", fail_at - 1);
}

#[tokio::test]
async fn a_torn_append_at_any_point_is_undone() {
    every_point(Op::Append, Fault::TornWrite).await;
}

#[tokio::test]
async fn a_torn_append_that_cannot_be_undone_stops_the_file_and_is_cut_on_open() {
    every_point(Op::Append, Fault::TornWriteNoRollback).await;
}

#[tokio::test]
async fn a_failed_fdatasync_at_any_point_loses_nothing_acknowledged() {
    every_point(Op::Sync, Fault::Fails).await;
}

#[tokio::test]
async fn a_torn_or_unrenamed_file_replace_at_any_point_leaves_the_old_file() {
    every_point(Op::Replace, Fault::TornWrite).await;
    every_point(Op::Replace, Fault::Fails).await;
}
