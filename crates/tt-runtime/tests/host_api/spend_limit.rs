//! The run's spend approval through the host command table (docs/host-api.md, "Run spend
//! approval"): a run that reaches `limits.askAboveTotalCostUsd` is listed as waiting
//! (`list_agent_pending_requests.spendLimit`, `read_agent_spend_limit`) and goes on once
//! `answer_agent_spend_limit` raises the limit.

use std::time::Duration;

use serde_json::{Value, json};
use tempfile::TempDir;
use tt_runtime::AgentRuntime;

use super::{command, committing_writer, start_by_command, transcript_builder, writer_profile};

fn writer() -> Value {
    let mut profile = writer_profile("metered", "Metered", &[], 8);
    profile["limits"] = json!({"askAboveTotalCostUsd": 0.000001});
    profile
}

/// A runtime on a priced committing writer, with a new data dir the test keeps.
fn runtime() -> (TempDir, AgentRuntime) {
    let dir = TempDir::new().unwrap();
    let runtime = transcript_builder(dir.path(), committing_writer())
        .provider_model_info(tt_testkit::fakes::priced_model_info("scripted"))
        .build()
        .unwrap();
    (dir, runtime)
}

#[tokio::test]
async fn a_parked_run_is_listed_and_goes_on_once_the_host_raises_its_limit() {
    let (_dir, runtime) = runtime();
    command(&runtime, "save_agent_profile", writer()).await;
    let run_id = start_by_command(
        &runtime,
        json!({"stableChatId": "metered-chat", "userInput": "Write the scene.",
               "profileId": "metered"}),
    )
    .await;
    let pending = loop {
        let pending = command(
            &runtime,
            "list_agent_pending_requests",
            json!({"runId": run_id}),
        )
        .await;
        if !pending["spendLimit"].is_null() {
            break pending;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert_eq!(pending["spendLimit"]["limitUsd"], 0.000001);
    let spent = pending["spendLimit"]["spentUsd"].as_f64().unwrap();
    assert!(spent >= 0.000001, "{pending}");
    let read = command(&runtime, "read_agent_spend_limit", json!({"runId": run_id})).await;
    assert_eq!(read, pending["spendLimit"]);
    let stored = command(&runtime, "read_agent_run", json!({"runId": run_id})).await;
    assert_eq!(stored["status"], "awaiting_approval");

    let low = runtime
        .execute_command(
            "answer_agent_spend_limit",
            json!({"runId": run_id, "decision": "raise", "limitUsd": 0.0}),
        )
        .await
        .unwrap_err();
    assert_eq!(low.code, "agent.spend_limit_invalid");
    let receipt = command(
        &runtime,
        "answer_agent_spend_limit",
        json!({"runId": run_id, "decision": "raise", "limitUsd": 10.0, "decidedBy": "inspector"}),
    )
    .await;
    assert_eq!(
        receipt,
        json!({"decision": "raise", "limitUsd": 10.0, "spentUsd": spent, "decidedBy": "inspector"})
    );
    let ended = command(&runtime, "wait_agent_run", json!({"runId": run_id})).await;
    assert_eq!(ended["status"], "completed");
    assert_eq!(
        command(&runtime, "read_agent_spend_limit", json!({"runId": run_id})).await,
        Value::Null
    );
    let again = runtime
        .execute_command(
            "answer_agent_spend_limit",
            json!({"runId": run_id, "decision": "refuse"}),
        )
        .await
        .unwrap_err();
    assert_eq!(again.code, "agent.run_not_running");
    runtime.shutdown().await.unwrap();
}
