//! `tt-agent usage`: a stored run's tokens and cost, as text and as JSON; the demo's scripted
//! model has no price, so its cost is unknown (`costUsd: null`), never `$0`.

use crate::events::demo_run;

#[test]
fn usage_prints_a_runs_tokens_and_an_unpriced_cost_as_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = demo_run(dir.path());
    let run = run_dir.file_name().unwrap().to_string_lossy().into_owned();
    let usage = |args: &[&str]| {
        let out = crate::agent_in(dir.path())
            .arg("usage")
            .arg(&run)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
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
    let dir = tempfile::tempdir().unwrap();
    let run_dir = demo_run(dir.path());
    let run = run_dir.file_name().unwrap().to_string_lossy().into_owned();
    let out = crate::agent_in(dir.path())
        .args(["conversation", &run, "inv_root"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let conversation: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
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
