//! `tt-agent run --record` against a model server on 127.0.0.1, then `--replay` of that
//! cassette with no server at all: the same message is published, and a changed request fails
//! with `model.cassette_mismatch`.

use std::path::Path;
use std::time::Duration;

const SCENE: &str = "The tide came in twice that night.\n";

/// An OpenAI-compatible server that writes, commits and finishes, by the number of assistant
/// turns so far; returns its base URL.
fn writer_server() -> String {
    crate::model_server::start(|body| {
        Some(match crate::model_server::assistant_turns(body) {
            0 => (
                "workspace_write_file",
                serde_json::json!({"path": "output/main.md", "content": SCENE}),
            ),
            1 => ("workspace_commit", serde_json::json!({})),
            _ => ("workspace_finish", serde_json::json!({})),
        })
    })
}

/// Runs `tt-agent run` with `args` and the request; returns (exit code, everything printed).
fn tt_agent_run(data_dir: &Path, args: &[&str], request: &str) -> (Option<i32>, String) {
    crate::run_within(
        crate::agent_in(data_dir).arg("run").args(args).arg(request),
        Duration::from_secs(90),
        "tt-agent run hung",
    )
}

#[test]
fn a_recorded_run_replays_offline_and_a_changed_request_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("writer.cassette.jsonl");
    let cassette_arg = cassette.to_str().unwrap();
    let url = format!("openai:{}", writer_server());
    let request = "Write a line about the sea.";

    let (code, output) = tt_agent_run(
        &dir.path().join("recorded"),
        &[
            "--connection",
            &url,
            "--model",
            "m",
            "--record",
            cassette_arg,
        ],
        request,
    );
    assert_eq!(code, Some(0), "{output}");
    assert!(output.contains("recording model calls to"), "{output}");
    assert!(output.contains(SCENE.trim()), "{output}");
    let lines = std::fs::read_to_string(&cassette).unwrap().lines().count();
    assert_eq!(lines, 1 + 3, "a header and three model calls");

    let (code, output) = tt_agent_run(
        &dir.path().join("replayed"),
        &["--replay", cassette_arg],
        request,
    );
    assert_eq!(code, Some(0), "{output}");
    assert!(
        output.contains("3 recorded model calls, offline"),
        "{output}"
    );
    assert!(output.contains(SCENE.trim()), "{output}");

    let (code, output) = tt_agent_run(
        &dir.path().join("changed"),
        &["--replay", cassette_arg],
        "Write a line about the moon.",
    );
    assert_ne!(code, Some(0), "{output}");
    assert!(output.contains("failed"), "{output}");
    let events = crate::agent_in(dir.path().join("changed"))
        .args(["runs"])
        .output()
        .unwrap();
    let run_id = String::from_utf8_lossy(&events.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    let journal = crate::agent_in(dir.path().join("changed"))
        .args(["events", &run_id, "--limit", "500"])
        .output()
        .unwrap();
    let journal = String::from_utf8_lossy(&journal.stdout);
    assert!(
        journal.contains("\"code\":\"model.cassette_mismatch\""),
        "{journal}"
    );
    assert!(
        journal.contains("messages["),
        "the mismatch names the field: {journal}"
    );

    let (code, output) = tt_agent_run(
        &dir.path().join("flags"),
        &["--replay", cassette_arg, "--connection", &url],
        request,
    );
    assert_eq!(
        code,
        Some(2),
        "--replay and --connection exclude each other: {output}"
    );
}
