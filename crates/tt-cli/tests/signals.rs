//! SIGTERM / SIGINT against the real binary: from the first instant the process cancels its
//! run instead of dying, so no run directory is ever left without `run.json`, and every run
//! reaches a terminal status.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const TERMINAL: &[&str] = &["completed", "partial_success", "failed", "cancelled"];

fn demo(data_dir: &Path) -> Child {
    crate::agent_in(data_dir)
        .arg("demo")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn send(child: &Child, signal: &str) {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success(), "kill -{signal} failed");
}

/// Reads stdout lines until one starts with `prefix` (the rest is drained in the background).
fn wait_for_line(child: &mut Child, prefix: &str) {
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    for line in lines.by_ref() {
        if line.unwrap().starts_with(prefix) {
            std::thread::spawn(move || lines.for_each(drop));
            return;
        }
    }
    panic!("the output ended before a line starting with {prefix:?}");
}

/// Waits (bounded) for the process to exit.
fn exit_status(child: &mut Child) -> ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("tt-agent did not exit within 60 s of the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs the demo in `data_dir`, sends it `signals` once it printed a line starting with
/// `line`, and waits for it to exit.
fn signalled(data_dir: &Path, line: &str, signals: &[&str]) -> ExitStatus {
    let mut child = demo(data_dir);
    wait_for_line(&mut child, line);
    for signal in signals {
        send(&child, signal);
    }
    exit_status(&mut child)
}

/// Every run directory under `data_dir` with its status from `run.json` (which must exist).
fn run_statuses(data_dir: &Path) -> Vec<String> {
    let mut statuses = Vec::new();
    let Ok(chats) = std::fs::read_dir(data_dir.join("chats")) else {
        return statuses;
    };
    for chat in chats {
        let Ok(runs) = std::fs::read_dir(chat.unwrap().path().join("runs")) else {
            continue;
        };
        for run in runs {
            let dir = run.unwrap().path();
            let text = std::fs::read_to_string(dir.join("run.json"))
                .unwrap_or_else(|err| panic!("{} has no readable run.json: {err}", dir.display()));
            let value: serde_json::Value = serde_json::from_str(&text).unwrap();
            statuses.push(value["status"].as_str().unwrap().to_owned());
        }
    }
    statuses
}

#[test]
fn sigterm_before_the_run_starts_stops_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    // Printed after the profiles are saved, just before the run starts.
    let status = signalled(dir.path(), "tt-agent demo:", &["TERM"]);
    // The process was not killed by the signal: it handled it and exited with an error.
    assert_eq!(status.code(), Some(1), "{status:?}");
    for status in run_statuses(dir.path()) {
        assert!(TERMINAL.contains(&status.as_str()), "{status}");
    }
}

#[test]
fn sigterm_mid_run_cancels_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let status = signalled(dir.path(), "run ", &["TERM"]);
    assert_eq!(status.code(), Some(1), "{status:?}");
    assert_eq!(run_statuses(dir.path()), ["cancelled"]);
}

#[test]
fn sigint_mid_run_cancels_the_run_and_a_second_signal_exits() {
    let dir = tempfile::tempdir().unwrap();
    let status = signalled(dir.path(), "run ", &["INT", "INT"]);
    // Either the second signal ended the process at once (128 + 2), or the cancelled run had
    // already ended it; never a death by signal.
    assert!(matches!(status.code(), Some(130) | Some(1)), "{status:?}");
    // Exiting at once may leave the run in a working status (settling it after a crash is the
    // run store's job), but never without its run.json: `run_statuses` reads every one.
    assert_eq!(run_statuses(dir.path()).len(), 1);
}
