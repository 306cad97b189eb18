//! The stream commands: a run's events over a channel from any seq, the runs list's changes.

use serde_json::json;

use crate::support::app;

#[test]
fn an_unknown_run_cannot_be_followed() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path(), &json!({"schemaVersion": 1, "agents": {}}));
    let err = app
        .invoke(
            "subscribe_agent_run_events",
            json!({"request": {"runId": "run_unknown"}, "onEvent": "__CHANNEL__:5"}),
        )
        .unwrap_err();
    assert_eq!(err["code"], "agent.not_found", "{err}");
}
