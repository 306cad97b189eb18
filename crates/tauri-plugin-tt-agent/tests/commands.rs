//! The host command table's commands through the webview's IPC: each family with good input
//! answered, and bad input (unknown run, invalid profile, wrong state, a request that does
//! not fit) refused with a code, never a panic.

use serde_json::{Value, json};

use crate::support::{app, app_transcript};

/// Writes (asking first: `careful-writer`), publishes through the host, finishes.
fn careful_script() -> Value {
    json!({"schemaVersion": 1, "agents": {
        "careful-writer": [
            {"toolCalls": [{"id": "c1", "name": "workspace_write_file",
                "arguments": {"path": "output/main.md", "content": "The tide came in."}}]},
            {"toolCalls": [{"id": "c2", "name": "workspace_commit", "arguments": {}}]},
            {"toolCalls": [{"id": "c3", "name": "workspace_finish", "arguments": {}}]}
        ],
        "default-writer": [
            {"toolCalls": [{"id": "c1", "name": "workspace_write_file",
                "arguments": {"path": "output/main.md", "content": "draft"}}]},
            {"toolCalls": [{"id": "c2", "name": "workspace_commit", "arguments": {}}]},
            {"toolCalls": [{"id": "c3", "name": "workspace_finish", "arguments": {}}]}
        ]
    }})
}

/// The default writer, asking before every write.
fn careful_writer() -> Value {
    json!({
        "schemaVersion": 2,
        "kind": "tauritavern.agentProfile",
        "id": "careful-writer",
        "displayName": "Careful writer",
        "preset": {"mode": "currentPromptSnapshot"},
        "model": {"mode": "currentPromptSnapshot"},
        "run": {"presentation": "foreground"},
        "tools": {
            "allow": ["workspace.read_file", "workspace.write_file", "workspace.commit",
                      "workspace.finish"],
            "maxRounds": 10,
            "approval": {"workspace.write_file": "always"}
        },
        "skills": {"visible": ["*"]},
        "workspace": {"visibleRoots": ["output"], "writableRoots": ["output"]},
        "plan": {"mode": "none"},
        "output": {"artifacts": [{"id": "main", "path": "output/main.md", "kind": "markdown",
                                  "target": "messageBody", "required": true}]}
    })
}

#[test]
fn runs_are_started_read_and_listed_and_bad_starts_are_refused_with_codes() {
    let dir = tempfile::tempdir().unwrap();
    let app = app_transcript(dir.path(), &careful_script());
    let run_id = app.start(Some("default-writer"));
    let ended = app.call("wait_agent_run", json!({"runId": run_id}));
    assert_eq!(ended["status"], "completed", "{ended}");
    assert_eq!(
        app.call("read_agent_run", json!({"runId": run_id}))["id"],
        json!(run_id)
    );
    // No request, `null` and `{}` are the same for a command with defaults or no input.
    let runs = app.invoke("list_agent_runs", json!({})).unwrap();
    assert_eq!(runs[0]["id"], json!(run_id));
    assert_eq!(app.call("list_agent_runs", json!(null)), runs);
    assert_eq!(app.call("list_unreadable_agent_runs", json!({})), json!([]));

    let refused = [
        (
            "start_agent_run",
            json!({"stableChatId": "c", "userRequest": "W.", "profileId": "nobody"}),
            "agent.profile_not_found",
        ),
        (
            "start_agent_run",
            json!({"stableChatId": 7}),
            "host.request_invalid",
        ),
        (
            "start_agent_run",
            json!(["chat-1", "Write."]),
            "host.request_invalid",
        ),
        (
            "start_agent_run",
            json!({"stableChatId": " ", "userRequest": "W."}),
            "agent.stable_chat_id_invalid",
        ),
        (
            "read_agent_run",
            json!({"runId": "run_unknown"}),
            "agent.not_found",
        ),
        (
            "cancel_agent_run",
            json!({"runId": "run_unknown"}),
            "agent.not_found",
        ),
        ("read_agent_run", json!({}), "host.request_invalid"),
        (
            "list_agent_runs",
            json!({"limit": "many"}),
            "host.request_invalid",
        ),
    ];
    for (command, request, code) in refused {
        assert_eq!(
            app.refused(command, request.clone()),
            code,
            "{command} {request}"
        );
    }
}

