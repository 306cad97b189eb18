//! A stdio server's process: spawned with its command, arguments, environment (a few of the
//! runtime's variables, [`INHERITED_ENV`], plus its own) and working directory, watched until it exits, and stopped with SIGTERM then a kill after a grace period.
//! Its standard error goes to `tracing` (debug), a bounded chunk at a time.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};
use tokio_util::sync::CancellationToken;

/// The variables of the runtime's own environment a server inherits (as the MCP SDKs do);
/// everything else it gets is in its registration's `env`. Keys the host holds (provider API
/// keys, database URLs) never reach a server unless it is registered with them.
pub(crate) const INHERITED_ENV: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ",
];

/// What a stdio server is started with.
pub(crate) struct Launch<'a> {
    pub server: &'a str,
    pub command: &'a str,
    pub args: &'a [String],
    pub env: &'a BTreeMap<String, String>,
    pub cwd: Option<&'a str>,
}

/// A running (or exited) server process. Dropping it kills the process.
#[derive(Debug)]
pub(crate) struct ServerProcess {
    pid: Option<u32>,
    /// Cancelled once the process has exited and been reaped.
    exited: CancellationToken,
    /// Cancel to kill the process.
    kill: CancellationToken,
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill.cancel();
    }
}

impl ServerProcess {
    /// Starts the process with piped standard streams; the caller speaks MCP on stdout/stdin.
    pub(crate) fn spawn(launch: &Launch<'_>) -> std::io::Result<(Self, ChildStdout, ChildStdin)> {
        let mut command = Command::new(launch.command);
        command
            .args(launch.args)
            .env_clear()
            .envs(
                INHERITED_ENV
                    .iter()
                    .filter_map(|key| std::env::var_os(key).map(|value| (*key, value))),
            )
            .envs(launch.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(cwd) = launch.cwd {
            command.current_dir(cwd);
        }
        let mut child = command.spawn()?;
        let missing =
            |what: &str| std::io::Error::other(format!("the child's {what} is not piped"));
        let stdout = child.stdout.take().ok_or_else(|| missing("stdout"))?;
        let stdin = child.stdin.take().ok_or_else(|| missing("stdin"))?;
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(forward_stderr(launch.server.to_owned(), stderr));
        }
        let pid = child.id();
        let exited = CancellationToken::new();
        let kill = CancellationToken::new();
        let (on_exit, on_kill) = (exited.clone(), kill.clone());
        let server = launch.server.to_owned();
        tokio::spawn(async move {
            tokio::select! {
                status = child.wait() => {
                    tracing::debug!(server = %server, ?status, "mcp server exited");
                }
                () = on_kill.cancelled() => {
                    if let Err(err) = child.kill().await {
                        tracing::warn!(server = %server, %err, "mcp server could not be killed");
                    }
                }
            }
            on_exit.cancel();
        });
        Ok((Self { pid, exited, kill }, stdout, stdin))
    }

    pub(crate) fn has_exited(&self) -> bool {
        self.exited.is_cancelled()
    }

    /// Sends SIGTERM, waits up to `grace` for the process to exit, then kills it.
    pub(crate) async fn stop(&self, grace: Duration) {
        if self.has_exited() {
            return;
        }
        self.terminate();
        if tokio::time::timeout(grace, self.exited.cancelled())
            .await
            .is_err()
        {
            self.kill.cancel();
            self.exited.cancelled().await;
        }
    }

    #[cfg(unix)]
    fn terminate(&self) {
        let pid = self
            .pid
            .and_then(|pid| i32::try_from(pid).ok())
            .and_then(rustix::process::Pid::from_raw);
        if let Some(pid) = pid
            && let Err(err) = rustix::process::kill_process(pid, rustix::process::Signal::TERM)
        {
            tracing::debug!(%err, "SIGTERM to an mcp server failed");
        }
    }

    #[cfg(not(unix))]
    fn terminate(&self) {
        self.kill.cancel();
    }
}

/// Copies a server's standard error to `tracing`, lossily, 4 KiB at a time.
async fn forward_stderr(server: String, mut stderr: ChildStderr) {
    let mut buffer = vec![0u8; 4096];
    loop {
        match stderr.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(read) => {
                let text = String::from_utf8_lossy(buffer.get(..read).unwrap_or_default());
                tracing::debug!(server = %server, stderr = %text.trim_end(), "mcp server stderr");
            }
        }
    }
}
