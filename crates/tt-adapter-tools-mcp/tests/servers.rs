//! `RmcpClient` against real MCP servers started by the tests: server-everything (stdio and
//! Streamable HTTP on 127.0.0.1), server-filesystem (stdio) and a Python `mcp` SDK server for
//! errors, slow calls, cancellation, oversized results, pages and a server that dies.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;
use tt_adapter_tools_mcp::RmcpClient;
use tt_domain::error_codes;
use tt_domain::mcp::{McpServerConfig, McpTransport, limits};
use tt_ports::tools::McpClient;

fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn never() -> CancellationToken {
    CancellationToken::new()
}

/// A new client's refusal of `server`'s catalog, which is too large
/// (`mcp.catalog_too_large`).
async fn catalog_refusal(server: &McpServerConfig) -> tt_ports::tools::ToolSourceError {
    let client = RmcpClient::new();
    let err = client.list_tools(server, never()).await.unwrap_err();
    assert_eq!(err.code, error_codes::MCP_CATALOG_TOO_LARGE, "{err}");
    client.shutdown().await;
    err
}

/// Calls `tool` of `server` with `arguments` (a JSON object), never cancelled.
async fn call(
    client: &RmcpClient,
    server: &McpServerConfig,
    tool: &str,
    arguments: Value,
) -> Result<tt_domain::mcp::McpCallOutput, tt_ports::tools::ToolSourceError> {
    client
        .call_tool(server, tool, &args(arguments), never())
        .await
}

/// Asserts that a call failed with `code` and whether it may have run on the server.
fn assert_failed(
    err: &tt_ports::tools::ToolSourceError,
    code: tt_domain::error_codes::Code,
    may_have_run: bool,
) {
    assert_eq!(err.code, code, "{err}");
    assert_eq!(err.may_have_run, may_have_run, "{err}");
}

