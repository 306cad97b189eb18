//! User guidance: the per-run mailbox, its limits, the `<user_guidance>` message before the
//! foreground agent's next model request, and discarding on cancel and finish.

use tt_application::{
    MAX_GUIDANCE_CHARS, MAX_PENDING_GUIDANCE_CHARS, MAX_PENDING_GUIDANCE_ITEMS,
    SubmitGuidanceRequest,
};
use tt_domain::model::ModelRole;
use tt_domain::run::AgentRunStatus;
use tt_testkit::fakes::FakeModel;

use crate::support::*;

fn note(text: &str) -> SubmitGuidanceRequest {
    SubmitGuidanceRequest {
        text: text.to_owned(),
        client_guidance_id: None,
    }
}

fn error_code(result: tt_application::ApplicationResult<impl std::fmt::Debug>) -> &'static str {
    result.expect_err("refused").code().as_str()
}

#[tokio::test]
async fn submitted_guidance_is_applied_to_next_model_request() {
    let (h, run) = happy_run_parked_at(1).await;
    let receipt = h
        .service
        .submit_guidance(
            &run.id,
            SubmitGuidanceRequest {
                text: "Make the storm arrive earlier.".into(),
                client_guidance_id: Some("ui-7".into()),
            },
        )
        .await
        .unwrap();
    assert_eq!(receipt.pending_count, 1);
    assert_eq!(receipt.pending_chars, 30);
    let run = h.release_to_completion(&run.id).await;

    let requests = h.model.requests();
    let guidance_in = |index: usize| {
        requests[index]
            .messages
            .iter()
            .filter(|m| m.role == ModelRole::User && m.text_content().contains("<user_guidance>"))
            .count()
    };
    // Not in the request that was already on its way; in the next one, once; then kept in the
    // conversation like any other message.
    assert_eq!(guidance_in(0), 0);
    assert_eq!(guidance_in(1), 1);
    assert_eq!(guidance_in(2), 1);
    let message = requests[1].messages.last().unwrap();
    assert_eq!(message.role, ModelRole::User);
    tt_testkit::leaks::assert_no_leaks("guidance message", &message.text_content());
    insta::assert_snapshot!("user_guidance_message", message.text_content());

    let submitted = events_of(&h, &run.id, "user_guidance_submitted");
    let applied = events_of(&h, &run.id, "user_guidance_applied");
    assert_eq!((submitted.len(), applied.len()), (1, 1));
    assert!(submitted[0].seq < applied[0].seq);
    assert_eq!(
        applied[0].payload["messageIndex"]
            .as_u64()
            .map(|i| i as usize),
        Some(requests[1].messages.len() - 1)
    );
    insta::assert_json_snapshot!("user_guidance_submitted_payload", submitted[0].payload);
    insta::assert_json_snapshot!("user_guidance_applied_payload", applied[0].payload);
    assert!(events_of(&h, &run.id, "user_guidance_discarded").is_empty());
}

#[tokio::test]
async fn cancel_run_discards_pending_guidance_and_closes_mailbox() {
    let h = harness(FakeModel::hanging());
    let run = h.start_parked(request(None), 1).await;
    for text in ["Shorter, please.", "And no epilogue."] {
        h.service
            .submit_guidance(&run.id, note(text))
            .await
            .unwrap();
    }
    h.service.cancel_run(&run.id).await.unwrap();
    // Closed as soon as cancel is requested, before the run has even stopped.
    assert_eq!(
        error_code(h.service.submit_guidance(&run.id, note("Wait!")).await),
        "agent.guidance_mailbox_closed"
    );
    let run = h.wait(&run.id).await;
    assert_eq!(run.status, AgentRunStatus::Cancelled);
    let discarded = events_of(&h, &run.id, "user_guidance_discarded");
    assert_eq!(discarded.len(), 1, "discarded once, not again at the end");
    insta::assert_json_snapshot!("user_guidance_discarded_payload", discarded[0].payload);
    assert!(events_of(&h, &run.id, "user_guidance_applied").is_empty());
    let types = h.event_types(&run.id);
    let pos = |t: &str| types.iter().position(|x| x == t).unwrap();
    assert!(pos("run_cancel_requested") < pos("user_guidance_discarded"));
    assert_eq!(types.last().map(String::as_str), Some("run_cancelled"));
    // After the end too.
    assert_eq!(
        error_code(h.service.submit_guidance(&run.id, note("Hello?")).await),
        "agent.guidance_mailbox_closed"
    );
}

