//! A run parked at its spend limit (docs/host-api.md, "Run spend approval"), over the REST
//! routes and in the inspector page in headless Chromium: the page counts it with the waiting
//! approvals, shows what was spent against the limit, and raises the limit or refuses; the
//! waterfall draws the pause.

use serde_json::{Value, json};
use std::sync::Arc;
use tt_runtime::{AgentRuntimeBuilder, CommitBridgeChoice, PromptBrokerChoice};

use crate::browser::{Browser, journal, start_from_page};
use crate::support::{TestServer, install_profiles, server_over};

/// A writer that writes, commits and finishes, on a priced model, under a spend limit its
/// first call passes: every run of `metered` parks at its second call.
async fn metered_server() -> TestServer {
    let model = tt_runtime::FnProvider::new(|request| {
        Ok(match request.round {
            1 => tt_runtime::ModelReply::tool_call(
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "Night fell.\n"}),
            ),
            2 => tt_runtime::ModelReply::tool_call("workspace_commit", json!({})),
            _ => tt_runtime::ModelReply::tool_call("workspace_finish", json!({})),
        })
    });
    let dir = tempfile::tempdir().unwrap();
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(Arc::new(model))
        .provider_model_info(tt_testkit::fakes::priced_model_info("scripted"))
        .commit_bridge(CommitBridgeChoice::Transcript)
        .prompt_broker(PromptBrokerChoice::Templates)
        .build()
        .unwrap();
    let server = server_over(dir, runtime, false, None, Default::default()).await;
    let mut profile =
        serde_json::to_value(tt_domain::profile::default_writer_definition()).unwrap();
    profile["id"] = json!("metered");
    profile["limits"]["askAboveTotalCostUsd"] = json!(0.000001);
    install_profiles(&server.runtime, &[&profile.to_string()]).await;
    server
}

/// Waits until `GET …/spend-limit` says the run is parked; what it answered.
async fn parked(server: &TestServer, run_id: &str) -> Value {
    for _ in 0..2_000 {
        let answer = server.get(&format!("/api/runs/{run_id}/spend-limit")).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        if !answer.body.is_null() {
            return answer.body;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("run {run_id} never parked at its spend limit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_run_is_answered_over_the_rest_routes() {
    let server = metered_server().await;
    let run_id = server.start("metered", "Write the scene.").await;
    let pending = parked(&server, &run_id).await;
    assert_eq!(pending["limitUsd"], 0.000001);
    assert!(
        pending["spentUsd"].as_f64().unwrap() >= 0.000001,
        "{pending}"
    );

    let path = format!("/api/runs/{run_id}/spend-limit/answer");
    let low = server
        .post(&path, &json!({"decision": "raise", "limitUsd": 0.0}))
        .await;
    assert_eq!(low.status, 400, "{}", low.body);
    assert_eq!(low.body["code"], "agent.spend_limit_invalid");
    let unknown = server.post(&path, &json!({"decision": "double"})).await;
    assert_eq!(unknown.status, 400, "{}", unknown.body);
    assert_eq!(unknown.body["code"], "http.invalid_json");

    let receipt = server
        .post(&path, &json!({"decision": "refuse", "decidedBy": "editor"}))
        .await;
    assert_eq!(receipt.status, 200, "{}", receipt.body);
    assert_eq!(receipt.body["decision"], "refuse");
    assert_eq!(receipt.body["decidedBy"], "editor");
    let ended = server.runtime.wait_for_run(&run_id).await.unwrap();
    assert_eq!(ended.status.as_str(), "failed");
    let after = server.get(&format!("/api/runs/{run_id}/spend-limit")).await;
    assert_eq!(after.body, Value::Null);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_run_is_shown_and_its_limit_raised_from_the_page() {
    let server = metered_server().await;
    let browser = Browser::launch("spend-limit").await;
    browser.open_start_form(&server.url).await;
    let run_id = start_from_page(&browser, "metered", None).await;
    browser
        .wait_for(
            "the parked run counted with the approvals",
            "document.getElementById('approval-count').textContent === '(1)'",
        )
        .await;
    browser.click("#tabs button[data-tab=approvals]").await;
    browser
        .wait_for(
            "the spend and the limit shown",
            "(document.querySelector('.spend-limit') || {}).textContent?.includes('spent of $0.0000010.')",
        )
        .await;
    browser
        .wait_for(
            "the agent that found the limit shown waiting",
            "window.ttInspector.agents().some((a) => a.status === 'awaiting_approval')",
        )
        .await;
    browser.screenshot("01-parked-at-spend-limit").await;
    browser
        .eval("document.querySelector('.spend-limit .spend-new-limit').value = '10'")
        .await;
    browser.click(".spend-limit button.spend-raise").await;
    browser
        .wait_for(
            "the run completed",
            "document.getElementById('run-status').textContent === 'completed'",
        )
        .await;
    browser
        .wait_for(
            "nothing waiting",
            "document.getElementById('approval-count').textContent === '' && !document.querySelector('.spend-limit')",
        )
        .await;
    let drawn = browser
        .eval("window.ttInspector.run.bars.some((b) => b.kind === 'approval' && b.end !== null && b.label === 'spend limit: raised to $10.0000 by inspector')")
        .await;
    assert_eq!(drawn, json!(true), "the pause is drawn in the waterfall");
    let answered: Vec<Value> = journal(&server, &run_id)
        .await
        .into_iter()
        .filter(|e| e.event_type == "spend_limit_answered")
        .map(|e| e.payload)
        .collect();
    assert_eq!(answered.len(), 1, "{answered:?}");
    assert_eq!(answered[0]["decision"], "raise");
    assert_eq!(answered[0]["limitUsd"], 10.0);
    assert_eq!(answered[0]["decidedBy"], "inspector");
}
