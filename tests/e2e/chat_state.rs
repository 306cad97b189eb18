//! One writer of a conversation's persistent state (docs/storage.md, "persist/"): two runs of
//! one chat that both change `persist/` from the same state cannot silently drop each other's
//! update; a run that changes nothing never hides one; a branch replaces its source's state.

use serde_json::{Value, json};
use std::sync::Arc;
use tt_domain::approval::{ApprovalPolicy, ApprovalRule};
use tt_domain::model::{AgentModelRequest, ModelContentPart, ModelRole};
use tt_runtime::{
    AgentRunStatus, AgentRuntime, AgentRuntimeBuilder, CommitBridgeChoice, ForkChanges, ForkPoint,
    ForkRunRequest, InvocationId,
};
use tt_testkit::fakes::{FakeModel, responses};

use crate::delegation::{WRITERS_ROOM, all_events};
use crate::support::start_request;

pub(crate) const CHAT: &str = "e2e-chat";

fn done(request: &AgentModelRequest, id: &str) -> bool {
    request
        .messages
        .iter()
        .flat_map(|m| m.parts.iter())
        .any(|part| matches!(part, ModelContentPart::ToolResult { result } if result.call_id == id))
}

/// The user's request as the model read it (the last user text).
fn user_request(request: &AgentModelRequest) -> String {
    request
        .messages
        .iter()
        .filter(|m| m.role == ModelRole::User)
        .flat_map(|m| m.parts.iter())
        .filter_map(|part| match part {
            ModelContentPart::Text { text } => Some(text.clone()),
            _ => None,
        })
        .next_back()
        .unwrap_or_default()
}

fn call(id: &str, name: &str, args: Value) -> tt_domain::model::AgentModelResponse {
    responses::tool_calls(vec![(id, name, args)])
}

/// Adds the user's request to `persist/facts.md` (unless the request says "nothing to
/// remember"), then a reply, publishes it and finishes.
pub(crate) fn remembering_writer() -> Arc<FakeModel> {
    FakeModel::new(|request: &AgentModelRequest| {
        let asked = user_request(request);
        Ok(if done(request, "c") {
            call("f", "workspace_finish", json!({}))
        } else if done(request, "m") {
            call("c", "workspace_commit", json!({}))
        } else if done(request, "p") || asked.contains("nothing to remember") {
            call(
                "m",
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "Done."}),
            )
        } else {
            call(
                "p",
                "workspace_write_file",
                json!({"path": "persist/facts.md", "content": format!("{asked}\n"), "mode": "append"}),
            )
        })
    })
}

async fn runtime(dir: &std::path::Path) -> AgentRuntime {
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir)
        .provider(remembering_writer())
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap();
    // `lead` writes freely; `gated` waits for a person before it publishes, which holds it
    // in the middle of its run while another run of the chat completes.
    for (id, gated) in [("lead", false), ("gated", true)] {
        let mut profile: tt_runtime::AgentProfileDefinition =
            serde_json::from_str(WRITERS_ROOM[0]).unwrap();
        profile.id = tt_domain::ids::ProfileId::parse(id).unwrap();
        if gated {
            profile.tools.approval = [("workspace.commit".to_owned(), ApprovalRule::Always)]
                .into_iter()
                .collect::<ApprovalPolicy>();
        }
        runtime.save_profile(profile).await.unwrap();
    }
    runtime
}

pub(crate) async fn start(
    runtime: &AgentRuntime,
    profile: &str,
    asked: &str,
    base: Option<String>,
) -> String {
    let mut request = start_request();
    request.profile_id = Some(profile.into());
    request.user_request = Some(asked.into());
    request.persist_base_state_id = base;
    runtime.start_run(request).await.unwrap().id.to_string()
}

/// Starts a `gated` run and waits until it asks to publish (its `persist/` already written).
async fn start_held(runtime: &AgentRuntime, asked: &str, base: Option<String>) -> (String, String) {
    let run_id = start(runtime, "gated", asked, base).await;
    let mut events = runtime.subscribe(&run_id, 0, None);
    while let Some(event) = events.next().await.unwrap() {
        if event.event_type == "tool_approval_requested" {
            let approval = event.payload["approvalId"].as_str().unwrap().to_owned();
            return (run_id, approval);
        }
    }
    panic!("the gated run ended without asking");
}

async fn completed(runtime: &AgentRuntime, run_id: &str) {
    let run = runtime.wait_for_run(run_id).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed, "{run_id}");
}

