//! A run whose `run.json` is missing or unreadable is never deleted: readers rebuild its record
//! from the run index's copy or the journal, the next writer writes it back (and marks the run
//! `interrupted` if it was unfinished); a run with a journal but nothing to rebuild from is
//! kept and listed as unreadable; only a directory of creation leftovers is removed.

use serde_json::json;
use tt_adapter_storage_userdata::UserDataStore;
use tt_domain::event::RunEventType;
use tt_domain::run::{AgentRunStatus, REBUILT_FROM_INDEX, REBUILT_FROM_JOURNAL};
use tt_ports::{AgentRunRepository, EventPage, RunJournal, RunListPage};
use tt_testkit::contract::{new_event, tool_event, ts};

use super::Fixture;

const ALL: RunListPage = RunListPage {
    offset: 0,
    limit: 100,
};

/// A run that got to work: `run_created`, `generation_intent_recorded`, a status and a tool
/// call in its journal; its process then went away.
async fn working_run(fx: &mut Fixture) -> (tt_domain::run::AgentRun, std::path::PathBuf) {
    let (run, dir) = fx.run(1).await;
    let store = &fx.store;
    let events = [
        new_event(
            &run.id,
            1,
            RunEventType::RunCreated,
            json!({
                "workspaceId": run.workspace_id, "stableChatId": run.stable_chat_id,
                "persistBaseStateId": null, "presentation": "foreground",
                "chatRef": run.chat_ref, "generationType": run.generation_type
            }),
        ),
        new_event(
            &run.id,
            2,
            RunEventType::GenerationIntentRecorded,
            json!({
                "kind": "tauritavern.agentGenerationIntent", "runId": run.id,
                "stableChatId": run.stable_chat_id, "conversationKind": "character",
                "chatRef": run.chat_ref, "generationType": run.generation_type,
                "profileId": "default-writer", "presetMode": "none", "presetRef": null,
                "modelId": null, "userRequest": "Write.", "inputMessageCount": 2
            }),
        ),
        new_event(
            &run.id,
            3,
            RunEventType::StatusChanged,
            json!({"status": "calling_model"}),
        ),
        tool_event(&run.id, 4, "inv_root"),
    ];
    for event in events {
        RunJournal::append(store.as_ref(), event).await.unwrap();
    }
    let mut working = run.clone();
    working
        .transition(AgentRunStatus::InitializingWorkspace, ts(2_000))
        .unwrap();
    store.save_run(&working).await.unwrap();
    drop(fx.reopen());
    (working, dir)
}

fn read_only(fx: &Fixture) -> std::sync::Arc<UserDataStore> {
    UserDataStore::open_read_only(fx.data_root())
}

#[tokio::test]
async fn a_deleted_run_record_is_rebuilt_from_the_index_copy_and_the_run_kept() {
    let mut fx = Fixture::new();
    let (run, dir) = working_run(&mut fx).await;
    std::fs::remove_file(dir.join("run.json")).unwrap();

    // A reader lists and reads it (interrupted: nobody owns it), saying it was rebuilt.
    let reader = read_only(&fx);
    let listed = reader.list_runs(ALL).await.unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].status, AgentRunStatus::Interrupted);
    let rebuilt = listed[0].rebuilt.as_ref().expect("marked rebuilt");
    assert_eq!(rebuilt.from, REBUILT_FROM_INDEX);
    assert!(
        rebuilt.because.contains("run.json is missing"),
        "{rebuilt:?}"
    );
    assert!(!dir.join("run.json").exists(), "a reader wrote");

    // The next writer writes it back and marks the run interrupted; nothing is lost.
    let (store, recovered) = fx.reopen_and_recover();
    assert_eq!(recovered.len(), 1);
    assert_eq!(recovered[0].previous_status, AgentRunStatus::CallingModel);
    let stored = store.load_run(&run.id).await.unwrap();
    assert_eq!(stored.status, AgentRunStatus::Interrupted);
    assert_eq!(stored.rebuilt.as_ref().unwrap().from, REBUILT_FROM_INDEX);
    assert_eq!(stored.stable_chat_id, run.stable_chat_id);
    assert!(dir.join("run.json").is_file());
    let events = RunJournal::read(store.as_ref(), &run.id, &EventPage::default())
        .await
        .unwrap();
    assert_eq!(events.len(), 5);
    assert_eq!(events[4].event_type, RunEventType::RunInterrupted);
}

