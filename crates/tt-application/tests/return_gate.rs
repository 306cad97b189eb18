//! The return gate (`delegation.returnGate`, docs/delegation.md "The return gate"): a grader
//! profile's model answers each `task.return` with accept, revise (the notes go back to the
//! agent, at most `maxRevisions` times) or reject (the task fails with its reason); each
//! grading is journaled, and a resumed or branched run does not ask again for a grading it has.

use serde_json::json;
use tt_application::ForkChanges;
use tt_domain::invocation::InvocationKind;
use tt_domain::model::AgentModelResponse;
use tt_domain::profile::{ReturnGate, RevisionsSpent};
use tt_domain::run::AgentRunStatus;
use tt_domain::task::TaskStatus;
use tt_testkit::fakes::responses;

use crate::support::*;

fn install(h: &Harness, max_revisions: u32, when_spent: RevisionsSpent) {
    h.put_profile(delegator("writer"));
    let mut critic = reviewer("critic");
    critic.delegation.return_gate = Some(ReturnGate {
        grader: "grader".into(),
        rubric: "Every slip names the scene it is in.".into(),
        max_revisions,
        when_revisions_spent: when_spent,
        max_grader_tokens: None,
    });
    h.put_profile(critic);
    h.put_profile(custom_profile("grader", |p| {
        p.instructions.agent_system_prompt = Some("You are a strict editor.".into());
    }));
}

fn writer_turns() -> Vec<AgentModelResponse> {
    publish_after(
        vec![
            turn(vec![delegate("d1", "critic", "Find continuity slips.")]),
            await_turn("a1", "allCompleted"),
        ],
        "Final scene.",
    )
}

fn verdict(verdict: &str, notes: &str) -> AgentModelResponse {
    responses::text(&json!({"verdict": verdict, "notes": notes}).to_string())
}

