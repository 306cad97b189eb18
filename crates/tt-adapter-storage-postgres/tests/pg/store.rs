//! The store's own checks: migrations are recorded and applied once, checkpoints keep every
//! version, and what the server functions write reads back.

use tt_adapter_storage_postgres::PostgresStore;
use tt_adapter_storage_postgres::schema::MIGRATIONS;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_are_recorded_and_applied_once() {
    let store = crate::fresh_store().await;
    let latest = MIGRATIONS.last().map(|(version, _, _)| *version).unwrap();
    assert_eq!(store.schema_version().await.unwrap(), latest);
    let url = crate::cluster().url("tt_case_migrate_twice");
    super::database("tt_case_migrate_twice").await;
    let first = PostgresStore::open(&url).await.unwrap();
    let second = PostgresStore::open(&url).await.unwrap();
    assert_eq!(first.schema_version().await.unwrap(), latest);
    assert_eq!(second.schema_version().await.unwrap(), latest);
}

/// A database a newer build migrated further is refused, not read with rules that may take its
/// rows for damage.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_migrated_by_a_newer_build_is_refused() {
    let url = crate::cluster().url("tt_case_migrate_newer");
    super::database("tt_case_migrate_newer").await;
    let store = PostgresStore::open(&url).await.unwrap();
    let latest = store.schema_version().await.unwrap();
    let client = super::sql_client(&url).await;
    client
        .execute(
            "INSERT INTO schema_migrations (version, description) VALUES ($1, 'from the future')",
            &[&(latest + 1)],
        )
        .await
        .unwrap();
    let Err(err) = PostgresStore::open(&url).await else {
        panic!("a database at a newer schema was opened");
    };
    let message = err.to_string();
    assert!(
        message.contains(&format!(
            "version {}, newer than this build's {latest}",
            latest + 1
        )),
        "{message}"
    );
}

/// PostgreSQL keeps every checkpointed version, so a branch (docs/branching.md) can rebuild a
/// workspace from any of them, not only from the current file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpointed_versions_read_back_by_their_sha256() {
    use tt_domain::text::sha256_hex;
    use tt_domain::workspace::{CheckpointReason, WriteGuard};
    use tt_ports::{AgentRunRepository, WorkspaceRepository};
    use tt_testkit::contract::{manifest_for, sample_run, ts, wp};
    let store = crate::fresh_store().await;
    let run = sample_run(1);
    store.create_run(&run, &manifest_for(&run)).await.unwrap();
    let path = wp("output/main.md");
    for (n, text) in ["draft 1", "draft 2!"].into_iter().enumerate() {
        store
            .write(&run.id, &path, text, &WriteGuard::None)
            .await
            .unwrap();
        store
            .create_checkpoint(
                &run.id,
                CheckpointReason::ToolWorkspaceWrite,
                n as u64 + 1,
                std::slice::from_ref(&path),
                ts(100),
            )
            .await
            .unwrap();
    }
    for text in ["draft 1", "draft 2!"] {
        assert_eq!(
            store
                .checkpoint_blob(&run.id, &sha256_hex(text.as_bytes()))
                .await
                .unwrap()
                .as_deref(),
            Some(text)
        );
    }
    assert_eq!(
        store
            .checkpoint_blob(&run.id, &sha256_hex(b"never written"))
            .await
            .unwrap(),
        None
    );
}

/// The server writes a checkpoint's record (the group commit's batch statement): the stored
/// row reads back as the record the call returned, numbered and fingerprinted as the contract
/// says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_record_the_server_wrote_reads_back_as_returned() {
    use tt_domain::workspace::{CheckpointReason, CheckpointRecord, WriteGuard};
    use tt_ports::{AgentRunRepository, WorkspaceRepository};
    use tt_testkit::contract::{manifest_for, sample_run, ts, wp};
    let url = super::database("tt_case_checkpoint_rows").await;
    let store = PostgresStore::open(&url).await.unwrap();
    let run = sample_run(1);
    store.create_run(&run, &manifest_for(&run)).await.unwrap();
    let (draft, notes) = (wp("output/main.md"), wp("summaries/notes.md"));
    store
        .write(&run.id, &draft, "héllo wörld", &WriteGuard::None)
        .await
        .unwrap();
    store
        .write(&run.id, &notes, "notes", &WriteGuard::None)
        .await
        .unwrap();
    let returned = store
        .create_checkpoint(
            &run.id,
            CheckpointReason::ToolWorkspacePatch,
            41,
            &[notes.clone(), wp("output/missing.md"), draft.clone()],
            ts(500),
        )
        .await
        .unwrap();
    assert_eq!(
        returned
            .files
            .iter()
            .map(|f| f.path.as_str())
            .collect::<Vec<_>>(),
        ["summaries/notes.md", "output/main.md"]
    );
    // Bytes are UTF-8 bytes, as the file store counts them.
    assert_eq!(returned.files[1].bytes, "héllo wörld".len() as u64);
    let client = super::sql_client(&url).await;
    let row = client
        .query_one(
            "SELECT record, files FROM tt_checkpoints WHERE run_id = $1",
            &[&run.id.as_str()],
        )
        .await
        .unwrap();
    let stored: CheckpointRecord = serde_json::from_str(row.get(0)).unwrap();
    assert_eq!(stored, returned);
    let texts: Vec<String> = serde_json::from_str(row.get(1)).unwrap();
    assert_eq!(texts, ["notes", "héllo wörld"]);
}