#[test]
fn a_run_in_the_wrong_state_is_refused_and_a_finished_run_branches() {
    let dir = tempfile::tempdir().unwrap();
    let app = app_transcript(dir.path(), &careful_script());
    let run_id = app.start(Some("default-writer"));
    app.call("wait_agent_run", json!({"runId": run_id}));
    // A completed run cannot be resumed, abandoned or given guidance.
    let refusals = [
        (
            "resume_agent_run",
            json!({"runId": run_id}),
            "agent.run_not_resumable",
        ),
        (
            "abandon_agent_run",
            json!({"runId": run_id}),
            "agent.run_not_abandonable",
        ),
        (
            "submit_agent_guidance",
            json!({"runId": run_id, "text": "Louder."}),
            "agent.guidance_mailbox_closed",
        ),
        (
            "cancel_agent_task",
            json!({"runId": run_id, "taskId": "task_unknown"}),
            "agent.run_not_running",
        ),
        (
            "fork_agent_run",
            json!({"runId": run_id, "at": {"kind": "seq", "seq": 100000}}),
            "agent.fork_point_invalid",
        ),
    ];
    for (command, request, code) in refusals {
        assert_eq!(app.refused(command, request), code, "{command}");
    }
    let branch = app.call(
        "fork_agent_run",
        json!({"runId": run_id, "at": {"kind": "agentRound", "invocationId": "inv_root", "round": 2}}),
    );
    assert_eq!(branch["forkedFrom"]["runId"], json!(run_id));
    let branch_id = branch["id"].as_str().unwrap();
    let ended = app.call("wait_agent_run", json!({"runId": branch_id}));
    assert_eq!(ended["status"], "completed", "{ended}");
}

#[test]
fn a_run_is_read_through_its_events_tree_files_usage_and_records() {
    let dir = tempfile::tempdir().unwrap();
    let app = app_transcript(dir.path(), &careful_script());
    let run_id = app.start(Some("default-writer"));
    app.call("wait_agent_run", json!({"runId": run_id}));
    let run = json!({"runId": run_id});
    let page = app.call(
        "read_agent_run_events",
        json!({"runId": run_id, "limit": 2}),
    );
    assert_eq!(page["events"][0]["seq"], 1);
    assert_eq!(page["events"].as_array().unwrap().len(), 2);
    let tree = app.call("read_agent_timeline", run.clone());
    assert_eq!(tree["invocations"][0]["profileId"], "default-writer");
    assert_eq!(app.call("read_agent_usage", run.clone())["modelCalls"], 3);
    assert_eq!(
        app.call("list_agent_workspace_files", run.clone()),
        json!(["output/main.md"])
    );
    let file = app.call(
        "read_agent_workspace_file",
        json!({"runId": run_id, "path": "output/main.md"}),
    );
    assert_eq!(file["text"], "draft");
    assert_eq!(
        app.call("check_agent_run", run.clone())["findings"],
        json!([])
    );
    let conversation = app.call(
        "read_agent_conversation",
        json!({"runId": run_id, "invocationId": "inv_root"}),
    );
    assert_eq!(conversation["profileId"], "default-writer");
    assert_eq!(
        app.call(
            "read_agent_record",
            json!({"runId": run_id, "reference": "run.json"})
        )["id"],
        json!(run_id)
    );
    assert!(app.call("export_agent_run_otel", run.clone())["resourceSpans"].is_array());
    assert_eq!(app.call("read_agent_run_failure", run), Value::Null);

    let unknown = json!({"runId": "run_unknown"});
    let mut refusals = [
        "read_agent_timeline",
        "read_agent_usage",
        "check_agent_run",
        "list_agent_workspace_files",
        "list_agent_tool_approvals",
    ]
    .map(|command| (command, unknown.clone(), "agent.not_found"))
    .to_vec();
    refusals.extend([
        (
            "read_agent_workspace_file",
            json!({"runId": run_id, "path": "../outside.md"}),
            "workspace.invalid_path",
        ),
        (
            "read_agent_record",
            json!({"runId": run_id, "reference": "nothing/of/the/kind"}),
            "agent.record_reference_invalid",
        ),
    ]);
    for (command, request, code) in refusals {
        assert_eq!(app.refused(command, request), code, "{command}");
    }
}

