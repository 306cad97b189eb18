//! The run-directory layout on disk matches the documented one.

use serde_json::json;
use tt_domain::ids::InvocationId;
use tt_domain::workspace::{CheckpointReason, WriteGuard};
use tt_ports::{
    AgentInvocationRepository, AgentRunRepository, RunDocument, RunJournal, WorkspaceRepository,
};
use tt_testkit::contract::{invocation, task, tool_event, ts, wp};

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
    store
        .create_checkpoint(
            &run.id,
            CheckpointReason::ChatCommit,
            1,
            &[wp("output/main.md")],
            ts(3),
        )
        .await
        .unwrap();
    store.init_persist_projection(&run.id, None).await.unwrap();

    assert_eq!(
        files_under(&dir),
        [
            "agent-results/inv_child.json",
            "checkpoints/cp_000001/checkpoint.json",
            "checkpoints/cp_000001/output/main.md",
            "events.jsonl",
            "input/invocations/inv_child/tool_snapshot.json",
            "input/persist_snapshot.json",
            "input/prompt_snapshot.json",
            "invocations/inv_child.json",
            "invocations/inv_root.json",
            "manifest.json",
            "model-responses/inv_child/round-002.json",
            "model-responses/round-001.json",
            "output/main.md",
            "run.json",
            "tasks/task_1.json",
            "tool-args/call_00112233aabbccdd.json",
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
    assert_eq!(
        files_under(&fx.data_root().join("index")),
        [format!("runs/{}.json", run.id)]
    );
    let checkpoint: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("checkpoints/cp_000001/checkpoint.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(checkpoint["id"], json!("cp_000001"));
    assert_eq!(checkpoint["reason"], json!("chat_commit"));
    assert_eq!(checkpoint["eventSeq"], json!(1));
    assert_eq!(checkpoint["files"][0]["path"], json!("output/main.md"));
}
