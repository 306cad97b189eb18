//! Whole runs: the happy path, what is persisted and journaled, failures, partial success,
//! persist promotion, start-time validation and the live event stream.

use serde_json::json;
use tt_domain::ids::InvocationId;
use tt_domain::invocation::InvocationStatus;
use tt_domain::run::AgentRunStatus;
use tt_domain::workspace::WorkspacePath;
use tt_ports::{RunDocument, StorageError};

use crate::support::*;

#[tokio::test]
async fn foreground_run_commits_chat_message_before_finish() {
    let (h, run) = happy_run().await;

    // The host got exactly one commit with the file's text.
    let commits = h.bridge.requests();
    assert_eq!(commits.len(), 1);
    assert_eq!(commits[0].path, "output/main.md");
    assert_eq!(commits[0].content, "A storm rolled in.");
    assert_eq!(commits[0].mode, "replace");

    // The run's documents are persisted.
    let root = InvocationId::root();
    let snapshot = h.document(&run.id, RunDocument::InvocationToolSnapshot(root.clone()));
    assert_eq!(
        snapshot["tools"].as_array().map(Vec::len),
        Some(tt_domain::profile::DEFAULT_WRITER_TOOLS.len())
    );
    assert!(h.has_document(&run.id, RunDocument::ResolvedProfile));
    let prompt = h.document(&run.id, RunDocument::PromptSnapshot);
    assert_eq!(prompt["messages"][1]["content"], "Write a short scene.");
    for round in 1..=3 {
        assert!(h.has_document(
            &run.id,
            RunDocument::ModelResponse {
                invocation_id: root.clone(),
                round
            }
        ));
    }
    let key = tt_application::call_file_key(&root, 1, "c1");
    let args = h.document(
        &run.id,
        RunDocument::ToolArgs {
            call_file_key: key.clone(),
        },
    );
    assert_eq!(args["arguments"]["path"], "output/main.md");
    let result = h.document(&run.id, RunDocument::ToolResult { call_file_key: key });
    assert_eq!(result["isError"], false);
    assert_eq!(result["callId"], "c1");

    // The root invocation completed; the terminal event is last.
    let invocations = h.store.invocations(&run.id);
    assert_eq!(invocations.len(), 1);
    assert_eq!(invocations[0].status, InvocationStatus::Completed);
    let types = h.event_types(&run.id);
    assert_eq!(types.last().map(String::as_str), Some("run_completed"));
    for expected in [
        "run_created",
        "profile_resolved",
        "workspace_initialized",
        "persistent_projection_initialized",
        "agent_invocation_created",
        "context_assembled",
        "agent_invocation_started",
        "model_request_created",
        "model_call_attempt_started",
        "model_response_stored",
        "model_completed",
        "tool_call_requested",
        "tool_call_started",
        "tool_result_stored",
        "tool_call_completed",
        "workspace_file_written",
        "checkpoint_created",
        "chat_commit_started",
        "chat_commit_requested",
        "chat_commit_completed",
        "chat_commit_recorded",
        "agent_loop_finished",
        "persistent_changes_committed",
        "agent_invocation_completed",
    ] {
        assert!(
            types.iter().any(|t| t == expected),
            "missing {expected} in {types:?}"
        );
    }
    // Status moves are journaled in order and end completed.
    let statuses: Vec<String> = h
        .events(&run.id)
        .iter()
        .filter(|e| e.event_type == "status_changed")
        .map(|e| e.payload["status"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        statuses.first().map(String::as_str),
        Some("initializing_workspace")
    );
    assert!(statuses.contains(&"awaiting_host_commit".to_owned()));
    assert_eq!(&statuses[statuses.len() - 2..], ["finishing", "completed"]);

    // Every event is scoped and seqs are gapless.
    for (index, event) in h.events(&run.id).iter().enumerate() {
        assert_eq!(event.seq, index as u64 + 1);
        if event.payload.is_object() {
            assert!(
                event.payload.get("eventScope").is_some(),
                "{} has no eventScope",
                event.event_type
            );
        }
    }

    // Checkpoints: after the write and before the commit.
    let reasons: Vec<_> = h
        .store
        .checkpoints(&run.id)
        .iter()
        .map(|cp| format!("{:?}", cp.reason))
        .collect();
    assert_eq!(reasons, ["ToolWorkspaceWrite", "ChatCommit"]);
}

#[tokio::test]
async fn each_request_uses_the_invocation_session_and_the_system_prompt() {
    let (h, run) = happy_run().await;
    let requests = h.model.requests();
    assert_eq!(requests.len(), 3);
    // The first request is the system prompt, then the frozen conversation.
    assert_eq!(run.input_message_count, requests[0].messages.len() - 1);
    assert!(run.input_message_count > 0);
    for request in &requests {
        assert_eq!(request.session.session_id, format!("{}:inv_root", run.id));
        assert_eq!(
            request.tools.len(),
            tt_domain::profile::DEFAULT_WRITER_TOOLS.len()
        );
        assert_eq!(request.tool_choice, "auto");
        assert_eq!(
            request.messages[0].role,
            tt_domain::model::ModelRole::System
        );
        assert!(
            request.messages[0]
                .text_content()
                .contains("# Agent Mode is active.")
        );
    }
    // Tool results go back to the model in order, after the assistant turn that asked for them.
    assert_eq!(
        tool_results(&requests[2])
            .iter()
            .map(|r| r.0.as_str())
            .collect::<Vec<_>>(),
        ["c1", "c2"]
    );
}

#[tokio::test]
async fn recoverable_errors_go_back_to_the_model_and_the_run_continues() {
    let mut turns = vec![
        turn(vec![call(
            "bad",
            "workspace_read_file",
            json!({"path": "../secret"}),
        )]),
        turn(vec![call("early", "workspace_finish", json!({}))]),
    ];
    turns.extend(happy_turns());
    let h = harness(by_turn(turns));
    let run = h.run_completed(request(None)).await;
    let requests = h.model.requests();
    let results = tool_results(&requests[2]);
    assert_eq!(results[0].2.as_deref(), Some("workspace.invalid_path"));
    assert_eq!(
        results[1].2.as_deref(),
        Some("agent.foreground_commit_required")
    );
    assert!(results[1].3.contains("workspace_commit"));
    let failed = events_of(&h, &run.id, "tool_call_failed");
    assert_eq!(failed.len(), 2);
    assert!(
        failed
            .iter()
            .all(|e| e.level == tt_domain::event::EventLevel::Warn)
    );
}

#[tokio::test]
async fn host_commit_failure_is_fatal() {
    let h = harness_with_bridge(
        by_turn(happy_turns()),
        tt_testkit::fakes::FakeCommitBridge::rejecting("chat is read-only"),
    );
    let run = h.run_to_end(request(None)).await;
    h.assert_failed_with(&run, "agent.chat_commit_failed");
    assert!(
        h.event_types(&run.id)
            .contains(&"chat_commit_failed".to_owned())
    );
    assert_eq!(
        h.store.invocations(&run.id)[0].status,
        InvocationStatus::Failed
    );
}

#[tokio::test]
async fn failure_after_a_commit_is_partial_success() {
    let turns = vec![
        turn(vec![write("c1", "output/main.md", "Draft.")]),
        turn(vec![call("c2", "workspace_commit", json!({}))]),
        // Four slips in a row: the last one is fatal (limits.maxConsecutiveSlips = 3).
        turn(
            ["c3", "c4", "c5", "c6"]
                .map(|id| call(id, "definitely_not_a_tool", json!({})))
                .to_vec(),
        ),
    ];
    let h = harness(by_turn(turns));
    let run = h.run_to_end(request(None)).await;
    assert_eq!(run.status, AgentRunStatus::PartialSuccess);
    let event = h.first_event(&run.id, "run_partial_success");
    assert_eq!(event.payload["code"], "model.unknown_tool_call");
    assert_eq!(event.payload["preservedCommitCount"], 1);
    assert_eq!(
        event.payload["preservedCommits"][0]["path"],
        "output/main.md"
    );
    assert_eq!(event.payload["preservedCommits"][0]["messageId"], "1");
    assert_eq!(event.payload["retryable"], false);
    assert_eq!(event.payload["userRetryable"], false);
    assert!(!h.event_types(&run.id).contains(&"run_failed".to_owned()));
    // What was written stays.
    assert_eq!(
        h.store.file_text(&run.id, "output/main.md").as_deref(),
        Some("Draft.")
    );
}

#[tokio::test]
async fn finish_promotes_persistent_workspace_projection() {
    let mut turns = vec![turn(vec![write(
        "m",
        "persist/memory.md",
        "Mara fears the dark.",
    )])];
    turns.extend(happy_turns());
    let h = harness(by_turn(turns));
    let run = h.run_completed(request(None)).await;
    let committed = h.first_event(&run.id, "persistent_changes_committed");
    assert_eq!(committed.payload["stateId"], run.id.as_str());
    assert_eq!(committed.payload["changeCount"], 1);
    assert_eq!(committed.payload["changes"][0]["path"], "persist/memory.md");
    assert_eq!(committed.payload["changes"][0]["kind"], "added");
}

#[tokio::test]
async fn a_failed_run_never_promotes_persist() {
    let turns = vec![
        turn(vec![write("m", "persist/memory.md", "x")]),
        turn(vec![call("c", "no_such_tool", json!({}))]),
    ];
    let h = harness(by_turn(turns));
    let run = h.run_to_end(request(None)).await;
    assert_eq!(run.status, AgentRunStatus::Failed);
    assert!(
        !h.event_types(&run.id)
            .contains(&"persistent_changes_committed".to_owned())
    );
    assert!(
        h.store
            .persistent_state(&run.workspace_id, run.id.as_str())
            .is_none()
    );
}

/// The code `start_run` refuses `request` with.
async fn start_refused(
    h: &Harness,
    request: tt_application::StartRunRequest,
) -> tt_domain::error_codes::Code {
    h.service.start_run(request).await.unwrap_err().code()
}

#[tokio::test]
async fn start_rejects_unknown_and_unrunnable_profiles() {
    let h = happy_harness();
    assert_eq!(
        start_refused(&h, request(Some("ghost"))).await,
        "agent.profile_not_found"
    );

    h.put_profile(custom_profile("helper", |p| {
        p.run.direct_runnable = false;
        p.run.presentation = tt_domain::run::Presentation::Background;
        p.delegation.callable = true;
        p.delegation.allow_as_subagent = true;
    }));
    assert_eq!(
        start_refused(&h, request(Some("helper"))).await,
        "agent.profile_not_direct_runnable"
    );

    h.put_profile(custom_profile("unconfigured", |p| {
        p.model.mode = tt_domain::profile::ModelMode::RequiresConfiguration;
    }));
    assert_eq!(
        start_refused(&h, request(Some("unconfigured"))).await,
        "agent.profile_model_requires_configuration"
    );

    let mut bad = request(None);
    bad.stable_chat_id = "   ".into();
    assert_eq!(start_refused(&h, bad).await, "agent.stable_chat_id_invalid");
    assert_eq!(h.model.call_count(), 0);
}

#[tokio::test]
async fn journal_failure_is_fatal_and_recorded_in_the_run_status() {
    let h = happy_harness();
    h.store.fail_journal_append_of(
        tt_domain::event::RunEventType::ToolCallStarted,
        StorageError::io("events.jsonl", "disk full"),
    );
    let run = h.run_to_end(request(None)).await;
    h.assert_failed_with(&run, "agent.storage_io");
}

#[tokio::test]
async fn live_stream_replays_then_follows_and_ends_after_the_terminal_event() {
    let h = happy_harness();
    let run = h.service.start_run(request(None)).await.unwrap();
    let mut stream = h.service.subscribe(run.id.clone(), 0, None);
    let mut seqs = Vec::new();
    let mut last_type = String::new();
    while let Some(event) = stream.next().await.unwrap() {
        seqs.push(event.seq);
        last_type = event.event_type.to_string();
    }
    assert_eq!(last_type, "run_completed");
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    // Resuming from a seq replays only what follows it.
    let mut resumed = h.service.subscribe(run.id.clone(), 10, None);
    assert_eq!(resumed.next().await.unwrap().map(|e| e.seq), Some(11));
}

#[tokio::test]
async fn read_events_pages_and_validates_the_invocation_filter() {
    let (h, run) = happy_run().await;
    let page = tt_ports::EventPage {
        after_seq: Some(5),
        limit: Some(3),
        ..Default::default()
    };
    let events = h.service.read_events(&run.id, &page).await.unwrap();
    assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), [6, 7, 8]);
    let bad = tt_ports::EventPage {
        invocation_id: Some("a/b".into()),
        ..Default::default()
    };
    assert_eq!(
        h.service
            .read_events(&run.id, &bad)
            .await
            .unwrap_err()
            .code(),
        "agent.read_events_invocation_id_invalid"
    );
    let root_only = tt_ports::EventPage {
        invocation_id: Some("inv_root".into()),
        limit: Some(500),
        ..Default::default()
    };
    assert!(
        !h.service
            .read_events(&run.id, &root_only)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn host_reads_workspace_files_by_logical_path() {
    let (h, run) = happy_run().await;
    let file = h
        .service
        .read_workspace_file(&run.id, "output/main.md")
        .await
        .unwrap();
    assert_eq!(file.text, "A storm rolled in.");
    for (path, code) in [
        ("../x", "workspace.invalid_path"),
        ("input/prompt_snapshot.json", "workspace.path_not_visible"),
    ] {
        let refused = h.service.read_workspace_file(&run.id, path).await;
        assert_eq!(refused.unwrap_err().code(), code, "{path}");
    }
    let _ = WorkspacePath::parse("output/main.md").unwrap();
}

#[tokio::test]
async fn transient_statuses_are_journaled_but_not_rewritten_in_the_stored_record() {
    let h = harness(tt_testkit::fakes::FakeModel::hanging());
    let run = h.start_parked(request(None), 1).await;
    // Live reads see the current working state; the stored record keeps the last lasting one.
    assert_eq!(
        h.service.load_run(&run.id).await.unwrap().status,
        AgentRunStatus::CallingModel
    );
    assert_eq!(
        h.store.run(&run.id).unwrap().status,
        AgentRunStatus::InitializingWorkspace
    );
    let journaled: Vec<_> = payload_texts(&h, &run.id, "status_changed", "status");
    assert_eq!(
        journaled,
        [
            "initializing_workspace",
            "assembling_context",
            "calling_model"
        ]
    );
    h.service.cancel_run(&run.id).await.unwrap();
    let run = h.wait(&run.id).await;
    assert_eq!(
        h.store.run(&run.id).unwrap().status,
        AgentRunStatus::Cancelled
    );
}

/// `run_completed` and `run_cancel_requested` carry `eventScope`, so a journal view filtered to
/// the root agent shows the run ending.
#[tokio::test]
async fn run_end_events_are_scoped_to_the_root_agent() {
    let root_view = |h: &Harness, run: &tt_domain::run::AgentRun| {
        let h = h.service.clone();
        let run_id = run.id.clone();
        async move {
            let page = tt_ports::EventPage {
                invocation_id: Some("inv_root".into()),
                limit: Some(500),
                ..Default::default()
            };
            h.read_events(&run_id, &page)
                .await
                .unwrap()
                .into_iter()
                .map(|event| (event.event_type, event.payload))
                .collect::<Vec<_>>()
        }
    };
    let (h, run) = happy_run().await;
    let events = root_view(&h, &run).await;
    let (last_type, last_payload) = events.last().unwrap();
    assert_eq!(last_type, "run_completed");
    insta::assert_json_snapshot!("run_completed_payload", last_payload);

    let h = harness(tt_testkit::fakes::FakeModel::hanging());
    let run = h.start_parked(request(None), 1).await;
    h.service.cancel_run(&run.id).await.unwrap();
    let run = h.wait(&run.id).await;
    let events = root_view(&h, &run).await;
    let requested = events
        .iter()
        .find(|(event_type, _)| event_type == "run_cancel_requested")
        .unwrap();
    insta::assert_json_snapshot!("run_cancel_requested_payload", requested.1);
    assert_eq!(events.last().unwrap().0, "run_cancelled");
}

/// A long reply whose provider body repeats its tool call's arguments is stored once: the raw
/// body names the message part instead (docs/storage.md, "Records").
#[tokio::test]
async fn a_long_reply_is_stored_once() {
    let content = "The tide came in. ".repeat(5_000);
    let arguments = json!({"path": "output/main.md", "content": content});
    let mut turns = happy_turns();
    turns[0] = turn(vec![(
        "c1".to_owned(),
        "workspace_write_file".to_owned(),
        arguments.clone(),
    )]);
    turns[0].raw_response = json!({"choices": [{"message": {"tool_calls": [{
        "id": "c1",
        "function": {"name": "workspace_write_file", "arguments": arguments.to_string()},
    }]}}]});
    let h = harness(by_turn(turns));
    let run = h.run_completed(request(None)).await;
    let stored = h.document(
        &run.id,
        RunDocument::ModelResponse {
            invocation_id: InvocationId::root(),
            round: 1,
        },
    );
    assert_eq!(stored.to_string().matches(content.as_str()).count(), 1);
    let response: tt_domain::model::AgentModelResponse =
        serde_json::from_value(stored["response"].clone()).unwrap();
    assert_eq!(response.tool_calls()[0].arguments, arguments);
    assert!(
        response.raw_response["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap()
            .ends_with("as message.parts[0].call.arguments)")
    );
}