/// Calls `tool` with `arguments` on the plain python test server through a new client (`None`
/// without python): its output.
async fn call_the_plain_server(
    tool: &str,
    arguments: Value,
) -> Option<tt_domain::mcp::McpCallOutput> {
    let server = support::python(&[])?;
    let client = RmcpClient::new();
    let out = call(&client, &server, tool, arguments).await.unwrap();
    client.shutdown().await;
    Some(out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_over_stdio_lists_its_tools_with_hints_and_answers() {
    let Some(server) = support::everything() else {
        return;
    };
    let client = RmcpClient::new();
    let tools = client.list_tools(&server, never()).await.unwrap();
    let echo = tools.iter().find(|tool| tool.name == "echo").unwrap();
    assert_eq!(echo.title.as_deref(), Some("Echo Tool"));
    assert_eq!(echo.description, "Echoes back the input string");
    assert_eq!(echo.read_only_hint, Some(true));
    assert_eq!(echo.idempotent_hint, Some(true));
    assert_eq!(echo.destructive_hint, Some(false));
    assert_eq!(echo.input_schema["properties"]["message"]["type"], "string");

    let out = call(&client, &server, "echo", json!({"message": "hi"}))
        .await
        .unwrap();
    assert_eq!(out.text, "Echo: hi");
    assert!(!out.is_error);
    assert_eq!(out.structured, None);

    let weather = client
        .call_tool(
            &server,
            "get-structured-content",
            &args(json!({"location": "Chicago"})),
            never(),
        )
        .await
        .unwrap();
    assert_eq!(
        weather.structured,
        Some(json!({"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82}))
    );

    let image = call(&client, &server, "get-tiny-image", json!({}))
        .await
        .unwrap();
    let lines: Vec<&str> = image.text.lines().collect();
    assert_eq!(lines.first(), Some(&"Here's the image you requested:"));
    let note = lines.get(1).unwrap();
    assert!(
        note.starts_with("[image: image/png, ") && note.ends_with(" bytes]"),
        "{}",
        image.text
    );
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_gets_its_own_env_and_only_a_few_of_the_runtimes_variables() {
    let Some(mut server) = support::everything() else {
        return;
    };
    if let McpTransport::Stdio { env, .. } = &mut server.transport {
        env.insert("TT_MCP_GIVEN".into(), "given".into());
    }
    // cargo sets CARGO_MANIFEST_DIR for the test process; a server must not inherit it.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    let client = RmcpClient::new();
    let out = call(&client, &server, "get-env", json!({})).await.unwrap();
    let env: Value = serde_json::from_str(&out.text).unwrap();
    assert_eq!(env["TT_MCP_GIVEN"], "given");
    assert!(env.get("PATH").is_some());
    assert!(env.get("CARGO_MANIFEST_DIR").is_none(), "{}", out.text);
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_over_streamable_http_lists_and_answers() {
    let Some(mut http) = support::everything_http().await else {
        return;
    };
    let server = McpServerConfig {
        name: "everything-http".into(),
        transport: McpTransport::Http {
            url: http.url.clone(),
            headers: BTreeMap::from([("X-Test".to_owned(), "1".to_owned())]),
        },
        call_timeout_ms: 30_000,
    };
    let client = RmcpClient::new();
    let tools = client.list_tools(&server, never()).await.unwrap();
    assert!(tools.iter().any(|tool| tool.name == "echo"), "{tools:?}");
    let out = call(&client, &server, "echo", json!({"message": "over http"}))
        .await
        .unwrap();
    assert_eq!(out.text, "Echo: over http");
    let sum = call(&client, &server, "get-sum", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert!(sum.text.contains('5'), "{}", sum.text);
    client.shutdown().await;
    http.child.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_that_dies_mid_call_fails_the_call_as_may_have_run() {
    let Some(mut http) = support::everything_http().await else {
        return;
    };
    let server = McpServerConfig {
        name: "everything-http".into(),
        transport: McpTransport::Http {
            url: http.url.clone(),
            headers: BTreeMap::new(),
        },
        call_timeout_ms: 20_000,
    };
    let client = Arc::new(RmcpClient::new());
    client.list_tools(&server, never()).await.unwrap();
    let call = {
        let (client, server) = (Arc::clone(&client), server.clone());
        tokio::spawn(async move {
            let long = args(json!({"duration": 60, "steps": 60}));
            client
                .call_tool(&server, "trigger-long-running-operation", &long, never())
                .await
        })
    };
    // The call is open on the server (its first progress step is a second away).
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    http.child.kill().await.unwrap();
    let err = call.await.unwrap().unwrap_err();
    // Not held to its 20 s timeout: the lost event stream is resumed a few times, then the
    // call fails.
    assert_eq!(err.code, error_codes::MCP_SERVER_UNAVAILABLE, "{err:?}");
    assert!(err.may_have_run, "{err:?}");
    client.shutdown().await;
}

#[tokio::test]
async fn invalid_http_registrations_are_refused_before_any_connection() {
    let server = McpServerConfig {
        name: "far".into(),
        transport: McpTransport::Http {
            url: "http://8.8.8.8/mcp".into(),
            headers: BTreeMap::new(),
        },
        call_timeout_ms: 1_000,
    };
    let client = RmcpClient::new();
    let err = client.list_tools(&server, never()).await.unwrap_err();
    assert_eq!(err.code, error_codes::MCP_SERVER_INVALID);
    let err = call(&client, &server, "echo", json!({})).await.unwrap_err();
    assert_eq!(err.code, error_codes::MCP_SERVER_INVALID);
    assert!(!err.may_have_run);

    let sdk_header = McpServerConfig {
        name: "near".into(),
        transport: McpTransport::Http {
            url: "http://127.0.0.1:9/mcp".into(),
            headers: BTreeMap::from([("Mcp-Session-Id".to_owned(), "mine".to_owned())]),
        },
        call_timeout_ms: 1_000,
    };
    let err = client.list_tools(&sdk_header, never()).await.unwrap_err();
    assert_eq!(err.code, error_codes::MCP_SERVER_INVALID, "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filesystem_server_reads_and_writes_in_its_directory() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("a.txt"), "alpha\n").unwrap();
    let Some(server) = support::filesystem(&root) else {
        return;
    };
    let client = RmcpClient::new();
    let tools = client.list_tools(&server, never()).await.unwrap();
    let read = tools.iter().find(|t| t.name == "read_text_file").unwrap();
    assert_eq!(read.read_only_hint, Some(true));
    let write = tools.iter().find(|t| t.name == "write_file").unwrap();
    assert_eq!(write.read_only_hint, Some(false));

    let path = root.join("a.txt").display().to_string();
    let out = call(&client, &server, "read_text_file", json!({"path": path}))
        .await
        .unwrap();
    assert_eq!(out.text, "alpha\n");
    assert!(!out.is_error);

    let new = root.join("b.txt").display().to_string();
    call(
        &client,
        &server,
        "write_file",
        json!({"path": new, "content": "beta"}),
    )
    .await
    .unwrap();
    assert_eq!(std::fs::read_to_string(root.join("b.txt")).unwrap(), "beta");

    // Outside its directory the server answers with isError: an Ok the agent reads.
    let out = call(
        &client,
        &server,
        "read_text_file",
        json!({"path": "/etc/hostname"}),
    )
    .await
    .unwrap();
    assert!(out.is_error, "{out:?}");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_error_is_an_ok_output_marked_as_error() {
    let Some(out) = call_the_plain_server("fail", json!({"message": "no luck"})).await else {
        return;
    };
    assert!(out.is_error);
    assert_eq!(out.text, "no luck");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn media_and_resources_become_notes_and_structured_content_is_kept() {
    let Some(out) = call_the_plain_server("media", json!({})).await else {
        return;
    };
    assert_eq!(
        out.text,
        "first\n[image: image/png, 100 bytes]\n[audio: audio/wav, 50 bytes]\n[resource: file:///notes.txt, text/plain, 5 bytes]\nlast"
    );
    assert_eq!(out.structured, Some(json!({"count": 5})));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_catalog_is_read_over_every_page_and_bounded() {
    let Some(paged) = support::python(&[("TT_PY_PAGE_SIZE", "2".into())]) else {
        return;
    };
    let client = RmcpClient::new();
    let tools = client.list_tools(&paged, never()).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["echo", "fail", "slow", "big", "die", "pid", "media"]
    );
    let fail = tools.iter().find(|t| t.name == "fail").unwrap();
    assert_eq!(fail.destructive_hint, Some(true));
    assert_eq!(fail.read_only_hint, Some(false));
    let slow = tools.iter().find(|t| t.name == "slow").unwrap();
    assert_eq!((slow.read_only_hint, slow.idempotent_hint), (None, None));
    client.shutdown().await;

    let empty_last_cursor = support::python(&[
        ("TT_PY_PAGE_SIZE", "3".into()),
        ("TT_PY_EMPTY_LAST_CURSOR", "1".into()),
    ])
    .unwrap();
    let client = RmcpClient::new();
    let tools = client
        .list_tools(&empty_last_cursor, never())
        .await
        .unwrap();
    assert_eq!(tools.len(), 7);
    client.shutdown().await;

    let endless = support::python(&[("TT_PY_PAGE_LOOP", "1".into())]).unwrap();
    let err = catalog_refusal(&endless).await;
    assert!(err.message.contains("32 pages"), "{err}");

    let many = support::python(&[
        (
            "TT_PY_EXTRA_TOOLS",
            limits::MAX_TOOLS_PER_SERVER.to_string(),
        ),
        ("TT_PY_PAGE_SIZE", "100".into()),
    ])
    .unwrap();
    let err = catalog_refusal(&many).await;
    assert!(err.message.contains("512 tools"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemas_and_catalogs_are_bounded_in_bytes() {
    let Some(one_wide) = support::python(&[
        ("TT_PY_WIDE_TOOLS", "1".into()),
        (
            "TT_PY_WIDE_BYTES",
            (limits::MAX_TOOL_SCHEMA_BYTES + 1).to_string(),
        ),
    ]) else {
        return;
    };
    let err = catalog_refusal(&one_wide).await;
    assert!(err.message.contains("the schema of `wide0`"), "{err}");

    // 40 schemas just under the bound each, on pages of 8: over 8 MiB in all.
    let many_wide = support::python(&[
        ("TT_PY_WIDE_TOOLS", "40".into()),
        (
            "TT_PY_WIDE_BYTES",
            (limits::MAX_TOOL_SCHEMA_BYTES - 100).to_string(),
        ),
        ("TT_PY_PAGE_SIZE", "8".into()),
    ])
    .unwrap();
    let err = catalog_refusal(&many_wide).await;
    assert!(err.message.contains("its catalog is over"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_its_timeout_is_cancelled_on_the_server_and_may_have_run() {
    let Some((_dir, log, mut server)) = support::python_logging("TT_PY_CANCEL_LOG", "cancel.log")
    else {
        return;
    };
    server.call_timeout_ms = 3_000;
    let client = RmcpClient::new();
    // Start the server first, so the timeout is spent on the call, not the start.
    client.list_tools(&server, never()).await.unwrap();
    let err = call(&client, &server, "slow", json!({"seconds": 30}))
        .await
        .unwrap_err();
    assert_failed(&err, error_codes::MCP_CALL_TIMEOUT, true);
    support::wait_for_line(&log, "cancelled 30").await;
    // The connection is still good.
    let out = call(&client, &server, "echo", json!({"text": "still here"}))
        .await
        .unwrap();
    assert_eq!(out.text, "still here");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_call_sends_the_protocol_cancellation() {
    let Some((_dir, log, server)) = support::python_logging("TT_PY_CANCEL_LOG", "cancel.log")
    else {
        return;
    };
    let client = Arc::new(RmcpClient::new());
    let cancel = CancellationToken::new();
    let call = {
        let (client, server, cancel) = (Arc::clone(&client), server.clone(), cancel.clone());
        tokio::spawn(async move {
            client
                .call_tool(&server, "slow", &args(json!({"seconds": 31})), cancel)
                .await
        })
    };
    support::wait_for_line(&log, "running 31").await;
    cancel.cancel();
    let err = call.await.unwrap().unwrap_err();
    assert_failed(&err, error_codes::AGENT_CANCELLED, true);
    support::wait_for_line(&log, "cancelled 31").await;
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_and_arguments_are_bounded() {
    let Some(server) = support::python(&[]) else {
        return;
    };
    let client = RmcpClient::new();
    let fits = call(&client, &server, "big", json!({"bytes": 1024 * 1024}))
        .await
        .unwrap();
    assert_eq!(fits.text.len(), 1024 * 1024);
    let err = call(
        &client,
        &server,
        "big",
        json!({"bytes": limits::MAX_RESULT_BYTES + 1}),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code, error_codes::MCP_RESULT_TOO_LARGE, "{err}");

    let text = "x".repeat(limits::MAX_ARGUMENT_BYTES);
    let err = call(&client, &server, "echo", json!({"text": text}))
        .await
        .unwrap_err();
    assert_failed(&err, error_codes::MCP_ARGUMENTS_TOO_LARGE, false);
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_share_one_server_process() {
    let Some((_dir, starts, server)) = support::python_logging("TT_PY_START_LOG", "starts.log")
    else {
        return;
    };
    let client = Arc::new(RmcpClient::new());
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..16 {
        let (client, server) = (Arc::clone(&client), server.clone());
        calls.spawn(async move { client.call_tool(&server, "pid", &Map::new(), never()).await });
    }
    let mut pids = std::collections::BTreeSet::new();
    while let Some(result) = calls.join_next().await {
        pids.insert(result.unwrap().unwrap().text);
    }
    assert_eq!(pids.len(), 1, "{pids:?}");
    assert_eq!(support::lines(&starts).len(), 1);
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_server_is_restarted_once_then_unavailable() {
    let Some((_dir, starts, server)) = support::python_logging("TT_PY_START_LOG", "starts.log")
    else {
        return;
    };
    let client = RmcpClient::new();
    let first = call(&client, &server, "pid", json!({})).await.unwrap().text;
    let err = call(&client, &server, "die", json!({})).await.unwrap_err();
    assert_failed(&err, error_codes::MCP_SERVER_UNAVAILABLE, true);

    // Restarted once.
    let second = call(&client, &server, "pid", json!({})).await.unwrap().text;
    assert_ne!(first, second);
    assert_eq!(support::lines(&starts).len(), 2);

    let err = call(&client, &server, "die", json!({})).await.unwrap_err();
    assert_failed(&err, error_codes::MCP_SERVER_UNAVAILABLE, true);

    // Not a third time: the call is refused before it is sent.
    let err = call(&client, &server, "echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert_failed(&err, error_codes::MCP_SERVER_UNAVAILABLE, false);
    assert_eq!(support::lines(&starts).len(), 2);
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_server_that_is_not_there_is_unavailable() {
    // Builds the SDK's TLS client (the crypto provider is installed) and fails to connect.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let server = McpServerConfig {
        name: "gone".into(),
        transport: McpTransport::Http {
            url: format!("https://127.0.0.1:{port}/mcp"),
            headers: BTreeMap::new(),
        },
        call_timeout_ms: 5_000,
    };
    let client = RmcpClient::new();
    let err = client.list_tools(&server, never()).await.unwrap_err();
    assert_eq!(err.code, error_codes::MCP_SERVER_UNAVAILABLE, "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_registration_of_a_server_replaces_its_process() {
    let Some(first) = support::python(&[]) else {
        return;
    };
    let mut second = first.clone();
    second.call_timeout_ms += 1;
    let client = RmcpClient::new();
    let pid = |text: String| text.parse::<u32>().unwrap();
    let old = pid(call(&client, &first, "pid", json!({})).await.unwrap().text);
    let new = pid(call(&client, &second, "pid", json!({})).await.unwrap().text);
    assert_ne!(old, new);
    assert!(!support::process_exists(old));
    client.shutdown().await;
    assert!(!support::process_exists(new));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_cannot_start_is_unavailable() {
    let server = support::stdio("nothing", "/nonexistent/tt-mcp-server", vec![]);
    let client = RmcpClient::new();
    let err = client.list_tools(&server, never()).await.unwrap_err();
    assert_failed(&err, error_codes::MCP_SERVER_UNAVAILABLE, false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_servers_and_kills_one_that_ignores_sigterm() {
    let Some(polite) = support::python(&[]) else {
        return;
    };
    let mut stubborn = support::python(&[("TT_PY_IGNORE_TERM", "1".into())]).unwrap();
    stubborn.name = "stubborn".into();
    let client = RmcpClient::new();
    let pid = |text: String| text.parse::<u32>().unwrap();
    let polite_pid = pid(call(&client, &polite, "pid", json!({})).await.unwrap().text);
    let stubborn_pid = pid(call(&client, &stubborn, "pid", json!({}))
        .await
        .unwrap()
        .text);
    assert!(support::process_exists(polite_pid) && support::process_exists(stubborn_pid));
    client.shutdown().await;
    assert!(!support::process_exists(polite_pid));
    assert!(!support::process_exists(stubborn_pid));
    let err = call(&client, &polite, "pid", json!({})).await.unwrap_err();
    assert_eq!(err.code, error_codes::MCP_SERVER_UNAVAILABLE, "{err}");
}

/// Per-call overhead over stdio: server-everything's `echo`, one call at a time, through
/// `RmcpClient` and straight on a second server's pipe (JSON lines, no SDK), in 20 alternating
/// rounds of 100 calls each; the medians, and the median of the rounds' differences, which is
/// what the client adds to a call.
/// `cargo test -p tt-adapter-tools-mcp --release --test servers -- --ignored --nocapture echo_overhead`
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a check"]
async fn echo_overhead() {
    let Some(server) = support::everything() else {
        return;
    };
    let client = RmcpClient::new();
    let message = args(json!({"message": "hi"}));
    let mut raw = RawPipe::start(&server).await;
    let (rounds, per_round) = (20usize, 100u32);
    let (mut through, mut straight, mut added) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..=rounds {
        let started = std::time::Instant::now();
        for _ in 0..per_round {
            client
                .call_tool(&server, "echo", &message, never())
                .await
                .unwrap();
        }
        let client_us = started.elapsed().as_secs_f64() * 1e6 / f64::from(per_round);
        let started = std::time::Instant::now();
        for _ in 0..per_round {
            raw.echo().await;
        }
        let raw_us = started.elapsed().as_secs_f64() * 1e6 / f64::from(per_round);
        if round > 0 {
            // Round 0 warms both up.
            through.push(client_us);
            straight.push(raw_us);
            added.push(client_us - raw_us);
        }
    }
    client.shutdown().await;
    let median = |values: &mut Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    println!(
        "server-everything echo over stdio, {rounds} rounds of {per_round} calls: median {:.0} µs per call through RmcpClient, {:.0} µs straight on the pipe; the client adds {:.0} µs (median of the rounds' differences)",
        median(&mut through),
        median(&mut straight),
        median(&mut added)
    );
}

struct RawPipe {
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    next_id: u64,
    _child: tokio::process::Child,
}

impl RawPipe {
    /// Starts the server and makes the MCP handshake by hand.
    async fn start(server: &McpServerConfig) -> Self {
        let McpTransport::Stdio { command, args, .. } = &server.transport else {
            panic!("stdio only")
        };
        let mut child = tokio::process::Command::new(command)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut pipe = Self {
            stdin: child.stdin.take().unwrap(),
            lines: tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(
                child.stdout.take().unwrap(),
            )),
            next_id: 0,
            _child: child,
        };
        pipe.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18",
            "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}),
        )
        .await;
        pipe.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        pipe
    }

    async fn echo(&mut self) {
        let reply = self
            .request(
                "tools/call",
                json!({"name": "echo", "arguments": {"message": "hi"}}),
            )
            .await;
        assert_eq!(reply["result"]["content"][0]["text"], "Echo: hi");
    }

    async fn send(&mut self, message: &Value) {
        use tokio::io::AsyncWriteExt;
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        while let Some(reply) = self.lines.next_line().await.unwrap() {
            let reply: Value = serde_json::from_str(&reply).unwrap();
            if reply["id"] == id {
                return reply;
            }
        }
        panic!("the server closed its output");
    }
}
