//! Model cassettes over the HTTP adapters: a run recorded against the local fake servers
//! replays offline to the same journal; a changed request fails with `model.cassette_mismatch`
//! naming the field; and the checked-in cassettes under `tests/e2e/cassettes/` pin what the
//! adapters make of the fake servers' wire format (`TT_UPDATE_CASSETTES=1` rewrites them).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tt_adapter_provider_anthropic::{AnthropicConfig, AnthropicProvider};
use tt_adapter_provider_openai::{OpenAiConfig, OpenAiProvider};
use tt_provider_http::test_server::TestServer;
use tt_runtime::{AgentRunStatus, AgentRuntime, ModelProvider, RecordingProvider, ReplayProvider};

use crate::golden::journal_projection;
use crate::providers::{SCENE, anthropic_reply, openai_reply, runtime_with};
use crate::support::start_request;

#[derive(Debug, Clone, Copy)]
enum Wire {
    OpenAi,
    Anthropic,
}

impl Wire {
    fn checked_in(self) -> PathBuf {
        let name = match self {
            Wire::OpenAi => "openai-streamed.jsonl",
            Wire::Anthropic => "anthropic-streamed.jsonl",
        };
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("e2e/cassettes")
            .join(name)
    }

    /// The fake server for this wire format and a streaming adapter talking to it.
    async fn live(self) -> (TestServer, Arc<dyn ModelProvider>) {
        match self {
            Wire::OpenAi => {
                let server = TestServer::start(openai_reply).await;
                let provider = OpenAiProvider::new(
                    OpenAiConfig::new(server.url("/v1"))
                        .with_default_model("e2e-model")
                        .with_stream(true),
                )
                .unwrap();
                (server, Arc::new(provider))
            }
            Wire::Anthropic => {
                let server = TestServer::start(anthropic_reply).await;
                let provider = AnthropicProvider::new(
                    AnthropicConfig::new(server.url(""))
                        .with_default_model("e2e-model")
                        .with_api_key("sk-ant-e2e")
                        .with_stream(true),
                )
                .unwrap();
                (server, Arc::new(provider))
            }
        }
    }
}

/// Runs the lead (who delegates to the helper) to its end; returns the run's final state and
/// its normalised journal.
async fn lead_run(
    runtime: &AgentRuntime,
    user_request: Option<&str>,
) -> (tt_runtime::AgentRun, Value) {
    let mut request = start_request();
    request.profile_id = Some("lead".into());
    if let Some(text) = user_request {
        request.user_request = Some(text.to_owned());
    }
    let run = runtime.start_run(request).await.unwrap();
    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    let journal = journal_projection(runtime, run.id.as_str()).await;
    (run, journal)
}

/// Records a live run against the fake server into `cassette`; returns its journal.
async fn record(wire: Wire, cassette: &Path) -> Value {
    let (_server, provider) = wire.live().await;
    let recorder = RecordingProvider::create(provider, cassette).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime_with(&dir, Arc::new(recorder)).await;
    let (run, journal) = lead_run(&runtime, None).await;
    assert_eq!(run.status, AgentRunStatus::Completed);
    journal
}

