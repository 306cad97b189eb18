//! The live OpenTelemetry export of a run started through the inspector's HTTP API
//! (`POST /api/runs`): an OTLP/HTTP receiver on 127.0.0.1 gets the finished model call's and
//! tool call's spans while the agent still waits on its next model call, with the GenAI
//! conventions' attributes, and the agent's span (its usage rolled up) once the run is
//! cancelled through the API.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tt_runtime::{
    AgentRuntimeBuilder, CommitBridgeChoice, FnProvider, ModelReply, OtelExportSettings,
    PromptBrokerChoice,
};

use crate::support::server_over;
use tt_testkit::otlp::{assert_chat_attributes, attribute, receiver, span_named, spans_named};

#[tokio::test]
async fn a_run_started_from_the_page_sends_each_span_as_it_ends() {
    let (endpoint, mut received) = receiver().await;
    let dir = tempfile::tempdir().unwrap();
    // Round 1 writes a file; round 2 waits a day: the run is held open until it is cancelled.
    let provider = Arc::new(FnProvider::new(|request| {
        Ok(match request.round {
            1 => ModelReply::tool_call(
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "Night fell.\n"}),
            ),
            _ => ModelReply::text("later").after(Duration::from_secs(86_400)),
        })
    }));
    let mut settings = OtelExportSettings::new(&endpoint);
    settings.schedule_delay = Duration::from_millis(200);
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(provider)
        .provider_model_info(tt_ports::ConnectionModelInfo {
            default_model: Some("gpt-4o-mini".to_owned()),
            ..Default::default()
        })
        .commit_bridge(CommitBridgeChoice::Transcript)
        .prompt_broker(PromptBrokerChoice::Templates)
        .otel_export(Some(settings))
        .build()
        .unwrap();
    let mut server = server_over(dir, runtime, false, None, Default::default()).await;
    let run_id = server.start("default-writer", "Write a scene.").await;

    let mut seen = Vec::new();
    spans_named(
        &mut received,
        &mut seen,
        &["chat gpt-4o-mini", "execute_tool workspace.write_file"],
    )
    .await;
    // The agent still waits on round 2: these came while the run was live.
    let run = server.get(&format!("/api/runs/{run_id}")).await;
    assert_eq!(run.body["status"], "calling_model", "{}", run.body);
    let chat = span_named(&seen, "chat gpt-4o-mini").clone();
    assert_chat_attributes(&chat, "gpt-4o-mini", "scripted");
    assert!(attribute(&chat, "gen_ai.usage.input_tokens").is_some());
    // Content capture is off unless asked for.
    assert_eq!(attribute(&chat, "gen_ai.input.messages"), None);
    assert_eq!(attribute(&chat, "gen_ai.output.messages"), None);

    let cancelled = server.act(&run_id, "cancel").await;
    assert!(cancelled.status < 300, "{}", cancelled.body);
    let agent_name = "invoke_agent default-writer";
    spans_named(&mut received, &mut seen, &[agent_name]).await;
    let agent = seen.iter().find(|s| s["name"] == agent_name).unwrap();
    assert_eq!(
        attribute(agent, "gen_ai.usage.input_tokens"),
        attribute(&chat, "gen_ai.usage.input_tokens")
    );
    server.stop().await;
}
