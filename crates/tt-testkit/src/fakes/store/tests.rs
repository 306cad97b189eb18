//! Unit tests of `InMemoryStore` beyond the shared storage contract suites.

use serde_json::json;
use tt_domain::error_codes;
use tt_domain::event::{EventLevel, NewRunEvent, RunEventType};
use tt_domain::ids::{EventId, InvocationId, ProfileId, RunId, TaskId};
use tt_domain::profile::default_writer_definition;
use tt_domain::run::AgentRunStatus;
use tt_domain::task::{TaskStatus, TaskTransition};
use tt_domain::time::Timestamp;
use tt_domain::workspace::{
    CheckpointReason, EntryKind, PersistentChangeKind, WorkspacePath, WorkspaceRoot, WriteGuard,
};
use tt_ports::{
    AgentInvocationRepository, AgentRunRepository, EventPage, ProfileRepository, RunDocument,
    RunJournal, RunListPage, StorageError, WorkspaceRepository,
};

use super::{InMemoryStore, StoreOp};
use crate::contract::{assert_code, plain_run as run, store_with_run, task};

fn ts(millis: i64) -> Timestamp {
    Timestamp::from_unix_millis(millis)
}

fn p(raw: &str) -> WorkspacePath {
    WorkspacePath::parse(raw).unwrap()
}

/// Writes `text` at `path`, unguarded.
async fn write(
    store: &InMemoryStore,
    run_id: &RunId,
    path: &str,
    text: &str,
) -> tt_ports::StorageResult<tt_ports::WriteOutcome> {
    store.write(run_id, &p(path), text, &WriteGuard::None).await
}

fn event(run_id: &RunId, n: u64, payload: serde_json::Value) -> NewRunEvent {
    NewRunEvent {
        id: EventId::generate(format!("{n:032x}")),
        run_id: run_id.clone(),
        timestamp: ts(0),
        level: EventLevel::Info,
        event_type: RunEventType::StatusChanged,
        payload: payload.into(),
    }
}

async fn journal_append(
    store: &InMemoryStore,
    event: NewRunEvent,
) -> tt_ports::StorageResult<tt_domain::event::RecordedEvent> {
    RunJournal::append(store, event).await
}

#[tokio::test]
async fn runs_are_listed_newest_first_and_duplicates_rejected() {
    let store = InMemoryStore::new();
    for (id, created) in [("run_a", 1), ("run_b", 3), ("run_c", 3)] {
        let run = run(id, created);
        store
            .create_run(&run, &crate::contract::manifest_for(&run))
            .await
            .unwrap();
    }
    let again = run("run_a", 1);
    let err = store
        .create_run(&again, &crate::contract::manifest_for(&again))
        .await
        .unwrap_err();
    assert!(matches!(err, StorageError::AlreadyExists { .. }));
    let listed: Vec<String> = store
        .list_runs(RunListPage::first(10))
        .await
        .unwrap()
        .into_iter()
        .map(|run| run.id.to_string())
        .collect();
    assert_eq!(listed, ["run_b", "run_c", "run_a"]);
    let missing = store.load_run(&RunId::from_raw("run_x")).await.unwrap_err();
    assert_eq!(missing.code(), "agent.not_found");
}

#[tokio::test]
async fn documents_round_trip() {
    let (store, run_id) = store_with_run("run_a").await;
    let doc = RunDocument::AgentResult(InvocationId::from_raw("inv_c"));
    assert_eq!(store.read_document(&run_id, &doc).await.unwrap(), None);
    store
        .write_document(&run_id, &doc, &json!({"summary": "ok"}))
        .await
        .unwrap();
    assert_eq!(
        store.read_document(&run_id, &doc).await.unwrap(),
        Some(json!({"summary": "ok"}))
    );
    assert_eq!(
        store.document(&run_id, &doc),
        Some(json!({"summary": "ok"}))
    );
}

