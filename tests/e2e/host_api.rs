//! The host answers commits through the host API, and bad answers get coded errors.

use tt_runtime::{
    AgentRunStatus, CommitBridgeChoice, ResolveChatCommitRequest,
    ResolvePersistentStateMetadataUpdateRequest,
};

use crate::support::*;

#[tokio::test]
async fn host_resolves_commits_through_the_api() {
    let env = env(writer_script(), CommitBridgeChoice::HostApi);
    let run = env.runtime.start_run(start_request()).await.unwrap();
    let mut stream = env.runtime.subscribe(run.id.as_str(), 0, None);
    while let Some(event) = stream.next().await.unwrap() {
        if event.event_type == "chat_commit_requested" {
            let commit_id = event.payload["commitId"].as_str().unwrap().to_owned();
            // Wrong run and invalid answers are refused with codes.
            let err = env
                .runtime
                .resolve_chat_commit(ResolveChatCommitRequest {
                    run_id: "run_other".into(),
                    commit_id: commit_id.clone(),
                    message_id: Some("7".into()),
                    error: None,
                })
                .unwrap_err();
            assert_eq!(err.code, "agent.chat_commit_run_mismatch");
            let err = env
                .runtime
                .resolve_chat_commit(ResolveChatCommitRequest {
                    run_id: run.id.to_string(),
                    commit_id: commit_id.clone(),
                    message_id: None,
                    error: None,
                })
                .unwrap_err();
            assert_eq!(err.code, "agent.chat_commit_resolve_invalid");
            env.runtime
                .resolve_chat_commit(ResolveChatCommitRequest {
                    run_id: run.id.to_string(),
                    commit_id: commit_id.clone(),
                    message_id: Some("42".into()),
                    error: None,
                })
                .unwrap();
            let err = env
                .runtime
                .resolve_chat_commit(ResolveChatCommitRequest {
                    run_id: run.id.to_string(),
                    commit_id,
                    message_id: Some("42".into()),
                    error: None,
                })
                .unwrap_err();
            assert_eq!(err.code, "agent.chat_commit_not_pending");
        }
        if event.event_type == "chat_commit_completed" {
            assert_eq!(event.payload["messageId"], "42");
            assert_eq!(event.payload["messageIndex"], 42);
        }
        if event.event_type == "persistent_state_metadata_update_requested" {
            // At finish the host binds the promoted state to the committed message.
            assert_eq!(event.payload["messageId"], "42");
            assert_eq!(event.payload["stateId"], run.id.as_str());
            let update_id = event.payload["updateId"].as_str().unwrap().to_owned();
            let resolve = |run_id: &str, update_id: &str| {
                env.runtime.resolve_agent_persistent_state_metadata_update(
                    ResolvePersistentStateMetadataUpdateRequest {
                        run_id: run_id.to_owned(),
                        update_id: update_id.to_owned(),
                        error: None,
                    },
                )
            };
            let err = resolve("run_other", &update_id).unwrap_err();
            assert_eq!(
                err.code,
                "agent.persistent_state_metadata_update_run_mismatch"
            );
            resolve(run.id.as_str(), &update_id).unwrap();
            let err = resolve(run.id.as_str(), &update_id).unwrap_err();
            assert_eq!(
                err.code,
                "agent.persistent_state_metadata_update_not_pending"
            );
        }
    }
    let run = env.runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);
}

#[tokio::test]
async fn a_host_that_cannot_bind_the_persistent_state_ends_the_run_as_partial_success() {
    let env = env(writer_script(), CommitBridgeChoice::HostApi);
    let run = env.runtime.start_run(start_request()).await.unwrap();
    let mut stream = env.runtime.subscribe(run.id.as_str(), 0, None);
    let mut failed = None;
    while let Some(event) = stream.next().await.unwrap() {
        match event.event_type.as_str() {
            "chat_commit_requested" => env
                .runtime
                .resolve_chat_commit(ResolveChatCommitRequest {
                    run_id: run.id.to_string(),
                    commit_id: event.payload["commitId"].as_str().unwrap().to_owned(),
                    message_id: Some("7".into()),
                    error: None,
                })
                .unwrap(),
            "persistent_state_metadata_update_requested" => env
                .runtime
                .resolve_agent_persistent_state_metadata_update(
                    ResolvePersistentStateMetadataUpdateRequest {
                        run_id: run.id.to_string(),
                        update_id: event.payload["updateId"].as_str().unwrap().to_owned(),
                        error: Some("message 7 was deleted".into()),
                    },
                )
                .unwrap(),
            "persistent_state_metadata_update_failed" => failed = Some(event.payload),
            _ => {}
        }
    }
    assert_eq!(failed.unwrap()["message"], "message 7 was deleted");
    let run = env.runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::PartialSuccess);
}

