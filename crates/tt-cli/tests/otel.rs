//! OpenTelemetry: `tt-agent demo` with `OTEL_EXPORTER_OTLP_ENDPOINT` set posts the run's spans
//! to a collector (here a small OTLP/HTTP receiver on 127.0.0.1) while the run works, each span
//! once, and `tt-agent export-otel` of the same run gives the same spans.

/// The spans of an `export-otel` document.
fn spans_of(export: &serde_json::Value) -> Vec<serde_json::Value> {
    export["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .cloned()
        .unwrap()
}

#[test]
fn a_run_sends_each_span_once_as_it_ends_and_exports_the_same() {
    // The receiver answers on the runtime's workers while the command runs.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (traces_url, mut received) = runtime.block_on(tt_testkit::otlp::receiver());
    let url = traces_url.strip_suffix("/v1/traces").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let demo = crate::agent_in(dir.path())
        .args(["demo", "--pace-ms", "0"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", url)
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        // Send at every agent's end, not at most every 5 s.
        .env("OTEL_BSP_SCHEDULE_DELAY", "0")
        .output()
        .unwrap();
    assert!(demo.status.success());
    assert!(String::from_utf8_lossy(&demo.stderr).contains("spans of run"));
    // The command has exited, so every post has been answered and its spans handed over (a
    // post to another path than `/v1/traces` is not).
    let posts: Vec<Vec<serde_json::Value>> =
        std::iter::from_fn(|| received.try_recv().ok()).collect();
    // Spans went out while the run worked (the delegated agents end before the writer does),
    // then the rest at its end.
    assert!(posts.len() >= 2, "{} post(s)", posts.len());
    let mut spans: Vec<serde_json::Value> = posts.into_iter().flatten().collect();
    // Each span once, with no open one sent early.
    let mut ids: Vec<&str> = spans
        .iter()
        .map(|s| s["spanId"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    let count = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), count, "a span was sent twice");
    assert!(
        !spans
            .iter()
            .any(|span| span["attributes"].to_string().contains("tt.unfinished")),
        "an open span was sent"
    );
    spans.sort_by(|a, b| a["spanId"].as_str().cmp(&b["spanId"].as_str()));
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
    let exported = crate::agent_in(dir.path())
        .args(["export-otel", &runs[0]])
        .output()
        .unwrap();
    assert!(exported.status.success());
    let exported: serde_json::Value = serde_json::from_slice(&exported.stdout).unwrap();
    let mut all = spans_of(&exported);
    all.sort_by(|a, b| a["spanId"].as_str().cmp(&b["spanId"].as_str()));
    assert_eq!(all, spans);
    assert_eq!(spans_of(&exported)[0]["traceId"], run);
}