#[tokio::test]
async fn journal_pages_follow_event_page_semantics() {
    let (store, run_id) = store_with_run("run_a").await;
    for n in 1..=10u64 {
        let inv = if n % 2 == 0 { "inv_even" } else { "inv_odd" };
        let appended = journal_append(
            &store,
            event(&run_id, n, json!({"eventScope": {"invocationId": inv}})),
        )
        .await
        .unwrap();
        assert_eq!(appended.seq, n);
    }
    assert_eq!(store.last_seq(&run_id).await.unwrap(), 10);
    let seqs = |events: Vec<tt_domain::event::AgentRunEvent>| -> Vec<u64> {
        events.into_iter().map(|event| event.seq).collect()
    };
    let page =
        |after: Option<u64>, before: Option<u64>, limit: Option<usize>, inv: Option<&str>| {
            EventPage {
                after_seq: after,
                before_seq: before,
                limit,
                invocation_id: inv.map(str::to_owned),
            }
        };
    let read = |pg: EventPage| {
        let store = store.clone();
        let run_id = run_id.clone();
        async move { RunJournal::read(&*store, &run_id, &pg).await.unwrap() }
    };
    assert_eq!(seqs(read(page(None, None, Some(3), None)).await), [1, 2, 3]);
    assert_eq!(
        seqs(read(page(Some(7), None, None, None)).await),
        [8, 9, 10]
    );
    assert_eq!(
        seqs(read(page(Some(2), Some(8), Some(2), None)).await),
        [6, 7]
    );
    assert_eq!(
        seqs(read(page(None, Some(9), Some(2), Some("inv_even"))).await),
        [6, 8]
    );
    assert_eq!(
        seqs(read(page(Some(3), None, Some(2), Some("inv_odd"))).await),
        [5, 7]
    );
    assert_eq!(seqs(read(page(None, None, Some(0), None)).await), [1]);
}

#[tokio::test]
async fn injected_journal_failures_fire_once_without_consuming_a_seq() {
    let (store, run_id) = store_with_run("run_a").await;
    store.fail_next_journal_append();
    assert_code(
        journal_append(&store, event(&run_id, 1, json!({}))).await,
        error_codes::AGENT_STORAGE_IO,
    );
    assert_eq!(
        journal_append(&store, event(&run_id, 2, json!({})))
            .await
            .unwrap()
            .seq,
        1
    );

    store.fail_journal_append_of(
        RunEventType::RunCompleted,
        StorageError::Other("boom".into()),
    );
    assert_eq!(
        journal_append(&store, event(&run_id, 3, json!({})))
            .await
            .unwrap()
            .seq,
        2
    );
    let mut completed = event(&run_id, 4, json!({}));
    completed.event_type = RunEventType::RunCompleted;
    assert!(journal_append(&store, completed.clone()).await.is_err());
    assert_eq!(journal_append(&store, completed).await.unwrap().seq, 3);
    assert_eq!(store.pending_faults(), 0);

    store.fail_next(StoreOp::SaveRun, StorageError::Other("disk full".into()));
    let mut loaded = store.load_run(&run_id).await.unwrap();
    loaded.status = AgentRunStatus::CallingModel;
    assert!(store.save_run(&loaded).await.is_err());
    assert_eq!(store.run(&run_id).unwrap().status, AgentRunStatus::Created);
    store.save_run(&loaded).await.unwrap();
    assert_eq!(
        store.run(&run_id).unwrap().status,
        AgentRunStatus::CallingModel
    );
}

#[tokio::test(start_paused = true)]
async fn wait_for_event_wakes_on_append() {
    let (store, run_id) = store_with_run("run_a").await;
    let waiter = {
        let store = store.clone();
        let run_id = run_id.clone();
        tokio::spawn(async move { store.wait_for_event_type(&run_id, "run_completed").await })
    };
    tokio::task::yield_now().await;
    journal_append(&store, event(&run_id, 1, json!({})))
        .await
        .unwrap();
    let mut completed = event(&run_id, 2, json!({}));
    completed.event_type = RunEventType::RunCompleted;
    journal_append(&store, completed).await.unwrap();
    let found = waiter.await.unwrap();
    assert_eq!(found.seq, 2);
}

