//! The context window (docs/providers.md, "Context window and compaction"): older results
//! become stubs, the oldest turns a summary, and a provider's refusal is answered by fitting
//! once more (more in context_budget.rs).

use serde_json::json;
use tt_domain::context_window::WindowBudget;
use tt_domain::model::{AgentModelRequest, AgentModelResponse};
use tt_domain::profile::CompactionPolicy;
use tt_ports::ModelError;
use tt_testkit::fakes::FakeModel;

use crate::support::*;

/// Writes a long note, reads it `reads` times, then writes the answer, commits and finishes.
fn reading_turns(reads: usize) -> Vec<AgentModelResponse> {
    let note: String = (1..=120)
        .map(|n| format!("Note {n}: the lighthouse keeper counts ships at dusk.\n"))
        .collect();
    let first = turn(vec![write("w", "scratch/notes.md", &note)]);
    let read = json!({"path": "scratch/notes.md"});
    repeated_call(first, reads, ("r", "workspace_read_file", read))
}

fn windowed(
    window: u64,
    compaction: CompactionPolicy,
) -> tt_domain::profile::AgentProfileDefinition {
    custom_profile("windowed", |p| {
        p.model.context_window_tokens = Some(window);
        p.context.compaction = compaction;
        p.tools.max_rounds = 40;
    })
}

#[tokio::test]
async fn older_results_become_stubs_and_the_run_completes() {
    let first = first_request_tokens(windowed(1_000_000, CompactionPolicy::Summarize)).await;
    // Room for the opening and about three reads of the note.
    let window = first + 4_800;
    let model = by_turn(reading_turns(8));
    let h = harness(model.clone());
    h.put_profile(windowed(window, CompactionPolicy::None));
    let run = h.run_completed(request(Some("windowed"))).await;

    let budget = WindowBudget::new(window, None);
    let requests = model.requests();
    for request in &requests {
        assert!(
            estimate(request) <= budget.input_budget_tokens,
            "round {}: {} > {}",
            request.round,
            estimate(request),
            budget.input_budget_tokens
        );
    }
    let trims = events_of(&h, &run.id, "context_trimmed");
    assert!(!trims.is_empty());
    assert_eq!(trims[0].payload["trigger"], "estimate");
    assert_eq!(trims[0].payload["windowTokens"], window);
    // The last request still has the opening and its latest read whole, and older reads as
    // stubs that say how to read them again.
    let last = requests.last().unwrap();
    let results = tool_results(last);
    assert!(results.iter().any(|(_, _, _, content)| {
        content.starts_with("[Removed to save room: the text of `scratch/notes.md`")
    }));
    // Between trims, each request starts with the previous one: the prefix stays cacheable.
    assert_append_only(&requests, &rounds_of(&trims));
}

#[tokio::test]
async fn the_oldest_turns_become_a_summary_when_stubs_are_not_enough() {
    let first = first_request_tokens(windowed(1_000_000, CompactionPolicy::Summarize)).await;
    // Small results (never stubbed) pile up until only a summary makes room.
    let turns = listing_turns(30);
    let model = summarizing(turns, |_| {
        "I wrote scratch/a.md and listed scratch 30 times.".to_owned()
    });
    let h = harness(model.clone());
    let window = first + 1_400;
    h.put_profile(windowed(window, CompactionPolicy::Summarize));
    let run = h.run_completed(request(Some("windowed"))).await;
    let compactions = events_of(&h, &run.id, "context_compacted");
    assert!(!compactions.is_empty());
    assert_eq!(
        compactions[0].payload["summary"],
        "I wrote scratch/a.md and listed scratch 30 times."
    );
    // The summarizing request offers no tools and ends with the instruction.
    let summarizing = model
        .requests()
        .into_iter()
        .find(|request| request.tools.is_empty())
        .unwrap();
    let asked = summarizing.messages.last().unwrap().text_content();
    assert!(asked.contains("Write a summary"), "{asked}");
    // The next request reads the summary in place of the replaced turns.
    let round = compactions[0].payload["round"].as_u64().unwrap() as u32;
    let after = model
        .requests()
        .into_iter()
        .find(|request| request.round == round && !request.tools.is_empty())
        .unwrap();
    assert!(after.messages.iter().any(|message| {
        message
            .text_content()
            .starts_with("[Summary of your earlier work")
    }));
    let budget = WindowBudget::new(window, None);
    assert!(estimate(&after) <= budget.input_budget_tokens);
}

