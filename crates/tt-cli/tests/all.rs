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
