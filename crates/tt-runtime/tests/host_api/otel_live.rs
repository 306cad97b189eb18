//! The live OpenTelemetry export of a run a host starts with `start_run`: an OTLP/HTTP receiver
//! on 127.0.0.1 gets the spans of a finished model call and tool call while the agent still
//! waits on its next model call (so before the run ends), with the GenAI conventions'
//! attributes; the rest (the agent, with its usage rolled up) when the run ends, each span once.

use super::*;
use serde_json::Value;
use tokio::sync::mpsc;
use tt_runtime::OtelExportSettings;
use tt_testkit::otlp::{assert_chat_attributes, attribute, receiver, span_named, spans_named};

/// Round 1 writes a file; round 2 waits a day (the run is held open until it is cancelled).
fn held_writer() -> Arc<dyn ModelProvider> {
    Arc::new(FnProvider::new(|request| {
        Ok(match request.round {
            1 => ModelReply::tool_call(
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "Night fell.\n"}),
            ),
            _ => ModelReply::text("later").after(Duration::from_secs(86_400)),
        })
    }))
}

/// A runtime exporting to `endpoint` every 200 ms, on a default provider whose connection uses
/// `gpt-4o-mini` (a profile that names no model).
pub(crate) fn exporting_runtime(
    dir: &Path,
    provider: Arc<dyn ModelProvider>,
    endpoint: &str,
) -> AgentRuntime {
    let mut settings = OtelExportSettings::new(endpoint);
    settings.schedule_delay = Duration::from_millis(200);
    settings.capture_content = true;
    transcript_builder(dir, provider)
        .provider_model_info(tt_ports::ConnectionModelInfo {
            default_model: Some("gpt-4o-mini".to_owned()),
            ..Default::default()
        })
        .otel_export(Some(settings))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_host_run_sends_each_span_as_it_ends_with_genai_attributes() {
    let (endpoint, mut received) = receiver().await;
    let dir = TempDir::new().unwrap();
    let runtime = exporting_runtime(dir.path(), held_writer(), &endpoint);
    let run = runtime.start_run(request()).await.unwrap();
    let mut seen = round_one_spans(&mut received).await;
    // Round 2 still waits on the model: the spans came while the run was live.
    let live = runtime.get_run(run.id.as_str()).await.unwrap();
    assert!(!live.status.is_terminal(), "{live:?}");
    assert!(
        !seen
            .iter()
            .any(|s| s["name"].as_str().unwrap().starts_with("invoke_agent")),
        "an open agent span was sent: {seen:#?}"
    );
    let chat = span_named(&seen, "chat gpt-4o-mini").clone();
    assert_chat_attributes(&chat, "gpt-4o-mini", "scripted");
    assert_eq!(
        attribute(&chat, "gen_ai.provider.name"),
        Some(json!({"stringValue": "scripted"})),
        "{chat:#}"
    );
    for key in [
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
    ] {
        assert!(attribute(&chat, key).is_some(), "{key} missing: {chat:#}");
    }
    let output: Value = serde_json::from_str(
        attribute(&chat, "gen_ai.output.messages").unwrap()["stringValue"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(output[0]["role"], "assistant");
    assert_eq!(output[0]["parts"][0]["type"], "tool_call");
    assert_eq!(output[0]["parts"][0]["name"], "workspace_write_file");
    assert_eq!(output[0]["finish_reason"], "tool_call");
    let input: Value = serde_json::from_str(
        attribute(&chat, "gen_ai.input.messages").unwrap()["stringValue"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(input[0]["role"], "user");
    assert_eq!(input[0]["parts"][0]["type"], "text");

    runtime.cancel_run(run.id.as_str()).await.unwrap();
    runtime.wait_for_run(run.id.as_str()).await.unwrap();
    let agent_name = "invoke_agent default-writer";
    spans_named(&mut received, &mut seen, &[agent_name]).await;
    let agent = seen.iter().find(|s| s["name"] == agent_name).unwrap();
    // The agent's own calls summed on its span: round 1 answered, round 2 cancelled.
    assert_eq!(
        attribute(agent, "gen_ai.usage.output_tokens"),
        attribute(&chat, "gen_ai.usage.output_tokens")
    );
    assert!(attribute(agent, "tt.tree.usage.input_tokens").is_some());
    assert_eq!(
        attribute(agent, "gen_ai.operation.name"),
        Some(json!({"stringValue": "invoke_agent"}))
    );
    let mut ids: Vec<&str> = seen.iter().map(|s| s["spanId"].as_str().unwrap()).collect();
    ids.sort_unstable();
    let count = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), count, "a span was sent twice");
    runtime.shutdown().await.unwrap();
}

/// Waits for the spans of round 1 of [`held_writer`] (its model call and its write): every span
/// received so far.
async fn round_one_spans(received: &mut mpsc::UnboundedReceiver<Vec<Value>>) -> Vec<Value> {
    let mut seen = Vec::new();
    spans_named(
        received,
        &mut seen,
        &["chat gpt-4o-mini", "execute_tool workspace.write_file"],
    )
    .await;
    seen
}

/// Cancels the run, waits for its end and for its spans to be posted.
async fn cancel_and_flush(runtime: &AgentRuntime, run_id: &str) {
    runtime.cancel_run(run_id).await.unwrap();
    runtime.wait_for_run(run_id).await.unwrap();
    runtime.flush_otel(run_id).await.unwrap().unwrap();
}

/// Asserts that the root agent's span is among `seen` (it was posted `when`).
fn assert_agent_posted(seen: &[Value], when: &str) {
    assert!(
        seen.iter()
            .any(|s| s["name"] == "invoke_agent default-writer"),
        "the agent was not posted {when}: {seen:#?}"
    );
}

/// Every span posted so far (after a post returned, its spans have been handed over).
fn drain(received: &mut mpsc::UnboundedReceiver<Vec<Value>>) -> Vec<Value> {
    let mut spans = Vec::new();
    while let Ok(batch) = received.try_recv() {
        spans.extend(batch);
    }
    spans
}

fn span_ids(spans: &[Value]) -> Vec<String> {
    spans
        .iter()
        .map(|s| s["spanId"].as_str().unwrap().to_owned())
        .collect()
}

/// A run cancelled in one runtime (all its spans posted at its end) and resumed by a new
/// runtime, which remembers nothing of it: the new one posts only the resumed leg's spans,
/// never one of the first leg again (it reads what was sent off the journal).
#[tokio::test]
async fn a_resumed_run_exports_only_its_new_spans() {
    let (endpoint, mut received) = receiver().await;
    let dir = TempDir::new().unwrap();
    let first = exporting_runtime(dir.path(), held_writer(), &endpoint);
    let run = first.start_run(request()).await.unwrap();
    let run_id = run.id.to_string();
    let mut seen = round_one_spans(&mut received).await;
    cancel_and_flush(&first, &run_id).await;
    first.shutdown().await.unwrap();
    seen.extend(drain(&mut received));
    let first_leg = span_ids(&seen);
    assert_agent_posted(&seen, "at the end");

    let second = exporting_runtime(dir.path(), held_writer(), &endpoint);
    second.resume_run(&run_id).await.unwrap();
    let resumed_at = wait_for_event(&second, &run_id, "run_resumed").await.seq;
    let mut events = second.subscribe(&run_id, resumed_at, None);
    while let Some(event) = events.next().await.unwrap() {
        if event.event_type == "model_call_attempt_started" {
            break;
        }
    }
    cancel_and_flush(&second, &run_id).await;
    let resumed = drain(&mut received);
    let again: Vec<&Value> = resumed
        .iter()
        .filter(|s| first_leg.contains(&s["spanId"].as_str().unwrap().to_owned()))
        .collect();
    assert!(again.is_empty(), "sent again after the resume: {again:#?}");
    // The resumed leg's own model call went out.
    assert!(
        resumed.iter().any(|s| s["name"] == "chat gpt-4o-mini"),
        "{resumed:#?}"
    );
    second.shutdown().await.unwrap();
}

/// A run stopped by `shutdown` has all that is left of it posted before `shutdown` returns
/// (its agent, ended by the stop), so a host that exits right after loses none of its spans.
#[tokio::test]
async fn shutdown_posts_what_is_left_of_the_runs_it_stops_before_it_returns() {
    let (endpoint, mut received) = receiver().await;
    let dir = TempDir::new().unwrap();
    let runtime = exporting_runtime(dir.path(), held_writer(), &endpoint);
    runtime.start_run(request()).await.unwrap();
    let mut seen = Vec::new();
    spans_named(
        &mut received,
        &mut seen,
        &["execute_tool workspace.write_file"],
    )
    .await;
    runtime.shutdown().await.unwrap();
    seen.extend(drain(&mut received));
    assert_agent_posted(&seen, "by shutdown");
}
