//! The host command table's commands: good input answered, bad input refused with a code.

use serde_json::json;

use crate::support::app;

fn writer_script() -> serde_json::Value {
    json!({"schemaVersion": 1, "agents": {"default-writer": [
        {"toolCalls": [{"id": "c1", "name": "workspace_write_file",
            "arguments": {"path": "output/main.md", "content": "draft"}}]},
        {"toolCalls": [{"id": "c2", "name": "workspace_commit", "arguments": {}}]},
        {"toolCalls": [{"id": "c3", "name": "workspace_finish", "arguments": {}}]}
    ]}})
}

#[test]
fn a_run_starts_and_bad_starts_are_refused_with_codes() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path(), &writer_script());
    let run = app.call(
        "start_agent_run",
        json!({"stableChatId": "chat-1", "userRequest": "Write."}),
    );
    assert_eq!(run["stableChatId"], "chat-1");
    let runs = app.call("list_agent_runs", json!(null));
    assert_eq!(runs[0]["id"], run["id"]);
    assert_eq!(
        app.refused(
            "start_agent_run",
            json!({"stableChatId": "chat-1", "userRequest": "Write.", "profileId": "nobody"})
        ),
        "agent.profile_not_found"
    );
    assert_eq!(
        app.refused("start_agent_run", json!({"stableChatId": 7})),
        "agent.host_request_invalid"
    );
    assert_eq!(
        app.refused("cancel_agent_run", json!({"runId": "run_unknown"})),
        "agent.not_found"
    );
}
