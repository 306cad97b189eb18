//! `tt-agent demo`: the bundled scenario on the embedded defaults (userdata store, scripted
//! model, transcript commit bridge), shown live.

use anyhow::Context as _;
use std::path::Path;
use std::sync::Arc;
use tt_runtime::{
    AgentRuntimeBuilder, CommitBridgeChoice, PromptMessage, PromptRole, ScriptedProvider,
    StartRunRequest,
};

use crate::render::EventPrinter;

const DEMO_SCRIPT: &str = include_str!("../scenarios/demo.json");

pub async fn run_demo(data_dir: &Path) -> anyhow::Result<()> {
    let provider = ScriptedProvider::from_json_str(DEMO_SCRIPT)
        .context("the bundled demo script is invalid")?;
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(data_dir)
        .provider(Arc::new(provider))
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()?;
    println!("tt-agent demo: one writer agent on a scripted model");
    println!("data dir: {}\n", data_dir.display());
    let run = runtime
        .start_run(StartRunRequest {
            stable_chat_id: "demo-conversation".to_owned(),
            conversation_kind: tt_runtime::ConversationKind::Character,
            chat_ref: serde_json::json!({"kind": "character", "characterId": "narrator", "fileName": "demo"}),
            generation_type: serde_json::json!("normal"),
            profile_id: None,
            history: vec![PromptMessage { role: PromptRole::Assistant, content: "The storm is coming.".to_owned() }],
            user_request: Some("Write a short scene about a lighthouse keeper during a storm.".to_owned()),
            persist_base_state_id: None,
        })
        .await?;
    println!("run {} started\n", run.id);
    let mut stream = runtime.subscribe(run.id.as_str(), 0, None);
    let mut printer = EventPrinter::default();
    while let Some(event) = stream.next().await? {
        if let Some(line) = printer.line(&event) {
            println!("{line}");
        }
    }
    let finished = runtime.wait_for_run(run.id.as_str()).await?;
    let transcript = runtime.transcript(finished.workspace_id.as_str())?;
    let published: Vec<_> = transcript
        .iter()
        .filter(|entry| entry.run_id == finished.id.as_str())
        .collect();
    match published.last() {
        Some(entry) => {
            println!(
                "\n── committed message {} ({}) ──",
                entry.message_id, entry.path
            );
            println!("{}", entry.content.trim_end());
            println!("──");
        }
        None => println!("\n(no message was committed)"),
    }
    println!("run {} ended: {}", finished.id, finished.status.as_str());
    if finished.status != tt_runtime::AgentRunStatus::Completed {
        anyhow::bail!(
            "the demo run did not complete (status {})",
            finished.status.as_str()
        );
    }
    Ok(())
}
