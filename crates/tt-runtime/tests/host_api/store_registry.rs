//! The store table (`StoreRegistry`): a URL's scheme picks the factory an adapter registered;
//! an unknown one is refused with a code; `file://<dir>` is the file store there; and
//! tt-testkit's `memory://` store, registered as an embedder's test does, keeps a whole run and
//! the named connections, with nothing under the data dir.

use tt_runtime::{
    AgentRunStatus, ConnectionSource, StartRunRequest, StoreChoice, StoreOptions, StoreRegistry,
};
use tt_testkit::memory_store::MemoryStores;

use super::{committing_writer, run_to_end, transcript_builder};

#[tokio::test]
async fn an_unknown_scheme_is_refused_with_a_code_naming_what_would_open() {
    let registry = StoreRegistry::with_defaults();
    assert_eq!(registry.schemes(), ["file", "postgres", "postgresql"]);
    for url in ["mysql://tt:secret@127.0.0.1/tt", "no-scheme", "memory://a"] {
        let error = registry
            .open(url, &StoreOptions::default())
            .await
            .unwrap_err();
        assert_eq!(error.code, "agent.store_url_unsupported", "{url}");
        assert!(!error.message.contains("secret"), "{}", error.message);
        assert!(
            error.message.contains("postgres://user@host:port/db")
                && error.message.contains("file:///path/to/dir"),
            "{}",
            error.message
        );
    }
    let error = registry
        .open("file://", &StoreOptions::default())
        .await
        .unwrap_err();
    assert_eq!(error.code, "agent.store_url_invalid", "{}", error.message);
    let error = StoreRegistry::new()
        .open("postgres://h/db", &StoreOptions::default())
        .await
        .unwrap_err();
    assert_eq!(error.code, "agent.store_url_unsupported");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_url_keeps_the_runs_in_its_directory_not_the_data_dir() {
    let data_dir = tempfile::tempdir().unwrap();
    let store_dir = tempfile::tempdir().unwrap();
    // Schemes are compared without case.
    let url = format!("FILE://{}", store_dir.path().display());
    let store = StoreRegistry::with_defaults()
        .open(&url, &StoreOptions::default())
        .await
        .unwrap();
    let runtime = transcript_builder(data_dir.path(), committing_writer())
        .store(store)
        .build()
        .unwrap();
    let run = run_to_end(
        &runtime,
        StartRunRequest::new("file-url-chat", "Write a scene."),
    )
    .await;
    assert_eq!(run.status, AgentRunStatus::Completed);
    runtime.shutdown().await.unwrap();
    assert!(store_dir.path().join("chats").exists());
    assert!(store_dir.path().join("transcripts").exists());
    assert!(
        !data_dir.path().join("chats").exists(),
        "a run landed under the data dir"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registered_memory_store_keeps_runs_and_connections_off_the_data_dir() {
    let data_dir = tempfile::tempdir().unwrap();
    let memory = MemoryStores::new();
    let registry = StoreRegistry::with_defaults().register(memory.clone());
    assert_eq!(
        registry.schemes(),
        ["file", "memory", "postgres", "postgresql"]
    );
    let StoreChoice::Ports(ports) = registry
        .open("memory://shared", &StoreOptions::default())
        .await
        .unwrap()
    else {
        panic!("a URL opens a store of its own");
    };
    assert_eq!(ports.description, "memory://shared");
    let stored = memory.get("shared").unwrap();
    tt_ports::ConnectionRepository::put_connection(
        &*stored.connections,
        "remote",
        r#"{"connection": "openai:http://127.0.0.1:9/v1", "model": "shared-model"}"#,
    )
    .await
    .unwrap();
    let runtime = transcript_builder(data_dir.path(), committing_writer())
        .store(StoreChoice::Ports(ports))
        .build()
        .unwrap();
    let connections = runtime.list_connections().await.unwrap();
    assert_eq!(connections.len(), 1);
    assert_eq!(connections[0].name, "remote");
    assert_eq!(connections[0].source, ConnectionSource::File);
    assert_eq!(connections[0].description["model"], "shared-model");

    let run = run_to_end(
        &runtime,
        StartRunRequest::new("memory-chat", "Write a scene."),
    )
    .await;
    assert_eq!(run.status, AgentRunStatus::Completed);
    runtime.shutdown().await.unwrap();
    let kept = tt_ports::AgentRunRepository::load_run(&*stored.store, &run.id)
        .await
        .unwrap();
    assert_eq!(kept.status, AgentRunStatus::Completed);
    let transcript = tt_ports::TranscriptRepository::read_transcript(
        &*stored.transcripts,
        run.workspace_id.as_str(),
    )
    .await
    .unwrap();
    assert_eq!(transcript.len(), 1, "the commit went to the memory store");
    for kept_on_disk in ["chats", "connections", "transcripts"] {
        assert!(
            !data_dir.path().join(kept_on_disk).exists(),
            "{kept_on_disk} landed under the data dir"
        );
    }
}
