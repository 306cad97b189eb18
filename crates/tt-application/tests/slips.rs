//! Model slips (an unknown tool, bad arguments, an unusable path) are recoverable up to
//! `limits.maxConsecutiveSlips` in a row; the next one fails the agent. A deliberate difference
//! from the reference, which fails at the first slip.

use serde_json::json;
use tt_domain::event::EventLevel;
use tt_domain::run::AgentRunStatus;
use tt_ports::RunDocument;

use crate::support::*;

fn unknown(id: &str) -> (String, String, serde_json::Value) {
    call(id, "shell_exec", json!({"cmd": "ls"}))
}

/// `turns` followed by the happy path (write, commit, finish).
fn then_happy(
    mut turns: Vec<tt_domain::model::AgentModelResponse>,
) -> Vec<tt_domain::model::AgentModelResponse> {
    turns.extend(happy_turns());
    turns
}

fn slip_codes(h: &Harness, run_id: &tt_domain::ids::RunId) -> Vec<(EventLevel, String)> {
    events_of(h, run_id, "tool_call_failed")
        .into_iter()
        .map(|e| {
            (
                e.level,
                e.payload["errorCode"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn an_unknown_tool_goes_back_to_the_model_and_the_run_goes_on() {
    let h = harness(by_turn(then_happy(vec![turn(vec![unknown("x1")])])));
    let run = h.run_completed(request(None)).await;
    assert_eq!(
        slip_codes(&h, &run.id),
        [(EventLevel::Warn, "model.unknown_tool_call".to_owned())]
    );
    let second = &h.model.requests()[1];
    let (call_id, is_error, code, content) = tool_results(second).remove(0);
    assert_eq!(call_id, "x1");
    assert!(is_error);
    assert_eq!(code.as_deref(), Some("model.unknown_tool_call"));
    assert!(
        content.starts_with("There is no tool named `shell_exec`."),
        "{content}"
    );
    assert!(content.contains("workspace_write_file"), "{content}");
}

#[tokio::test]
async fn more_slips_in_a_row_than_the_limit_fail_the_run() {
    // The default limit is 3: the fourth slip in a row is fatal.
    let h = harness(by_turn(vec![
        turn(vec![unknown("x1"), unknown("x2")]),
        turn(vec![unknown("x3")]),
        turn(vec![unknown("x4")]),
    ]));
    let run = h.run_to_end(request(None)).await;
    assert_eq!(run.status, AgentRunStatus::Failed);
    let codes = slip_codes(&h, &run.id);
    assert_eq!(codes.len(), 4);
    assert!(
        codes[..3]
            .iter()
            .all(|(level, _)| *level == EventLevel::Warn)
    );
    assert_eq!(codes[3].0, EventLevel::Error);
    let failed = h.run_failed(&run.id, "model.unknown_tool_call");
    assert_says(
        failed.payload["message"].as_str().unwrap(),
        &["4 times in a row", "limits.maxConsecutiveSlips is 3"],
    );
    assert_eq!(failed.payload["retryable"], false);
}

#[tokio::test]
async fn a_good_call_resets_the_slip_count() {
    let turns = then_happy(vec![
        turn(vec![unknown("x1"), unknown("x2"), unknown("x3")]),
        turn(vec![call("l", "workspace_list_files", json!({}))]),
        turn(vec![unknown("y1"), unknown("y2"), unknown("y3")]),
    ]);
    let h = harness(by_turn(turns));
    let run = h.run_completed(request(None)).await;
    assert_eq!(slip_codes(&h, &run.id).len(), 6);
}

#[tokio::test]
async fn a_limit_of_zero_fails_at_the_first_slip_like_the_reference() {
    let h = harness(by_turn(then_happy(vec![turn(vec![unknown("x1")])])));
    h.put_profile(custom_profile("strict", |p| {
        p.limits.max_consecutive_slips = 0
    }));
    let run = h.run_to_end(request(Some("strict"))).await;
    h.assert_failed_with(&run, "model.unknown_tool_call");
}

#[tokio::test]
async fn unparseable_and_non_object_arguments_are_recoverable_invalid_tool_calls() {
    let turns = then_happy(vec![turn(vec![
        call("s", "workspace_write_file", json!("{\"path\": \"output/")),
        call("a", "workspace_read_file", json!(["output/main.md"])),
        call("n", "workspace_list_files", json!(null)),
    ])]);
    let h = harness(by_turn(turns));
    let run = h.run_completed(request(None)).await;
    let results = tool_results(&h.model.requests()[1]);
    assert_eq!(results.len(), 3);
    for (_, is_error, code, _) in &results {
        assert!(is_error);
        assert_eq!(code.as_deref(), Some("model.invalid_tool_call"));
    }
    assert!(
        results[0].3.contains("not valid JSON (EOF while parsing"),
        "{}",
        results[0].3
    );
    assert!(
        results[1].3.contains("are an array, not a JSON object"),
        "{}",
        results[1].3
    );
    assert!(
        results[2].3.contains("are null, not a JSON object"),
        "{}",
        results[2].3
    );
    // Nothing was executed or counted against the call budget.
    assert!(
        events_of(&h, &run.id, "tool_call_started")
            .iter()
            .all(|e| !["s", "a", "n"].contains(&e.payload["callId"].as_str().unwrap()))
    );
}

#[tokio::test]
async fn oversized_arguments_are_a_slip_and_are_not_stored_or_resent() {
    let big = "x".repeat(2000);
    let turns = then_happy(vec![turn(vec![write("big", "output/main.md", &big)])]);
    let h = harness(by_turn(turns));
    h.put_profile(custom_profile("small-args", |p| {
        p.limits.max_tool_argument_bytes = 1000
    }));
    let run = h.run_completed(request(Some("small-args"))).await;
    let second = &h.model.requests()[1];
    let (_, is_error, code, content) = tool_results(second).remove(0);
    assert!(is_error);
    assert_eq!(code.as_deref(), Some("model.invalid_tool_call"));
    assert!(
        content.contains("at most 1000 bytes are accepted"),
        "{content}"
    );
    // The conversation carries a short note instead of the 2 KB arguments.
    let replayed = &second
        .messages
        .iter()
        .flat_map(|m| m.tool_calls())
        .find(|call| call.id == "big")
        .unwrap()
        .arguments;
    assert!(
        replayed
            .as_str()
            .unwrap()
            .starts_with("[arguments omitted: "),
        "{replayed}"
    );
    let requested = h.first_event(&run.id, "tool_call_requested");
    let key = requested.payload["argumentsRef"].as_str().unwrap();
    let key = key.rsplit('/').next().unwrap().trim_end_matches(".json");
    let stored = h.document(
        &run.id,
        RunDocument::ToolArgs {
            call_file_key: key.to_owned(),
        },
    );
    assert_eq!(stored["arguments"]["omitted"], true);
}

#[tokio::test]
async fn an_over_long_path_is_a_recoverable_invalid_path_not_a_storage_error() {
    let long = format!("output/{}.md", "a".repeat(5000));
    let segment = format!("output/{}.md", "b".repeat(300));
    let turns = then_happy(vec![turn(vec![
        write("w1", &long, "x"),
        write("w2", &segment, "x"),
    ])]);
    let h = harness(by_turn(turns));
    h.run_completed(request(None)).await;
    let results = tool_results(&h.model.requests()[1]);
    assert_eq!(results[0].2.as_deref(), Some("workspace.invalid_path"));
    assert!(
        results[0].3.contains("at most 1024 bytes"),
        "{}",
        results[0].3
    );
    assert_eq!(results[1].2.as_deref(), Some("workspace.invalid_path"));
    assert!(
        results[1].3.contains("at most 255 bytes"),
        "{}",
        results[1].3
    );
}

#[tokio::test]
async fn slips_of_different_kinds_count_together() {
    let h = harness(by_turn(vec![turn(vec![
        unknown("x1"),
        call("s", "workspace_write_file", json!("{")),
        write("w", &format!("output/{}", "a".repeat(300)), "x"),
        unknown("x2"),
    ])]));
    let run = h.run_to_end(request(None)).await;
    h.assert_failed_with(&run, "model.unknown_tool_call");
}

/// 10,000 writes in one reply, for an agent that may make 80 calls: none runs, the agent reads
/// one short refusal per kept call, its next request stays small, and it goes on to publish.
#[tokio::test]
async fn a_reply_with_more_calls_than_the_agent_may_make_runs_none_of_them() {
    let flood: Vec<_> = (0..10_000)
        .map(|i| write(&format!("w{i}"), &format!("scratch/n{i}.md"), "x"))
        .collect();
    let h = harness(by_turn(then_happy(vec![turn(flood)])));
    let run = h.run_completed(request(None)).await;
    assert!(
        events_of(&h, &run.id, "tool_call_requested")
            .iter()
            .all(|e| e.payload["round"] != 1)
    );
    assert_eq!(h.store.file_text(&run.id, "scratch/n0.md"), None);
    let second = &h.model.requests()[1];
    let results = tool_results(second);
    assert_eq!(results.len(), 4, "the kept calls, each answered");
    for (_, is_error, code, content) in &results {
        assert!(is_error);
        assert_eq!(code.as_deref(), Some("model.too_many_tool_calls"));
        assert!(
            content.starts_with("Your reply asked for 10000 tool calls"),
            "{content}"
        );
    }
    let calls_shown = second.messages.iter().flat_map(|m| m.tool_calls()).count();
    assert_eq!(calls_shown, 4);
}
