//! What the storage adapters' own tests (beside the contract suites) write and read of a run:
//! tool events appended in a row, its journal (one page of up to 500 events), the ids of its
//! tasks, and the checks every run recovered after a crash passes (gapless seqs ending
//! `run_interrupted`, every acknowledged document still there); and the copy of a live data
//! dir the host tests restart from, as a crash leaves it. Test support: a failure panics.

#![allow(clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeSet;
use std::path::Path;

use tt_domain::event::AgentRunEvent;
use tt_domain::ids::RunId;
use tt_ports::{AgentInvocationRepository, AgentRunRepository, EventPage, RunDocument, RunJournal};

/// Appends the tool events `seqs` (`contract::tool_event` of the root agent) to the run's
/// journal, one after the other.
pub async fn append_tool_events(
    journal: &dyn RunJournal,
    run_id: &RunId,
    seqs: std::ops::RangeInclusive<u64>,
) {
    for n in seqs {
        journal
            .append(crate::contract::tool_event(run_id, n, "inv_root"))
            .await
            .unwrap();
    }
}

/// The run's journal from its start: one page of at most 500 events.
pub async fn read_journal(journal: &dyn RunJournal, run_id: &RunId) -> Vec<AgentRunEvent> {
    journal
        .read(
            run_id,
            &EventPage {
                limit: Some(500),
                ..EventPage::default()
            },
        )
        .await
        .unwrap()
}

/// `events` is a whole journal with no gap (seqs 1, 2, …) whose last event is
/// `run_interrupted`; `what` names the case in a failure.
pub fn assert_ends_interrupted(events: &[AgentRunEvent], what: &str) {
    let seqs: Vec<u64> = events.iter().map(|event| event.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "{what}");
    assert_eq!(
        events.last().map(|event| event.event_type.as_str()),
        Some("run_interrupted"),
        "{what}"
    );
}

/// The ids of the run's tasks.
pub async fn task_ids(store: &dyn AgentInvocationRepository, run_id: &RunId) -> BTreeSet<String> {
    store
        .list_tasks(run_id)
        .await
        .unwrap()
        .into_iter()
        .map(|task| task.id.to_string())
        .collect()
}

/// Every document of `documents` (as run-relative paths, `tool-args/<key>.json`) is stored
/// in the run; `what` names the case in a failure.
pub async fn assert_documents_kept(
    store: &dyn AgentRunRepository,
    run_id: &RunId,
    documents: &[String],
    what: &str,
) {
    for path in documents {
        let document = RunDocument::from_relative_path(path)
            .unwrap_or_else(|| panic!("{what}: `{path}` names no run document"));
        assert!(
            store
                .read_document(run_id, &document)
                .await
                .unwrap()
                .is_some(),
            "{what}: lost {path}"
        );
    }
}

/// Copies a data dir a runtime may still be writing, as a crash would leave it (files only,
/// no process holding any lock): a file that vanishes between the listing and the copy (an
/// atomic write's temp file, renamed meanwhile) is left out, as a crash at that instant would
/// leave it out.
pub fn copy_live_data_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            copy_live_data_dir(&entry.path(), &target);
        } else if let Err(error) = std::fs::copy(entry.path(), &target) {
            assert_eq!(error.kind(), std::io::ErrorKind::NotFound, "{error}");
        }
    }
}
