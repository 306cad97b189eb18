//! Atomic replacement of JSON state files, run lookup through the index after a restart, and
//! refusal of unsafe ids.

use serde_json::json;
use tt_domain::ids::{InvocationId, RunId, TaskId};
use tt_domain::run::{AgentRun, AgentRunStatus};
use tt_domain::task::TaskStatus;
use tt_domain::workspace::{CheckpointReason, WriteGuard};
use tt_ports::{
    AgentInvocationRepository, AgentRunRepository, RunDocument, RunJournal, RunListPage,
    StorageError, WorkspaceRepository,
};
use tt_testkit::contract::{invocation, task, tool_event, transition_to, ts, wp};

use super::{Fixture, files_under};

#[tokio::test]
async fn state_files_are_replaced_by_rename_and_leave_no_temp_files() {
    let fx = Fixture::new();
    let (mut run, dir) = fx.run(1).await;
    // A hard link keeps pointing at the old inode when a file is replaced by rename; an
    // in-place rewrite would change what it shows.
    let before = fx.dir.path().join("run-before.json");
    std::fs::hard_link(dir.join("run.json"), &before).unwrap();
    let old_text = std::fs::read_to_string(&before).unwrap();

    run.transition(AgentRunStatus::CallingModel, ts(5)).unwrap();
    fx.store.save_run(&run).await.unwrap();
    assert_eq!(std::fs::read_to_string(&before).unwrap(), old_text);
    let new_run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(new_run["status"], json!("calling_model"));
    let index: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fx.data_root().join(format!("index/runs/{}.json", run.id)))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(index, new_run);

    // Exercise every kind of state write, then look for leftovers.
    let store = &fx.store;
    store
        .save_invocation(&invocation(&run, "inv_root", 1))
        .await
        .unwrap();
    store.create_task(&task(&run, "task_1", 1)).await.unwrap();
    store
        .transition_task(
            &run.id,
            &TaskId::from_raw("task_1"),
            &transition_to(TaskStatus::Running),
            ts(6),
        )
        .await
        .unwrap();
    store
        .write_document(&run.id, &RunDocument::ResolvedProfile, &json!({"id": "x"}))
        .await
        .unwrap();
    store
        .write(&run.id, &wp("output/main.md"), "text", &WriteGuard::None)
        .await
        .unwrap();
    WorkspaceRepository::append(store.as_ref(), &run.id, &wp("output/main.md"), " more")
        .await
        .unwrap();
    super::checkpoint(
        store,
        &run.id,
        CheckpointReason::ToolWorkspaceWrite,
        1,
        wp("output/main.md"),
        7,
    )
    .await;
    let snapshot = store.init_persist_projection(&run.id, None).await.unwrap();
    store
        .write(&run.id, &wp("persist/m.md"), "m", &WriteGuard::None)
        .await
        .unwrap();
    store
        .promote_persist(&run.id, &snapshot, ts(8))
        .await
        .unwrap();
    RunJournal::append(store.as_ref(), tool_event(&run.id, 1, "inv_root"))
        .await
        .unwrap();

    let leftovers: Vec<String> = files_under(&fx.data_root())
        .into_iter()
        .filter(|path| path.contains(".tt-tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "temp files left: {leftovers:?}");
    let checkpoint = fx
        .store
        .read_record(&run.id, "checkpoints/cp_000001")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(checkpoint["files"][0]["path"], json!("output/main.md"));
    assert!(!dir.join("checkpoints").exists());
}

#[tokio::test]
async fn runs_are_found_through_the_index_after_reopening() {
    let mut fx = Fixture::new();
    let (run, _) = fx.run(1).await;
    fx.store
        .save_invocation(&invocation(&run, "inv_root", 1))
        .await
        .unwrap();
    fx.store
        .write(&run.id, &wp("output/main.md"), "kept", &WriteGuard::None)
        .await
        .unwrap();
    RunJournal::append(fx.store.as_ref(), tool_event(&run.id, 1, "inv_root"))
        .await
        .unwrap();

    let store = fx.reopen();
    // Nobody owns the unfinished run any more, so it reads as interrupted.
    let reloaded = store.load_run(&run.id).await.unwrap();
    assert_eq!(reloaded.status, AgentRunStatus::Interrupted);
    assert_eq!(
        AgentRun {
            status: run.status,
            input_message_count: 0,
            forked_from: None,
            profile_models: Default::default(),
            abandoned_at: None,
            unrecorded_end: None,
            rebuilt: None,
            connection_ref: None,
            generation: Default::default(),
            ..reloaded
        },
        run
    );
    assert_eq!(
        store
            .load_invocation(&run.id, &InvocationId::root())
            .await
            .unwrap()
            .id,
        InvocationId::root()
    );
    assert_eq!(
        WorkspaceRepository::read(store.as_ref(), &run.id, &wp("output/main.md"))
            .await
            .unwrap()
            .text,
        "kept"
    );
    let next = RunJournal::append(store.as_ref(), tool_event(&run.id, 2, "inv_root"))
        .await
        .unwrap();
    assert_eq!(next.seq, 2);
    assert_eq!(
        store.list_runs(RunListPage::first(10)).await.unwrap(),
        // Now this process writes the run, so it shows the stored status again.
        vec![run.clone()]
    );

    // Without its index entry (or with a corrupt one) a fresh process still finds the run.
    let index = fx.data_root().join(format!("index/runs/{}.json", run.id));
    std::fs::remove_file(&index).unwrap();
    assert_eq!(fx.reopen().load_run(&run.id).await.unwrap().id, run.id);
    std::fs::write(&index, b"{ not json").unwrap();
    let store = fx.reopen();
    assert_eq!(store.load_run(&run.id).await.unwrap().id, run.id);
    let listed = store.list_runs(RunListPage::first(10)).await.unwrap();
    assert_eq!(listed.len(), 1);
    match store.load_run(&RunId::from_raw("run_missing")).await {
        Err(StorageError::NotFound { .. }) => {}
        other => panic!("expected NotFound, got {other:?}"),
    }
}

#[tokio::test]
async fn unsafe_ids_never_become_paths() {
    let fx = Fixture::new();
    let (run, _) = fx.run(1).await;
    let code = |result: Result<_, StorageError>| result.map(|_: ()| ()).unwrap_err().code();
    assert_eq!(
        code(
            fx.store
                .load_run(&RunId::from_raw("../../etc"))
                .await
                .map(|_| ())
        ),
        "agent.storage_segment_invalid"
    );
    assert_eq!(
        code(
            fx.store
                .write_document(
                    &run.id,
                    &RunDocument::ToolArgs {
                        call_file_key: "../../escape".to_owned()
                    },
                    &json!({}),
                )
                .await
        ),
        "agent.storage_segment_invalid"
    );
    assert_eq!(
        code(
            fx.store
                .load_invocation(&run.id, &InvocationId::from_raw("inv/../../x"))
                .await
                .map(|_| ())
        ),
        "agent.storage_segment_invalid"
    );
    let mut bad = run.clone();
    bad.id = RunId::from_raw("run with spaces");
    assert_eq!(
        code(
            fx.store
                .create_run(&bad, &tt_testkit::contract::manifest_for(&bad))
                .await
        ),
        "agent.storage_segment_invalid"
    );
    assert_eq!(
        code(
            fx.store
                .init_persist_projection(&run.id, Some("../x"))
                .await
                .map(|_| ())
        ),
        "agent.persistent_state_root_invalid"
    );
}

#[tokio::test]
async fn non_utf8_workspace_files_are_corrupt() {
    let fx = Fixture::new();
    let (run, dir) = fx.run(1).await;
    std::fs::write(dir.join("output/binary.bin"), [0xff, 0xfe, 0x00]).unwrap();
    match WorkspaceRepository::read(fx.store.as_ref(), &run.id, &wp("output/binary.bin")).await {
        Err(err @ StorageError::Corrupt { .. }) => assert_eq!(err.code(), "agent.storage_corrupt"),
        other => panic!("expected Corrupt, got {other:?}"),
    }
    // Its fingerprint is still available, and appends work on bytes.
    assert!(
        fx.store
            .sha256(&run.id, &wp("output/binary.bin"))
            .await
            .unwrap()
            .is_some()
    );
}
