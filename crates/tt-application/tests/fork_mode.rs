//! Fork mode (`agent.delegate` with `mode: "fork"`, docs/delegation.md "Fork mode"): the task's
//! agent reads its delegating agent's request byte for byte (messages and tools), then its own
//! note and brief; its own policy still decides what it may call; its plain answer is its
//! result; a resumed run and a branch start it from the same prefix.

use serde_json::json;
use tt_application::ForkChanges;
use tt_domain::invocation::InvocationKind;
use tt_domain::model::{AgentModelRequest, ModelRole};
use tt_domain::run::AgentRunStatus;
use tt_domain::task::TaskStatus;
use tt_testkit::fakes::responses;

use crate::support::*;

fn install(h: &Harness) {
    h.put_profile(delegator("writer"));
    let mut critic = reviewer("critic");
    critic.delegation.allow_fork = true;
    h.put_profile(critic);
    h.put_profile(reviewer("stylist"));
}

/// A harness on `model` with the profiles [`install`]ed.
fn installed(model: std::sync::Arc<tt_testkit::fakes::FakeModel>) -> Harness {
    let h = harness(model);
    install(&h);
    h
}

/// The writer of [`writer_turns`] and the critic of [`critic_turns`].
fn writer_and_critic() -> std::sync::Arc<tt_testkit::fakes::FakeModel> {
    by_agent(vec![("writer", writer_turns()), ("critic", critic_turns())])
}

fn fork_delegate(id: &str, agent: &str) -> (String, String, serde_json::Value) {
    call(
        id,
        "agent_delegate",
        json!({"agentId": agent, "mode": "fork", "task": {"title": "Review", "objective": "Check the scene for continuity slips."}}),
    )
}

/// The writer drafts, delegates in fork mode, waits, then publishes and finishes.
fn writer_turns() -> Vec<tt_domain::model::AgentModelResponse> {
    vec![
        turn(vec![write("w1", "output/main.md", "A storm rolled in.")]),
        turn(vec![fork_delegate("d1", "critic")]),
        await_turn("a1", "allCompleted"),
        turn(vec![call("c1", "workspace_commit", json!({}))]),
        turn(vec![call("f1", "workspace_finish", json!({}))]),
    ]
}

/// The critic tries a tool that is not its own, reads the draft, then answers in plain text.
fn critic_turns() -> Vec<tt_domain::model::AgentModelResponse> {
    vec![
        turn(vec![call("k1", "workspace_commit", json!({}))]),
        turn(vec![call(
            "k2",
            "workspace_read_file",
            json!({"path": "output/main.md"}),
        )]),
        responses::text("One slip: the storm starts twice."),
    ]
}

/// `request` opens with every message and the very tool specs of `source`.
fn assert_prefix(request: &AgentModelRequest, source: &AgentModelRequest) {
    assert!(request.messages.len() > source.messages.len());
    assert_eq!(
        request.messages[..source.messages.len()],
        source.messages[..],
        "the messages up to the call, as the delegating agent sent them"
    );
    assert_eq!(
        serde_json::to_string(&*request.tools).unwrap(),
        serde_json::to_string(&*source.tools).unwrap(),
        "the tool specs the delegating agent sent"
    );
}