#[test]
fn an_approval_and_a_commit_are_answered_from_the_webview() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path(), &careful_script());
    app.call("save_agent_profile", careful_writer());
    let run_id = app.start(Some("careful-writer"));
    app.follow(1, &run_id, 0);
    let mut parked = Vec::new();
    app.events_until(1, "tool_approval_requested", &mut parked);
    let pending = app.call("list_agent_tool_approvals", json!({"runId": run_id}));
    let approval_id = pending[0]["approvalId"].as_str().unwrap().to_owned();
    assert_eq!(pending[0]["arguments"]["content"], "The tide came in.");
    assert_eq!(
        app.refused(
            "approve_agent_tool_call",
            json!({"runId": run_id, "approvalId": "apr_0000000000000000", "decision": "approve"})
        ),
        "agent.approval_not_found"
    );
    assert_eq!(
        app.refused(
            "approve_agent_tool_call",
            json!({"runId": run_id, "approvalId": approval_id, "decision": "maybe"})
        ),
        "host.request_invalid"
    );
    let receipt = app.call(
        "approve_agent_tool_call",
        json!({"runId": run_id, "approvalId": approval_id, "decision": "approve",
               "decidedBy": "webview"}),
    );
    assert_eq!(receipt["decidedBy"], "webview");

    app.events_until(1, "chat_commit_requested", &mut parked);
    let commits = app.call("list_agent_chat_commits", json!({"runId": run_id}));
    assert_eq!(commits[0]["content"], "The tide came in.");
    let commit_id = commits[0]["commitId"].as_str().unwrap().to_owned();
    assert_eq!(
        app.refused(
            "resolve_agent_chat_commit",
            json!({"runId": run_id, "commitId": "commit_unknown", "messageId": "m1"})
        ),
        "agent.chat_commit_not_pending"
    );
    assert_eq!(
        app.refused(
            "resolve_agent_chat_commit",
            json!({"runId": run_id, "commitId": commit_id})
        ),
        "agent.chat_commit_resolve_invalid"
    );
    assert_eq!(
        app.call(
            "resolve_agent_chat_commit",
            json!({"runId": run_id, "commitId": commit_id, "messageId": "m1"})
        ),
        Value::Null
    );
    // At finish: the state the run leaves is bound to its message, by the webview.
    let asked = app.events_until(1, "persistent_state_metadata_update_requested", &mut parked);
    assert!(
        asked
            .iter()
            .any(|event| event["type"] == "chat_commit_completed")
    );
    let update = &asked.last().unwrap()["payload"];
    assert_eq!(update["messageId"], "m1");
    assert_eq!(
        app.call(
            "resolve_agent_persistent_state_metadata_update",
            json!({"runId": run_id, "updateId": update["updateId"]})
        ),
        Value::Null
    );
    app.events_until(1, "run_completed", &mut parked);
    assert_eq!(app.next_message(1, &mut parked), json!({"kind": "end"}));

    assert_eq!(
        app.refused("list_agent_chat_commits", json!({"runId": "run_unknown"})),
        "agent.not_found"
    );
    // Answers to what no run waits for.
    assert_eq!(
        app.refused(
            "resolve_agent_persistent_state_metadata_update",
            json!({"runId": run_id, "updateId": "psu_unknown"})
        ),
        "agent.persistent_state_metadata_update_not_pending"
    );
    assert_eq!(
        app.refused(
            "read_agent_prompt_assembly_request",
            json!({"runId": run_id, "assemblyId": "pa_unknown"})
        ),
        "agent.prompt_assembly_not_pending"
    );
    assert_eq!(
        app.refused(
            "answer_agent_host_tool_call",
            json!({"runId": run_id, "callKey": "call_0000000000000000", "text": "x"})
        ),
        "host.tool_call_not_pending"
    );
}