#[tokio::test]
async fn a_provider_refusal_teaches_the_window_and_fits_once_more() {
    // No window configured: the provider's refusal says it.
    let turns = reading_turns(6);
    let model = FakeModel::new(move |request: &AgentModelRequest| {
        let size = estimate(request);
        if size > 5_000 {
            return Err(ModelError::ContextOverflow {
                message: "request exceeds the available context size".into(),
                prompt_tokens: Some(size),
                window_tokens: Some(5_500),
            });
        }
        scripted(&turns, request)
    });
    let h = harness(model.clone());
    h.put_profile(custom_profile("unknown-window", |p| {
        p.tools.max_rounds = 40
    }));
    let run = h.run_completed(request(Some("unknown-window"))).await;
    let trims = events_of(&h, &run.id, "context_trimmed");
    assert_eq!(trims[0].payload["trigger"], "provider_refused");
    assert_eq!(trims[0].payload["windowTokens"], 5_500);
    let failed = events_of(&h, &run.id, "model_call_attempt_failed");
    assert_eq!(failed[0].payload["code"], "model.context_overflow");
    assert_eq!(failed[0].payload["willRetry"], false);
}

#[tokio::test]
async fn a_large_result_reaches_the_history_as_head_and_tail() {
    let model = by_turn(reading_turns(1));
    let h = harness(model.clone());
    h.put_profile(custom_profile("bounded-results", |p| {
        p.context.max_tool_result_tokens = Some(300);
    }));
    h.run_completed(request(Some("bounded-results"))).await;
    let read = model.requests()[2].clone();
    let (_, _, _, content) = tool_results(&read).pop().unwrap();
    assert!(content.contains("lines left out to save room"), "{content}");
    assert!(content.contains("Note 1:"));
    assert!(content.contains("Note 120:"));
    assert!(!content.contains("Note 60:"));
}

#[tokio::test]
async fn a_long_search_result_is_saved_whole_and_the_history_names_the_file() {
    let mut turns = reading_turns(0);
    turns.insert(
        1,
        turn(vec![call(
            "s",
            "workspace_search_files",
            json!({"query": "lighthouse", "limit": 50}),
        )]),
    );
    let model = by_turn(turns);
    let h = harness(model.clone());
    h.put_profile(custom_profile("bounded-results", |p| {
        p.context.max_tool_result_tokens = Some(300);
    }));
    let run = h.run_completed(request(Some("bounded-results"))).await;
    let saved = h.first_event(&run.id, "tool_output_saved");
    let path = saved.payload["path"].as_str().unwrap().to_owned();
    assert!(
        path.starts_with("scratch/tool-output/workspace_search_files-"),
        "{path}"
    );
    let (_, _, _, content) = tool_results(&model.requests()[2]).pop().unwrap();
    assert!(
        content.contains(&format!("The whole output is in `{path}`")),
        "{content}"
    );
    let file = h.store.file_text(&run.id, &path).expect("the saved output");
    assert_eq!(
        file.chars().count() as u64,
        saved.payload["chars"].as_u64().unwrap()
    );
}

/// A windowed writer that delegates a review with long findings, awaits it, then reads its
/// long note `reads` times and finishes: by the end the await result is an old one.
fn delegating_and_reading(
    window: u64,
    reads: usize,
) -> (
    tt_domain::profile::AgentProfileDefinition,
    std::sync::Arc<FakeModel>,
) {
    let mut writer = delegator("writer");
    writer.model.context_window_tokens = Some(window);
    writer.context.compaction = CompactionPolicy::None;
    writer.tools.max_rounds = 40;
    let mut turns = vec![
        turn(vec![delegate("d1", "critic", "Check the ships.")]),
        await_turn("a", "allCompleted"),
    ];
    turns.extend(reading_turns(reads));
    let findings: Vec<serde_json::Value> = (1..=12)
        .map(|n| json!({"note": format!("Finding {n}: the count at dusk is off by one ship.")}))
        .collect();
    let model = by_agent(vec![
        ("writer", turns),
        (
            "critic",
            vec![turn(vec![call(
                "r",
                "task_return",
                json!({"summary": "The counts mostly hold.", "findings": findings}),
            )])],
        ),
    ]);
    (writer, model)
}

#[tokio::test]
async fn a_trimmed_await_result_says_where_the_summaries_stay_never_to_call_again() {
    // The first request's size, on a window that never trims.
    let (writer, model) = delegating_and_reading(1_000_000, 0);
    let h = harness(model.clone());
    h.put_profile(writer);
    h.put_profile(reviewer("critic"));
    h.run_completed(request(Some("writer"))).await;
    let first = estimate(&model.requests()[0]);

    let (writer, model) = delegating_and_reading(first + 4_800, 8);
    let h = harness(model.clone());
    h.put_profile(writer);
    h.put_profile(reviewer("critic"));
    h.run_completed(request(Some("writer"))).await;
    let last = last_request_of(&h, "writer");
    let (_, _, _, awaited) = tool_results(&last)
        .into_iter()
        .find(|(id, _, _, _)| id == "a")
        .unwrap();
    assert!(!awaited.contains("again if you need it"), "{awaited}");
    insta::assert_snapshot!("trimmed_await_result", awaited);
    tt_testkit::leaks::assert_no_leaks("a trimmed await result", &awaited);
}