#[tokio::test]
async fn guidance_left_after_the_last_model_request_is_discarded_when_the_run_finishes() {
    // The third request (the one answered with workspace_finish) is already on its way.
    let (h, run) = happy_run_parked_at(3).await;
    h.service
        .submit_guidance(&run.id, note("Too late for this one."))
        .await
        .unwrap();
    let run = h.release_to_completion(&run.id).await;
    let discarded = events_of(&h, &run.id, "user_guidance_discarded");
    assert_eq!(discarded.len(), 1);
    assert_eq!(
        discarded[0].payload["reason"],
        "run_finished_before_next_model_request"
    );
    let types = h.event_types(&run.id);
    let pos = |t: &str| types.iter().position(|x| x == t).unwrap();
    assert!(pos("user_guidance_discarded") < pos("run_completed"));
}

#[tokio::test]
async fn guidance_limits_per_item_pending_items_and_pending_chars() {
    let h = harness(FakeModel::hanging());
    let run = h.start_parked(request(None), 1).await;
    let submit = |text: String| h.service.submit_guidance(&run.id, note(&text));

    assert_eq!(
        error_code(submit(" \n ".into()).await),
        "agent.guidance_empty"
    );
    assert_eq!(
        error_code(submit("é".repeat(MAX_GUIDANCE_CHARS + 1)).await),
        "agent.guidance_too_large"
    );
    // Characters, not bytes: 16,000 two-byte characters fit.
    let full = "é".repeat(MAX_GUIDANCE_CHARS);
    for _ in 0..MAX_PENDING_GUIDANCE_CHARS / MAX_GUIDANCE_CHARS {
        submit(full.clone()).await.unwrap();
    }
    assert_eq!(
        error_code(submit("x".into()).await),
        "agent.guidance_pending_too_large"
    );
    h.service.cancel_run(&run.id).await.unwrap();
    h.wait(&run.id).await;

    let run = h.start_parked(request(None), 1).await;
    for index in 0..MAX_PENDING_GUIDANCE_ITEMS {
        let receipt = h
            .service
            .submit_guidance(&run.id, note(&format!("Note {index}.")))
            .await
            .unwrap();
        assert_eq!(receipt.pending_count, index + 1);
    }
    assert_eq!(
        error_code(h.service.submit_guidance(&run.id, note("One more.")).await),
        "agent.guidance_queue_full"
    );
    // Refused submissions leave no trace in the journal.
    assert_eq!(
        events_of(&h, &run.id, "user_guidance_submitted").len(),
        MAX_PENDING_GUIDANCE_ITEMS
    );
    h.service.cancel_run(&run.id).await.unwrap();
    h.wait(&run.id).await;
}

#[tokio::test]
async fn delegated_agents_never_receive_guidance() {
    let model = by_agent(vec![
        (
            "writer",
            delegate_wait_publish(
                "critic",
                "Check the pacing.",
                serde_json::json!({"mode": "allCompleted"}),
                "Final.",
            ),
        ),
        (
            "critic",
            vec![
                turn(vec![call(
                    "l",
                    "workspace_list_files",
                    serde_json::json!({}),
                )]),
                turn(vec![call(
                    "r",
                    "task_return",
                    serde_json::json!({"summary": "Fine."}),
                )]),
            ],
        ),
    ]);
    let h = harness_with_critic(model);
    // Park the critic's first call, send guidance while only the critic is working.
    h.model
        .hang_when(|request| request.agent_profile_id.as_str() == "critic" && request.round == 1);
    let run = h.start_parked(request(Some("writer")), 1).await;
    h.service
        .submit_guidance(&run.id, note("Keep it short."))
        .await
        .unwrap();
    let run = h.release_to_completion(&run.id).await;
    let has_guidance = |request: &tt_domain::model::AgentModelRequest| {
        request
            .messages
            .iter()
            .any(|m| m.text_content().contains("<user_guidance>"))
    };
    let requests = h.model.requests();
    assert!(
        requests
            .iter()
            .filter(|r| r.agent_profile_id.as_str() == "critic")
            .all(|r| !has_guidance(r))
    );
    assert!(
        requests
            .iter()
            .filter(|r| r.agent_profile_id.as_str() == "writer")
            .any(has_guidance)
    );
    let applied = events_of(&h, &run.id, "user_guidance_applied");
    assert_eq!(applied.len(), 1);
    assert_eq!(applied[0].payload["invocationId"], "inv_root");
}
