//! `tt-agent usage`: a stored run's tokens and cost, as text and as JSON; the demo's scripted
//! model has no price, so its cost is unknown (`costUsd: null`), never `$0`.

use crate::events::{DemoRun, demo_run};

#[test]
fn usage_prints_a_runs_tokens_and_an_unpriced_cost_as_unknown() {
    let DemoRun { dir, run, .. } = demo_run();
    let usage = |args: &[&str]| {
        let out = crate::stdout_of_success(
            crate::agent_in(dir.path())
                .arg("usage")
                .arg(&run)
                .args(args),
        );
        String::from_utf8_lossy(&out).into_owned()
    };
    let text = usage(&[]);
    assert!(text.starts_with("run: "), "{text}");
    assert!(
        text.contains("cost unknown: the model has no price"),
        "{text}"
    );
    assert!(!text.contains("$0"), "{text}");
    assert!(text.contains("usage (own | with its sub-tree):"), "{text}");
    let json: serde_json::Value = serde_json::from_str(&usage(&["--json"])).unwrap();
    assert!(json["modelCalls"].as_u64().unwrap() > 0, "{json}");
    assert_eq!(json["unpricedModelCalls"], json["modelCalls"]);
    assert_eq!(json["costUsd"], serde_json::Value::Null);
    for agent in json["byInvocation"].as_array().unwrap() {
        assert_eq!(agent["costUsd"], serde_json::Value::Null, "{agent}");
        assert_eq!(
            agent["subtree"]["costUsd"],
            serde_json::Value::Null,
            "{agent}"
        );
    }
}

#[test]
fn an_agents_conversation_shows_an_unpriced_cost_as_null() {
    let DemoRun { dir, run, .. } = demo_run();
    let out = crate::stdout_of_success(crate::agent_in(dir.path()).args([
        "conversation",
        &run,
        "inv_root",
    ]));
    let conversation: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(conversation["costUsd"], serde_json::Value::Null);
    let answers: Vec<&serde_json::Value> = conversation["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["kind"] == "assistant")
        .collect();
    assert!(!answers.is_empty());
    for answer in answers {
        assert_eq!(
            answer.get("costUsd"),
            Some(&serde_json::Value::Null),
            "{answer}"
        );
    }
}