pub(crate) async fn persisted(runtime: &AgentRuntime, run_id: &str) -> String {
    runtime
        .read_workspace_file(run_id, "persist/facts.md")
        .await
        .unwrap()
        .text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_run_of_a_chat_cannot_replace_what_the_first_saved_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(dir.path()).await;
    // The older run is held before it publishes, with its `persist/` written.
    let (older, approval) = start_held(&runtime, "The ship is red.", None).await;
    let newer = start(&runtime, "lead", "The harbour is north.", None).await;
    completed(&runtime, &newer).await;
    assert_eq!(
        runtime.latest_persist_state(CHAT).await.unwrap().as_deref(),
        Some(newer.as_str())
    );

    runtime.run(&older).approve(&approval).await.unwrap();
    let ended = runtime.wait_for_run(&older).await.unwrap();
    // What it published stays; its state is refused with a code, not silently made current.
    assert_eq!(ended.status, AgentRunStatus::PartialSuccess);
    let events = all_events(&runtime, &older).await;
    let end = events.last().unwrap();
    assert_eq!(end.event_type, "run_partial_success");
    assert_eq!(end.payload["code"], "agent.persistent_state_conflict");
    assert_eq!(end.payload["preservedCommitCount"], 1);
    assert!(
        events
            .iter()
            .any(|event| event.event_type == "persistent_changes_commit_failed")
    );
    assert!(
        !events
            .iter()
            .any(|event| event.event_type == "persistent_changes_committed")
    );
    // The chat keeps the newer run's update; the refused one stays in its run to be read.
    assert_eq!(
        runtime.latest_persist_state(CHAT).await.unwrap().as_deref(),
        Some(newer.as_str())
    );
    assert_eq!(persisted(&runtime, &older).await, "The ship is red.\n");

    // The chat's next run starts from the newer state and saves on top of it.
    let next = start(&runtime, "lead", "The ship is red.", Some(newer.clone())).await;
    completed(&runtime, &next).await;
    assert_eq!(
        persisted(&runtime, &next).await,
        "The harbour is north.\nThe ship is red.\n"
    );
    assert_eq!(
        runtime.latest_persist_state(CHAT).await.unwrap().as_deref(),
        Some(next.as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_changes_nothing_never_hides_an_update_made_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(dir.path()).await;
    let (saving, approval) = start_held(&runtime, "The harbour is north.", None).await;
    let idle = start(&runtime, "lead", "A note with nothing to remember.", None).await;
    completed(&runtime, &idle).await;
    runtime.run(&saving).approve(&approval).await.unwrap();
    // The newer run changed nothing, so the older one's update conflicts with nothing, and
    // it stays the chat's state although a newer run completed.
    completed(&runtime, &saving).await;
    assert_eq!(
        runtime.latest_persist_state(CHAT).await.unwrap().as_deref(),
        Some(saving.as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_branch_is_another_take_of_its_turn_and_replaces_its_sources_state() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(dir.path()).await;
    let source = start(&runtime, "lead", "The ship is red.", None).await;
    completed(&runtime, &source).await;
    let branch = runtime
        .fork_run(
            &source,
            ForkRunRequest {
                at: ForkPoint::AgentRound {
                    invocation_id: InvocationId::root(),
                    round: 1,
                },
                changes: ForkChanges {
                    user_request: Some("The ship is blue.".into()),
                    ..ForkChanges::default()
                },
            },
        )
        .await
        .unwrap()
        .id
        .to_string();
    completed(&runtime, &branch).await;
    assert_eq!(persisted(&runtime, &branch).await, "The ship is blue.\n");
    assert_eq!(
        runtime.latest_persist_state(CHAT).await.unwrap().as_deref(),
        Some(branch.as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runtimes_on_one_data_dir_follow_the_same_rule() {
    let dir = tempfile::tempdir().unwrap();
    let first = runtime(dir.path()).await;
    let second = runtime(dir.path()).await;
    let (older, approval) = start_held(&first, "The ship is red.", None).await;
    let newer = start(&second, "lead", "The harbour is north.", None).await;
    completed(&second, &newer).await;
    // Each runtime writes only its own runs.
    assert_eq!(
        second
            .run(&older)
            .approve(&approval)
            .await
            .unwrap_err()
            .code,
        "agent.run_locked"
    );
    first.run(&older).approve(&approval).await.unwrap();
    let ended = first.wait_for_run(&older).await.unwrap();
    assert_eq!(ended.status, AgentRunStatus::PartialSuccess);
    for runtime in [&first, &second] {
        assert_eq!(
            runtime.latest_persist_state(CHAT).await.unwrap().as_deref(),
            Some(newer.as_str())
        );
    }
}
