//! `agent_conversation`: one agent's conversation rebuilt from the journal and the stored
//! records, checked against the requests the fake model really received.

use tt_application::{AgentConversation, ConversationEntry};
use tt_domain::ids::InvocationId;
use tt_domain::model::{ModelContentPart, ModelUsage};
use tt_domain::run::AgentRunStatus;

use crate::support::*;

/// The writer delegates to the critic, writes twice (the critic finishes meanwhile, so its
/// result is injected), then writes, commits and finishes.
async fn delegated_run() -> (Harness, tt_domain::ids::RunId) {
    let mut writer = publish_after(
        vec![
            turn(vec![delegate("d1", "critic", "Review the draft.")]),
            turn(vec![write("p", "plan/plan.md", "plan")]),
            turn(vec![write("p2", "plan/plan2.md", "plan")]),
        ],
        "Final scene.",
    );
    writer[0].usage = Some(ModelUsage {
        input_tokens: 120,
        output_tokens: 30,
        cached_input_tokens: 100,
        cache_write_tokens: 0,
    });
    let model = by_agent(vec![
        ("writer", writer),
        ("critic", vec![task_return("r", "Looks consistent.")]),
    ]);
    model.hang_when(|request| request.agent_profile_id.as_str() == "writer" && request.round == 2);
    let h = harness_with_critic(model);
    let run = h.completed_after_a_task(request(Some("writer"))).await;
    (h, run.id)
}

fn critic_id(h: &Harness, run_id: &tt_domain::ids::RunId) -> InvocationId {
    let created = events_of(h, run_id, "agent_invocation_created");
    let critic = created
        .iter()
        .find(|event| event.payload["profileId"] == "critic")
        .expect("critic created");
    InvocationId::from_raw(critic.payload["invocationId"].as_str().unwrap())
}

