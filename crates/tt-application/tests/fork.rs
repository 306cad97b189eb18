//! Branching on the in-memory store (docs/branching.md): the branch replays its source's
//! stored steps without a model call, reads the changes' note before its first live request
//! (what it reads is pinned as a snapshot), publishes under a new commit id, and leaves its
//! source's journal and files as they were.

use serde_json::json;
use tt_application::{ForkChanges, ForkPoint, ForkRunRequest};
use tt_domain::ids::InvocationId;
use tt_domain::model::ModelRole;
use tt_domain::run::AgentRunStatus;

use crate::support::*;

/// The text of the last user message of a request.
fn last_user_text(request: &tt_domain::model::AgentModelRequest) -> String {
    request
        .messages
        .iter()
        .rev()
        .find(|message| message.role == ModelRole::User)
        .expect("a user message")
        .text_content()
}

#[tokio::test]
async fn a_branch_replays_its_source_and_reads_the_note_before_its_first_live_request() {
    let (h, source) = happy_run().await;
    let source_events = h.events(&source.id);
    let source_files = h.store.files(&source.id);
    let asked_before = h.model.requests().len();

    let ended = h
        .fork_and_wait(
            &source.id,
            at_round(InvocationId::root(), 2),
            ForkChanges {
                guidance: Some("Publish it with a calmer title.".into()),
                ..ForkChanges::default()
            },
        )
        .await;
    assert_eq!(ended.status, AgentRunStatus::Completed);
    assert_eq!(ended.forked_from.as_ref().unwrap().run_id, source.id);

    // Only rounds 2 and 3 are asked again; round 1 is the source's stored answer.
    let requests = h.model.requests();
    let rounds: Vec<u32> = requests[asked_before..].iter().map(|r| r.round).collect();
    assert_eq!(rounds, [2, 3]);
    let first = &requests[asked_before];
    let note = last_user_text(first);
    tt_testkit::leaks::assert_no_leaks("the note a branch's agent reads", &note);
    insta::assert_snapshot!("fork_note_as_the_agent_reads_it", note);
    // Its history up to the note is the one the source's round 2 was asked with.
    let source_round_2 = &requests[1];
    assert_eq!(
        first.messages[..source_round_2.messages.len()],
        source_round_2.messages[..]
    );

    // Two commits, two ids: the branch's is a new message.
    let commits = h.bridge.requests();
    assert_eq!(commits.len(), 2);
    assert_ne!(commits[0].commit_id, commits[1].commit_id);
    assert_eq!(commits[1].run_id, ended.id);
    // The source is as it was; the branch ends with the same files.
    assert_eq!(h.events(&source.id), source_events);
    assert_eq!(h.store.files(&source.id), source_files);
    assert_eq!(h.store.files(&ended.id), source_files);
    let events = h.events(&ended.id);
    assert_eq!(events[0].payload["forkedFrom"]["runId"], json!(source.id));
}

#[tokio::test]
async fn a_branch_moves_a_chosen_profile_to_another_connection_from_the_fork_point() {
    let other = by_turn(happy_turns());
    let connections = tt_testkit::fakes::FakeConnections::new().with("other", other.clone());
    let h = harness_full(
        by_turn(happy_turns()),
        tt_testkit::fakes::FakeCommitBridge::approving(),
        tt_testkit::fakes::FakePromptBroker::answering(),
        std::sync::Arc::new(connections),
    );
    let source = h.run_to_end(request(None)).await;
    let asked_before = h.model.requests().len();
    let mut change = tt_domain::run::ProfileModelChange {
        connection_ref: Some("other".into()),
        ..Default::default()
    };
    change.generation.temperature = Some(0.2);
    let ended = h
        .fork_and_wait(
            &source.id,
            at_round(InvocationId::root(), 2),
            ForkChanges {
                profiles: [(
                    tt_domain::ids::ProfileId::parse("default-writer").unwrap(),
                    change,
                )]
                .into(),
                ..ForkChanges::default()
            },
        )
        .await;
    assert_eq!(ended.status, AgentRunStatus::Completed);
    // The run's own model is not asked again; the other connection answers rounds 2 and 3,
    // with the changed settings.
    assert_eq!(h.model.requests().len(), asked_before);
    let asked: Vec<(u32, Option<f64>)> = other
        .requests()
        .iter()
        .map(|request| (request.round, request.generation.temperature))
        .collect();
    assert_eq!(asked, [(2, Some(0.2)), (3, Some(0.2))]);

    // A profile that does not exist, or a connection that does not, is refused.
    for (profile, connection, code) in [
        ("nobody", "other", "agent.profile_not_found"),
        (
            "default-writer",
            "nowhere",
            "agent.model_connection_not_found",
        ),
    ] {
        let error = h
            .service
            .fork_run(
                &source.id,
                ForkRunRequest {
                    at: ForkPoint::LastCommit,
                    changes: ForkChanges {
                        profiles: [(
                            tt_domain::ids::ProfileId::parse(profile).unwrap(),
                            tt_domain::run::ProfileModelChange {
                                connection_ref: Some(connection.into()),
                                ..Default::default()
                            },
                        )]
                        .into(),
                        ..ForkChanges::default()
                    },
                },
            )
            .await
            .unwrap_err();
        assert_eq!(error.code(), code);
    }
}

/// "Edit and regenerate": a branch at the writer's first round with the user's request
/// edited asks the model with the new request; once the writer has answered, the request can
/// no longer be edited.
#[tokio::test]
async fn a_branch_before_the_first_answer_can_edit_the_users_request() {
    let (h, source) = happy_run().await;
    let asked_before = h.model.requests().len();
    let fork = |round: u32| ForkRunRequest {
        at: ForkPoint::AgentRound {
            invocation_id: InvocationId::root(),
            round,
        },
        changes: ForkChanges {
            user_request: Some("Write about the sea instead.".into()),
            ..ForkChanges::default()
        },
    };
    let refused = h.service.fork_run(&source.id, fork(2)).await.unwrap_err();
    assert_eq!(refused.code(), "agent.fork_point_invalid");
    let branch = h.service.fork_run(&source.id, fork(1)).await.unwrap();
    let ended = h.wait(&branch.id).await;
    assert_eq!(ended.status, AgentRunStatus::Completed);
    let first = &h.model.requests()[asked_before];
    assert_eq!(first.round, 1);
    let asked = last_user_text(first);
    assert!(asked.contains("Write about the sea instead."), "{asked}");
    // The source's input is untouched.
    let original = last_user_text(&h.model.requests()[0]);
    assert!(!original.contains("the sea instead"), "{original}");
}
