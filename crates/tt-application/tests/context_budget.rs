//! The context budget on a small declared window (docs/providers.md, "Context window and
//! compaction"): the answer keeps its output limit and every request's `max_tokens` fits what
//! is left; plain-text answers and their reminders leave the history once the agent moved past
//! them; compaction repeats into one rolling summary; an opening too large for the window fails
//! before the first request.

use serde_json::json;
use tt_domain::context_window::{DRIFT_REMINDER_PREFIX, SUMMARY_HEADER, WindowBudget};
use tt_domain::model::{AgentModelRequest, AgentModelResponse, ModelRole};
use tt_domain::profile::CompactionPolicy;
use tt_domain::run::AgentRunStatus;
use tt_testkit::fakes::responses;

use crate::support::*;

fn windowed(
    window: u64,
    compaction: CompactionPolicy,
    max_output: Option<u32>,
) -> tt_domain::profile::AgentProfileDefinition {
    custom_profile("windowed", |p| {
        p.model.context_window_tokens = Some(window);
        p.model.max_output_tokens = max_output;
        p.context.compaction = compaction;
        p.tools.max_rounds = 60;
    })
}

#[tokio::test]
async fn the_answer_keeps_its_output_limit_and_each_max_tokens_fits_what_is_left() {
    let first = first_request_tokens(windowed(1_000_000, CompactionPolicy::Summarize, None)).await;
    let window = first + 2_400;
    // Reads of a long note pile up until trimming starts.
    let note: String = (1..=30)
        .map(|n| format!("Note {n}: the lighthouse keeper counts ships at dusk.\n"))
        .collect();
    let mut turns = vec![turn(vec![write("w", "scratch/notes.md", &note)])];
    for read in 0..6 {
        turns.push(turn(vec![call(
            &format!("r{read}"),
            "workspace_read_file",
            json!({"path": "scratch/notes.md"}),
        )]));
    }
    turns.extend(happy_turns());
    let model = by_turn(turns);
    let h = harness(model.clone());
    h.put_profile(windowed(window, CompactionPolicy::None, Some(700)));
    // (notes of 30 lines: the latest read always fits beside the opening)
    let run = h.run_completed(request(Some("windowed"))).await;
    // The reserve is the limit (700), not an eighth of the window.
    let budget = WindowBudget::new(window, Some(700));
    assert_eq!(budget.output_reserve_tokens, 700);
    let trims = events_of(&h, &run.id, "context_trimmed");
    assert!(!trims.is_empty());
    assert_eq!(trims[0].payload["inputBudgetTokens"], window - 700);
    for request in model.requests() {
        let asked = u64::from(request.max_output_tokens.unwrap());
        assert!(asked <= 700, "round {}: {asked}", request.round);
        assert!(
            estimate(&request) + asked <= window,
            "round {}: {} + {asked} > {window}",
            request.round,
            estimate(&request)
        );
    }
}

/// Plain-text answers of `words` words, `drifts` times, then a recovery.
fn drifting_turns(drifts: usize) -> Vec<AgentModelResponse> {
    let mut turns: Vec<AgentModelResponse> = (0..drifts)
        .map(|n| {
            responses::text(&format!(
                "Draft {n}. {}",
                "The tide came in slowly. ".repeat(40)
            ))
        })
        .collect();
    turns.extend(happy_turns());
    turns
}

#[tokio::test]
async fn plain_text_answers_and_their_reminders_leave_once_moved_past() {
    let first = first_request_tokens(windowed(1_000_000, CompactionPolicy::Summarize, None)).await;
    // Room for the opening and about three plain-text rounds, tight enough that the last steps
    // (after the agent is back on track) still need a trim.
    let window = first + 1_200;
    let model = by_turn(drifting_turns(8));
    let h = harness(model.clone());
    h.put_profile(windowed(window, CompactionPolicy::None, None));
    let run = h.run_completed(request(Some("windowed"))).await;
    let budget = WindowBudget::new(window, None);
    let requests = model.requests();
    for request in &requests {
        assert!(estimate(request) <= budget.input_budget_tokens);
    }
    let trims = events_of(&h, &run.id, "context_trimmed");
    assert!(!trims.is_empty());
    assert!(trims.iter().all(|trim| {
        !trim.payload["removedMessages"]
            .as_array()
            .unwrap()
            .is_empty()
    }));
    assert!(events_of(&h, &run.id, "context_compacted").is_empty());
    // Eight plain-text rounds in a row, but a request never holds more than two reminders:
    // each trim leaves only the latest plain-text turn.
    for request in &requests {
        let reminders = request
            .messages
            .iter()
            .filter(|m| {
                m.role == ModelRole::User && m.text_content().starts_with(DRIFT_REMINDER_PREFIX)
            })
            .count();
        assert!(
            reminders <= 2,
            "round {}: {reminders} reminders",
            request.round
        );
    }
    let last = requests.last().unwrap();
    assert!(
        !last
            .messages
            .iter()
            .any(|m| m.text_content().starts_with(DRIFT_REMINDER_PREFIX)),
        "the recovered agent's last request keeps no reminder"
    );
    assert_append_only(&requests, &rounds_of(&trims));
}