#[test]
fn profiles_skills_connections_and_tools_are_managed_with_codes_for_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path(), &careful_script());
    let mut invalid = careful_writer();
    invalid["tools"]["maxRounds"] = json!(0);
    assert!(
        app.refused("save_agent_profile", invalid)
            .starts_with("agent.profile_")
    );
    assert_eq!(
        app.call("save_agent_profile", careful_writer()),
        Value::Null
    );
    assert_eq!(
        app.call(
            "save_agent_skill_file",
            json!({"scope": {"kind": "global"}, "skillId": "house-style", "path": "SKILL.md",
                   "text": "---\nname: house-style\ndescription: How we write.\n---\nShort lines.\n"})
        ),
        Value::Null
    );
    assert_eq!(app.call("list_agent_connections", json!(null)), json!([]));
    assert_eq!(app.call("list_agent_host_tools", json!(null)), json!([]));
    let tool = app.call(
        "register_agent_host_tool",
        json!({"name": "chat.search", "description": "Search the chat.",
               "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}}),
    );
    assert_eq!(tool["id"], "host/chat.search");
    assert_eq!(
        app.refused(
            "register_agent_host_tool",
            json!({"name": "Bad Name", "description": "x", "inputSchema": {"type": "object"}})
        ),
        "tool.id_invalid"
    );
    assert_eq!(app.call("list_agent_mcp_servers", json!(null)), json!([]));
    assert_eq!(
        app.refused("read_agent_mcp_server", json!({"name": "nowhere"})),
        "mcp.server_not_found"
    );
    assert_eq!(
        app.call(
            "read_agent_persist_state",
            json!({"stableChatId": "chat-1"})
        ),
        json!({"stateId": null})
    );
}

/// Every command of the table, given a request that does not fit (a number) or one that names
/// a run that does not exist, answers a coded error or an answer, never a panic or an uncoded
/// failure: the first is `host.request_invalid` for every command (one without input takes
/// only `null` or `{}`), the second a code for every command that reads a run.
#[test]
fn every_command_refuses_bad_input_with_a_code() {
    let dir = tempfile::tempdir().unwrap();
    // The default set, the MCP servers' and the connections' permissions: every command is
    // allowed.
    let app = crate::support::app_with_bridge(
        dir.path(),
        &careful_script(),
        &[
            "tt-agent:default",
            "tt-agent:allow-mcp-servers",
            "tt-agent:allow-connections",
        ],
        tt_runtime::CommitBridgeChoice::Transcript,
    );
    let coded = |command: &str, err: &Value| {
        assert!(
            err["code"].as_str().is_some_and(|code| code.contains('.')),
            "{command}: {err}"
        );
        assert!(err["message"].is_string(), "{command}: {err}");
    };
    for &command in tt_runtime::HOST_COMMANDS {
        let err = app
            .invoke(command, json!({"request": 42}))
            .expect_err(command);
        coded(command, &err);
        assert_eq!(err["code"], "host.request_invalid", "{command}: {err}");
    }
    for &command in tt_runtime::HOST_COMMANDS {
        // Fields a command does not take are ignored or refused; a run it reads is unknown.
        let request = json!({"runId": "run_unknown", "taskId": "task_x", "invocationId": "inv_x",
            "path": "output/main.md", "reference": "run.json", "assemblyId": "pa_x",
            "approvalId": "ap_x", "decision": "approve", "commitId": "c", "messageId": "m",
            "updateId": "u", "callKey": "k", "text": "t"});
        if let Err(err) = app.invoke(command, json!({ "request": request })) {
            coded(command, &err);
        }
    }
}
