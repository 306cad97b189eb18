//! `tt-agent resume` of a killed `tt-agent demo`: it continues on the demo's own model without
//! any model option, and a resume that is not told which model to use says what to give. No
//! failure prints a backtrace, even with `RUST_BACKTRACE=1`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const AGENT: &str = env!("CARGO_BIN_EXE_tt-agent");

/// The id of the one run under `data_dir`.
fn only_run(data_dir: &Path) -> String {
    let chats = std::fs::read_dir(data_dir.join("chats")).unwrap();
    let mut ids = Vec::new();
    for chat in chats {
        for run in std::fs::read_dir(chat.unwrap().path().join("runs")).unwrap() {
            ids.push(run.unwrap().file_name().to_string_lossy().into_owned());
        }
    }
    assert_eq!(ids.len(), 1, "{ids:?}");
    ids.remove(0)
}

#[test]
fn a_killed_demo_resumes_on_the_demos_model_without_options() {
    let dir = tempfile::tempdir().unwrap();
    let mut demo = Command::new(AGENT)
        .arg("--data-dir")
        .arg(dir.path())
        .args(["demo", "--pace-ms", "150"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once its agents are at work (the third printed event line).
    let stdout = demo.stdout.take().unwrap();
    let mut seen = 0;
    for line in BufReader::new(stdout).lines() {
        if line.unwrap().starts_with('[') {
            seen += 1;
            if seen == 30 {
                break;
            }
        }
    }
    demo.kill().unwrap();
    demo.wait().unwrap();
    let run_id = only_run(dir.path());

    let resumed = Command::new(AGENT)
        .arg("--data-dir")
        .arg(dir.path())
        .args(["resume", &run_id])
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (code, output) = crate::finish_within(resumed, Duration::from_secs(120), "resume");
    assert_eq!(code, Some(0), "{output}");
    assert!(
        output.contains("the writers' room's scripted model"),
        "{output}"
    );
    assert!(output.contains("ended: completed"), "{output}");
}

#[test]
fn a_resume_without_a_model_says_what_to_give_and_prints_no_backtrace() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(AGENT)
        .arg("--data-dir")
        .arg(dir.path())
        .args(["resume", "run_missing"])
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("agent.not_found"), "{stderr}");
    assert!(!stderr.to_lowercase().contains("backtrace"), "{stderr}");
    assert!(stderr.lines().count() <= 4, "{stderr}");
}
