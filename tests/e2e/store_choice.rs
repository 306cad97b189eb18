//! The store is a choice of the builder: a runtime over another adapter's storage ports (here
//! the in-memory fake) runs a whole run in it, and nothing of the run lands under the data dir.

use std::sync::Arc;

use serde_json::json;
use tt_ports::AgentRunRepository;
use tt_runtime::{
    AgentRunStatus, AgentRuntimeBuilder, CommitBridgeChoice, FnProvider, ListRunsRequest,
    ModelReply, StartRunRequest, StoragePorts, StoreChoice,
};
use tt_testkit::fakes::InMemoryStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runtime_over_other_storage_ports_keeps_the_whole_run_there() {
    let dir = tempfile::tempdir().unwrap();
    let store = InMemoryStore::new();
    let model = Arc::new(FnProvider::new(|request| {
        Ok(match request.round {
            1 => ModelReply::tool_call(
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "Night fell.\n"}),
            ),
            2 => ModelReply::tool_call("workspace_commit", json!({})),
            _ => ModelReply::tool_call("workspace_finish", json!({})),
        })
    }));
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(model)
        .commit_bridge(CommitBridgeChoice::Transcript)
        .store(StoreChoice::Ports(StoragePorts::from_store(
            Arc::clone(&store),
            "memory",
        )))
        .build()
        .unwrap();
    let run = runtime
        .start_run(StartRunRequest::new("store-chat", "Write a scene."))
        .await
        .unwrap();
    let done = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(done.status, AgentRunStatus::Completed);

    // The run, its journal and its workspace are in the chosen store.
    let stored = store.load_run(&run.id).await.unwrap();
    assert_eq!(stored.status, AgentRunStatus::Completed);
    let listed = runtime
        .list_runs(ListRunsRequest {
            offset: 0,
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, run.id);
    let file = tt_ports::WorkspaceRepository::read(
        &*store,
        &run.id,
        &tt_domain::workspace::WorkspacePath::parse("output/main.md").unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(file.text, "Night fell.\n");
    // ... and no run directory was made under the data dir.
    assert!(
        !dir.path().join("chats").exists(),
        "a run landed under the data dir"
    );
}
