//! Contract cases for `AgentRunRepository`: create/load/save/list runs and run documents.

use serde_json::json;
use tt_domain::ids::{InvocationId, RunId};
use tt_domain::run::AgentRunStatus;
use tt_ports::{RunDocument, RunListPage, SerializedDocument};

use super::{
    StorageUnderTest, assert_already_exists, assert_not_found, create_sample_run, manifest_for,
    sample_run, ts,
};

pub async fn create_and_load_run(s: StorageUnderTest) {
    let run = sample_run(1);
    let manifest = manifest_for(&run);
    s.runs.create_run(&run, &manifest).await.unwrap();
    assert_eq!(s.runs.load_run(&run.id).await.unwrap(), run);
    assert_eq!(s.runs.load_manifest(&run.id).await.unwrap(), manifest);
    // The five workspace roots exist from the start.
    let roots: Vec<String> = s
        .workspace
        .list(&run.id, None, 1)
        .await
        .unwrap()
        .into_iter()
        .map(|entry| entry.path.to_string())
        .collect();
    assert_eq!(roots, ["output", "persist", "plan", "scratch", "summaries"]);
}

pub async fn create_run_twice_is_already_exists(s: StorageUnderTest) {
    let run = create_sample_run(&s, 1).await;
    let mut again = run.clone();
    again.status = AgentRunStatus::Failed;
    assert_already_exists(s.runs.create_run(&again, &manifest_for(&again)).await);
    assert_eq!(s.runs.load_run(&run.id).await.unwrap(), run);
}

pub async fn missing_run_is_not_found(s: StorageUnderTest) {
    let missing = RunId::from_raw("run_missing");
    assert_not_found(s.runs.load_run(&missing).await);
    assert_not_found(s.runs.load_manifest(&missing).await);
    assert_not_found(s.runs.save_run(&sample_run(9)).await);
    assert_not_found(
        s.runs
            .read_document(&missing, &RunDocument::PromptSnapshot)
            .await,
    );
    assert_not_found(
        s.runs
            .write_document(&missing, &RunDocument::PromptSnapshot, &json!({}))
            .await,
    );
}

pub async fn save_run_replaces_the_record(s: StorageUnderTest) {
    let mut run = create_sample_run(&s, 1).await;
    run.transition(AgentRunStatus::CallingModel, ts(5_000))
        .unwrap();
    s.runs.save_run(&run).await.unwrap();
    assert_eq!(s.runs.load_run(&run.id).await.unwrap(), run);
    let listed = s.runs.list_runs(RunListPage::first(10)).await.unwrap();
    assert_eq!(listed, vec![run]);
}

/// A run released when it ended keeps everything written to it, and a later write (abandoning
/// it, resuming it) takes it again.
pub async fn a_released_run_reads_back_and_is_written_again(s: StorageUnderTest) {
    let mut run = create_sample_run(&s, 1).await;
    run.transition(AgentRunStatus::CallingModel, ts(5_000))
        .unwrap();
    run.transition(AgentRunStatus::Failed, ts(6_000)).unwrap();
    s.runs.save_run(&run).await.unwrap();
    s.runs.release_run(&run.id).await.unwrap();
    // Twice is harmless, and so is a run this store never wrote.
    s.runs.release_run(&run.id).await.unwrap();
    s.runs
        .release_run(&RunId::from_raw("run_missing"))
        .await
        .unwrap();
    assert_eq!(s.runs.load_run(&run.id).await.unwrap(), run);
    run.abandon(ts(7_000)).unwrap();
    s.runs.save_run(&run).await.unwrap();
    assert_eq!(s.runs.load_run(&run.id).await.unwrap(), run);
}

pub async fn list_runs_newest_first_with_paging(s: StorageUnderTest) {
    // Created at 1s, 3s, 2s and 3s: newest first, ties by id ascending.
    let mut runs = Vec::new();
    for (n, created) in [(1, 1_000), (2, 3_000), (3, 2_000), (4, 3_000)] {
        let mut run = sample_run(n);
        run.created_at = ts(created);
        s.runs.create_run(&run, &manifest_for(&run)).await.unwrap();
        runs.push(run);
    }
    let ids = |page: RunListPage| {
        let runs = s.runs.clone();
        async move {
            runs.list_runs(page)
                .await
                .unwrap()
                .into_iter()
                .map(|run| run.id.to_string())
                .collect::<Vec<_>>()
        }
    };
    let all = ids(RunListPage::first(10)).await;
    // Whole records: none is unreadable.
    assert!(s.runs.unreadable_runs().await.unwrap().is_empty());
    assert_eq!(
        all,
        [
            "run_contract_0002",
            "run_contract_0004",
            "run_contract_0003",
            "run_contract_0001"
        ]
    );
    let middle = ids(RunListPage {
        offset: 1,
        limit: 2,
    })
    .await;
    assert_eq!(middle, ["run_contract_0004", "run_contract_0003"]);
    let beyond = ids(RunListPage {
        offset: 4,
        limit: 10,
    })
    .await;
    assert!(beyond.is_empty());
}

