//! The host answers commits through the host API, and bad answers get coded errors.

use tt_runtime::{AgentRunStatus, CommitBridgeChoice, ResolveChatCommitRequest};

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
    }
    let run = env.runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);
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
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn host_errors_are_coded() {
    let env = env(writer_script(), CommitBridgeChoice::HostApi);
    let err = env.runtime.cancel_run("run_nope").await.unwrap_err();
    assert_eq!(err.code, "agent.not_found");
    let mut bad = start_request();
    bad.profile_id = Some("Not A Profile".into());
    let err = env.runtime.start_run(bad).await.unwrap_err();
    assert_eq!(err.code, "agent.profile_not_found");
}