#[tokio::test]
async fn a_fork_mode_task_reads_its_delegators_request_then_its_note_and_answers_in_plain_text() {
    let h = installed(writer_and_critic());
    let run = h.run_completed(request(Some("writer"))).await;

    // The writer is offered the mode: one of its targets allows fork mode.
    let writer = requests_of(&h, "writer");
    let spec = writer[0]
        .tools
        .iter()
        .find(|spec| spec.model_name == "agent_delegate")
        .unwrap();
    assert_eq!(
        spec.input_schema["properties"]["mode"]["enum"],
        json!(["brief", "fork"])
    );

    // The critic's first request: the writer's round-2 request, then one user message.
    let critic = requests_of(&h, "critic");
    assert_prefix(&critic[0], &writer[1]);
    assert_eq!(critic[0].messages.len(), writer[1].messages.len() + 1);
    let note = critic[0].messages.last().unwrap();
    assert_eq!(note.role, ModelRole::User);
    let note = note.text_content();
    tt_testkit::leaks::assert_no_leaks("the note of an agent started in fork mode", &note);
    insta::assert_snapshot!("fork_mode_note_as_the_agent_reads_it", note);
    // Every later request keeps the prefix.
    for later in &critic[1..] {
        assert_prefix(later, &writer[1]);
    }

    // Its own policy holds: `workspace_commit` is listed but not its own.
    let refused = tool_results(&critic[1]);
    let commit = refused.iter().find(|result| result.0 == "k1").unwrap();
    assert!(commit.1, "{commit:?}");
    assert_eq!(commit.2.as_deref(), Some("model.unknown_tool_call"));

    // Its plain answer was its result.
    let tasks = h.store.tasks(&run.id);
    assert_eq!(tasks[0].status, TaskStatus::Completed);
    let summary = h
        .store
        .file_text(&run.id, "summaries/critic-result.md")
        .unwrap();
    assert!(
        summary.contains("One slip: the storm starts twice."),
        "{summary}"
    );
    let capsule = tool_result(&writer[3], "a1");
    assert!(capsule.3.contains("One slip: the storm starts twice."));

    // Journaled: the delegation's mode, and the return as a call of its own.
    let started = h.first_event(&run.id, "agent_delegate_started");
    assert_eq!(started.payload["mode"], "fork");
    let returned = events_of(&h, &run.id, "tool_call_completed")
        .into_iter()
        .find(|event| event.payload["callId"] == "fork_return_3");
    assert!(returned.is_some(), "the plain answer's return is journaled");

    // The host reads its conversation as it read it: the prefix, then its note and brief.
    let critic_id = h.invocation_of_kind(&run.id, InvocationKind::Subagent).id;
    let conversation = h
        .service
        .agent_conversation(&run.id, &critic_id)
        .await
        .unwrap();
    let opening: Vec<serde_json::Value> = conversation
        .entries
        .iter()
        .take(writer[1].messages.len() + 1)
        .map(|entry| serde_json::to_value(entry).unwrap())
        .collect();
    assert_eq!(opening[0]["kind"], "system");
    assert_eq!(
        opening[0]["text"].as_str().unwrap(),
        writer[1].messages[0].text_content()
    );
    assert_eq!(opening.last().unwrap()["text"].as_str().unwrap(), note);
}

#[tokio::test]
async fn fork_mode_is_refused_for_a_target_that_does_not_allow_it() {
    let h = installed(by_agent(vec![
        (
            "writer",
            vec![
                turn(vec![fork_delegate("d1", "stylist")]),
                turn(vec![call("f1", "workspace_finish", json!({}))]),
            ],
        ),
        ("stylist", vec![task_return("r", "never")]),
    ]));
    let run = h.run_to_end(request(Some("writer"))).await;
    assert!(h.store.tasks(&run.id).is_empty());
    let refused = tool_results(&last_request_of(&h, "writer"));
    let refused = refused.iter().find(|result| result.0 == "d1").unwrap();
    assert_eq!(refused.2.as_deref(), Some("agent.delegation_policy_denied"));
    assert!(
        refused.3.contains("agent.target_fork_denied"),
        "{}",
        refused.3
    );
}

#[tokio::test]
async fn without_a_target_that_allows_fork_mode_the_delegate_spec_has_no_mode() {
    let h = harness_with_critic(by_agent(vec![(
        "writer",
        vec![turn(vec![call("f1", "workspace_finish", json!({}))])],
    )]));
    h.run_to_end(request(Some("writer"))).await;
    let spec = last_request_of(&h, "writer")
        .tools
        .iter()
        .find(|spec| spec.model_name == "agent_delegate")
        .cloned()
        .unwrap();
    assert!(spec.input_schema["properties"].get("mode").is_none());
}

