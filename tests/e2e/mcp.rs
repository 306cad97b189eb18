//! MCP tools in a real run (docs/tools.md): a delegated agent whose profile lists a server's
//! tools uses them, a sibling whose profile lists none is never offered them, and a `kill -9`
//! during a call is resumed without sending anything again: the answered call stays answered,
//! the one in flight is reported to the agent as possibly run.
//!
//! The server is `tests/servers/py_server.py` of tt-adapter-tools-mcp, on the Python `mcp`
//! SDK, over stdio; it logs every call it receives, so the test counts what reached it. The
//! first part runs in a child process (this test binary, running [`first_process`]), killed
//! with SIGKILL while the server works on the slow call.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tt_domain::model::AgentModelRequest;
use tt_runtime::{
    AgentProfileDefinition, AgentRunStatus, AgentRuntime, AgentRuntimeBuilder, CommitBridgeChoice,
    FnProvider, McpServerConfig, McpTransport, ModelReply,
};

use crate::delegation::all_events;
use crate::support::start_request;

const DIR_VAR: &str = "TT_MCP_TEST_DIR";
const STOPPED: &str = "MCP-FIRST-PART-STOPPED";

fn py_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/tt-adapter-tools-mcp/tests/servers/py_server.py")
}

fn call_log(dir: &Path) -> PathBuf {
    dir.join("calls.log")
}

/// Whether python3 with the `mcp` SDK is here; without it the test fails (CI installs it with
/// `crates/tt-adapter-tools-mcp/tests/servers/install.sh`) unless `TT_MCP_TESTS_OPTIONAL` is
/// set, when it says so and passes.
fn python_mcp_missing() -> bool {
    let found = std::process::Command::new("python3")
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|output| output.status.success());
    if !found && std::env::var_os("TT_MCP_TESTS_OPTIONAL").is_some() {
        eprintln!(
            "skipped: python3 with the `mcp` package is missing (run crates/tt-adapter-tools-mcp/tests/servers/install.sh)"
        );
        return true;
    }
    assert!(
        found,
        "python3 with the `mcp` package is missing: run crates/tt-adapter-tools-mcp/tests/servers/install.sh"
    );
    false
}

fn profile(value: Value) -> AgentProfileDefinition {
    serde_json::from_value(value).unwrap()
}

fn profiles() -> Vec<AgentProfileDefinition> {
    let worker = |id: &str, mcp: Value| {
        profile(json!({
            "schemaVersion": 2, "kind": "tauritavern.agentProfile", "id": id,
            "displayName": id, "description": "Looks things up.",
            "preset": {"mode": "currentPromptSnapshot"}, "model": {"mode": "currentPromptSnapshot"},
            "run": {"presentation": "background", "directRunnable": false},
            "delegation": {"callable": true, "allowAsSubagent": true,
                "descriptionForAgents": "Looks things up."},
            "tools": {"allow": ["workspace.write_file"], "maxRounds": 6, "mcp": mcp},
            "skills": {"visible": ["*"]}, "plan": {"mode": "none"},
            "workspace": {"visibleRoots": ["summaries"], "writableRoots": ["summaries"]},
            "output": {"artifacts": [{"id": "notes", "path": "summaries/notes.md", "kind": "markdown",
                "target": "messageBody"}]}
        }))
    };
    vec![
        profile(json!({
            "schemaVersion": 2, "kind": "tauritavern.agentProfile", "id": "lead",
            "displayName": "Lead", "description": "Delegates and publishes.",
            "preset": {"mode": "currentPromptSnapshot"}, "model": {"mode": "currentPromptSnapshot"},
            "run": {"presentation": "foreground"},
            "delegation": {"canDelegate": true, "maxConcurrentInvocations": 4, "maxInvocationsPerRun": 8},
            "tools": {"allow": ["agent.delegate", "agent.await", "workspace.write_file",
                "workspace.commit", "workspace.finish"], "maxRounds": 10},
            "skills": {"visible": ["*"]}, "plan": {"mode": "none"},
            "workspace": {"visibleRoots": ["output", "summaries"], "writableRoots": ["output"]},
            "output": {"artifacts": [{"id": "main", "path": "output/main.md", "kind": "markdown",
                "target": "messageBody", "required": true}]}
        })),
        worker(
            "researcher",
            json!({"py": {"echo": "allow", "slow": "allow", "die": "off"}}),
        ),
        worker("sibling", json!({})),
    ]
}

