//! `tt-agent serve` as a user starts it: it prints the inspector's URL with its token, serves
//! the host API there (the writers' room on the scripted model when no connection is given),
//! and stops cleanly on SIGTERM.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

/// One HTTP/1.1 exchange over a plain socket: the status code and the body.
fn http(addr: &str, method: &str, path: &str, token: &str, body: Option<&str>) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let body = body.unwrap_or("");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nx-tt-token: {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (status, body)
}

#[test]
fn serve_prints_a_tokened_url_and_runs_the_writers_room() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = crate::agent_in(dir.path())
        .args(["serve", "--pace-ms", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let url = lines
        .by_ref()
        .map(Result::unwrap)
        .find_map(|line| line.strip_prefix("open ").map(str::to_owned))
        .expect("serve prints `open <url>`");
    std::thread::spawn(move || lines.for_each(drop));
    let rest = url.strip_prefix("http://127.0.0.1:").unwrap();
    let (port, token) = rest.split_once("/?token=").unwrap();
    assert_eq!(token.len(), 64);
    let addr = format!("127.0.0.1:{port}");

    let (status, _) = http(&addr, "GET", "/api/info", "wrong", None);
    assert_eq!(status, 401);
    let (status, info) = http(&addr, "GET", "/api/info", token, None);
    assert_eq!(status, 200, "{info}");
    let info: serde_json::Value = serde_json::from_str(&info).unwrap();
    assert_eq!(info["suggestedProfiles"][0], "writer");
    assert_eq!(info["commitBridge"], "transcript");
    assert!(
        info["connection"]
            .as_str()
            .unwrap()
            .contains("writers' room")
    );

    let (status, run) = http(
        &addr,
        "POST",
        "/api/runs",
        token,
        Some(r#"{"stableChatId":"cli-serve","profileId":"writer","userRequest":"Write."}"#),
    );
    assert_eq!(status, 201, "{run}");
    let run: serde_json::Value = serde_json::from_str(&run).unwrap();
    let run_id = run["id"].as_str().unwrap();
    // The stream ends after the run's terminal event.
    let (status, stream) = http(
        &addr,
        "GET",
        &format!("/api/runs/{run_id}/stream"),
        token,
        None,
    );
    assert_eq!(status, 200);
    assert!(stream.contains("\"type\":\"run_completed\""), "{stream}");
    assert!(stream.contains("event: end"));

    let signal = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(signal.success());
    let (code, _) = crate::finish_within(child, Duration::from_secs(60), "serve did not stop");
    assert_eq!(code, Some(0));
}

#[test]
fn serve_refuses_a_model_without_a_connection() {
    let dir = tempfile::tempdir().unwrap();
    crate::refusal_of(
        crate::agent_in(dir.path()).args(["serve", "--model", "m"]),
        "--model needs --connection",
    );
}
