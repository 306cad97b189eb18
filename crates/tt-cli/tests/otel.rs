//! OpenTelemetry: `tt-agent demo` with `OTEL_EXPORTER_OTLP_ENDPOINT` set posts the run's spans
//! to a collector (here a small OTLP/HTTP receiver on 127.0.0.1), and `tt-agent export-otel`
//! of the same run gives the same spans.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::sync::mpsc;

const AGENT: &str = env!("CARGO_BIN_EXE_tt-agent");

/// Accepts one POST, answers 200 and hands over (path, JSON body).
fn receiver() -> (String, mpsc::Receiver<(String, serde_json::Value)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (sender, received) = mpsc::channel();
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut data = Vec::new();
        let mut buf = [0u8; 65536];
        let (head_end, length) = loop {
            let read = stream.read(&mut buf).unwrap();
            assert!(read > 0, "the request ended early");
            data.extend_from_slice(&buf[..read]);
            if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&data[..at]).to_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|line| line.strip_prefix("content-length:"))
                    .map(|value| value.trim().parse().unwrap())
                    .unwrap();
                break (at + 4, length);
            }
        };
        while data.len() < head_end + length {
            let read = stream.read(&mut buf).unwrap();
            data.extend_from_slice(&buf[..read]);
        }
        let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
        let path = head.split_whitespace().nth(1).unwrap().to_owned();
        let body = serde_json::from_slice(&data[head_end..head_end + length]).unwrap();
        stream
            .write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: application/json\r\n\r\n{}",
            )
            .unwrap();
        sender.send((path, body)).unwrap();
    });
    (url, received)
}

fn spans_of(export: &serde_json::Value) -> Vec<serde_json::Value> {
    export["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .cloned()
        .unwrap()
}

#[test]
fn a_finished_run_sends_its_spans_to_the_collector_and_exports_the_same() {
    let (url, received) = receiver();
    let dir = tempfile::tempdir().unwrap();
    let demo = Command::new(AGENT)
        .arg("--data-dir")
        .arg(dir.path())
        .args(["demo", "--pace-ms", "0"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &url)
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .output()
        .unwrap();
    assert!(demo.status.success());
    assert!(String::from_utf8_lossy(&demo.stderr).contains("spans of run"));
    let (path, sent) = received
        .recv_timeout(std::time::Duration::from_secs(30))
        .unwrap();
    assert_eq!(path, "/v1/traces");
    let spans = spans_of(&sent);
    let agents: Vec<&serde_json::Value> = spans
        .iter()
        .filter(|span| span["name"].as_str().unwrap().starts_with("invoke_agent "))
        .collect();
    // The writers' room: writer, two reviewers, the fact checker below the critic, the editor.
    assert_eq!(agents.len(), 5, "{agents:?}");
    let roots: Vec<_> = agents
        .iter()
        .filter(|span| span.get("parentSpanId").is_none())
        .collect();
    assert_eq!(roots.len(), 1);
    let id_of = |name: &str| {
        agents
            .iter()
            .find(|span| span["name"] == format!("invoke_agent {name}"))
            .map(|span| span["spanId"].clone())
            .unwrap()
    };
    let checker = agents
        .iter()
        .find(|span| span["name"] == "invoke_agent fact-checker")
        .unwrap();
    assert_eq!(checker["parentSpanId"], id_of("continuity-critic"));
    let chats = spans
        .iter()
        .filter(|span| span["name"].as_str().unwrap().starts_with("chat "))
        .count();
    let tools = spans
        .iter()
        .filter(|span| span["name"].as_str().unwrap().starts_with("execute_tool "))
        .count();
    assert!(chats > 10 && tools > 10, "{chats} chat, {tools} tool spans");

    let run = spans[0]["traceId"].clone();
    let runs: Vec<_> = std::fs::read_dir(dir.path().join("chats"))
        .unwrap()
        .flatten()
        .flat_map(|chat| {
            std::fs::read_dir(chat.path().join("runs"))
                .unwrap()
                .flatten()
        })
        .map(|run| run.file_name().to_string_lossy().into_owned())
        .collect();
    let exported = Command::new(AGENT)
        .arg("--data-dir")
        .arg(dir.path())
        .args(["export-otel", &runs[0]])
        .output()
        .unwrap();
    assert!(exported.status.success());
    let exported: serde_json::Value = serde_json::from_slice(&exported.stdout).unwrap();
    assert_eq!(spans_of(&exported), spans);
    assert_eq!(spans_of(&exported)[0]["traceId"], run);
}