#[tokio::test]
async fn repeated_compaction_folds_into_one_rolling_summary() {
    let first = first_request_tokens(windowed(1_000_000, CompactionPolicy::Summarize, None)).await;
    // Small results (never stubbed) pile up until only a summary makes room, again and again.
    let turns = listing_turns(40);
    let model = summarizing(turns, |n| {
        format!("Summary {n}: I listed scratch many times.")
    });
    let h = harness(model.clone());
    let window = first + 1_400;
    h.put_profile(windowed(window, CompactionPolicy::Summarize, None));
    let run = h.run_completed(request(Some("windowed"))).await;
    let compactions = events_of(&h, &run.id, "context_compacted");
    assert!(compactions.len() >= 2, "{} compactions", compactions.len());
    // The first summary replaces the conversation's earlier reply and the agent's turns but
    // keeps the request ahead of it; each later one replaces the one before.
    assert_eq!(compactions[0].payload["firstMessage"], 1);
    assert_eq!(compactions[0].payload["keptMessage"], 2);
    for compacted in &compactions[1..] {
        assert_eq!(compacted.payload["firstMessage"], 2);
        assert!(compacted.payload.get("keptMessage").is_none());
    }
    let agent_requests: Vec<AgentModelRequest> = model
        .requests()
        .into_iter()
        .filter(|request| !request.tools.is_empty())
        .collect();
    let second = compactions[1].payload["round"].as_u64().unwrap() as u32;
    let after = agent_requests
        .iter()
        .find(|request| request.round == second)
        .unwrap();
    let summaries: Vec<String> = after
        .messages
        .iter()
        .map(|m| m.text_content())
        .filter(|text| text.starts_with(SUMMARY_HEADER))
        .collect();
    assert_eq!(summaries.len(), 1);
    assert_eq!(after.messages[1].text_content(), "Write a short scene.");
    assert_eq!(
        after.messages[2].text_content(),
        summaries[0],
        "the summary follows the opening"
    );
    insta::assert_snapshot!("rolling_summary_message", summaries[0]);
    // The second summarizing call read the first summary, framed as the agent's own.
    let summarizing: Vec<AgentModelRequest> = model
        .requests()
        .into_iter()
        .filter(|request| request.tools.is_empty())
        .collect();
    let asked = summarizing[1].messages.last().unwrap().text_content();
    let framed = asked.lines().next().unwrap_or_default().to_owned();
    insta::assert_snapshot!("rolling_summary_frame", framed);
    tt_testkit::leaks::assert_no_leaks("the rolling summary", &summaries[0]);
    tt_testkit::leaks::assert_no_leaks("the summarizing request", &asked);
    let budget = WindowBudget::new(window, None);
    for request in &agent_requests {
        assert!(estimate(request) <= budget.input_budget_tokens);
    }
    let mut steps = rounds_of(&compactions);
    steps.extend(rounds_of(&events_of(&h, &run.id, "context_trimmed")));
    assert_append_only(&agent_requests, &steps);
}

#[tokio::test]
async fn a_summary_longer_than_its_room_is_cut_so_the_next_request_fits() {
    let first = first_request_tokens(windowed(1_000_000, CompactionPolicy::Summarize, None)).await;
    let turns = listing_turns(20);
    // A model that ignores the summary's limit: every summary is about 3,000 tokens.
    let model = summarizing(turns, |_| "I listed scratch again. ".repeat(450));
    let h = harness(model.clone());
    let window = first + 1_400;
    h.put_profile(windowed(window, CompactionPolicy::Summarize, None));
    let run = h.run_completed(request(Some("windowed"))).await;
    let compactions = events_of(&h, &run.id, "context_compacted");
    assert!(!compactions.is_empty());
    for compacted in &compactions {
        let summary = compacted.payload["summary"].as_str().unwrap();
        assert!(summary.contains("characters omitted"), "{summary}");
    }
    let budget = WindowBudget::new(window, None);
    for request in model.requests().iter().filter(|r| !r.tools.is_empty()) {
        assert!(estimate(request) <= budget.input_budget_tokens);
    }
}

#[tokio::test]
async fn an_opening_too_large_for_the_window_fails_before_the_first_request() {
    let model = by_turn(happy_turns());
    let h = harness(model.clone());
    h.put_profile(windowed(300, CompactionPolicy::Summarize, None));
    let run = h.run_to_end(request(Some("windowed"))).await;
    assert_eq!(run.status, AgentRunStatus::Failed);
    assert_eq!(model.call_count(), 0);
    let failed = h.run_failed(&run.id, "model.context_window_too_small");
    let message = failed.payload["message"].as_str().unwrap();
    assert!(message.contains("window of 300 tokens"), "{message}");
    // The window it names is one that fits.
    let least: u64 = message
        .split("a window of at least ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{message}"));
    let model = by_turn(happy_turns());
    let h = harness(model.clone());
    h.put_profile(windowed(least, CompactionPolicy::Summarize, None));
    h.run_completed(request(Some("windowed"))).await;
}