#[tokio::test]
async fn tasks_are_ordered_and_first_terminal_write_wins() {
    let (store, run_id) = store_with_run("run_a").await;
    let owner = run(run_id.as_str(), 0);
    store.create_task(&task(&owner, "task_b", 1)).await.unwrap();
    store.create_task(&task(&owner, "task_a", 1)).await.unwrap();
    store.create_task(&task(&owner, "task_0", 2)).await.unwrap();
    assert!(matches!(
        store
            .create_task(&task(&owner, "task_a", 5))
            .await
            .unwrap_err(),
        StorageError::AlreadyExists { .. }
    ));
    let ids: Vec<String> = store
        .list_tasks(&run_id)
        .await
        .unwrap()
        .into_iter()
        .map(|task| task.id.to_string())
        .collect();
    assert_eq!(ids, ["task_a", "task_b", "task_0"]);

    let id = TaskId::from_raw("task_a");
    let to = |status| TaskTransition {
        status,
        result_ref: None,
        error: None,
    };
    let mut handles = Vec::new();
    for n in 0..16 {
        let store = store.clone();
        let run_id = run_id.clone();
        let id = id.clone();
        let status = if n % 2 == 0 {
            TaskStatus::Completed
        } else {
            TaskStatus::Cancelled
        };
        handles.push(tokio::spawn(async move {
            store
                .transition_task(&run_id, &id, &to(status), ts(9))
                .await
                .unwrap()
                .changed
        }));
    }
    let mut changed = 0;
    for handle in handles {
        changed += usize::from(handle.await.unwrap());
    }
    assert_eq!(changed, 1);
    let stored = store.load_task(&run_id, &id).await.unwrap();
    assert!(stored.status.is_terminal());
    assert_eq!(stored.updated_at, ts(9));
}

#[tokio::test]
async fn workspace_guards_and_append() {
    let (store, run_id) = store_with_run("run_a").await;
    let path = p("output/main.md");
    let first = store
        .write(&run_id, &path, "hello", &WriteGuard::MustNotExist)
        .await
        .unwrap();
    assert_eq!(first.previous_sha256, None);
    assert_code(
        store
            .write(&run_id, &path, "again", &WriteGuard::MustNotExist)
            .await,
        error_codes::WORKSPACE_WRITE_STALE_FILE,
    );
    let err = store
        .write(
            &run_id,
            &path,
            "x",
            &WriteGuard::MustMatchSha256("nope".into()),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StorageError::GuardShaMismatch { .. }));
    assert_code(
        store
            .write(
                &run_id,
                &p("output/none.md"),
                "x",
                &WriteGuard::MustMatchSha256("a".into()),
            )
            .await,
        error_codes::WORKSPACE_FILE_NOT_FOUND,
    );
    let second = store
        .write(
            &run_id,
            &path,
            "hi",
            &WriteGuard::MustMatchSha256(first.sha256.clone()),
        )
        .await
        .unwrap();
    assert_eq!(second.previous_sha256, Some(first.sha256));

    let appended = WorkspaceRepository::append(&*store, &run_id, &path, " there")
        .await
        .unwrap();
    assert_eq!(appended.previous_sha256, Some(second.sha256));
    assert_eq!(appended.bytes, 8);
    assert_eq!(
        store.file_text(&run_id, "output/main.md").as_deref(),
        Some("hi there")
    );
    let created = WorkspaceRepository::append(&*store, &run_id, &p("scratch/log.md"), "a")
        .await
        .unwrap();
    assert_eq!(created.previous_sha256, None);

    // Directories and files cannot replace each other; unknown roots do not exist.
    assert_eq!(
        write(&store, &run_id, "output", "x")
            .await
            .unwrap_err()
            .code(),
        "workspace.path_is_directory"
    );
    assert!(matches!(
        write(&store, &run_id, "output/main.md/x", "x")
            .await
            .unwrap_err(),
        StorageError::NotADirectory { .. }
    ));
    assert_eq!(
        write(&store, &run_id, "input/x.json", "x")
            .await
            .unwrap_err()
            .code(),
        "agent.not_found"
    );
}