fn outcomes(h: &Harness, run_id: &tt_domain::ids::RunId) -> Vec<(u64, String)> {
    events_of(h, run_id, "task_return_graded")
        .into_iter()
        .map(|event| {
            (
                event.payload["attempt"].as_u64().unwrap(),
                event.payload["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The critic returns, is sent back once, returns again and is accepted.
fn revised_model() -> std::sync::Arc<tt_testkit::fakes::FakeModel> {
    by_agent(vec![
        ("writer", writer_turns()),
        (
            "critic",
            vec![
                task_return("r1", "One slip: the storm starts twice."),
                task_return("r2", "One slip, in scene 2: the storm starts twice."),
            ],
        ),
        (
            "grader",
            vec![
                verdict("revise", "Name the scene of the slip."),
                verdict("accept", "Meets the rubric."),
            ],
        ),
    ])
}

#[tokio::test]
async fn a_result_sent_back_with_notes_is_revised_and_then_accepted() {
    let h = harness(revised_model());
    install(&h, 2, RevisionsSpent::Accept);
    let run = h.run_completed(request(Some("writer"))).await;

    // The notes reached the critic as its first return's result.
    let critic = requests_of(&h, "critic");
    let sent_back = tool_result(&critic[1], "r1");
    assert!(sent_back.1);
    assert_eq!(
        sent_back.2.as_deref(),
        Some("agent.return_revision_requested")
    );
    assert!(
        sent_back.3.contains("Name the scene of the slip."),
        "{}",
        sent_back.3
    );
    tt_testkit::leaks::assert_no_leaks("a result sent back", &sent_back.3);

    // Its revised result stands.
    assert_eq!(h.store.tasks(&run.id)[0].status, TaskStatus::Completed);
    let summary = h
        .store
        .file_text(&run.id, "summaries/critic-result.md")
        .unwrap();
    assert!(summary.contains("in scene 2"), "{summary}");

    // Two gradings, journaled; the grader read the rubric and each result.
    assert_eq!(
        outcomes(&h, &run.id),
        [(1, "sentBack".to_owned()), (2, "accepted".to_owned())]
    );
    let grader = requests_of(&h, "grader");
    assert_eq!(grader.len(), 2);
    let asked = grader[1].messages[1].text_content();
    assert!(asked.contains("Every slip names the scene it is in."));
    assert!(asked.contains("in scene 2"));
    tt_testkit::leaks::assert_no_leaks("the grader's request", &asked);
}

#[tokio::test]
async fn a_rejected_result_fails_the_task_with_the_reviewers_reason() {
    let h = harness(by_agent(vec![
        ("writer", writer_turns()),
        ("critic", vec![task_return("r1", "All fine.")]),
        (
            "grader",
            vec![verdict("reject", "It checked a different draft.")],
        ),
    ]));
    install(&h, 2, RevisionsSpent::Accept);
    let run = h.run_completed(request(Some("writer"))).await;
    h.failed_task(
        &run.id,
        "agent.return_rejected: It checked a different draft.",
    );
    let capsule = tool_result(&requests_of(&h, "writer")[2], "a1").3;
    assert!(
        capsule.contains("Its result was turned down at review: It checked a different draft."),
        "{capsule}"
    );
    assert_eq!(outcomes(&h, &run.id), [(1, "rejected".to_owned())]);
}

#[tokio::test]
async fn once_the_revisions_are_spent_the_last_result_stands_or_fails_as_configured() {
    for (when_spent, status, outcome) in [
        (RevisionsSpent::Accept, TaskStatus::Completed, "stood"),
        (RevisionsSpent::Fail, TaskStatus::Failed, "failed"),
    ] {
        let h = harness(by_agent(vec![
            ("writer", writer_turns()),
            (
                "critic",
                vec![task_return("r1", "First."), task_return("r2", "Second.")],
            ),
            (
                "grader",
                vec![verdict("revise", "More."), verdict("revise", "Still more.")],
            ),
        ]));
        install(&h, 1, when_spent);
        let run = h.run_to_end(request(Some("writer"))).await;
        let task = &h.store.tasks(&run.id)[0];
        assert_eq!(task.status, status, "{when_spent:?}");
        assert_eq!(
            outcomes(&h, &run.id),
            [(1, "sentBack".to_owned()), (2, outcome.to_owned())]
        );
        if status == TaskStatus::Failed {
            assert!(
                task.error
                    .as_deref()
                    .unwrap()
                    .starts_with("agent.return_revisions_spent"),
                "{:?}",
                task.error
            );
        }
    }
}

#[tokio::test]
async fn a_run_resumed_in_the_middle_of_a_revision_does_not_ask_for_an_answered_grading_again() {
    let model = revised_model();
    // The critic's turn after its result was sent back waits until the run is cancelled.
    model.hang_when(|request| request.agent_profile_id.as_str() == "critic" && request.round == 2);
    let h = harness(model);
    install(&h, 2, RevisionsSpent::Accept);
    let run = h.service.start_run(request(Some("writer"))).await.unwrap();
    h.model.wait_for_parked(1).await;
    h.service.cancel_run(&run.id).await.unwrap();
    assert_eq!(h.wait(&run.id).await.status, AgentRunStatus::Cancelled);
    assert_eq!(requests_of(&h, "grader").len(), 1);

    h.model.stop_hanging();
    h.service.resume_run(&run.id).await.unwrap();
    let resumed = h.wait(&run.id).await;
    assert_eq!(resumed.status, AgentRunStatus::Completed);
    // One grading more, for the revised result: the first is not asked again, and the
    // second counts as the second.
    assert_eq!(requests_of(&h, "grader").len(), 2);
    assert_eq!(
        outcomes(&h, &run.id),
        [(1, "sentBack".to_owned()), (2, "accepted".to_owned())]
    );
    // The resumed critic read the notes it had been sent.
    let critic = requests_of(&h, "critic");
    let resumed_request = critic.last().unwrap();
    assert!(
        tool_results(resumed_request)
            .iter()
            .any(|result| result.0 == "r1" && result.3.contains("Name the scene of the slip."))
    );
    assert_eq!(h.store.tasks(&run.id)[0].status, TaskStatus::Completed);
}

#[tokio::test]
async fn a_branch_in_the_middle_of_a_revision_grades_only_the_revised_result() {
    let h = harness(revised_model());
    install(&h, 2, RevisionsSpent::Accept);
    let source = h.run_completed(request(Some("writer"))).await;
    let critic_id = h
        .invocation_of_kind(&source.id, InvocationKind::Subagent)
        .id;
    let graded_before = requests_of(&h, "grader").len();

    let ended = h
        .fork_and_wait(&source.id, at_round(critic_id, 2), ForkChanges::default())
        .await;
    assert_eq!(ended.status, AgentRunStatus::Completed);
    // The branch asked the grader once, about the revised result, as its second grading.
    assert_eq!(requests_of(&h, "grader").len(), graded_before + 1);
    assert_eq!(
        outcomes(&h, &ended.id),
        [(1, "sentBack".to_owned()), (2, "accepted".to_owned())]
    );
    assert_eq!(h.store.tasks(&ended.id)[0].status, TaskStatus::Completed);
}

#[tokio::test]
async fn a_forked_agents_plain_answer_is_graded_and_sent_back_like_a_return() {
    let h = harness(by_agent(vec![
        (
            "writer",
            publish_after(
                vec![
                    turn(vec![call(
                        "d1",
                        "agent_delegate",
                        json!({"agentId": "critic", "mode": "fork", "task": {"objective": "Find continuity slips."}}),
                    )]),
                    await_turn("a1", "allCompleted"),
                ],
                "Final scene.",
            ),
        ),
        (
            "critic",
            vec![
                responses::text("One slip."),
                responses::text("One slip, in scene 2."),
            ],
        ),
        (
            "grader",
            vec![
                verdict("revise", "Name the scene."),
                verdict("accept", "Good."),
            ],
        ),
    ]));
    install(&h, 2, RevisionsSpent::Accept);
    let mut critic = reviewer("critic");
    critic.delegation.allow_fork = true;
    critic.delegation.return_gate = Some(ReturnGate {
        grader: "grader".into(),
        rubric: "Every slip names its scene.".into(),
        max_revisions: 2,
        when_revisions_spent: RevisionsSpent::Accept,
        max_grader_tokens: None,
    });
    h.put_profile(critic);
    let run = h.run_completed(request(Some("writer"))).await;
    let critic = requests_of(&h, "critic");
    let sent_back = tool_result(&critic[1], "fork_return_1");
    assert!(sent_back.3.contains("Name the scene."), "{}", sent_back.3);
    // Its first request lists its delegating agent's tools as they were sent; once its history
    // holds the sent-back `task_return`, the list declares it too, at the end.
    let names = |request: &tt_domain::model::AgentModelRequest| -> Vec<String> {
        request
            .tools
            .iter()
            .map(|spec| spec.model_name.clone())
            .collect()
    };
    let writer = requests_of(&h, "writer");
    assert_eq!(names(&critic[0]), names(&writer[0]));
    assert!(!names(&critic[0]).contains(&"task_return".to_owned()));
    let mut declared = names(&writer[0]);
    declared.push("task_return".to_owned());
    assert_eq!(names(&critic[1]), declared);
    assert_eq!(
        outcomes(&h, &run.id),
        [(1, "sentBack".to_owned()), (2, "accepted".to_owned())]
    );
    let summary = h
        .store
        .file_text(&run.id, "summaries/critic-result.md")
        .unwrap();
    assert!(summary.contains("in scene 2"), "{summary}");
}
