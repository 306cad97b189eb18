//! The run-directory layout on disk matches the documented one.

use serde_json::json;
use tt_domain::ids::InvocationId;
use tt_domain::workspace::{CheckpointReason, WriteGuard};
use tt_ports::{
    AgentInvocationRepository, AgentRunRepository, RunDocument, RunJournal, WorkspaceRepository,
};
use tt_testkit::contract::{invocation, task, tool_event, wp};

use super::{Fixture, files_under};

#[tokio::test]
async fn files_land_where_the_layout_says() {
    let fx = Fixture::new();
    let (run, dir) = fx.run(1).await;
    let store = &fx.store;
    store
        .save_invocation(&invocation(&run, "inv_root", 1))
        .await
        .unwrap();
    store
        .save_invocation(&invocation(&run, "inv_child", 2))
        .await
        .unwrap();
    store.create_task(&task(&run, "task_1", 1)).await.unwrap();
    let child = InvocationId::from_raw("inv_child");
    for document in [
        RunDocument::PromptSnapshot,
        RunDocument::InvocationToolSnapshot(child.clone()),
        RunDocument::ToolArgs {
            call_file_key: "call_00112233aabbccdd".to_owned(),
        },
        RunDocument::ModelResponse {
            invocation_id: InvocationId::root(),
            round: 1,
        },
        RunDocument::ModelResponse {
            invocation_id: child.clone(),
            round: 2,
        },
        RunDocument::AgentResult(child),
    ] {
        store
            .write_document(&run.id, &document, &json!({}))
            .await
            .unwrap();
    }
    RunJournal::append(store.as_ref(), tool_event(&run.id, 1, "inv_root"))
        .await
        .unwrap();
    store
        .write(&run.id, &wp("output/main.md"), "m", &WriteGuard::None)
        .await
        .unwrap();
    super::checkpoint(
        store,
        &run.id,
        CheckpointReason::ChatCommit,
        1,
        wp("output/main.md"),
        3,
    )
    .await;
    store.init_persist_projection(&run.id, None).await.unwrap();

    assert_eq!(
        files_under(&dir),
        [
            "blobs.jsonl",
            "events.jsonl",
            "input/persist_snapshot.json",
            "input/prompt_snapshot.json",
            "manifest.json",
            "output/main.md",
            "owner.lock",
            "records.jsonl",
            "run.json",
        ]
    );
    let relative = dir.strip_prefix(fx.data_root()).unwrap();
    assert_eq!(
        relative.to_string_lossy(),
        format!("chats/{}/runs/{}", run.workspace_id, run.id)
    );
    for root in ["output", "scratch", "plan", "summaries", "persist"] {
        assert!(dir.join(root).is_dir(), "{root}/ missing");
    }
    // The run's index copy, its line in the run log and its marker as a run not yet ended.
    assert_eq!(
        files_under(&fx.data_root().join("index")),
        [
            "runs.log".to_owned(),
            "runs.log.lock".to_owned(),
            format!("runs/{}.json", run.id),
            format!("unfinished/{}", run.id),
        ]
    );
    // Every record stays reachable by the reference its events use.
    let checkpoint = store
        .read_record(&run.id, "checkpoints/cp_000001")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(checkpoint["id"], json!("cp_000001"));
    assert_eq!(checkpoint["reason"], json!("chat_commit"));
    assert_eq!(checkpoint["eventSeq"], json!(1));
    assert_eq!(checkpoint["files"][0]["path"], json!("output/main.md"));
    let sha = checkpoint["files"][0]["sha256"].as_str().unwrap();
    assert_eq!(
        store
            .read_record(&run.id, &format!("blobs/{sha}"))
            .await
            .unwrap(),
        Some(json!("m"))
    );
    for reference in [
        "run.json",
        "manifest.json",
        "input/prompt_snapshot.json",
        "input/invocations/inv_child/tool_snapshot.json",
        "tool-args/call_00112233aabbccdd.json",
        "model-responses/round-001.json",
        "model-responses/inv_child/round-002.json",
        "agent-results/inv_child.json",
        "tasks/task_1.json",
        "invocations/inv_root.json",
    ] {
        assert!(
            store
                .read_record(&run.id, reference)
                .await
                .unwrap()
                .is_some(),
            "{reference}"
        );
    }
    assert_eq!(
        store
            .read_record(&run.id, "tasks/task_9.json")
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .read_record(&run.id, "nonsense/x")
            .await
            .unwrap_err()
            .code(),
        "agent.record_reference_invalid"
    );
}