/// Every text the conversation shows the model reading, in order, as the request has them.
fn read_texts(conversation: &AgentConversation) -> Vec<String> {
    conversation
        .entries
        .iter()
        .filter_map(|entry| match entry {
            ConversationEntry::System { text }
            | ConversationEntry::Brief { text }
            | ConversationEntry::History { text, .. }
            | ConversationEntry::ToolResult { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// The text of the first entry `pick` takes.
fn first_text(
    entries: &[ConversationEntry],
    pick: impl Fn(&ConversationEntry) -> Option<&String>,
) -> String {
    entries.iter().find_map(pick).cloned().unwrap()
}

#[tokio::test]
async fn a_delegated_agent_reads_its_system_prompt_and_brief_and_returns_its_result() {
    let (h, run_id) = delegated_run().await;
    let critic = critic_id(&h, &run_id);
    let conversation = h
        .service
        .agent_conversation(&run_id, &critic)
        .await
        .unwrap();
    assert_eq!(conversation.profile_id, "critic");
    assert_eq!(conversation.kind, "subagent");
    assert_eq!(conversation.status, "completed");
    assert_eq!(
        conversation.parent_invocation_id.as_deref(),
        Some("inv_root")
    );
    assert_eq!(conversation.model_calls, 1);

    // The system prompt and the brief are exactly what the model received.
    let request = last_request_of(&h, "critic");
    let kinds: Vec<&str> = conversation.entries.iter().map(kind).collect();
    assert_eq!(
        kinds,
        ["system", "brief", "assistant", "toolResult", "result"]
    );
    assert_eq!(
        read_texts(&conversation)[..2],
        [
            request.messages[0].text_content(),
            request.messages[1].text_content()
        ]
    );
    assert!(read_texts(&conversation)[1].contains("Review the draft."));

    let ConversationEntry::Assistant {
        round, tool_calls, ..
    } = &conversation.entries[2]
    else {
        panic!("{:?}", conversation.entries[2]);
    };
    assert_eq!(*round, 1);
    assert_eq!(tool_calls.len(), 1);
    assert_eq!(tool_calls[0].name, "task_return");
    assert_eq!(tool_calls[0].arguments["summary"], "Looks consistent.");

    let ConversationEntry::Result { status, result } = conversation.entries.last().unwrap() else {
        panic!("no result");
    };
    assert_eq!(status, "completed");
    assert_eq!(result["summary"], "Looks consistent.");
}

#[tokio::test]
async fn the_root_conversation_matches_what_its_model_read_round_by_round() {
    let (h, run_id) = delegated_run().await;
    let root = InvocationId::root();
    let conversation = h.service.agent_conversation(&run_id, &root).await.unwrap();
    assert_eq!(conversation.kind, "root");
    assert_eq!(conversation.model_calls, 6);
    assert_eq!(conversation.usage.input_tokens, 120);
    assert_eq!(conversation.usage.cached_input_tokens, 100);
    assert_eq!(conversation.usage.output_tokens, 30);

    // The last request holds every system, history and tool-result text the view shows, in
    // the same order (the injected results are shown as their tasks, below), but the result of
    // its own last call, which came after it.
    let request = last_request_of(&h, "writer");
    let seen: Vec<String> = request
        .messages
        .iter()
        .filter(|message| {
            !message.text_content().contains("## Delegated Task Results")
                && message.role != tt_domain::model::ModelRole::Assistant
        })
        .map(|message| match message.parts.first() {
            Some(ModelContentPart::ToolResult { result }) => result.content.clone(),
            _ => message.text_content(),
        })
        .collect();
    let history_texts: Vec<String> = read_texts(&conversation)
        .into_iter()
        .filter(|text| seen.contains(text))
        .collect();
    assert_eq!(history_texts, seen);
    // Beside them: the chat's earlier assistant reply (assistant messages are left out of
    // `seen`) and the result of the last call.
    assert_eq!(read_texts(&conversation).len(), seen.len() + 2);

    // Each answer is marked with its round, the first with its tokens.
    let rounds: Vec<u32> = conversation
        .entries
        .iter()
        .filter_map(|entry| match entry {
            ConversationEntry::Assistant { round, .. } => Some(*round),
            _ => None,
        })
        .collect();
    assert_eq!(rounds, [1, 2, 3, 4, 5, 6]);
    let first_usage = conversation.entries.iter().find_map(|entry| match entry {
        ConversationEntry::Assistant { usage, .. } => Some(*usage),
        _ => None,
    });
    assert_eq!(first_usage.flatten().unwrap().cached_input_tokens, 100);

    // The critic's result was injected after round 2, with its summary.
    let injected: Vec<_> = conversation
        .entries
        .iter()
        .filter_map(|entry| match entry {
            ConversationEntry::InjectedResults { round, tasks } => Some((*round, tasks.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(injected.len(), 1);
    assert_eq!(injected[0].0, 2);
    assert_eq!(injected[0].1[0].profile_id, "critic");
    assert_eq!(
        injected[0].1[0].summary.as_deref(),
        Some("Looks consistent.")
    );
    // A root returns nothing.
    assert!(
        !conversation
            .entries
            .iter()
            .any(|entry| matches!(entry, ConversationEntry::Result { .. }))
    );
}

#[tokio::test]
async fn guidance_and_a_reminder_are_shown_where_the_agent_read_them() {
    // Round 1 answers in plain text (a reminder follows); guidance sent while it is pending is
    // read before round 2.
    let mut turns = vec![tt_testkit::fakes::responses::text("Here is my scene.")];
    turns.extend(happy_turns());
    let h = harness(by_turn(turns));
    h.model.hang_when(|request| request.round == 1);
    let run = h.start_parked(request(None), 1).await;
    h.service
        .submit_guidance(
            &run.id,
            tt_application::SubmitGuidanceRequest {
                text: "Make the storm arrive earlier.".into(),
                client_guidance_id: None,
            },
        )
        .await
        .unwrap();
    let run = h.release_to_completion(&run.id).await;

    let conversation = h
        .service
        .agent_conversation(&run.id, &InvocationId::root())
        .await
        .unwrap();
    let steps: Vec<(&str, u32)> = conversation
        .entries
        .iter()
        .filter_map(|entry| match entry {
            ConversationEntry::Assistant { round, .. } => Some(("assistant", *round)),
            ConversationEntry::Reminder { round, .. } => Some(("reminder", *round)),
            ConversationEntry::Guidance { round, .. } => Some(("guidance", *round)),
            ConversationEntry::ToolResult { round, .. } => Some(("toolResult", *round)),
            _ => None,
        })
        .collect();
    assert_eq!(
        steps[..4],
        [
            ("assistant", 1),
            ("reminder", 1),
            ("guidance", 2),
            ("assistant", 2)
        ]
    );
    // The guidance as the model read it in its second request.
    let second = &h.model.requests()[1];
    let guidance = first_text(&conversation.entries, |entry| match entry {
        ConversationEntry::Guidance { text, .. } => Some(text),
        _ => None,
    });
    assert!(guidance.contains("Make the storm arrive earlier."));
    assert!(
        second
            .messages
            .iter()
            .any(|message| message.text_content() == guidance)
    );
    // The reminder in the words the model read.
    let reminder = first_text(&conversation.entries, |entry| match entry {
        ConversationEntry::Reminder { text, .. } => Some(text),
        _ => None,
    });
    assert!(reminder.starts_with("[system reminder"), "{reminder}");
    assert!(
        second
            .messages
            .iter()
            .any(|message| message.text_content() == reminder)
    );
    let ConversationEntry::Assistant { text, .. } =
        &conversation.entries[steps_index(&conversation, "assistant")]
    else {
        unreachable!()
    };
    assert_eq!(text, "Here is my scene.");
}

fn steps_index(conversation: &AgentConversation, wanted: &str) -> usize {
    conversation
        .entries
        .iter()
        .position(|entry| kind(entry) == wanted)
        .unwrap()
}

#[tokio::test]
async fn a_live_agent_shows_what_it_stored_so_far_and_the_request_it_waits_on() {
    let (h, run) = happy_run_parked_at(2).await;
    let live = h
        .service
        .agent_conversation(&run.id, &InvocationId::root())
        .await
        .unwrap();
    let kinds: Vec<&str> = live.entries.iter().map(kind).collect();
    assert_eq!(
        kinds[kinds.len() - 3..],
        ["assistant", "toolResult", "requested"],
        "{kinds:?}"
    );
    assert!(matches!(
        live.entries.last(),
        Some(ConversationEntry::Requested { round: 2, .. })
    ));
    assert_eq!(live.model_calls, 1);
    h.model.stop_hanging();
    h.model.release_parked();
    assert_eq!(h.wait(&run.id).await.status, AgentRunStatus::Completed);
    // Once answered, the request is the answer.
    let done = h
        .service
        .agent_conversation(&run.id, &InvocationId::root())
        .await
        .unwrap();
    assert!(
        !done
            .entries
            .iter()
            .any(|entry| matches!(entry, ConversationEntry::Requested { .. }))
    );
    assert_eq!(done.model_calls, 3);
}

#[tokio::test(start_paused = true)]
async fn failed_attempts_come_before_the_answer_of_their_round() {
    let mut answers = vec![Err(tt_ports::ModelError::Transient {
        message: "502 bad gateway".into(),
    })];
    answers.extend(happy_turns().into_iter().map(Ok));
    let h = harness(tt_testkit::fakes::FakeModel::sequence(answers));
    let run = h.run_completed(request(None)).await;
    let conversation = h
        .service
        .agent_conversation(&run.id, &InvocationId::root())
        .await
        .unwrap();
    let kinds: Vec<&str> = conversation
        .entries
        .iter()
        .map(kind)
        .filter(|kind| !matches!(*kind, "system" | "history"))
        .collect();
    assert_eq!(
        kinds[..3],
        ["modelError", "assistant", "toolResult"],
        "{kinds:?}"
    );
    assert!(matches!(
        &conversation.entries[steps_index(&conversation, "modelError")],
        ConversationEntry::ModelError { round: 1, will_retry: true, message, .. } if message.contains("502")
    ));
}

#[tokio::test]
async fn an_unknown_run_or_agent_is_not_found() {
    let (h, run_id) = delegated_run().await;
    let unknown_agent = h
        .service
        .agent_conversation(&run_id, &InvocationId::from_raw("inv_nobody"))
        .await
        .unwrap_err();
    assert_eq!(unknown_agent.code(), "agent.not_found");
    let unknown_run = h
        .service
        .agent_conversation(
            &tt_domain::ids::RunId::from_raw("run_nothing"),
            &InvocationId::root(),
        )
        .await
        .unwrap_err();
    assert_eq!(unknown_run.code(), "agent.not_found");
}

fn kind(entry: &ConversationEntry) -> &'static str {
    match entry {
        ConversationEntry::System { .. } => "system",
        ConversationEntry::Brief { .. } => "brief",
        ConversationEntry::History { .. } => "history",
        ConversationEntry::Guidance { .. } => "guidance",
        ConversationEntry::Requested { .. } => "requested",
        ConversationEntry::ModelError { .. } => "modelError",
        ConversationEntry::Assistant { .. } => "assistant",
        ConversationEntry::ToolResult { .. } => "toolResult",
        ConversationEntry::InjectedResults { .. } => "injectedResults",
        ConversationEntry::Reminder { .. } => "reminder",
        ConversationEntry::Context { .. } => "context",
        ConversationEntry::Result { .. } => "result",
    }
}
