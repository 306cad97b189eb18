//! `tt-agent run` against model servers on 127.0.0.1 that misbehave: one streams forever, one
//! never answers. The real binary must end the run `failed` with the right code, exit non-zero
//! and never hang.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

#[derive(Debug, Clone, Copy)]
enum Behaviour {
    StreamForever,
    Hang,
}

/// A server on 127.0.0.1 that answers every request so; returns its base URL.
fn hostile_server(behaviour: Behaviour) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve(stream, behaviour));
        }
    });
    url
}

fn serve(mut stream: TcpStream, behaviour: Behaviour) {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|window| window == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(read) => head.extend_from_slice(&buf[..read]),
        }
    }
    match behaviour {
        Behaviour::StreamForever => {
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n");
            let chunk = serde_json::json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
                "choices": [{"index": 0, "delta": {"content": "and the storm went on "}, "finish_reason": null}]});
            let piece = format!("data: {chunk}\n\n");
            while stream.write_all(piece.as_bytes()).is_ok() {}
        }
        // Holds the connection open, silent, until the client gives up.
        Behaviour::Hang => while matches!(stream.read(&mut buf), Ok(read) if read > 0) {},
    }
}

/// Runs `tt-agent run` against `url`; returns (exit code, everything it printed).
fn run_against(url: &str, extra: &[&str]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut command = crate::agent_in(dir.path());
    command
        .args([
            "run",
            "--connection",
            &format!("openai:{url}"),
            "--model",
            "m",
        ])
        .args(extra)
        .arg("Write a line about the sea.")
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE");
    crate::run_within(
        &mut command,
        Duration::from_secs(90),
        &format!("tt-agent run hung against a {url} server"),
    )
}

#[test]
fn a_server_that_streams_forever_is_cut_off_at_the_reply_size_limit() {
    let url = hostile_server(Behaviour::StreamForever);
    let (code, text) = run_against(&url, &["--stream"]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("model.response_too_large"), "{text}");
}

#[test]
fn a_server_that_never_answers_is_given_up_on() {
    let url = hostile_server(Behaviour::Hang);
    // Streamed or not, the wait for the response headers is the header timeout's.
    let (code, text) = run_against(&url, &["--stream", "--header-timeout-secs", "1"]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("header timeout"), "{text}");
    assert!(text.contains("ended: failed"), "{text}");
    // Every attempt of the default retry policy was made and counted as failed.
    assert!(text.contains("4 failed"), "{text}");
}
