//! Persistent states on disk: the promoted state's manifest, and the checks made when a state
//! is projected into a new run.

use serde_json::{Value, json};
use tt_domain::workspace::WriteGuard;
use tt_ports::{StorageError, WorkspaceRepository};
use tt_testkit::contract::{ts, wp};

use super::{Fixture, files_under};

fn domain_code<T: std::fmt::Debug>(result: Result<T, StorageError>) -> &'static str {
    match result {
        Err(StorageError::Domain(err)) => err.code.as_str(),
        other => panic!("expected a domain error, got {other:?}"),
    }
}

#[tokio::test]
async fn promoted_state_has_a_manifest_and_checked_projection() {
    let fx = Fixture::new();
    let (a, _) = fx.run(1).await;
    let snapshot = fx.store.init_persist_projection(&a.id, None).await.unwrap();
    fx.store
        .write(
            &a.id,
            &wp("persist/memory.md"),
            "remember",
            &WriteGuard::None,
        )
        .await
        .unwrap();
    fx.store
        .promote_persist(&a.id, &snapshot, ts(42))
        .await
        .unwrap();

    let state_dir = fx.data_root().join(format!(
        "chats/{}/persistent-states/{}",
        a.workspace_id, a.id
    ));
    assert_eq!(
        files_under(&state_dir),
        ["manifest.json", "persist/memory.md"]
    );
    let manifest_path = state_dir.join("manifest.json");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
    assert_eq!(manifest["version"], json!(1));
    assert_eq!(manifest["stateId"], json!(a.id.as_str()));
    assert_eq!(manifest["runId"], json!(a.id.as_str()));
    assert_eq!(manifest["workspaceId"], json!(a.workspace_id.as_str()));
    assert_eq!(manifest["stableChatId"], json!(a.stable_chat_id));
    assert!(manifest.get("baseStateId").is_none());
    assert_eq!(manifest["createdAt"], json!("1970-01-01T00:00:00.042Z"));
    assert_eq!(manifest["files"][0]["path"], json!("persist/memory.md"));
    assert_eq!(manifest["changes"][0]["kind"], json!("added"));

    let (b, _) = fx.run(2).await;
    let tamper = |key: &str, value: &str| {
        let mut edited = manifest.clone();
        edited[key] = json!(value);
        std::fs::write(&manifest_path, serde_json::to_vec(&edited).unwrap()).unwrap();
    };
    let project_b = || fx.store.init_persist_projection(&b.id, Some(a.id.as_str()));
    tamper("stateId", "run_someone_else");
    assert_eq!(
        domain_code(project_b().await),
        "agent.persistent_state_manifest_mismatch"
    );
    tamper("workspaceId", "chat_0000000000000000");
    assert_eq!(
        domain_code(project_b().await),
        "agent.persistent_state_workspace_mismatch"
    );
    std::fs::write(&manifest_path, b"{ not json").unwrap();
    assert_eq!(
        domain_code(project_b().await),
        "agent.persistent_state_root_invalid"
    );
    std::fs::write(&manifest_path, serde_json::to_vec(&manifest).unwrap()).unwrap();
    let projected = project_b().await.unwrap();
    assert_eq!(projected.files.len(), 1);
    assert_eq!(fx.text(&b.id, "persist/memory.md").await, "remember");
}
