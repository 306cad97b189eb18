//! One writer per run: the OS lock, read-only stores beside a live writer, and marking runs
//! whose owner is gone `interrupted`.

use tt_adapter_storage_userdata::{OWNER_EXITED, UserDataStore};
use tt_domain::ids::{InvocationId, TaskId};
use tt_domain::invocation::InvocationStatus;
use tt_domain::run::AgentRunStatus;
use tt_domain::task::{TaskStatus, TaskTransition};
use tt_domain::workspace::WriteGuard;
use tt_ports::{
    AgentInvocationRepository, AgentRunRepository, EventPage, RunJournal, RunListPage,
    StorageError, WorkspaceRepository,
};

use tt_testkit::contract::{invocation, task, tool_event, ts, wp};

use super::{Fixture, event_ids, files_under};

#[tokio::test]
async fn a_second_writer_gets_run_locked_naming_the_owner() {
    let fx = Fixture::new();
    let (run, _) = fx.run(1).await;
    let second = UserDataStore::open(fx.data_root()).unwrap();
    let err = RunJournal::append(second.as_ref(), tool_event(&run.id, 1, "inv_root"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "agent.run_locked");
    match &err {
        StorageError::Locked { owner_pid, .. } => {
            assert_eq!(owner_pid, &Some(std::process::id()));
        }
        other => panic!("expected Locked, got {other:?}"),
    }
    // Both stores are of this process: the message says so rather than "another process".
    assert!(
        err.to_string().contains(&format!(
            "another runtime of this process (pid {})",
            std::process::id()
        )),
        "{err}"
    );
    for result in [
        second.save_run(&run).await.map(drop),
        second
            .write(&run.id, &wp("output/a.md"), "x", &WriteGuard::None)
            .await
            .map(drop),
        second.create_task(&task(&run, "task_1", 1)).await.map(drop),
    ] {
        assert_eq!(result.unwrap_err().code(), "agent.run_locked");
    }
    // Once the owner closes the run, the lock is free.
    fx.store.close_run(&run.id).unwrap();
    RunJournal::append(second.as_ref(), tool_event(&run.id, 1, "inv_root"))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_read_only_store_follows_a_live_writer_and_never_writes() {
    let fx = Fixture::new();
    let (run, dir) = fx.run(1).await;
    let reader = UserDataStore::open_read_only(fx.data_root());
    assert!(reader.is_read_only());
    fx.store
        .save_invocation(&invocation(&run, "inv_root", 1))
        .await
        .unwrap();
    let page = EventPage {
        limit: Some(500),
        ..EventPage::default()
    };
    for n in 1..=5u64 {
        RunJournal::append(fx.store.as_ref(), tool_event(&run.id, n, "inv_root"))
            .await
            .unwrap();
        // Each read sees every event appended so far.
        let seen = RunJournal::read(reader.as_ref(), &run.id, &page)
            .await
            .unwrap();
        assert_eq!(seen.len() as u64, n);
        assert_eq!(reader.last_seq(&run.id).await.unwrap(), n);
    }
    // A live owner's run keeps its status for readers.
    assert_eq!(
        reader.load_run(&run.id).await.unwrap().status,
        AgentRunStatus::Created
    );
    assert_eq!(reader.list_invocations(&run.id).await.unwrap().len(), 1);
    let before = files_under(&dir);
    let err = RunJournal::append(reader.as_ref(), tool_event(&run.id, 9, "inv_root"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "agent.storage_read_only");
    assert_eq!(files_under(&dir), before);
    // A read-only store on a missing data dir creates nothing.
    let missing = fx.dir.path().join("nothing-here");
    let empty = UserDataStore::open_read_only(&missing);
    assert!(
        empty
            .list_runs(RunListPage::first(10))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(!missing.exists());
}

#[tokio::test]
async fn unfinished_runs_without_an_owner_are_marked_interrupted() {
    let mut fx = Fixture::new();
    let (mut run, _) = fx.run(1).await;
    let (finished, _) = fx.run(2).await;
    let store = fx.store.clone();
    run.transition(AgentRunStatus::AwaitingHostCommit, ts(2))
        .unwrap();
    store.save_run(&run).await.unwrap();
    let mut root = invocation(&run, "inv_root", 1);
    root.transition(InvocationStatus::Running, ts(2)).unwrap();
    store.save_invocation(&root).await.unwrap();
    let mut child = invocation(&run, "inv_child", 2);
    child.transition(InvocationStatus::Running, ts(2)).unwrap();
    store.save_invocation(&child).await.unwrap();
    store.create_task(&task(&run, "task_1", 1)).await.unwrap();
    store.create_task(&task(&run, "task_2", 2)).await.unwrap();
    store
        .transition_task(
            &run.id,
            &TaskId::from_raw("task_2"),
            &TaskTransition {
                status: TaskStatus::Completed,
                result_ref: Some("agent-results/inv_x.json".to_owned()),
                error: None,
            },
            ts(3),
        )
        .await
        .unwrap();
    tt_testkit::store_tests::append_tool_events(store.as_ref(), &run.id, 1..=3).await;
    let root = fx.data_root();
    let summary_of = |run_id: &tt_domain::ids::RunId| {
        root.join("index/run-summaries")
            .join(format!("{run_id}.json"))
    };
    assert!(
        !summary_of(&run.id).exists(),
        "a run that has not ended has no summary"
    );
    let mut done = finished.clone();
    done.transition(AgentRunStatus::Failed, ts(4)).unwrap();
    store.save_run(&done).await.unwrap();
    let summary: tt_domain::run::AgentRunSummary =
        serde_json::from_str(&std::fs::read_to_string(summary_of(&done.id)).unwrap()).unwrap();
    assert_eq!(summary.status, AgentRunStatus::Failed);
    assert_eq!(summary.ended_at, ts(4));
    assert_eq!(summary.workspace_id, done.workspace_id);
    drop(store);

    // The process is gone; the next writer marks what it left.
    let (store, recovered) = fx.reopen_and_recover();
    assert_eq!(recovered.len(), 1);
    assert_eq!(recovered[0].run_id, run.id);
    assert_eq!(
        recovered[0].previous_status,
        AgentRunStatus::AwaitingHostCommit
    );
    assert_eq!(recovered[0].last_seq, 3);

    let stored = store.load_run(&run.id).await.unwrap();
    assert_eq!(stored.status, AgentRunStatus::Interrupted);
    assert_eq!(stored.updated_at, ts(100));
    let summary: tt_domain::run::AgentRunSummary =
        serde_json::from_str(&std::fs::read_to_string(summary_of(&run.id)).unwrap()).unwrap();
    assert_eq!(summary.status, AgentRunStatus::Interrupted);
    assert_eq!(summary.ended_at, ts(100));
    assert_eq!(
        store.load_run(&finished.id).await.unwrap().status,
        AgentRunStatus::Failed
    );
    let tasks = store.list_tasks(&run.id).await.unwrap();
    assert_eq!(tasks[0].status, TaskStatus::Interrupted);
    assert_eq!(tasks[1].status, TaskStatus::Completed);
    for id in ["inv_root", "inv_child"] {
        assert_eq!(
            store
                .load_invocation(&run.id, &InvocationId::from_raw(id))
                .await
                .unwrap()
                .status,
            InvocationStatus::Interrupted
        );
    }
    let events = tt_testkit::store_tests::read_journal(store.as_ref(), &run.id).await;
    let types: Vec<&str> = events.iter().map(|e| e.event_type.as_str()).collect();
    assert_eq!(
        types[3..],
        [
            "agent_task_interrupted",
            "agent_invocation_interrupted",
            "agent_invocation_interrupted",
            "run_interrupted"
        ]
    );
    // What recovery writes is what docs/events.md and the typed payloads describe.
    tt_testkit::events_doc::assert_documented(&events[3..]);
    tt_testkit::events_doc::assert_typed(&events[3..]);
    let last = events.last().unwrap();
    assert_eq!(last.seq, 7);
    assert_eq!(last.payload["reason"], OWNER_EXITED);
    assert_eq!(last.payload["lastSeq"], 3);
    assert_eq!(last.payload["eventScope"]["invocationId"], "inv_root");
    // The lock was released, and a second pass finds nothing left to do.
    assert!(
        store
            .recover_interrupted_runs(ts(200), event_ids())
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn runs_a_live_process_writes_are_not_interrupted() {
    let fx = Fixture::new();
    let (run, _) = fx.run(1).await;
    let other = UserDataStore::open(fx.data_root()).unwrap();
    assert!(
        other
            .recover_interrupted_runs(ts(100), event_ids())
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        fx.store.load_run(&run.id).await.unwrap().status,
        AgentRunStatus::Created
    );
}

#[tokio::test]
async fn temp_files_left_by_a_crash_are_removed_by_the_next_owner() {
    let mut fx = Fixture::new();
    let (run, dir) = fx.run(1).await;
    fx.store
        .write(&run.id, &wp("scratch/a/n.md"), "x", &WriteGuard::None)
        .await
        .unwrap();
    std::fs::write(dir.join("scratch/a/.tt-tmp-99-1"), b"half").unwrap();
    std::fs::create_dir(dir.join(".tt-tmp-99-2")).unwrap();
    let store = fx.reopen();
    RunJournal::append(store.as_ref(), tool_event(&run.id, 1, "inv_root"))
        .await
        .unwrap();
    let leftovers: Vec<String> = files_under(&dir)
        .into_iter()
        .filter(|path| path.contains(".tt-tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    assert!(!dir.join(".tt-tmp-99-2").exists());
}

#[tokio::test]
async fn finished_runs_release_their_lock_when_another_run_opens() {
    let fx = Fixture::new();
    let (mut run, _) = fx.run(1).await;
    run.transition(AgentRunStatus::Failed, ts(2)).unwrap();
    fx.store.save_run(&run).await.unwrap();
    assert_eq!(fx.store.open_run_count(), 1);
    fx.run(2).await;
    // Only the unfinished second run is still held.
    assert_eq!(fx.store.open_run_count(), 1);
    let other = UserDataStore::open(fx.data_root()).unwrap();
    RunJournal::append(other.as_ref(), tool_event(&run.id, 1, "inv_root"))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_run_that_cannot_be_created_leaves_nothing_behind() {
    let fx = Fixture::new();
    // The run index cannot be written: its folder is a file.
    std::fs::create_dir_all(fx.data_root().join("index")).unwrap();
    std::fs::write(fx.data_root().join("index/runs"), b"not a folder").unwrap();
    let run = tt_testkit::contract::sample_run(1);
    let err = fx
        .store
        .create_run(&run, &tt_testkit::contract::manifest_for(&run))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "agent.storage_io");
    assert_eq!(fx.store.open_run_count(), 0);
    let runs_dir = fx
        .data_root()
        .join("chats")
        .join(run.workspace_id.as_str())
        .join("runs");
    assert_eq!(std::fs::read_dir(runs_dir).unwrap().count(), 0);
}

/// `run.json` is not rewritten for the statuses a working run passes through, so the run's
/// journal says how far it got: `run_interrupted.previousStatus` names the last
/// `status_changed`, not the record's earlier status.
#[tokio::test]
async fn an_interrupted_run_reports_the_status_its_journal_reached() {
    let mut fx = Fixture::new();
    let (mut run, _) = fx.run(1).await;
    let store = fx.store.clone();
    run.transition(AgentRunStatus::InitializingWorkspace, ts(2))
        .unwrap();
    store.save_run(&run).await.unwrap();
    for (n, status) in [
        (1, "assembling_context"),
        (2, "calling_model"),
        (3, "dispatching_tool"),
    ] {
        RunJournal::append(
            store.as_ref(),
            tt_testkit::contract::new_event(
                &run.id,
                n,
                tt_domain::event::RunEventType::StatusChanged,
                serde_json::json!({"status": status}),
            ),
        )
        .await
        .unwrap();
    }
    RunJournal::append(store.as_ref(), tool_event(&run.id, 4, "inv_root"))
        .await
        .unwrap();
    drop(store);
    let (store, recovered) = fx.reopen_and_recover();
    assert_eq!(recovered.len(), 1);
    assert_eq!(
        recovered[0].previous_status,
        AgentRunStatus::DispatchingTool
    );
    let events = RunJournal::read(
        store.as_ref(),
        &run.id,
        &EventPage {
            after_seq: Some(4),
            ..EventPage::default()
        },
    )
    .await
    .unwrap();
    let interrupted = events
        .iter()
        .find(|event| event.event_type == "run_interrupted")
        .unwrap();
    assert_eq!(interrupted.payload["previousStatus"], "dispatching_tool");
}
