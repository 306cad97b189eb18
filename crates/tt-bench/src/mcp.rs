//! `tt-bench mcp`: what the runtime adds to each MCP tool call over stdio, beside what the
//! client and the server take (docs/benchmarks.md, "MCP calls").
//!
//! Three timings, alternated round by round on one server-everything process:
//! - `direct`: `AgentRuntime::call_mcp_tool` (`echo`), one after another: the MCP client and
//!   the server, plus the registration's read;
//! - `mcp`: a run whose agent makes the same calls through its tool loop, `PER_REPLY` calls a
//!   reply (a zero-latency model): dispatch, journaling, records and the call itself;
//! - `builtin`: the same run with `workspace.list_files` in place of the MCP tool: what any
//!   tool call costs the runtime without a server.
//!
//! The runtime's overhead per MCP call is `mcp − direct`: everything the run adds to the bare
//! call, model turns included (one per `PER_REPLY` calls).

use anyhow::{Context, Result, ensure};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use tt_runtime::{
    AgentProfileDefinition, AgentRunStatus, AgentRuntime, AgentRuntimeBuilder, CommitBridgeChoice,
    FnProvider, McpServerConfig, McpTransport, ModelReply, StartRunRequest,
};

/// Tool calls in one model reply.
const PER_REPLY: u32 = 8;

/// One round's timings, in microseconds per call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Round {
    pub direct_us: f64,
    pub mcp_us: f64,
    pub builtin_us: f64,
}

/// Where server-everything's entry point is: `$TT_MCP_SERVERS_DIR` or `target/mcp-servers`,
/// as `crates/tt-adapter-tools-mcp/tests/servers/install.sh` puts it.
pub(crate) fn default_server() -> PathBuf {
    let dir = std::env::var_os("TT_MCP_SERVERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-servers"));
    dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

fn profile(calls: u32, tool: &str) -> Result<AgentProfileDefinition> {
    let rounds = calls / PER_REPLY + 5;
    let mcp = if tool.starts_with("mcp__") {
        json!({"everything": {"echo": "allow"}})
    } else {
        json!({})
    };
    Ok(serde_json::from_value(json!({
        "schemaVersion": 2, "kind": "tauritavern.agentProfile", "id": "caller",
        "displayName": "Caller",
        "preset": {"mode": "currentPromptSnapshot"}, "model": {"mode": "currentPromptSnapshot"},
        "run": {"presentation": "foreground"},
        "tools": {"allow": ["workspace.list_files", "workspace.write_file", "workspace.commit",
            "workspace.finish"], "mcp": mcp, "maxRounds": rounds, "maxCallsPerRun": calls + 10},
        "skills": {"visible": ["*"]}, "plan": {"mode": "none"},
        "workspace": {"visibleRoots": ["output"], "writableRoots": ["output"]},
        "output": {"artifacts": [{"id": "main", "path": "output/main.md", "kind": "markdown",
            "target": "messageBody"}]}
    }))?)
}

/// A model that makes `calls` calls of `tool`, `PER_REPLY` a reply, then writes, publishes
/// and finishes.
fn caller(calls: u32, tool: &'static str) -> Arc<FnProvider> {
    let replies = calls.div_ceil(PER_REPLY);
    Arc::new(FnProvider::new(move |request| {
        let round = request.round;
        if round <= replies {
            let in_this = PER_REPLY.min(calls - (round - 1) * PER_REPLY);
            let arguments = if tool.starts_with("mcp__") {
                json!({"message": "hi"})
            } else {
                json!({})
            };
            return Ok((0..in_this).fold(ModelReply::default(), |reply, _| {
                reply.with_tool_call(tool, arguments.clone())
            }));
        }
        Ok(match round - replies {
            1 => ModelReply::tool_call(
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "Done.\n"}),
            ),
            2 => ModelReply::tool_call("workspace_commit", json!({})),
            _ => ModelReply::tool_call("workspace_finish", json!({})),
        })
    }))
}

