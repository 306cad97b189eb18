//! Streamed model output becomes a few coalesced `model_delta` events, never one per token,
//! and the stored response is the complete one.

use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tt_application::AgentRunService;
use tt_domain::model::{AgentModelResponse, ModelDelta};
use tt_domain::run::AgentRunStatus;
use tt_testkit::fakes::{FakeModel, InMemoryStore, ShapedModel};

use crate::support::*;

/// Streams `round_one` in round 1 (each delta, then its pause), then answers like `turns`.
fn streaming_model(
    turns: Vec<AgentModelResponse>,
    round_one: Vec<(ModelDelta, Duration)>,
) -> ShapedModel {
    let answers = FakeModel::new(move |request| scripted(&turns, request));
    ShapedModel::around(answers)
        .named("streaming-test")
        .streaming_in_round(1, round_one)
}

/// Runs `model` to completion on a fresh store: the store, the run and its `model_delta`
/// events.
async fn streamed(
    model: ShapedModel,
) -> (
    Arc<InMemoryStore>,
    tt_domain::run::AgentRun,
    Vec<tt_domain::event::AgentRunEvent>,
) {
    let store = InMemoryStore::new();
    let service = AgentRunService::new(in_memory_services(&store, Arc::new(model)));
    let run = start_and_wait(&service, request(None)).await;
    assert_eq!(run.status, AgentRunStatus::Completed);
    let deltas = store
        .events(&run.id)
        .into_iter()
        .filter(|e| e.event_type == "model_delta")
        .collect();
    (store, run, deltas)
}

#[tokio::test(start_paused = true)]
async fn streamed_output_is_coalesced_into_a_few_delta_events() {
    let mut turns = happy_turns();
    let text: String = (0..600).map(|i| format!("w{i} ")).collect();
    turns[0] = tt_testkit::fakes::responses::text_and_tool_calls(
        &text,
        vec![(
            "c1",
            "workspace_write_file",
            json!({"path": "output/main.md", "content": "A storm rolled in."}),
        )],
    );
    // The first answer as many small text pieces spread over time (600 over 6 s of paused
    // time), then the start of a tool call.
    let mut round_one: Vec<(ModelDelta, Duration)> = (0..600)
        .map(|i| {
            let text = format!("w{i} ");
            (ModelDelta::Text { text }, Duration::from_millis(10))
        })
        .collect();
    round_one.push((
        ModelDelta::ToolCallStarted {
            id: "c1".into(),
            name: "workspace_write_file".into(),
        },
        Duration::ZERO,
    ));
    round_one.push((
        ModelDelta::ToolCallArguments {
            id: "c1".into(),
            fragment: "{\"path\":".into(),
        },
        Duration::ZERO,
    ));
    let (store, run, deltas) = streamed(streaming_model(turns, round_one)).await;
    // About one event per 250 ms of streaming, not one per piece.
    assert!(
        (10..=40).contains(&deltas.len()),
        "{} delta events",
        deltas.len()
    );
    let streamed: String = deltas
        .iter()
        .map(|e| e.payload["text"].as_str().unwrap())
        .collect();
    assert_eq!(streamed, text);
    let parts: Vec<u64> = deltas
        .iter()
        .map(|e| e.payload["part"].as_u64().unwrap())
        .collect();
    assert_eq!(parts, (1..=deltas.len() as u64).collect::<Vec<_>>());
    assert!(
        deltas
            .iter()
            .all(|e| e.level == tt_domain::event::EventLevel::Debug)
    );
    assert_eq!(
        deltas.last().unwrap().payload["toolCalls"][0]["name"],
        "workspace_write_file"
    );
    // The stored response is the complete one.
    let stored = store
        .document(
            &run.id,
            &tt_ports::RunDocument::ModelResponse {
                invocation_id: tt_domain::ids::InvocationId::root(),
                round: 1,
            },
        )
        .unwrap();
    assert!(
        stored["response"]["message"]["parts"][0]["text"]
            .as_str()
            .unwrap()
            .ends_with("w599 ")
    );
}

#[tokio::test(start_paused = true)]
async fn delta_events_stop_at_the_per_call_byte_cap_and_count_the_rest() {
    // 2 MB of text in round 1 (a model that runs on).
    let model = streaming_model(
        happy_turns(),
        (0..2000)
            .map(|_| {
                let text = "é".repeat(512);
                (ModelDelta::Text { text }, Duration::from_millis(1))
            })
            .collect(),
    );
    let deltas: Vec<_> = streamed(model)
        .await
        .2
        .into_iter()
        .filter(|e| e.payload["round"] == 1)
        .collect();
    let journaled: usize = deltas
        .iter()
        .map(|e| e.payload["text"].as_str().unwrap().len())
        .sum();
    let cap = tt_application::MAX_DELTA_BYTES_PER_CALL;
    // Cut at a character boundary just under the cap ("é" is two bytes).
    assert_eq!(journaled, cap);
    let sent = 2000 * 512 * 2;
    assert_eq!(
        deltas.last().unwrap().payload["omittedBytes"],
        (sent - cap) as u64
    );
    // After the cap, events only update the count, at the coalescing rate (2 s of streaming:
    // about eight), not one per piece.
    let counting_only = deltas
        .iter()
        .filter(|e| e.payload["text"] == "" && e.payload["omittedBytes"] != 0)
        .count();
    assert!(
        (1..=10).contains(&counting_only),
        "{counting_only} count-only events"
    );
}
