//! Shared helpers: building a runtime over a temp data dir and a scripted model.

use serde_json::json;
use std::sync::Arc;
use tempfile::TempDir;
use tt_runtime::{
    AgentRuntime, AgentRuntimeBuilder, CommitBridgeChoice, PromptMessage, PromptRole,
    ScriptedProvider, StartRunRequest,
};

pub(crate) struct Env {
    pub dir: TempDir,
    pub runtime: AgentRuntime,
}

pub(crate) fn env(script: serde_json::Value, bridge: CommitBridgeChoice) -> Env {
    let dir = tempfile::tempdir().expect("temp dir");
    let runtime = runtime_at(&dir, script, bridge);
    Env { dir, runtime }
}

pub(crate) fn runtime_at(
    dir: &TempDir,
    script: serde_json::Value,
    bridge: CommitBridgeChoice,
) -> AgentRuntime {
    let provider = ScriptedProvider::from_json_str(&script.to_string()).expect("script");
    AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(Arc::new(provider))
        .commit_bridge(bridge)
        .build()
        .expect("runtime")
}

pub(crate) fn start_request() -> StartRunRequest {
    StartRunRequest {
        stable_chat_id: "e2e-chat".into(),
        conversation_kind: tt_runtime::ConversationKind::Character,
        chat_ref: json!({"kind": "character", "characterId": "c", "fileName": "f"}),
        generation_type: json!("normal"),
        profile_id: None,
        history: vec![PromptMessage {
            role: PromptRole::User,
            content: "Hello".into(),
        }],
        user_request: Some("Write a scene.".into()),
        persist_base_state_id: None,
        skill_scope_refs: Default::default(),
        connection_ref: None,
        generation: Default::default(),
    }
}

/// write -> read -> patch -> commit -> finish for the default writer.
pub(crate) fn writer_script() -> serde_json::Value {
    json!({
        "schemaVersion": 1,
        "agents": {
            "default-writer": [
                {"toolCalls": [{"id": "w", "name": "workspace_write_file", "arguments": {"path": "output/main.md", "content": "Night fell.\n"}}]},
                {"toolCalls": [
                    {"id": "r", "name": "workspace_read_file", "arguments": {"path": "output/main.md"}},
                    {"id": "m", "name": "workspace_write_file", "arguments": {"path": "persist/facts.md", "content": "It is night.\n"}}
                ]},
                {"toolCalls": [{"id": "p", "name": "workspace_apply_patch", "arguments": {"path": "output/main.md", "old_string": "Night fell.", "new_string": "Night fell over the harbour."}}]},
                {"toolCalls": [{"id": "c", "name": "workspace_commit", "arguments": {}}]},
                {"toolCalls": [{"id": "f", "name": "workspace_finish", "arguments": {}}]}
            ]
        }
    })
}
