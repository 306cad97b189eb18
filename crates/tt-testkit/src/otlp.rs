//! An OTLP/HTTP trace receiver on 127.0.0.1 for tests of the live OpenTelemetry export: it
//! answers every post 200 and hands over each post's spans, in order, through a channel.

// Test assertions shipped as a library: failing loudly is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

/// Starts the receiver: its `/v1/traces` URL, and the spans of each post as it arrives. A
/// post's spans are handed over before it is answered, so once the exporter's post returns,
/// its spans are in the channel. A request to any other path is answered 404 and not handed
/// over.
pub async fn receiver() -> (String, mpsc::UnboundedReceiver<Vec<Value>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/traces", listener.local_addr().unwrap());
    let (sender, received) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let (request_line, body) = read_post(&mut stream).await;
            if request_line != "POST /v1/traces HTTP/1.1" {
                stream
                    .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                    .await
                    .unwrap();
                continue;
            }
            let body: Value = serde_json::from_slice(&body).unwrap();
            let spans = body["resourceSpans"][0]["scopeSpans"][0]["spans"]
                .as_array()
                .cloned()
                .unwrap();
            if sender.send(spans).is_err() {
                return;
            }
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
                .await
                .unwrap();
        }
    });
    (url, received)
}

/// The request line and the body (by its `Content-Length`) of one HTTP post.
async fn read_post(stream: &mut tokio::net::TcpStream) -> (String, Vec<u8>) {
    let mut data = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        let read = stream.read(&mut buf).await.unwrap();
        assert!(read > 0, "the post ended early");
        data.extend_from_slice(&buf[..read]);
        let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&data[..at]).into_owned();
        let length: usize = head
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("content-length").then_some(value)
            })
            .map(|value| value.trim().parse().unwrap())
            .unwrap();
        if data.len() >= at + 4 + length {
            let request_line = head.lines().next().unwrap_or_default().to_owned();
            return (request_line, data[at + 4..at + 4 + length].to_vec());
        }
    }
}

/// The value of attribute `key` of an OTLP span, as its JSON `AnyValue`.
pub fn attribute(span: &Value, key: &str) -> Option<Value> {
    span["attributes"]
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| a["value"].clone())
}

/// The span named `name` among `spans` (a failure lists what arrived).
pub fn span_named<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    spans
        .iter()
        .find(|span| span["name"] == name)
        .unwrap_or_else(|| panic!("no span {name} in {spans:#?}"))
}

/// Asserts the GenAI attributes of a model call's span: operation `chat`, the model it asked
/// for (`requested`) and the model that answered (`answered`).
pub fn assert_chat_attributes(span: &Value, requested: &str, answered: &str) {
    for (key, value) in [
        ("gen_ai.operation.name", "chat"),
        ("gen_ai.request.model", requested),
        ("gen_ai.response.model", answered),
    ] {
        assert_eq!(
            attribute(span, key),
            Some(serde_json::json!({ "stringValue": value })),
            "{key} of {span:#}"
        );
    }
}

/// Waits (a hang guard of 60 s, not a timing) until spans named `names` have all arrived in
/// `seen`.
pub async fn spans_named(
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
