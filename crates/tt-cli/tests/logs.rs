//! Diagnostic logs of the real binary: `RUST_LOG=tt=debug tt-agent demo --log-format json`
//! writes JSON lines to stderr whose span lists form one tree per agent (run → invocation →
//! model call / tool call), and nothing reaches stderr without `RUST_LOG`.

use serde_json::Value;
use std::path::Path;
use std::process::{Output, Stdio};

fn demo(dir: &Path, rust_log: Option<&str>, extra: &[&str]) -> Output {
    let mut command = crate::agent_in(dir);
    command
        .arg("demo")
        .args(extra)
        .stdin(Stdio::null())
        .env_remove("RUST_LOG");
    if let Some(filter) = rust_log {
        command.env("RUST_LOG", filter);
    }
    let out = command.output().unwrap();
    assert!(out.status.success(), "{command:?} failed: {out:?}");
    out
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|err| panic!("{err}: {line}")))
        .collect()
}

fn span<'a>(line: &'a Value, name: &str) -> Option<&'a Value> {
    line["spans"]
        .as_array()?
        .iter()
        .rev()
        .find(|span| span["name"] == name)
}

#[test]
fn json_logs_carry_one_span_tree_per_agent() {
    let temp = tempfile::tempdir().unwrap();
    let out = demo(
        &temp.path().join("data"),
        Some("tt=debug"),
        &["--log-format", "json"],
    );
    let lines = json_lines(&String::from_utf8(out.stderr).unwrap());
    assert!(!lines.is_empty());
    // The live view stays on stdout, untouched by logs.
    assert!(!String::from_utf8(out.stdout).unwrap().contains("\"spans\""));

    for profile in [
        "writer",
        "continuity-critic",
        "style-advisor",
        "final-editor",
    ] {
        let agent_lines: Vec<&Value> = lines
            .iter()
            .filter(|line| span(line, "invocation").is_some_and(|inv| inv["profile"] == profile))
            .collect();
        assert!(!agent_lines.is_empty(), "no log line of {profile}");
        for line in &agent_lines {
            let run = &line["spans"][0];
            assert_eq!(run["name"], "run", "{line}");
            assert!(run["run_id"].as_str().unwrap().starts_with("run_"));
            let invocation = span(line, "invocation").unwrap();
            assert!(
                invocation["invocation_id"]
                    .as_str()
                    .unwrap()
                    .starts_with("inv_")
            );
            assert_eq!(invocation["run_id"], run["run_id"]);
        }
        let model_call = agent_lines
            .iter()
            .find_map(|line| span(line, "model_call"))
            .unwrap_or_else(|| panic!("no model_call span of {profile}"));
        assert!(model_call["round"].as_u64().unwrap() >= 1);
        let tool_call = agent_lines
            .iter()
            .find_map(|line| span(line, "tool_call"))
            .unwrap_or_else(|| panic!("no tool_call span of {profile}"));
        assert!(tool_call["tool"].as_str().unwrap().contains('.'));
        assert!(tool_call["round"].as_u64().unwrap() >= 1);
    }
    // A delegated agent's tree hangs under the writer's `agent.delegate` call.
    let critic = lines
        .iter()
        .find(|line| span(line, "task_worker").is_some_and(|w| w["profile"] == "continuity-critic"))
        .unwrap();
    let names: Vec<&str> = critic["spans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|span| span["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names[..4],
        ["run", "invocation", "tool_call", "task_worker"]
    );
}

#[test]
fn logs_are_off_by_default_and_go_to_a_file_when_asked() {
    let temp = tempfile::tempdir().unwrap();
    let quiet = demo(&temp.path().join("quiet"), None, &[]);
    assert!(
        quiet.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&quiet.stderr)
    );

    let log = temp.path().join("tt.log");
    let to_file = demo(
        &temp.path().join("file"),
        Some("tt_application=debug"),
        &["--log-file", log.to_str().unwrap()],
    );
    assert!(to_file.stderr.is_empty());
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("tool call completed"), "{text}");
    assert!(text.contains("invocation{"), "{text}");
}
