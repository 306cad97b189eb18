//! A run whose history was trimmed and compacted to fit its model's window, resumed after its
//! process died: the resumed agent's next request is the one the dead process was sending,
//! byte for byte (the journaled steps are applied, not decided again); and a cassette of such a
//! run replays it offline, step for step.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tempfile::TempDir;
use tt_domain::model::AgentModelRequest;
use tt_runtime::{AgentRuntime, ConnectionModelInfo, FnProvider, ModelReply};

use super::{copy_live_data_dir, request, transcript_builder, wait_for_event};

/// The round at which the first process dies (its model never answers it).
const CRASH_ROUND: u32 = 20;

/// Writes a long note, then small parts and now and then reads the note again; a request without tools (a
/// summarizing call) gets a summary. Rounds at or past `hang_from` never answer.
fn reader(
    hang_from: u32,
    seen: Arc<Mutex<Vec<AgentModelRequest>>>,
) -> Arc<dyn tt_runtime::ModelProvider> {
    reader_ending(hang_from, u32::MAX, seen)
}

/// Like [`reader`], publishing and finishing from round `end`.
fn reader_ending(
    hang_from: u32,
    end: u32,
    seen: Arc<Mutex<Vec<AgentModelRequest>>>,
) -> Arc<dyn tt_runtime::ModelProvider> {
    let note: String = (1..=150)
        .map(|n| format!("Note {n}: the lighthouse keeper counts ships at dusk.\n"))
        .collect();
    let part = "The keeper logs each ship. ".repeat(50);
    Arc::new(FnProvider::new(move |request| {
        seen.lock().unwrap().push(request.clone());
        if request.tools.is_empty() {
            return Ok(ModelReply::text(
                "I wrote scratch/notes.md and read it several times.",
            ));
        }
        if request.round >= hang_from {
            return Ok(ModelReply::text("never").after(Duration::from_secs(86_400)));
        }
        Ok(match request.round {
            n if n == end => ModelReply::tool_call(
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "Ships at dusk.\n"}),
            ),
            n if n == end.saturating_add(1) => ModelReply::tool_call("workspace_commit", json!({})),
            n if n > end => ModelReply::tool_call("workspace_finish", json!({})),
            1 => ModelReply::tool_call(
                "workspace_write_file",
                json!({"path": "scratch/notes.md", "content": note}),
            ),
            n if n % 4 == 0 => {
                ModelReply::tool_call("workspace_read_file", json!({"path": "scratch/notes.md"}))
            }
            // Parts too small to be shortened: only a summary makes room for them.
            n => ModelReply::tool_call(
                "workspace_write_file",
                json!({"path": format!("scratch/part-{n}.md"), "content": part}),
            ),
        })
    }))
}

fn windowed_runtime(dir: &Path, provider: Arc<dyn tt_runtime::ModelProvider>) -> AgentRuntime {
    transcript_builder(dir, provider)
        .provider_model_info(ConnectionModelInfo {
            context_window_tokens: Some(5_000),
            ..ConnectionModelInfo::default()
        })
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_resumed_agent_sends_the_request_the_dead_process_was_sending() {
    let dir = TempDir::new().unwrap();
    let before = Arc::new(Mutex::new(Vec::new()));
    let crashed = windowed_runtime(dir.path(), reader(CRASH_ROUND, Arc::clone(&before)));
    let run = crashed.start_run(request()).await.unwrap();
    let run_id = run.id.to_string();
    // Wait until the request of the crash round is in flight.
    let mut events = crashed.subscribe(&run_id, 0, None);
    while let Some(event) = events.next().await.unwrap() {
        if event.event_type == "model_call_attempt_started" && event.payload["round"] == CRASH_ROUND
        {
            break;
        }
        assert_ne!(event.event_type, "run_failed", "{}", event.payload);
    }
    let journal = crashed
        .read_events(tt_runtime::ReadEventsRequest {
            run_id: run_id.clone(),
            limit: Some(1000),
            ..tt_runtime::ReadEventsRequest::default()
        })
        .await
        .unwrap()
        .events;
    let trimmed = journal
        .iter()
        .filter(|e| e.event_type == "context_trimmed")
        .count();
    let compacted = journal
        .iter()
        .filter(|e| e.event_type == "context_compacted")
        .count();
    assert!(trimmed > 0, "the scenario must trim before the crash");
    assert!(compacted > 0, "the scenario must compact before the crash");
    let after_crash = TempDir::new().unwrap();
    copy_live_data_dir(dir.path(), after_crash.path());

    let after = Arc::new(Mutex::new(Vec::new()));
    let restarted = windowed_runtime(after_crash.path(), reader(u32::MAX, Arc::clone(&after)));
    restarted.resume_run(&run_id).await.unwrap();
    wait_for_event(&restarted, &run_id, "model_call_attempt_started").await;
    let dead = before
        .lock()
        .unwrap()
        .iter()
        .rfind(|r| r.round == CRASH_ROUND && !r.tools.is_empty())
        .cloned()
        .unwrap();
    let resumed = loop {
        if let Some(first) = after.lock().unwrap().first().cloned() {
            break first;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert_eq!(resumed.round, CRASH_ROUND);
    assert_eq!(
        serde_json::to_string(&resumed.messages).unwrap(),
        serde_json::to_string(&dead.messages).unwrap()
    );
    assert_eq!(resumed.max_output_tokens, dead.max_output_tokens);
    // The summary was taken from the journal, not asked for again.
    assert!(
        after
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.round <= CRASH_ROUND)
            .all(|r| !r.tools.is_empty())
    );
    restarted.cancel_run(&run_id).await.unwrap();
    restarted.wait_for_run(&run_id).await.unwrap();
    crashed.shutdown().await.unwrap();
}

/// The run's context-window events: (type, round).
async fn context_steps(runtime: &AgentRuntime, run_id: String) -> Vec<(String, serde_json::Value)> {
    runtime
        .read_events(tt_runtime::ReadEventsRequest {
            run_id,
            limit: Some(1000),
            ..tt_runtime::ReadEventsRequest::default()
        })
        .await
        .unwrap()
        .events
        .into_iter()
        .filter(|e| e.event_type.as_str().starts_with("context_"))
        .map(|e| (e.event_type.to_string(), e.payload["round"].clone()))
        .collect()
}

#[tokio::test]
async fn a_cassette_of_a_trimmed_and_compacted_run_replays_it_offline() {
    let recorded = TempDir::new().unwrap();
    let cassette = recorded.path().join("run.cassette.jsonl");
    let live = reader_ending(u32::MAX, 24, Arc::new(Mutex::new(Vec::new())));
    let recorder = Arc::new(tt_runtime::RecordingProvider::create(live, &cassette).unwrap());
    let first = windowed_runtime(&recorded.path().join("data"), recorder);
    let run = first.start_run(request()).await.unwrap();
    let ended = first.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(ended.status, tt_runtime::AgentRunStatus::Completed);
    let recorded_steps = context_steps(&first, run.id.to_string()).await;
    assert!(
        recorded_steps
            .iter()
            .any(|(kind, _)| kind == "context_compacted")
    );
    first.shutdown().await.unwrap();

    let replayed = TempDir::new().unwrap();
    let replay = Arc::new(tt_runtime::ReplayProvider::open(&cassette).unwrap());
    let second = windowed_runtime(replayed.path(), replay);
    let run = second.start_run(request()).await.unwrap();
    let ended = second.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(ended.status, tt_runtime::AgentRunStatus::Completed);
    assert_eq!(
        context_steps(&second, run.id.to_string()).await,
        recorded_steps
    );
}