/// A document written already serialized reads back as the same JSON, in every place a
/// document can live, and replaces (or is replaced by) a document written as a `Value`.
pub async fn serialized_documents_read_back_as_written(s: StorageUnderTest) {
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Typed<'a> {
        call_id: &'a str,
        round: u32,
        text: &'a str,
        arguments: &'a serde_json::Value,
        missing: Option<u8>,
    }
    let run = create_sample_run(&s, 1).await;
    let child = InvocationId::from_raw("inv_child");
    let arguments = json!({"z": 1, "a": [true, null, 2.5]});
    let documents = [
        RunDocument::PromptSnapshot,
        RunDocument::InvocationToolSnapshot(child.clone()),
        RunDocument::ToolArgs {
            call_file_key: "call_0123456789abcdef".to_owned(),
        },
        RunDocument::ModelResponse {
            invocation_id: child,
            round: 3,
        },
    ];
    for document in &documents {
        let typed = Typed {
            call_id: "call_1",
            round: 3,
            text: "héllo\n\"quoted\"",
            arguments: &arguments,
            missing: None,
        };
        let serialized = SerializedDocument::new(&typed).unwrap();
        assert!(
            !serialized.as_str().contains('\n'),
            "{}",
            serialized.as_str()
        );
        s.runs
            .write_serialized_document(&run.id, document, &serialized)
            .await
            .unwrap();
        assert_eq!(
            s.runs.read_document(&run.id, document).await.unwrap(),
            Some(serde_json::to_value(&typed).unwrap()),
            "{document:?}"
        );
        s.runs
            .write_document(&run.id, document, &json!([1]))
            .await
            .unwrap();
        assert_eq!(
            s.runs.read_document(&run.id, document).await.unwrap(),
            Some(json!([1]))
        );
        s.runs
            .write_serialized_document(&run.id, document, &SerializedDocument::new("x").unwrap())
            .await
            .unwrap();
        assert_eq!(
            s.runs.read_document(&run.id, document).await.unwrap(),
            Some(json!("x"))
        );
    }
}

pub async fn documents_round_trip_and_missing_is_none(s: StorageUnderTest) {
    let run = create_sample_run(&s, 1).await;
    let child = InvocationId::from_raw("inv_child");
    let documents = [
        RunDocument::PromptSnapshot,
        RunDocument::ResolvedProfile,
        RunDocument::PersistSnapshot,
        RunDocument::InvocationToolSnapshot(child.clone()),
        RunDocument::InvocationResolvedSkills(child.clone()),
        RunDocument::InvocationPromptSnapshot(child.clone()),
        RunDocument::InvocationPromptAssembly(child.clone()),
        RunDocument::ToolArgs {
            call_file_key: "call_0123456789abcdef".to_owned(),
        },
        RunDocument::ToolResult {
            call_file_key: "call_0123456789abcdef".to_owned(),
        },
        RunDocument::ModelResponse {
            invocation_id: InvocationId::root(),
            round: 1,
        },
        RunDocument::ModelResponse {
            invocation_id: child.clone(),
            round: 12,
        },
        RunDocument::AgentResult(child),
    ];
    for document in &documents {
        assert_eq!(s.runs.read_document(&run.id, document).await.unwrap(), None);
    }
    for (i, document) in documents.iter().enumerate() {
        let value = json!({"document": document.relative_path(), "i": i, "text": "héllo\n"});
        s.runs
            .write_document(&run.id, document, &value)
            .await
            .unwrap();
    }
    for (i, document) in documents.iter().enumerate() {
        let value = json!({"document": document.relative_path(), "i": i, "text": "héllo\n"});
        assert_eq!(
            s.runs.read_document(&run.id, document).await.unwrap(),
            Some(value.clone())
        );
        // The same document as JSON text: on one line, and the same value.
        let text = s
            .runs
            .read_serialized_document(&run.id, document)
            .await
            .unwrap()
            .expect("a written document reads back as text");
        assert!(!text.as_str().contains('\n'), "{document:?}");
        assert_eq!(text.to_value().unwrap(), value, "{document:?}");
    }
    assert_eq!(
        s.runs
            .read_serialized_document(
                &run.id,
                &RunDocument::AgentResult(InvocationId::from_raw("inv_none"))
            )
            .await
            .unwrap(),
        None
    );
    // Replacing a document keeps only the new value.
    s.runs
        .write_document(&run.id, &RunDocument::PromptSnapshot, &json!([1, 2]))
        .await
        .unwrap();
    assert_eq!(
        s.runs
            .read_document(&run.id, &RunDocument::PromptSnapshot)
            .await
            .unwrap(),
        Some(json!([1, 2]))
    );
}