#[tokio::test]
async fn reads_and_listing() {
    let (store, run_id) = store_with_run("run_a").await;
    for path in [
        "output/main.md",
        "output/drafts/a.md",
        "output/drafts/deep/b.md",
    ] {
        write(&store, &run_id, path, path).await.unwrap();
    }
    assert_eq!(
        WorkspaceRepository::read(&*store, &run_id, &p("output/main.md"))
            .await
            .unwrap()
            .text,
        "output/main.md"
    );
    assert!(matches!(
        WorkspaceRepository::read(&*store, &run_id, &p("output/drafts"))
            .await
            .unwrap_err(),
        StorageError::IsDirectory { .. }
    ));
    assert!(matches!(
        WorkspaceRepository::read(&*store, &run_id, &p("scratch"))
            .await
            .unwrap_err(),
        StorageError::IsDirectory { .. }
    ));
    assert!(matches!(
        WorkspaceRepository::read(&*store, &run_id, &p("output/nope.md"))
            .await
            .unwrap_err(),
        StorageError::NotFound { .. }
    ));
    assert_eq!(
        store.sha256(&run_id, &p("output/nope.md")).await.unwrap(),
        None
    );

    let listing = |entries: Vec<tt_ports::WorkspaceEntry>| -> Vec<String> {
        entries
            .into_iter()
            .map(|entry| match entry.kind {
                EntryKind::File => entry.path.to_string(),
                EntryKind::Directory => format!("{}/", entry.path),
            })
            .collect()
    };
    assert_eq!(
        listing(store.list(&run_id, None, 1).await.unwrap()),
        ["output/", "persist/", "plan/", "scratch/", "summaries/"]
    );
    assert_eq!(
        listing(store.list(&run_id, Some(&p("output")), 1).await.unwrap()),
        ["output/drafts/", "output/main.md"]
    );
    assert_eq!(
        listing(store.list(&run_id, Some(&p("output")), 3).await.unwrap()),
        [
            "output/drafts/",
            "output/drafts/a.md",
            "output/drafts/deep/",
            "output/drafts/deep/b.md",
            "output/main.md"
        ]
    );
    assert_eq!(
        listing(store.list(&run_id, None, 2).await.unwrap()),
        [
            "output/",
            "output/drafts/",
            "output/main.md",
            "persist/",
            "plan/",
            "scratch/",
            "summaries/"
        ]
    );
    assert!(matches!(
        store
            .list(&run_id, Some(&p("output/main.md")), 1)
            .await
            .unwrap_err(),
        StorageError::NotADirectory { .. }
    ));
    assert!(matches!(
        store
            .list(&run_id, Some(&p("output/none")), 1)
            .await
            .unwrap_err(),
        StorageError::NotFound { .. }
    ));
    assert!(matches!(
        store.list(&run_id, Some(&p("input")), 1).await.unwrap_err(),
        StorageError::NotFound { .. }
    ));

    let walked: Vec<String> = store
        .walk_files(&run_id, &[WorkspaceRoot::Output], 2, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|path| path.to_string())
        .collect();
    assert_eq!(walked, ["output/drafts/a.md", "output/main.md"]);
    let bounded = store
        .walk_files(&run_id, &[WorkspaceRoot::Output], 8, 1)
        .await
        .unwrap();
    assert_eq!(bounded.len(), 1);
}

#[tokio::test]
async fn checkpoints_record_existing_files_only() {
    let (store, run_id) = store_with_run("run_a").await;
    write(&store, &run_id, "output/main.md", "v1")
        .await
        .unwrap();
    let cp1 = store
        .create_checkpoint(
            &run_id,
            CheckpointReason::ToolWorkspaceWrite,
            4,
            &[p("output/main.md"), p("output/missing.md"), p("output")],
            ts(7),
        )
        .await
        .unwrap();
    assert_eq!(cp1.id.as_str(), "cp_000001");
    assert_eq!(cp1.seq, 1);
    assert_eq!(cp1.event_seq, 4);
    assert_eq!(cp1.files.len(), 1);
    assert_eq!(cp1.files[0].bytes, 2);
    write(&store, &run_id, "output/main.md", "v2")
        .await
        .unwrap();
    let cp2 = store
        .create_checkpoint(
            &run_id,
            CheckpointReason::ChatCommit,
            5,
            &[p("output/main.md")],
            ts(8),
        )
        .await
        .unwrap();
    assert_eq!(cp2.id.as_str(), "cp_000002");
    assert_eq!(
        store
            .checkpoint_file(&run_id, "cp_000001", "output/main.md")
            .as_deref(),
        Some("v1")
    );
    assert_eq!(store.checkpoints(&run_id).len(), 2);
    assert_eq!(
        store
            .checkpoint_blob(&run_id, &tt_domain::text::sha256_hex(b"v1"))
            .await
            .unwrap()
            .as_deref(),
        Some("v1")
    );
}