#[tokio::test]
async fn without_an_index_copy_the_record_is_rebuilt_from_the_journal() {
    let mut fx = Fixture::new();
    let (run, dir) = working_run(&mut fx).await;
    std::fs::write(dir.join("run.json"), b"{\"id\": \"run_contr").unwrap();
    std::fs::remove_file(fx.data_root().join(format!("index/runs/{}.json", run.id))).unwrap();

    let listed = read_only(&fx).list_runs(ALL).await.unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    let rebuilt = listed[0].rebuilt.as_ref().unwrap();
    assert_eq!(rebuilt.from, REBUILT_FROM_JOURNAL);
    assert!(
        rebuilt.because.contains("agent.storage_corrupt"),
        "{rebuilt:?}"
    );

    let (store, recovered) = fx.reopen_and_recover();
    assert_eq!(recovered.len(), 1);
    let stored = store.load_run(&run.id).await.unwrap();
    assert_eq!(stored.status, AgentRunStatus::Interrupted);
    assert_eq!(stored.workspace_id, run.workspace_id);
    assert_eq!(stored.profile_id, run.profile_id);
    assert_eq!(stored.chat_ref, run.chat_ref);
    assert_eq!(stored.input_message_count, 2);
    let first = RunJournal::read(store.as_ref(), &run.id, &EventPage::default())
        .await
        .unwrap()
        .remove(0);
    assert_eq!(
        stored.created_at, first.timestamp,
        "the time of `run_created`"
    );
    // Written back, with its index copy.
    assert!(
        fx.data_root()
            .join(format!("index/runs/{}.json", run.id))
            .is_file()
    );
}

#[tokio::test]
async fn a_run_with_a_journal_but_nothing_to_rebuild_from_is_kept_and_named() {
    let mut fx = Fixture::new();
    let (run, dir) = fx.run(1).await;
    RunJournal::append(fx.store.as_ref(), tool_event(&run.id, 1, "inv_root"))
        .await
        .unwrap();
    drop(fx.reopen());
    std::fs::remove_file(dir.join("run.json")).unwrap();
    std::fs::remove_file(fx.data_root().join(format!("index/runs/{}.json", run.id))).unwrap();

    let (store, recovered) = fx.reopen_and_recover();
    assert!(recovered.is_empty());
    assert!(dir.join("events.jsonl").is_file(), "the run was removed");
    let unreadable = store.unreadable_runs().await.unwrap();
    assert_eq!(unreadable.len(), 1, "{unreadable:?}");
    assert_eq!(unreadable[0].run_id, run.id.as_str());
    assert_eq!(unreadable[0].code, "agent.run_record_missing");
    assert_eq!(
        store.load_run(&run.id).await.unwrap_err().code(),
        "agent.run_record_missing"
    );
}

#[tokio::test]
async fn only_a_directory_of_creation_leftovers_is_removed() {
    let mut fx = Fixture::new();
    let (run, dir) = fx.run(1).await;
    drop(fx.reopen());
    // As a process killed inside `create_run` leaves it: no record, no index copy.
    std::fs::remove_file(dir.join("run.json")).unwrap();
    std::fs::remove_file(fx.data_root().join(format!("index/runs/{}.json", run.id))).unwrap();
    let (kept_run, kept) = fx.run(2).await;
    drop(fx.reopen());
    std::fs::remove_file(kept.join("run.json")).unwrap();
    std::fs::remove_file(
        fx.data_root()
            .join(format!("index/runs/{}.json", kept_run.id)),
    )
    .unwrap();
    std::fs::write(kept.join("output/main.md"), "A file an agent wrote.").unwrap();

    let (store, _) = fx.reopen_and_recover();
    assert!(!dir.exists(), "creation leftovers were kept");
    assert!(
        kept.join("output/main.md").is_file(),
        "a run with a file was removed"
    );
    assert_eq!(
        store.unreadable_runs().await.unwrap()[0].code,
        "agent.run_record_missing"
    );
}