/// A run row whose body does not parse is left out of the list, never hiding the others, and
/// named by `unreadable_runs` with its code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_row_that_does_not_parse_is_named_not_listed() {
    use tt_ports::{AgentRunRepository, RunListPage};
    use tt_testkit::contract::{manifest_for, sample_run};
    let url = super::database("tt_case_unreadable_run").await;
    let store = PostgresStore::open(&url).await.unwrap();
    let (whole, broken) = (sample_run(1), sample_run(2));
    for run in [&whole, &broken] {
        store.create_run(run, &manifest_for(run)).await.unwrap();
    }
    assert!(store.unreadable_runs().await.unwrap().is_empty());
    let client = super::sql_client(&url).await;
    client
        .execute(
            "UPDATE runs SET body = '{\"id\": ' WHERE run_id = $1",
            &[&broken.id.as_str()],
        )
        .await
        .unwrap();
    let listed = store.list_runs(RunListPage::first(10)).await.unwrap();
    assert_eq!(
        listed.iter().map(|run| run.id.as_str()).collect::<Vec<_>>(),
        [whole.id.as_str()]
    );
    let unreadable = store.unreadable_runs().await.unwrap();
    assert_eq!(unreadable.len(), 1);
    assert_eq!(unreadable[0].run_id, broken.id.as_str());
    assert_eq!(unreadable[0].code, "agent.storage_corrupt");
    // The conversation's runs (by the `runs_by_chat` index) leave it out too.
    let chat = store.list_chat_runs(&whole.stable_chat_id).await.unwrap();
    assert_eq!(
        chat.iter().map(|run| run.id.as_str()).collect::<Vec<_>>(),
        [whole.id.as_str()]
    );
}

/// A conversation's runs are read by index, and only its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_lists_only_its_own_runs() {
    use tt_ports::AgentRunRepository;
    use tt_testkit::contract::{manifest_for, sample_run};
    let url = super::database("tt_case_chat_runs").await;
    let store = PostgresStore::open(&url).await.unwrap();
    let mine = sample_run(1);
    let mut other = sample_run(2);
    other.stable_chat_id = "another-chat".to_owned();
    other.workspace_id =
        tt_domain::run::derive_workspace_id(other.conversation_kind, "another-chat");
    for run in [&mine, &other] {
        store.create_run(run, &manifest_for(run)).await.unwrap();
    }
    let listed = store.list_chat_runs(&mine.stable_chat_id).await.unwrap();
    assert_eq!(
        listed.iter().map(|run| run.id.as_str()).collect::<Vec<_>>(),
        [mine.id.as_str()]
    );
}

/// `workspace_keys_like` reads a range of the byte-ordered key index (migration 11): it lists
/// exactly an agent id's keys whatever keys the run holds: gaps, four-digit repeats, keys that
/// only look like repeats (`critic-0004`, `critic-04`, `critic-x`), other agents whose ids
/// start with the same letters (`criticism`, `crit`), and repeats of repeats.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workspace_keys_are_listed_by_agent_id() {
    use tt_domain::ids::{InvocationId, ProfileId, TaskId};
    use tt_domain::task::{AgentTaskRecord, TaskContinuation, TaskStatus};
    use tt_ports::{AgentInvocationRepository, AgentRunRepository};
    use tt_testkit::contract::{manifest_for, sample_run, ts};
    let store = crate::fresh_store().await;
    let run = sample_run(1);
    store.create_run(&run, &manifest_for(&run)).await.unwrap();
    let check = |keys: Vec<String>| {
        let store = &store;
        let run = &run;
        async move {
            for base in ["critic", "critic-002", "crit", "editor"] {
                let mut expected: Vec<&String> = keys
                    .iter()
                    .filter(|key: &&String| {
                        key.as_str() == base || key.starts_with(&format!("{base}-"))
                    })
                    .collect();
                expected.sort();
                let mut listed = store.workspace_keys_like(&run.id, base).await.unwrap();
                listed.sort();
                assert_eq!(
                    listed.iter().collect::<Vec<_>>(),
                    expected,
                    "{base} among {keys:?}"
                );
            }
        }
    };
    let mut keys = Vec::new();
    let added = [
        "critic",
        "critic-0004",
        "critic-04",
        "critic-x",
        "critic-002",
        "criticism",
        "critic-003",
        "critic-005",
        "critic-004",
        "critic-002-002",
        "critic-006",
        "critic-1000",
        "critic-0007",
    ];
    check(keys.clone()).await;
    for (n, key) in added.into_iter().enumerate() {
        let task = AgentTaskRecord {
            id: TaskId::from_raw(format!("task_{n}")),
            run_id: run.id.clone(),
            parent_invocation_id: InvocationId::root(),
            child_invocation_id: InvocationId::from_raw(format!("inv_{n}")),
            target_profile_id: ProfileId::parse("critic").unwrap(),
            workspace_key: key.to_owned(),
            continuation: TaskContinuation::ReturnToParent,
            status: TaskStatus::Queued,
            task: Default::default(),
            budget: None,
            created_by_tool_call_id: None,
            result_ref: None,
            error: None,
            creation_seq: n as u64 + 1,
            created_at: ts(1),
            updated_at: ts(1),
        };
        store.create_task(&task).await.unwrap();
        keys.push(key.to_owned());
        check(keys.clone()).await;
    }
}
