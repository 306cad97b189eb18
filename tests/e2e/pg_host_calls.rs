//! The host calls of the run handle and of profiles on PostgreSQL: an unknown run is refused
//! with `agent.not_found` by the calls that read through the journal and the workspace (as on
//! the file store, `crates/tt-runtime/tests/host_api/unknown_run.rs`), and profiles are listed,
//! read and deleted in the database, the built-in one listed and kept.

use std::sync::Arc;

use tt_adapter_storage_postgres::cluster::TestCluster;
use tt_runtime::{
    AgentRuntimeBuilder, CommitBridgeChoice, FnProvider, ModelReply, ProfileId, ReadEventsRequest,
};

const UNKNOWN: &str = "run_00000000000000000000000000000404";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_an_unknown_run_is_not_found_and_profiles_are_managed_in_the_database() {
    let cluster = tokio::task::block_in_place(|| TestCluster::start(false)).unwrap();
    let url = cluster.create_database("tt_host_calls").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .store(tt_runtime::open_store_url(&url).await.unwrap())
        .provider(Arc::new(FnProvider::new(|_| {
            Ok(ModelReply::text("unused"))
        })))
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap();
    let handle = runtime.run(UNKNOWN);
    let codes = [
        ("usage", runtime.usage(UNKNOWN).await.err()),
        ("handle.usage", handle.usage().await.err()),
        ("handle.result", handle.result().await.err()),
        ("handle.pending", handle.pending().await.err()),
        (
            "unrecorded_failure",
            runtime.unrecorded_failure(UNKNOWN).await.err(),
        ),
        (
            "read_events",
            runtime
                .read_events(ReadEventsRequest {
                    run_id: UNKNOWN.to_owned(),
                    ..ReadEventsRequest::default()
                })
                .await
                .err(),
        ),
        ("check_run", runtime.check_run(UNKNOWN).await.err()),
        (
            "list_workspace_files",
            runtime.list_workspace_files(UNKNOWN).await.err(),
        ),
        (
            "timeline_projection",
            runtime.timeline_projection(UNKNOWN).await.err(),
        ),
        ("handle.events", handle.events().next().await.err()),
    ];
    let wrong: Vec<String> = codes
        .iter()
        .filter(|(_, error)| error.as_ref().map(|e| e.code.as_str()) != Some("agent.not_found"))
        .map(|(name, error)| format!("{name}: {error:?}"))
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");

    // Profiles, in the database: none stored, the built-in listed.
    let listed = runtime.list_profiles().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert!(listed[0].built_in);
    let mut critic = runtime.get_profile("default-writer").await.unwrap();
    critic.id = ProfileId::parse("critic").unwrap();
    runtime.save_profile(critic.clone()).await.unwrap();
    let ids: Vec<(String, bool)> = runtime
        .list_profiles()
        .await
        .unwrap()
        .into_iter()
        .map(|p| (p.id.to_string(), p.built_in))
        .collect();
    assert_eq!(
        ids,
        [
            ("critic".to_owned(), false),
            ("default-writer".to_owned(), true)
        ]
    );
    assert_eq!(runtime.get_profile("critic").await.unwrap(), critic);
    assert!(
        !dir.path().join("profiles/critic.json").exists(),
        "kept in the database"
    );
    runtime.delete_profile("critic").await.unwrap();
    assert_eq!(
        runtime.get_profile("critic").await.unwrap_err().code,
        "agent.profile_not_found"
    );
    assert_eq!(
        runtime.delete_profile("critic").await.unwrap_err().code,
        "agent.profile_not_found"
    );
    assert_eq!(
        runtime
            .delete_profile("default-writer")
            .await
            .unwrap_err()
            .code,
        "agent.profile_built_in"
    );
    runtime.shutdown().await.unwrap();
}
