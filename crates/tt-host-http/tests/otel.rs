//! The live OpenTelemetry export of a run started through the inspector's HTTP API
//! (`POST /api/runs`): an OTLP/HTTP receiver on 127.0.0.1 gets the finished model call's and
//! tool call's spans while the agent still waits on its next model call, with the GenAI
//! conventions' attributes, and the agent's span (its usage rolled up) once the run is
//! cancelled through the API.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tt_runtime::{
    AgentRuntimeBuilder, CommitBridgeChoice, FnProvider, ModelReply, OtelExportSettings,
    PromptBrokerChoice,
};

use crate::support::server_over;

/// Accepts OTLP/HTTP posts on 127.0.0.1, answers 200 and hands over each body's spans.
async fn receiver() -> (String, mpsc::UnboundedReceiver<Vec<Value>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/traces", listener.local_addr().unwrap());
    let (sender, received) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut data = Vec::new();
            let mut buf = [0u8; 65536];
            let body = loop {
                let read = stream.read(&mut buf).await.unwrap();
                assert!(read > 0, "the post ended early");
                data.extend_from_slice(&buf[..read]);
                let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") else {
                    continue;
                };
                let head = String::from_utf8_lossy(&data[..at]).to_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|line| line.strip_prefix("content-length:"))
                    .map(|value| value.trim().parse().unwrap())
                    .unwrap();
                if data.len() >= at + 4 + length {
                    break data[at + 4..at + 4 + length].to_vec();
                }
            };
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
                .await
                .unwrap();
            let body: Value = serde_json::from_slice(&body).unwrap();
            let spans = body["resourceSpans"][0]["scopeSpans"][0]["spans"]
                .as_array()
                .cloned()
                .unwrap();
            if sender.send(spans).is_err() {
                return;
            }
        }
    });
    (url, received)
}

fn attribute(span: &Value, key: &str) -> Option<Value> {
    span["attributes"]
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| a["value"].clone())
}

/// Waits (a hang guard, not a timing) until spans named `names` have all arrived.
async fn spans_named(
    received: &mut mpsc::UnboundedReceiver<Vec<Value>>,
    seen: &mut Vec<Value>,
    names: &[&str],
) {
    let has_all = |seen: &Vec<Value>| {
        names
            .iter()
            .all(|name| seen.iter().any(|s| s["name"] == *name))
    };
    while !has_all(seen) {
        let batch = tokio::time::timeout(Duration::from_secs(60), received.recv())
            .await
            .unwrap_or_else(|_| panic!("no span {names:?} in {seen:#?}"))
            .unwrap();
        seen.extend(batch);
    }
}

#[tokio::test]
async fn a_run_started_from_the_page_sends_each_span_as_it_ends() {
    let (endpoint, mut received) = receiver().await;
    let dir = tempfile::tempdir().unwrap();
    // Round 1 writes a file; round 2 waits a day: the run is held open until it is cancelled.
    let provider = Arc::new(FnProvider::new(|request| {
        Ok(match request.round {
            1 => ModelReply::tool_call(
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "Night fell.\n"}),
            ),
            _ => ModelReply::text("later").after(Duration::from_secs(86_400)),
        })
    }));
    let mut settings = OtelExportSettings::new(&endpoint);
    settings.schedule_delay = Duration::from_millis(200);
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(provider)
        .provider_model_info(tt_ports::ConnectionModelInfo {
            default_model: Some("gpt-4o-mini".to_owned()),
            ..Default::default()
        })
        .commit_bridge(CommitBridgeChoice::Transcript)
        .prompt_broker(PromptBrokerChoice::Templates)
        .otel_export(Some(settings))
        .build()
        .unwrap();
    let mut server = server_over(dir, runtime, false, None, Default::default()).await;
    let run_id = server.start("default-writer", "Write a scene.").await;

    let mut seen = Vec::new();
    spans_named(
        &mut received,
        &mut seen,
        &["chat gpt-4o-mini", "execute_tool workspace.write_file"],
    )
    .await;
    // The agent still waits on round 2: these came while the run was live.
    let run = server.get(&format!("/api/runs/{run_id}")).await;
    assert_eq!(run.body["status"], "calling_model", "{}", run.body);
    let chat = seen
        .iter()
        .find(|s| s["name"] == "chat gpt-4o-mini")
        .unwrap()
        .clone();
    for (key, value) in [
        ("gen_ai.operation.name", json!({"stringValue": "chat"})),
        (
            "gen_ai.request.model",
            json!({"stringValue": "gpt-4o-mini"}),
        ),
        ("gen_ai.response.model", json!({"stringValue": "scripted"})),
    ] {
        assert_eq!(attribute(&chat, key), Some(value), "{key} of {chat:#}");
    }
    assert!(attribute(&chat, "gen_ai.usage.input_tokens").is_some());
    // Content capture is off unless asked for.
    assert_eq!(attribute(&chat, "gen_ai.input.messages"), None);
    assert_eq!(attribute(&chat, "gen_ai.output.messages"), None);

    let cancelled = server
        .post(&format!("/api/runs/{run_id}/cancel"), &json!({}))
        .await;
    assert!(cancelled.status < 300, "{}", cancelled.body);
    let agent_name = "invoke_agent default-writer";
    spans_named(&mut received, &mut seen, &[agent_name]).await;
    let agent = seen.iter().find(|s| s["name"] == agent_name).unwrap();
    assert_eq!(
        attribute(agent, "gen_ai.usage.input_tokens"),
        attribute(&chat, "gen_ai.usage.input_tokens")
    );
    server.stop().await;
}