fn runtime(dir: &Path, model: Arc<FnProvider>) -> Result<AgentRuntime> {
    Ok(AgentRuntimeBuilder::new()
        .data_dir(dir)
        .provider(model)
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()?)
}

/// The wall time of one run of `calls` calls of `tool`, per call, in µs.
async fn timed_run(dir: &Path, calls: u32, tool: &'static str, chat: &str) -> Result<f64> {
    let runtime = runtime(dir, caller(calls, tool))?;
    runtime.save_profile(profile(calls, tool)?).await?;
    if tool.starts_with("mcp__") {
        // This runtime's client starts its own server process: before the timing.
        runtime
            .call_mcp_tool("everything", "echo", json!({"message": "warm"}))
            .await?;
    }
    let started = Instant::now();
    let run = runtime
        .start_run(StartRunRequest::new(chat, "Call the tool.").profile("caller"))
        .await?;
    let run = runtime.wait_for_run(run.id.as_str()).await?;
    let elapsed = started.elapsed();
    ensure!(
        run.status == AgentRunStatus::Completed,
        "the {tool} run ended {}",
        run.status.as_str()
    );
    runtime.shutdown().await?;
    Ok(elapsed.as_secs_f64() * 1e6 / f64::from(calls))
}

/// `rounds` rounds of the three timings over `calls` calls each.
pub(crate) async fn run(calls: u32, rounds: u32, server: &Path) -> Result<Vec<Round>> {
    ensure!(
        server.exists(),
        "no server-everything at {} (run crates/tt-adapter-tools-mcp/tests/servers/install.sh)",
        server.display()
    );
    let dir = tempfile::tempdir().context("a temporary data dir")?;
    let setup = runtime(dir.path(), caller(0, "workspace_list_files"))?;
    setup
        .add_mcp_server(McpServerConfig {
            name: "everything".into(),
            transport: McpTransport::Stdio {
                command: "node".into(),
                args: vec![server.display().to_string()],
                env: Default::default(),
                cwd: None,
            },
            call_timeout_ms: 60_000,
        })
        .await?;
    // A first call starts the server: it is not timed.
    setup
        .call_mcp_tool("everything", "echo", json!({"message": "warm"}))
        .await?;
    let mut timings = Vec::new();
    for round in 0..rounds {
        let started = Instant::now();
        for _ in 0..calls {
            let output = setup
                .call_mcp_tool("everything", "echo", json!({"message": "hi"}))
                .await?;
            ensure!(!output.is_error, "echo failed: {}", output.text);
        }
        let direct_us = started.elapsed().as_secs_f64() * 1e6 / f64::from(calls);
        let mcp_us = timed_run(
            dir.path(),
            calls,
            "mcp__everything__echo",
            &format!("mcp-{round}"),
        )
        .await?;
        let builtin_us = timed_run(
            dir.path(),
            calls,
            "workspace_list_files",
            &format!("builtin-{round}"),
        )
        .await?;
        eprintln!(
            "bench mcp: round {}/{rounds}: direct {direct_us:.0} µs, mcp {mcp_us:.0} µs, builtin {builtin_us:.0} µs per call",
            round + 1
        );
        timings.push(Round {
            direct_us,
            mcp_us,
            builtin_us,
        });
    }
    setup.shutdown().await?;
    Ok(timings)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// The medians of the rounds as one JSON line (µs per call): `direct`, `mcp`, `builtin`, and
/// `overhead` (the median of each round's `mcp − direct`).
pub(crate) fn summary(rounds: &[Round]) -> serde_json::Value {
    json!({
        "rounds": rounds.len(),
        "directUs": median(rounds.iter().map(|r| r.direct_us).collect()).round(),
        "mcpUs": median(rounds.iter().map(|r| r.mcp_us).collect()).round(),
        "builtinUs": median(rounds.iter().map(|r| r.builtin_us).collect()).round(),
        "overheadUs": median(rounds.iter().map(|r| r.mcp_us - r.direct_us).collect()).round(),
    })
}