#[tokio::test]
async fn a_cancelled_run_resumes_its_fork_mode_task_with_the_same_prefix() {
    let model = writer_and_critic();
    // The critic's second model call waits until the run is cancelled.
    model.hang_when(|request| request.agent_profile_id.as_str() == "critic" && request.round == 2);
    let h = installed(model);
    let run = h.start_parked(request(Some("writer")), 1).await;
    h.cancel_to_end(&run.id).await;
    let asked_before = h.model.requests().len();

    h.model.stop_hanging();
    h.service.resume_run(&run.id).await.unwrap();
    let resumed = h.wait(&run.id).await;
    assert_eq!(resumed.status, AgentRunStatus::Completed);

    // The resumed critic asks again from its round 2, with the same prefix; round 1 is its
    // stored answer.
    let writer = requests_of(&h, "writer");
    let critic = requests_of(&h, "critic");
    let resumed_critic = h.model.requests()[asked_before..]
        .iter()
        .find(|request| request.agent_profile_id.as_str() == "critic")
        .cloned()
        .unwrap();
    assert_eq!(resumed_critic.round, 2);
    assert_prefix(&resumed_critic, &writer[1]);
    assert_eq!(
        resumed_critic.messages[..critic[0].messages.len()],
        critic[0].messages[..],
        "the resumed agent's history starts as its first request did"
    );
    let tasks = h.store.tasks(&run.id);
    assert_eq!(tasks.len(), 1, "the task is not made twice");
    assert_eq!(tasks[0].status, TaskStatus::Completed);
}

#[tokio::test]
async fn a_branch_in_the_middle_of_a_fork_mode_task_starts_it_from_the_same_prefix() {
    let h = installed(writer_and_critic());
    let source = h.run_completed(request(Some("writer"))).await;
    let critic_id = h
        .invocation_of_kind(&source.id, InvocationKind::Subagent)
        .id;
    let source_critic = requests_of(&h, "critic");
    let asked_before = h.model.requests().len();

    let ended = h
        .fork_and_wait(&source.id, at_round(critic_id, 3), ForkChanges::default())
        .await;
    assert_eq!(ended.status, AgentRunStatus::Completed);

    // The branch asks the critic's round 3 again, exactly as the source did.
    let asked: Vec<AgentModelRequest> = h.model.requests()[asked_before..].to_vec();
    let critic = asked
        .iter()
        .find(|request| request.agent_profile_id.as_str() == "critic")
        .unwrap();
    assert_eq!(critic.round, 3);
    assert_eq!(critic.messages, source_critic[2].messages);
    assert_prefix(critic, &requests_of(&h, "writer")[1]);
    assert_eq!(h.store.tasks(&ended.id)[0].status, TaskStatus::Completed);
}

#[tokio::test]
async fn a_fork_mode_task_is_not_resumed_once_its_profile_stops_allowing_fork_mode() {
    let model = writer_and_critic();
    model.hang_when(|request| request.agent_profile_id.as_str() == "critic" && request.round == 2);
    let h = installed(model);
    // Another target keeps fork mode in the writer's spec (its own snapshot stays the same).
    let mut checker = reviewer("checker");
    checker.delegation.allow_fork = true;
    h.put_profile(checker);
    let run = h.start_parked(request(Some("writer")), 1).await;
    h.cancel_to_end(&run.id).await;
    // Its start would read its brief instead of its prefix: refused, not replayed wrongly.
    h.put_profile(reviewer("critic"));
    h.model.stop_hanging();
    let refused = h.service.resume_run(&run.id).await.unwrap_err();
    assert!(
        refused.to_string().contains("agent.resume_profile_changed"),
        "{refused}"
    );
    assert!(refused.to_string().contains("fork mode"), "{refused}");
}
