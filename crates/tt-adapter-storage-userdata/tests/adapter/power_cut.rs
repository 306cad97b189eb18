//! Power cuts. A power cut keeps each segment file's bytes up to its last `fdatasync` and any
//! prefix of what was written after it, possibly ending in a torn line or in zeros (blocks the
//! file system allocated but never wrote). This test records the files at every durability
//! point of a workload, then rebuilds the data dir as a cut at every line boundary and inside
//! every line written after that point (with and without a zeroed tail), and reopens it: the
//! store must always open, keep everything written before the durability point, and leave only
//! whole, parseable lines.

use serde_json::json;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use tt_adapter_storage_userdata::UserDataStore;
use tt_domain::ids::{InvocationId, TaskId};
use tt_domain::task::TaskStatus;
use tt_domain::workspace::{CheckpointReason, WriteGuard};
use tt_ports::{
    AgentInvocationRepository, AgentRunRepository, RunDocument, RunJournal, WorkspaceRepository,
};
use tt_testkit::contract::{invocation, task, tool_event, transition_to, ts, wp};
use tt_testkit::store_tests::{
    assert_documents_kept, assert_ends_interrupted, read_journal, task_ids,
};

use super::{Fixture, event_ids};

const SEGMENTS: [&str; 3] = ["events.jsonl", "records.jsonl", "blobs.jsonl"];

