//! Tests of the `tt-agent` binary as a user runs it.

// Test helpers outside #[test] functions may unwrap: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod approvals;
mod cassettes;
mod damage;
mod demo_fork;
mod demo_resume;
mod disk_full;
mod events;
mod hostile;
mod live;
mod logs;
mod model_server;
mod multi_host;
mod otel;
mod resume;
mod serve;
mod signals;
mod store;
mod usage;

/// `tt-agent --data-dir <data_dir>`, to which a test adds its command and arguments.
pub fn agent_in(data_dir: impl AsRef<std::path::Path>) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_tt-agent"));
    command.arg("--data-dir").arg(data_dir.as_ref());
    command
}

/// Runs `command` with stdin closed and its output captured, waiting at most `limit` (see
/// [`finish_within`]): its exit code and everything it printed.
pub fn run_within(
    command: &mut std::process::Command,
    limit: std::time::Duration,
    what: &str,
) -> (Option<i32>, String) {
    let child = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    finish_within(child, limit, what)
}

/// Runs `command` to its end and asserts that it succeeded (failing with its stderr): its
/// stdout.
pub fn stdout_of_success(command: &mut std::process::Command) -> Vec<u8> {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Runs `command` (with `RUST_BACKTRACE=1`) to its end and asserts that it failed with `code`
/// and printed no backtrace: its stderr.
pub fn refusal_of(command: &mut std::process::Command, code: &str) -> String {
    let out = command.env("RUST_BACKTRACE", "1").output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(stderr.contains(code), "{stderr}");
    assert!(!stderr.to_lowercase().contains("backtrace"), "{stderr}");
    stderr
}

/// The lines `child` prints on its (piped) stdout, sent to a channel as they come.
pub fn stdout_lines(child: &mut std::process::Child) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead as _;
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let (lines_tx, lines) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in stdout.lines() {
            let Ok(line) = line else { break };
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    lines
}

/// Waits for `child` at most `limit` (killing it and failing with `what` past that), then
/// returns its exit code and everything it printed, stdout then stderr.
pub fn finish_within(
    mut child: std::process::Child,
    limit: std::time::Duration,
    what: &str,
) -> (Option<i32>, String) {
    let deadline = std::time::Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code(), text)
}