/// The lead delegates to both, waits, publishes; the researcher echoes, then calls the slow
/// tool (the first process dies there), then returns; the sibling tries the echo tool (it has
/// none) and returns.
fn reply(request: &AgentModelRequest) -> ModelReply {
    let delegate = |agent: &str| json!({"agentId": agent, "task": {"title": agent, "objective": "Look it up."}});
    match (request.agent_profile_id.as_str(), request.round) {
        ("lead", 1) => ModelReply::tool_call("agent_delegate", delegate("researcher"))
            .with_tool_call("agent_delegate", delegate("sibling")),
        // One wait for each result.
        ("lead", 2 | 3) => ModelReply::tool_call("agent_await", json!({})),
        ("lead", 4) => ModelReply::tool_call(
            "workspace_write_file",
            json!({"path": "output/main.md", "content": "Looked up.\n"}),
        ),
        ("lead", 5) => ModelReply::tool_call("workspace_commit", json!({})),
        ("lead", _) => ModelReply::tool_call("workspace_finish", json!({})),
        ("researcher", 1) => ModelReply::tool_call("mcp__py__echo", json!({"text": "one"})),
        ("researcher", 2) => ModelReply::tool_call("mcp__py__slow", json!({"seconds": 30})),
        ("sibling", 1) => ModelReply::tool_call("mcp__py__echo", json!({"text": "two"})),
        (_, _) => ModelReply::tool_call(
            "task_return",
            json!({"summary": "Looked it up.", "confidence": "high"}),
        ),
    }
}

fn runtime(dir: &Path, seen: &Arc<Mutex<Vec<AgentModelRequest>>>) -> AgentRuntime {
    let seen = Arc::clone(seen);
    AgentRuntimeBuilder::new()
        .data_dir(dir)
        .provider(Arc::new(FnProvider::new(move |request| {
            seen.lock().unwrap().push(request.clone());
            Ok(reply(request))
        })))
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap()
}

fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn logged_calls(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(call_log(dir))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The first process of the test: starts the run in `$TT_MCP_TEST_DIR`, prints the run id once
/// the server logged the slow call, and waits to be killed.
#[test]
#[ignore = "the first process of the MCP resume test, which starts it itself"]
fn first_process() {
    let dir = PathBuf::from(std::env::var(DIR_VAR).unwrap());
    tokio_runtime().block_on(async {
        let runtime = runtime(&dir, &Arc::default());
        let mut request = start_request();
        request.profile_id = Some("lead".into());
        let run = runtime.start_run(request).await.unwrap();
        while !logged_calls(&dir)
            .iter()
            .any(|call| call.starts_with("slow "))
        {
            let status = runtime.get_run(run.id.as_str()).await.unwrap().status;
            assert!(
                !status.is_terminal(),
                "the run ended {status:?} before the slow call"
            );
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        println!("{STOPPED} {}", run.id);
        std::future::pending::<()>().await;
    });
}

#[test]
fn an_mcp_call_in_flight_at_kill_9_is_reported_as_possibly_run_and_never_sent_again() {
    use std::io::BufRead as _;
    if python_mcp_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = McpServerConfig {
        name: "py".into(),
        transport: McpTransport::Stdio {
            command: "python3".into(),
            args: vec![py_server().display().to_string()],
            env: [(
                "TT_PY_CALL_LOG".to_owned(),
                call_log(dir.path()).display().to_string(),
            )]
            .into(),
            cwd: None,
        },
        call_timeout_ms: 120_000,
    };
    tokio_runtime().block_on(async {
        let setup = runtime(dir.path(), &Arc::default());
        let entry = setup.add_mcp_server(server).await.unwrap();
        let names: Vec<&str> = entry
            .catalog
            .as_ref()
            .unwrap()
            .tools
            .iter()
            .map(|tool| tool.name.as_str())
            .collect();
        assert!(names.contains(&"slow"), "{names:?}");
        for definition in profiles() {
            setup.save_profile(definition).await.unwrap();
        }
        setup.shutdown().await.unwrap();
    });

    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["mcp::first_process", "--exact", "--ignored", "--nocapture"])
        .env(DIR_VAR, dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let line = stdout
        .lines()
        .map(Result::unwrap)
        .find(|line| line.starts_with(STOPPED))
        .expect("the first process ended early");
    child.kill().unwrap();
    child.wait().unwrap();
    let run_id = line.split(' ').nth(1).unwrap().to_owned();
    let before = logged_calls(dir.path());

    let seen = Arc::new(Mutex::new(Vec::new()));
    tokio_runtime().block_on(async {
        let runtime = runtime(dir.path(), &seen);
        assert_eq!(
            runtime.get_run(&run_id).await.unwrap().status,
            AgentRunStatus::Interrupted
        );
        runtime.resume_run(&run_id).await.unwrap();
        let run = runtime.wait_for_run(&run_id).await.unwrap();
        let events = all_events(&runtime, &run_id).await;
        assert_eq!(run.status, AgentRunStatus::Completed, "{events:#?}");
        // The sibling tried the tool it was never offered.
        let unknown = events.iter().any(|event| {
            event.event_type == "tool_call_failed"
                && event.payload["errorCode"] == "model.unknown_tool_call"
                && event.payload["name"] == "mcp__py__echo"
        });
        assert!(unknown, "the sibling's call was not refused as unknown");
        runtime.shutdown().await.unwrap();
    });

    // What reached the server: each call once, none of them again after the kill.
    let after = logged_calls(dir.path());
    let echoes = |calls: &[String]| {
        calls
            .iter()
            .filter(|call| call.starts_with("echo "))
            .count()
    };
    let slows = |calls: &[String]| {
        calls
            .iter()
            .filter(|call| call.starts_with("slow "))
            .count()
    };
    assert_eq!((echoes(&before), slows(&before)), (1, 1), "{before:?}");
    assert_eq!((echoes(&after), slows(&after)), (1, 1), "{after:?}");
    assert_eq!(before[0], r#"echo {"text": "one"}"#);

    let requests = seen.lock().unwrap();
    // The researcher's first live request after the resume answers the slow call: it may
    // have run.
    let researcher = requests
        .iter()
        .find(|request| request.agent_profile_id.as_str() == "researcher")
        .expect("the researcher went on");
    let history = serde_json::to_string(&researcher.messages).unwrap();
    assert!(history.contains("tool.outcome_unknown"), "{history}");
    assert!(
        history.contains("Echo") || history.contains("one"),
        "{history}"
    );
    let offered: Vec<&str> = researcher
        .tools
        .iter()
        .map(|spec| spec.model_name.as_str())
        .collect();
    assert!(offered.contains(&"mcp__py__echo") && offered.contains(&"mcp__py__slow"));
    assert!(!offered.contains(&"mcp__py__die"), "{offered:?}");
    // Nobody else is offered the server's tools.
    for request in requests.iter() {
        if request.agent_profile_id.as_str() != "researcher" {
            assert!(
                request
                    .tools
                    .iter()
                    .all(|spec| !spec.model_name.starts_with("mcp__")),
                "{} was offered MCP tools",
                request.agent_profile_id
            );
        }
    }
}