/// What the store had made durable at one durability point.
struct Point {
    lengths: [u64; 3],
    events: u64,
    tasks: BTreeSet<String>,
    documents: Vec<String>,
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Offsets worth cutting at in `bytes[from..]`: each line start, one byte in, and mid-line.
fn cut_points(bytes: &[u8], from: u64) -> BTreeSet<u64> {
    let mut cuts = BTreeSet::from([from, bytes.len() as u64]);
    let mut start = from as usize;
    for (i, byte) in bytes.iter().enumerate().skip(from as usize) {
        if *byte == b'\n' {
            cuts.insert(start as u64 + 1);
            cuts.insert(((start + i) / 2) as u64);
            cuts.insert(i as u64 + 1);
            start = i + 1;
        }
    }
    cuts.retain(|cut| *cut <= bytes.len() as u64);
    cuts
}

#[tokio::test]
async fn a_power_cut_at_any_point_loses_only_what_followed_the_last_durability_point() {
    let fx = Fixture::new();
    let (run, dir) = fx.run(1).await;
    let store = fx.store.clone();
    let lengths =
        |dir: &Path| SEGMENTS.map(|name| std::fs::metadata(dir.join(name)).unwrap().len());

    let mut points = Vec::new();
    let mut events = 0;
    let mut tasks = BTreeSet::new();
    let mut documents = Vec::new();
    store.sync_run(&run.id).await.unwrap();
    points.push(Point {
        lengths: lengths(&dir),
        events,
        tasks: tasks.clone(),
        documents: documents.clone(),
    });
    for round in 0..3u64 {
        for _ in 0..3 {
            events += 1;
            RunJournal::append(store.as_ref(), tool_event(&run.id, events, "inv_root"))
                .await
                .unwrap();
        }
        let key = format!("call_{round:016x}");
        store
            .write_document(
                &run.id,
                &RunDocument::ToolArgs {
                    call_file_key: key.clone(),
                },
                &json!({"round": round, "text": "x".repeat(40 * round as usize)}),
            )
            .await
            .unwrap();
        documents.push(format!("tool-args/{key}.json"));
        store
            .save_invocation(&invocation(&run, &format!("inv_{round}"), 2))
            .await
            .unwrap();
        let id = format!("task_{round}");
        store.create_task(&task(&run, &id, 3)).await.unwrap();
        tasks.insert(id.clone());
        let path = wp(&format!("scratch/notes/{round}.md"));
        store
            .write(
                &run.id,
                &path,
                &format!("note {round}\n"),
                &WriteGuard::None,
            )
            .await
            .unwrap();
        super::checkpoint(
            &store,
            &run.id,
            CheckpointReason::ToolWorkspaceWrite,
            events,
            path,
            4,
        )
        .await;
        // A terminal transition is a durability point of its own.
        store
            .transition_task(
                &run.id,
                &TaskId::from_raw(&id),
                &transition_to(TaskStatus::Completed),
                ts(5),
            )
            .await
            .unwrap();
        points.push(Point {
            lengths: lengths(&dir),
            events,
            tasks: tasks.clone(),
            documents: documents.clone(),
        });
    }
    // Written after the last durability point: may be lost, must never break anything.
    for _ in 0..2 {
        events += 1;
        RunJournal::append(store.as_ref(), tool_event(&run.id, events, "inv_root"))
            .await
            .unwrap();
    }
    store
        .save_invocation(&invocation(&run, "inv_late", 9))
        .await
        .unwrap();
    let finals = SEGMENTS.map(|name| std::fs::read(dir.join(name)).unwrap());
    let relative = dir.strip_prefix(fx.data_root()).unwrap().to_path_buf();
    drop(store);

    let mut trials = 0;
    for (k, point) in points.iter().enumerate() {
        let next = points.get(k + 1).map(|next| next.lengths);
        for (f, bytes) in finals.iter().enumerate() {
            let end = next.map_or(bytes.len() as u64, |next| next[f]);
            for cut in cut_points(&bytes[..end as usize], point.lengths[f]) {
                // Zeroed tails matter only where a line was cut.
                let at_line_end = cut == 0 || bytes.get(cut as usize - 1) == Some(&b'\n');
                let tails: &[usize] = if at_line_end { &[0] } else { &[0, 37] };
                for &zeros in tails {
                    trials += 1;
                    let root = tempfile::tempdir().unwrap();
                    let data: PathBuf = root.path().join("data");
                    copy_dir(&fx.data_root(), &data);
                    let run_dir = data.join(&relative);
                    for (g, name) in SEGMENTS.iter().enumerate() {
                        // The cut file keeps `cut` bytes; the others lost their unsynced tail.
                        let keep = if g == f { cut } else { point.lengths[g] };
                        let mut kept = finals[g][..keep as usize].to_vec();
                        if g == f {
                            kept.extend(std::iter::repeat_n(0u8, zeros));
                        }
                        std::fs::write(run_dir.join(name), kept).unwrap();
                    }
                    let reopened = UserDataStore::open(&data).unwrap();
                    let recovered = reopened
                        .recover_interrupted_runs(ts(100), event_ids())
                        .unwrap_or_else(|err| {
                            panic!("point {k}, {}, cut {cut}: {err}", SEGMENTS[f])
                        });
                    assert_eq!(recovered.len(), 1);
                    assert!(
                        recovered[0].last_seq >= point.events,
                        "point {k}: lost durable events"
                    );
                    let what = format!("point {k}");
                    let read = read_journal(reopened.as_ref(), &run.id).await;
                    assert_ends_interrupted(&read, &what);
                    let stored = task_ids(reopened.as_ref(), &run.id).await;
                    assert!(stored.is_superset(&point.tasks), "{what}: lost tasks");
                    assert_documents_kept(reopened.as_ref(), &run.id, &point.documents, &what)
                        .await;
                    if k > 0 {
                        reopened
                            .load_invocation(&run.id, &InvocationId::from_raw("inv_0"))
                            .await
                            .unwrap();
                    }
                    for name in SEGMENTS {
                        let text = std::fs::read_to_string(run_dir.join(name)).unwrap();
                        assert!(text.is_empty() || text.ends_with('\n'));
                        for line in text.lines() {
                            serde_json::from_str::<serde_json::Value>(line).unwrap();
                        }
                    }
                }
            }
        }
    }
    assert!(trials > 100, "only {trials} cuts tried");
}