/// Replays `cassette` with no server anywhere; returns the run, its journal and what was left
/// unanswered.
async fn replay(
    cassette: &Path,
    user_request: Option<&str>,
) -> (tt_runtime::AgentRun, Value, usize) {
    let replay = Arc::new(ReplayProvider::open(cassette).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime_with(&dir, replay.clone()).await;
    let (run, journal) = lead_run(&runtime, user_request).await;
    if run.status == AgentRunStatus::Completed {
        let published = runtime.transcript(run.workspace_id.as_str()).await.unwrap();
        assert_eq!(published[0].content, SCENE);
    }
    (run, journal, replay.remaining())
}

async fn recorded_run_replays_to_the_same_journal(wire: Wire) {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("run.jsonl");
    let live = record(wire, &cassette).await;
    let (run, replayed, remaining) = replay(&cassette, None).await;
    assert_eq!(run.status, AgentRunStatus::Completed);
    assert_eq!(remaining, 0, "every recorded call was asked for again");
    let (live, live_pieces) = split_deltas(live);
    let (replayed, replayed_pieces) = split_deltas(replayed);
    assert_eq!(live, replayed, "the replay journaled what the live run did");
    assert_eq!(live_pieces, replayed_pieces, "and streamed the same output");
}

/// The projection without its `model_delta` events, and what those streamed per agent. How
/// deltas are coalesced into events depends on timing (one event per 250 ms at most), so a
/// live stream and its instant replay may cut the same output into different events.
fn split_deltas(mut projection: Value) -> (Value, Vec<(String, String)>) {
    let mut streamed = Vec::new();
    for group in projection.as_array_mut().into_iter().flatten() {
        let agent = group["invocation"].as_str().unwrap_or_default().to_owned();
        let events = group["events"].as_array_mut().unwrap();
        let mut text = String::new();
        for event in events.iter().filter(|e| e["type"] == "model_delta") {
            for key in ["text", "reasoning"] {
                text.push_str(event["payload"][key].as_str().unwrap_or_default());
            }
            for call in event["payload"]["toolCalls"]
                .as_array()
                .into_iter()
                .flatten()
            {
                text.push_str(&format!(
                    "<call {}>",
                    call["name"].as_str().unwrap_or_default()
                ));
            }
        }
        events.retain(|e| e["type"] != "model_delta");
        if !text.is_empty() {
            streamed.push((agent, text));
        }
    }
    assert!(!streamed.is_empty(), "the run streamed");
    (projection, streamed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_openai_run_replays_offline_to_the_same_journal() {
    recorded_run_replays_to_the_same_journal(Wire::OpenAi).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anthropic_run_replays_offline_to_the_same_journal() {
    recorded_run_replays_to_the_same_journal(Wire::Anthropic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_request_fails_with_a_cassette_mismatch_naming_the_field() {
    let (run, journal, _) = replay(
        &Wire::OpenAi.checked_in(),
        Some("Write the opening scene of a ghost story."),
    )
    .await;
    assert_eq!(run.status, AgentRunStatus::Failed);
    let failed = journal[0]["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|event| event["type"] == "run_failed")
        .expect("run_failed in the run's group");
    assert_eq!(failed["payload"]["code"], "model.cassette_mismatch");
    let message = failed["payload"]["message"].as_str().unwrap();
    assert!(
        message.contains("the request of agent `lead` in round 1 differs from the recording: messages[2].parts[0].text: differs at character"),
        "{message}"
    );
}

/// The interactions of a cassette in a stable order (calls of concurrent agents land in the
/// file in completion order), with streamed pieces merged: how the bytes of a stream were cut
/// into reads depends on the network, what they say does not; and the recorded ids counted.
fn interactions(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    for interaction in lines.iter_mut().skip(1) {
        if let Some(deltas) = interaction.get_mut("deltas") {
            *deltas = merged_deltas(deltas);
        }
        // The ids themselves are the recording run's own; how many there were is what counts.
        let ids = interaction["ids"].as_array().map_or(0, Vec::len);
        interaction["ids"] = Value::from(ids);
    }
    let header = lines.remove(0);
    lines.sort_by_key(|i| {
        (
            i["profile"].as_str().unwrap_or_default().to_owned(),
            i["round"].as_u64(),
            i["requestSha256"].as_str().unwrap_or_default().to_owned(),
        )
    });
    lines.insert(0, header);
    lines
}

/// Consecutive text, reasoning or argument pieces (of one tool call) joined into one.
fn merged_deltas(deltas: &Value) -> Value {
    let mut merged: Vec<Value> = Vec::new();
    for delta in deltas.as_array().into_iter().flatten() {
        let field = match delta["kind"].as_str() {
            Some("text" | "reasoning") => "text",
            Some("toolCallArguments") => "fragment",
            _ => {
                merged.push(delta.clone());
                continue;
            }
        };
        match merged.last_mut() {
            Some(last) if last["kind"] == delta["kind"] && last.get("id") == delta.get("id") => {
                let joined = format!(
                    "{}{}",
                    last[field].as_str().unwrap_or_default(),
                    delta[field].as_str().unwrap_or_default()
                );
                last[field] = Value::String(joined);
            }
            _ => merged.push(delta.clone()),
        }
    }
    Value::Array(merged)
}

async fn checked_in_cassette_is_what_the_adapter_records(wire: Wire) {
    let dir = tempfile::tempdir().unwrap();
    let fresh = dir.path().join("fresh.jsonl");
    record(wire, &fresh).await;
    let fresh_interactions = interactions(&fresh);
    let pinned = wire.checked_in();
    if std::env::var_os("TT_UPDATE_CASSETTES").is_some() {
        std::fs::copy(&fresh, &pinned).unwrap();
    }
    let pinned_interactions = interactions(&pinned);
    let differences = tt_adapter_provider_cassette::describe_differences(
        &Value::Array(pinned_interactions),
        &Value::Array(fresh_interactions),
    );
    assert!(
        differences.is_empty(),
        "the adapter now records something else from the same wire bytes: {differences:?}; if \
         that is intended, rerun with TT_UPDATE_CASSETTES=1 and review the diff of {}",
        pinned.display()
    );
    let (run, _, remaining) = replay(&pinned, None).await;
    assert_eq!(run.status, AgentRunStatus::Completed);
    assert_eq!(remaining, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_adapter_still_records_the_checked_in_cassette() {
    checked_in_cassette_is_what_the_adapter_records(Wire::OpenAi).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_anthropic_adapter_still_records_the_checked_in_cassette() {
    checked_in_cassette_is_what_the_adapter_records(Wire::Anthropic).await;
}

/// What docs/cassettes.md shows a host doing, against the fake OpenAI-compatible server: record
/// a run through a connection spec, then replay it with no server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_records_and_replays_as_the_docs_show() -> Result<(), Box<dyn std::error::Error>> {
    use tt_runtime::{AgentRuntimeBuilder, CommitBridgeChoice, ConnectionSpec, build_provider};
    let server = TestServer::start(openai_reply).await;
    let connection = format!("openai:{}", server.url("/v1"));
    let dir = tempfile::tempdir()?;
    let cassette = dir.path().join("writer.cassette.jsonl");
    let data_dir = dir.path().join("recorded");
    // ANCHOR: record
    let live = build_provider(&ConnectionSpec::parse(&connection)?.with_model("e2e-model"))?;
    let recorder = RecordingProvider::create(live, &cassette)?;
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(&data_dir)
        .provider(Arc::new(recorder))
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()?;
    // ANCHOR_END: record
    crate::providers::install_profiles(&runtime).await;
    let (recorded, _) = lead_run(&runtime, None).await;
    assert_eq!(recorded.status, AgentRunStatus::Completed);
    drop(server);

    let replay_dir = dir.path().join("replayed");
    // ANCHOR: replay
    let replay = Arc::new(ReplayProvider::open(&cassette)?);
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(&replay_dir)
        .provider(replay.clone())
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()?;
    // ANCHOR_END: replay
    crate::providers::install_profiles(&runtime).await;
    let (replayed, _) = lead_run(&runtime, None).await;
    assert_eq!(replayed.status, AgentRunStatus::Completed);
    // ANCHOR: replay_check
    assert_eq!(
        replay.remaining(),
        0,
        "every recorded call was asked for again"
    );
    // ANCHOR_END: replay_check
    Ok(())
}
