//! A small OpenAI-compatible chat server on 127.0.0.1 for the command-line tests: each request
//! body goes to a closure that picks the one tool call to answer with, or holds the request
//! for ever (`None`, a server that never answers).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;

use serde_json::Value;

/// What the server answers a request with: a tool's model-facing name and its arguments.
pub(crate) type Answer = Option<(&'static str, Value)>;

/// What a server started with [`start_calls`] answers a request with: the tool calls of one
/// assistant message (call id, model-facing name and arguments), or `None` to hold the request
/// for ever.
pub(crate) type Calls = Option<Vec<(String, &'static str, Value)>>;

/// Starts the server; returns its base URL (`http://127.0.0.1:<port>/v1`).
pub(crate) fn start(answer: impl Fn(&Value) -> Answer + Send + Sync + 'static) -> String {
    start_calls(move |body| {
        let turn = assistant_turns(body);
        answer(body).map(|(name, arguments)| vec![(format!("call_{turn}"), name, arguments)])
    })
}

/// [`start`] for answers of several tool calls at once (a delegating agent's parallel calls).
pub(crate) fn start_calls(answer: impl Fn(&Value) -> Calls + Send + Sync + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let answer = Arc::new(answer);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let answer = Arc::clone(&answer);
            std::thread::spawn(move || serve(stream, answer.as_ref()));
        }
    });
    url
}

/// How many assistant turns the request's conversation already has.
pub(crate) fn assistant_turns(body: &Value) -> usize {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "assistant")
        .count()
}

fn serve(mut stream: TcpStream, answer: &(dyn Fn(&Value) -> Calls + Send + Sync)) {
    let Some(body) = read_body(&mut stream) else {
        // A request without a JSON body (the runtime asking `/props` or `/models` for the
        // model's window) is not known here; a client that went away reads nothing.
        let _ = write!(
            stream,
            "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        );
        return;
    };
    let Some(calls) = answer(&body) else {
        // Keep the connection open and never answer.
        std::thread::sleep(std::time::Duration::from_secs(600));
        return;
    };
    let turn = assistant_turns(&body);
    let tool_calls: Vec<Value> = calls
        .into_iter()
        .map(|(id, name, arguments)| {
            serde_json::json!({"id": id, "type": "function",
                "function": {"name": name, "arguments": arguments.to_string()}})
        })
        .collect();
    let reply = serde_json::json!({
        "id": format!("chatcmpl-{turn}"), "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": tool_calls}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5},
    })
    .to_string();
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
        reply.len()
    );
}

/// The JSON body of one HTTP request, `None` when it has none or the client went away first.
fn read_body(stream: &mut TcpStream) -> Option<Value> {
    let mut data = Vec::new();
    let mut buf = [0u8; 65536];
    let body_start = loop {
        if let Some(at) = data.windows(4).position(|window| window == b"\r\n\r\n") {
            break at + 4;
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(read) => data.extend_from_slice(&buf[..read]),
        }
    };
    let head = String::from_utf8_lossy(&data[..body_start]).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0);
    while data.len() < body_start + length {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(read) => data.extend_from_slice(&buf[..read]),
        }
    }
    serde_json::from_slice(&data[body_start..]).ok()
}
