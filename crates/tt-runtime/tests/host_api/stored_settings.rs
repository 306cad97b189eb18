//! Named connections and preset templates a host stores through the host command table
//! (docs/host-api.md, "Other calls": `save_connection`, `remove_connection`,
//! `save_preset_template`): on the file store they land under the data dir, where runs and
//! `list_agent_connections` find them; bad documents and names are refused with codes.

use serde_json::{Value, json};
use tempfile::TempDir;
use tt_runtime::{AgentRuntime, AgentRuntimeBuilder, FnProvider, ModelReply};

use super::{command, refused};

/// A runtime with a `house` connection, on a new data dir the test keeps.
fn runtime() -> (TempDir, AgentRuntime) {
    let dir = TempDir::new().unwrap();
    let model = std::sync::Arc::new(FnProvider::new(|_| Ok(ModelReply::text("ok"))));
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(model.clone())
        .connection("house", model)
        .build()
        .unwrap();
    (dir, runtime)
}

#[tokio::test]
async fn a_saved_connection_is_listed_replaced_and_removed() {
    let (dir, runtime) = runtime();
    let document = json!({"connection": "openai:http://127.0.0.1:9/v1", "model": "small",
        "apiKeyEnv": "LOCAL_KEY"});
    let saved = command(
        &runtime,
        "save_agent_connection",
        json!({"name": "local", "document": document}),
    )
    .await;
    assert_eq!(saved["name"], "local");
    assert_eq!(saved["source"], "file");
    assert_eq!(saved["description"]["model"], "small");
    let stored = std::fs::read_to_string(dir.path().join("connections/local.json")).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&stored).unwrap(), document);

    let mut replaced = document.clone();
    replaced["model"] = json!("large");
    command(
        &runtime,
        "save_agent_connection",
        json!({"name": "local", "document": replaced}),
    )
    .await;
    let listed = command(&runtime, "list_agent_connections", Value::Null).await;
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["house", "local"]);
    assert_eq!(listed[1]["description"]["model"], "large");

    command(
        &runtime,
        "remove_agent_connection",
        json!({"name": "local"}),
    )
    .await;
    assert!(!dir.path().join("connections/local.json").exists());
    assert_eq!(
        refused(
            &runtime,
            "remove_agent_connection",
            json!({"name": "local"})
        )
        .await,
        "agent.model_connection_not_found"
    );
}

#[tokio::test]
async fn connections_that_are_not_ones_or_hide_a_registered_one_are_refused() {
    let (dir, runtime) = runtime();
    let good = json!({"connection": "openai:http://127.0.0.1:9/v1"});
    for (name, document, code) in [
        (
            "local",
            json!({"connection": "nowhere:http://x"}),
            "agent.connection_invalid",
        ),
        (
            "local",
            json!({"connection": "openai:http://127.0.0.1:9/v1", "apiKey": "sk-1"}),
            "agent.connection_invalid",
        ),
        ("local", json!({"model": "m"}), "agent.connection_invalid"),
        (
            "local",
            json!("openai:http://127.0.0.1:9/v1"),
            "agent.connection_invalid",
        ),
        (
            "local",
            json!({"connection": "openai:http://127.0.0.1:9/v1", "callDeadlineSecs": 0}),
            "agent.connection_invalid",
        ),
        ("../up", good.clone(), "agent.storage_segment_invalid"),
        ("house", good.clone(), "agent.connection_name_registered"),
    ] {
        let request = json!({"name": name, "document": document});
        assert_eq!(
            refused(&runtime, "save_agent_connection", request).await,
            code,
            "{name} {document}"
        );
    }
    assert_eq!(
        refused(
            &runtime,
            "remove_agent_connection",
            json!({"name": "house"})
        )
        .await,
        "agent.connection_name_registered"
    );
    assert!(!dir.path().join("connections").exists());
}

#[tokio::test]
async fn a_preset_template_is_stored_where_the_template_broker_reads_it() {
    let (dir, runtime) = runtime();
    let template = json!({"schemaVersion": 1, "messages": [
        {"role": "system", "content": "{{agentSystemPrompt}}"},
        {"insert": "history"},
        {"role": "user", "content": "{{agentTask}}"}
    ]});
    let answer = command(
        &runtime,
        "save_agent_preset_template",
        json!({"apiId": "writers-room", "name": "advisors", "template": template}),
    )
    .await;
    assert_eq!(answer, Value::Null);
    let stored =
        std::fs::read_to_string(dir.path().join("presets/writers-room/advisors.json")).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&stored).unwrap(), template);

    for (api_id, template, code) in [
        (
            "writers-room",
            json!({"schemaVersion": 1, "messages": [{"insert": "memories"}]}),
            "agent.preset_template_invalid",
        ),
        (
            "writers-room",
            json!({"messages": []}),
            "agent.preset_template_invalid",
        ),
        (
            "writers-room",
            json!({"schemaVersion": 1, "messages": [], "extra": 1}),
            "agent.preset_template_invalid",
        ),
        (
            "writers room",
            json!({"schemaVersion": 1, "messages": []}),
            "agent.storage_segment_invalid",
        ),
    ] {
        let request = json!({"apiId": api_id, "name": "other", "template": template});
        assert_eq!(
            refused(&runtime, "save_agent_preset_template", request).await,
            code,
            "{api_id} {template}"
        );
    }
    assert!(!dir.path().join("presets/writers-room/other.json").exists());
}
