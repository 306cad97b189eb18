//! Runs against model servers that misbehave, over 127.0.0.1, through a connection spec as
//! `tt-agent run` builds it: one that streams forever is cut off at the reply size limit, one
//! that never sends its headers (streamed or not) is given up on after the header timeout and
//! the profile's retries. Either
//! way the run ends `failed` with the right code instead of hanging.

use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tt_runtime::{
    AgentRunStatus, AgentRuntime, AgentRuntimeBuilder, CommitBridgeChoice, ConnectionSpec,
    ReadEventsRequest, build_provider,
};

use crate::support::start_request;

#[derive(Debug, Clone, Copy)]
enum Behaviour {
    /// Answers 200 with an event stream of text that never ends.
    StreamForever,
    /// Reads the request and then says nothing, holding the connection open.
    Hang,
}

/// Starts a server on 127.0.0.1 that behaves so for every request; returns its base URL and a
/// counter of the model calls it got (`POST …/chat/completions`; the window probes the
/// connection sends first meet the same behaviour but are not counted).
async fn hostile_server(behaviour: Behaviour) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let requests = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = Arc::clone(&requests);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let counter = Arc::clone(&counter);
            tokio::spawn(async move {
                serve(stream, behaviour, &counter).await;
            });
        }
    });
    (url, requests)
}

async fn serve(
    mut stream: TcpStream,
    behaviour: Behaviour,
    counter: &std::sync::atomic::AtomicUsize,
) {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|window| window == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(read) => head.extend_from_slice(&buf[..read]),
        }
    }
    if head.starts_with(b"POST") && String::from_utf8_lossy(&head).contains("/chat/completions") {
        counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
    match behaviour {
        Behaviour::StreamForever => {
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n")
                .await;
            let chunk = serde_json::json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
                "choices": [{"index": 0, "delta": {"content": "and the storm went on "}, "finish_reason": null}]});
            let piece = format!("data: {chunk}\n\n");
            while stream.write_all(piece.as_bytes()).await.is_ok() {}
        }
        Behaviour::Hang => {
            // Until the client gives up and closes.
            while matches!(stream.read(&mut buf).await, Ok(read) if read > 0) {}
        }
    }
}

async fn runtime_for(dir: &tempfile::TempDir, spec: &ConnectionSpec) -> AgentRuntime {
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(build_provider(spec).unwrap())
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap();
    // The default writer with one quick retry, so the test does not wait out the defaults.
    let mut profile = tt_domain::profile::default_writer_definition();
    profile.id = tt_domain::ids::ProfileId::parse("impatient").unwrap();
    profile.run.model_retry.max_retries = 1;
    profile.run.model_retry.interval_ms = 10;
    runtime.save_profile(profile).await.unwrap();
    runtime
}

async fn run_failed(runtime: &AgentRuntime) -> (AgentRunStatus, serde_json::Value) {
    let mut request = start_request();
    request.profile_id = Some("impatient".into());
    let run = runtime.start_run(request).await.unwrap();
    let run = tokio::time::timeout(
        Duration::from_secs(60),
        runtime.wait_for_run(run.id.as_str()),
    )
    .await
    .expect("the run hung")
    .unwrap();
    let events = runtime
        .read_events(ReadEventsRequest {
            run_id: run.id.to_string(),
            after_seq: None,
            before_seq: None,
            limit: Some(500),
            invocation_id: None,
            include_timeline_projection: false,
        })
        .await
        .unwrap()
        .events;
    let failed = events
        .into_iter()
        .find(|event| event.event_type == "run_failed")
        .map(|event| event.payload)
        .unwrap_or_default();
    (run.status, failed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_streams_forever_fails_the_run_at_the_size_limit() {
    let (url, requests) = hostile_server(Behaviour::StreamForever).await;
    let spec = ConnectionSpec::parse(&format!("openai:{url}"))
        .unwrap()
        .with_model("m")
        .with_api_key_env("TT_AGENT_E2E_KEY_THAT_IS_NEVER_SET")
        .with_stream(true)
        .with_max_response_bytes(256 * 1024);
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime_for(&dir, &spec).await;
    let (status, failed) = run_failed(&runtime).await;
    assert_eq!(status, AgentRunStatus::Failed);
    assert_eq!(failed["code"], "model.response_too_large");
    assert_eq!(failed["retryable"], false);
    // Not retried: one request.
    assert_eq!(requests.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// A run on a server that never sends its headers, streamed or not, with a short header
/// timeout: it fails with a coded timeout after one attempt and one retry.
async fn a_hung_server_fails_the_run(stream: bool) {
    let (url, requests) = hostile_server(Behaviour::Hang).await;
    let spec = ConnectionSpec::parse(&format!("openai:{url}"))
        .unwrap()
        .with_model("m")
        .with_api_key_env("TT_AGENT_E2E_KEY_THAT_IS_NEVER_SET")
        .with_stream(stream)
        .with_header_timeout(Duration::from_millis(200));
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime_for(&dir, &spec).await;
    let (status, failed) = run_failed(&runtime).await;
    assert_eq!(status, AgentRunStatus::Failed);
    assert_eq!(failed["code"], "agent.transient");
    assert_eq!(failed["details"]["modelCode"], "model.timeout");
    assert!(
        failed["technicalMessage"]
            .as_str()
            .unwrap()
            .contains("header timeout"),
        "{failed}"
    );
    assert_eq!(failed["retryable"], true);
    // One attempt and one retry (the profile's maxRetries).
    assert_eq!(requests.load(std::sync::atomic::Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streaming_server_that_never_sends_headers_fails_the_run_at_the_header_timeout() {
    a_hung_server_fails_the_run(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_reply_server_that_never_sends_headers_fails_the_run_at_the_header_timeout() {
    a_hung_server_fails_the_run(false).await;
}