#[tokio::test]
async fn persist_projection_and_promotion() {
    let (store, run_id) = store_with_run("run_a").await;
    let workspace_id = store.run(&run_id).unwrap().workspace_id;
    store.put_persistent_state(
        &workspace_id,
        "run_base",
        [("persist/notes.md", "n1"), ("keep.md", "k")],
    );

    assert_code(
        store
            .init_persist_projection(&run_id, Some("run_missing"))
            .await,
        error_codes::AGENT_PERSISTENT_STATE_ROOT_MISSING,
    );

    let snapshot = store
        .init_persist_projection(&run_id, Some("run_base"))
        .await
        .unwrap();
    assert_eq!(snapshot.base_state_id.as_deref(), Some("run_base"));
    assert_eq!(snapshot.files.len(), 2);
    assert_eq!(
        store.file_text(&run_id, "persist/notes.md").as_deref(),
        Some("n1")
    );
    assert!(
        store
            .document(&run_id, &RunDocument::PersistSnapshot)
            .is_some()
    );

    write(&store, &run_id, "persist/notes.md", "n2")
        .await
        .unwrap();
    write(&store, &run_id, "persist/new.md", "fresh")
        .await
        .unwrap();
    let changes = store
        .promote_persist(&run_id, &snapshot, ts(9))
        .await
        .unwrap();
    assert_eq!(changes.state_id, "run_a");
    assert_eq!(changes.base_state_id.as_deref(), Some("run_base"));
    let kinds: Vec<(String, PersistentChangeKind)> = changes
        .changes
        .iter()
        .map(|change| (change.path.to_string(), change.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            ("persist/new.md".to_owned(), PersistentChangeKind::Added),
            (
                "persist/notes.md".to_owned(),
                PersistentChangeKind::Modified
            )
        ]
    );
    let state = store.persistent_state(&workspace_id, "run_a").unwrap();
    assert_eq!(state.files.len(), 3);

    assert_code(
        store.promote_persist(&run_id, &snapshot, ts(10)).await,
        error_codes::AGENT_PERSISTENT_STATE_EXISTS,
    );
}

#[tokio::test]
async fn persist_deletes_are_unsupported() {
    let (store, run_id) = store_with_run("run_a").await;
    write(&store, &run_id, "persist/a.md", "a").await.unwrap();
    let mut snapshot = store.init_persist_projection(&run_id, None).await.unwrap();
    assert_eq!(snapshot.files.len(), 1);
    snapshot.files.push(tt_domain::workspace::FileFingerprint {
        path: p("persist/gone.md"),
        sha256: "x".into(),
        bytes: 1,
    });
    assert_code(
        store.promote_persist(&run_id, &snapshot, ts(1)).await,
        error_codes::AGENT_PERSISTENT_DELETE_UNSUPPORTED,
    );
}

#[tokio::test]
async fn profiles_are_loaded_and_listed_sorted() {
    let store = InMemoryStore::new();
    let mut critic = default_writer_definition();
    critic.id = ProfileId::parse("critic").unwrap();
    store.put_profile(default_writer_definition());
    store.put_profile(critic);
    let ids: Vec<String> = store
        .list_profile_ids()
        .await
        .unwrap()
        .into_iter()
        .map(|id| id.to_string())
        .collect();
    assert_eq!(ids, ["critic", "default-writer"]);
    assert!(
        store
            .load_profile(&ProfileId::parse("nobody").unwrap())
            .await
            .unwrap()
            .is_none()
    );
}