#[tokio::test]
async fn cancel_while_the_host_holds_a_commit() {
    let env = env(writer_script(), CommitBridgeChoice::HostApi);
    let run = env.runtime.start_run(start_request()).await.unwrap();
    let mut stream = env.runtime.subscribe(run.id.as_str(), 0, None);
    while let Some(event) = stream.next().await.unwrap() {
        if event.event_type == "chat_commit_requested" {
            env.runtime.cancel_run(run.id.as_str()).await.unwrap();
        }
    }
    let run = env.runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Cancelled);
    assert!(
        env.runtime
            .transcript(run.workspace_id.as_str())
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn host_errors_are_coded() {
    let env = env(writer_script(), CommitBridgeChoice::HostApi);
    let err = env.runtime.cancel_run("run_nope").await.unwrap_err();
    assert_eq!(err.code, "agent.not_found");
    let err = env.runtime.get_run("run_nope").await.unwrap_err();
    assert_eq!(err.code, "agent.not_found");
    let mut bad = start_request();
    bad.profile_id = Some("Not A Profile".into());
    let err = env.runtime.start_run(bad).await.unwrap_err();
    assert_eq!(err.code, "agent.profile_not_found");
}

#[tokio::test]
async fn runs_of_one_conversation_find_the_last_promoted_persist_state() {
    let env = env(writer_script(), CommitBridgeChoice::Transcript);
    assert_eq!(
        env.runtime.latest_persist_state("e2e-chat").await.unwrap(),
        None
    );
    let first = env.runtime.start_run(start_request()).await.unwrap();
    let first = env.runtime.wait_for_run(first.id.as_str()).await.unwrap();
    assert_eq!(first.status, AgentRunStatus::Completed);
    assert_eq!(env.runtime.get_run(first.id.as_str()).await.unwrap(), first);
    // The first run wrote persist/facts.md and promoted it as the state named after it.
    let state = env.runtime.latest_persist_state("e2e-chat").await.unwrap();
    assert_eq!(state.as_deref(), Some(first.id.as_str()));
    assert_eq!(
        env.runtime
            .latest_persist_state("other-chat")
            .await
            .unwrap(),
        None
    );

    // The next run starts from it; the newest promoted state then is its own, or, when it
    // changed nothing, the one it started from.
    let mut request = start_request();
    request.persist_base_state_id = state.clone();
    let second = env.runtime.start_run(request).await.unwrap();
    let second = env.runtime.wait_for_run(second.id.as_str()).await.unwrap();
    assert_eq!(second.status, AgentRunStatus::Completed);
    assert_eq!(second.persist_base_state_id, state);
    let promoted = env
        .runtime
        .read_events(tt_runtime::ReadEventsRequest {
            run_id: second.id.to_string(),
            after_seq: None,
            before_seq: None,
            limit: Some(500),
            invocation_id: None,
            include_timeline_projection: false,
        })
        .await
        .unwrap()
        .events
        .into_iter()
        .find(|event| event.event_type == "persistent_changes_committed")
        .unwrap();
    // Its own state when it changed `persist/`; when it changed nothing, its state holds the
    // same files, and the chat's latest stays the one it started from.
    let expected = if promoted.payload["changeCount"].as_u64().unwrap() > 0 {
        Some(second.id.to_string())
    } else {
        state
    };
    assert_eq!(
        env.runtime.latest_persist_state("e2e-chat").await.unwrap(),
        expected
    );
}

/// Guidance through the host API on the userdata store: queued while the writer's first answer
/// is held, read before its second request, and refused once the run has ended.
#[tokio::test]
async fn host_submits_guidance_that_the_writer_reads_next() {
    let dir = tempfile::tempdir().unwrap();
    let provider =
        tt_runtime::ScriptedProvider::from_json_str(&writer_script().to_string()).unwrap();
    let hold = provider.hold_after("default-writer", 1);
    let runtime = tt_runtime::AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(std::sync::Arc::new(provider))
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap();
    let run = runtime.start_run(start_request()).await.unwrap();
    hold.reached().await;
    let receipt = runtime
        .submit_guidance(
            run.id.as_str(),
            tt_runtime::SubmitGuidanceRequest {
                text: "Set it at dawn instead.".into(),
                client_guidance_id: Some("host-1".into()),
            },
        )
        .await
        .unwrap();
    assert_eq!(receipt.pending_count, 1);
    hold.release();
    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);
    let events = crate::delegation::all_events(&runtime, run.id.as_str()).await;
    let applied: Vec<_> = events
        .iter()
        .filter(|event| event.event_type == "user_guidance_applied")
        .collect();
    assert_eq!(applied.len(), 1);
    assert_eq!(applied[0].payload["round"], 2);
    assert_eq!(applied[0].payload["clientGuidanceIds"][0], "host-1");
    // The root agent's skills are stored where the reference keeps the run's own.
    let skills = runtime
        .read_record(run.id.as_str(), "input/resolved_skills.json")
        .await
        .unwrap();
    assert!(skills.get("effectiveSkills").is_some(), "{skills}");
    let err = runtime
        .submit_guidance(
            run.id.as_str(),
            tt_runtime::SubmitGuidanceRequest {
                text: "Too late.".into(),
                client_guidance_id: None,
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "agent.guidance_mailbox_closed");
}
