//! Finding and starting the real MCP servers the tests use (installed by
//! `tests/servers/install.sh`): server-everything and server-filesystem from npm, and
//! `tests/servers/py_server.py` on the Python `mcp` SDK. A missing one fails the test, unless
//! `TT_MCP_TESTS_OPTIONAL=1`, when the test says why and passes.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use tt_domain::mcp::{McpServerConfig, McpTransport};

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub(crate) fn servers_dir() -> PathBuf {
    std::env::var_os("TT_MCP_SERVERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate_dir().join("../../target/mcp-servers"))
}

fn missing(what: &str) -> bool {
    let message = format!(
        "{what}; run crates/tt-adapter-tools-mcp/tests/servers/install.sh (or set TT_MCP_TESTS_OPTIONAL=1 to skip these tests)"
    );
    if std::env::var("TT_MCP_TESTS_OPTIONAL").is_ok_and(|value| value == "1") {
        eprintln!("SKIPPED (TT_MCP_TESTS_OPTIONAL=1): {message}");
        false
    } else {
        panic!("{message}");
    }
}

fn node_script(package: &str) -> Option<PathBuf> {
    let script = servers_dir()
        .join("node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    let node = Command::new("node").arg("--version").output();
    if !node.is_ok_and(|out| out.status.success()) {
        return missing("node is not installed").then_some(script);
    }
    if !script.is_file() {
        return missing(&format!("{} is missing", script.display())).then_some(script);
    }
    Some(script)
}

/// Whether python3 with the `mcp` SDK is there (see [`missing`]).
pub(crate) fn python_ready() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import mcp.server.lowlevel"])
        .output()
        .is_ok_and(|out| out.status.success());
    ok || missing("python3 with the `mcp` package is not installed")
}

pub(crate) fn stdio(name: &str, command: &str, args: Vec<String>) -> McpServerConfig {
    McpServerConfig {
        name: name.to_owned(),
        transport: McpTransport::Stdio {
            command: command.to_owned(),
            args,
            env: BTreeMap::new(),
            cwd: None,
        },
        call_timeout_ms: 30_000,
    }
}

/// server-everything over stdio.
pub(crate) fn everything() -> Option<McpServerConfig> {
    let script = node_script("server-everything")?;
    Some(stdio(
        "everything",
        "node",
        vec![script.display().to_string(), "stdio".to_owned()],
    ))
}

/// server-filesystem over stdio, allowed into `dir`.
pub(crate) fn filesystem(dir: &Path) -> Option<McpServerConfig> {
    let script = node_script("server-filesystem")?;
    Some(stdio(
        "files",
        "node",
        vec![script.display().to_string(), dir.display().to_string()],
    ))
}

/// The Python test server with `env`.
/// [`python`] writing the log `variable` names to `file` in a temporary directory: the
/// directory (kept while the test runs), the log's path and the server.
pub(crate) fn python_logging(
    variable: &str,
    file: &str,
) -> Option<(tempfile::TempDir, std::path::PathBuf, McpServerConfig)> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join(file);
    let server = python(&[(variable, log.display().to_string())])?;
    Some((dir, log, server))
}

pub(crate) fn python(env: &[(&str, String)]) -> Option<McpServerConfig> {
    if !python_ready() {
        return None;
    }
    let script = crate_dir().join("tests/servers/py_server.py");
    let mut config = stdio("py", "python3", vec![script.display().to_string()]);
    if let McpTransport::Stdio { env: vars, .. } = &mut config.transport {
        vars.extend(env.iter().map(|(k, v)| ((*k).to_owned(), v.clone())));
    }
    Some(config)
}

/// server-everything over Streamable HTTP on 127.0.0.1, killed when dropped.
pub(crate) struct HttpEverything {
    pub child: tokio::process::Child,
    pub url: String,
}

pub(crate) async fn everything_http() -> Option<HttpEverything> {
    let script = node_script("server-everything")?;
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let child = tokio::process::Command::new("node")
        .arg(&script)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // Wait until it listens (bounded at a minute: no test waits forever).
    for _ in 0..1_200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Some(HttpEverything {
                child,
                url: format!("http://127.0.0.1:{port}/mcp"),
            });
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("server-everything (streamableHttp) did not listen on port {port}");
}

/// Waits (bounded at a minute) until the file at `path` holds a line equal to `line`.
pub(crate) async fn wait_for_line(path: &Path, line: &str) {
    for _ in 0..2_400 {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.lines().any(|seen| seen == line) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let text = std::fs::read_to_string(path).unwrap_or_default();
    panic!("`{line}` never appeared in {}: {text:?}", path.display());
}

pub(crate) fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Whether a process with this id still exists (not even as a zombie).
pub(crate) fn process_exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}
