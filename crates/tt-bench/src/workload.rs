//! The fan-out workload's run: its two profiles (the root's limits sized for N children) and
//! the request that starts it. `tt-bench fanout` times it; the Tauri plugin's channel benchmark
//! follows the same run's events.

use anyhow::{Context, Result};
use serde_json::{Value, json};
use tt_runtime::{AgentProfileDefinition, ConversationKind, StartRunRequest};

use crate::model::ROOT_PROFILE;

const ROOT_PROFILE_JSON: &str = include_str!("../profiles/fanout-root.json");
const CHILD_PROFILE_JSON: &str = include_str!("../profiles/fanout-child.json");

/// The embedded profiles, with the root's delegation limits and call budget sized for `children`.
pub fn profiles(children: u32) -> Result<[AgentProfileDefinition; 2]> {
    let mut root: Value =
        serde_json::from_str(ROOT_PROFILE_JSON).context("the embedded fanout-root profile")?;
    root["delegation"]["maxInvocationsPerRun"] = json!(children);
    root["delegation"]["maxConcurrentInvocations"] = json!(children);
    root["tools"]["maxCallsPerRun"] = json!(u64::from(children) + 16);
    let root: AgentProfileDefinition =
        serde_json::from_value(root).context("the embedded fanout-root profile")?;
    let child: AgentProfileDefinition =
        serde_json::from_str(CHILD_PROFILE_JSON).context("the embedded fanout-child profile")?;
    Ok([root, child])
}

/// The request that starts the workload's run: the root profile, asked about `children` topics.
pub fn start_request(children: u32) -> StartRunRequest {
    StartRunRequest {
        stable_chat_id: "tt-bench-fanout".to_owned(),
        conversation_kind: ConversationKind::Character,
        chat_ref: json!({ "kind": "character", "characterId": "bench", "fileName": "bench" }),
        generation_type: json!("normal"),
        profile_id: Some(ROOT_PROFILE.to_owned()),
        history: Vec::new(),
        user_request: Some(format!(
            "Investigate {children} topics in parallel and collect short notes on each."
        )),
        persist_base_state_id: None,
        skill_scope_refs: Default::default(),
        connection_ref: None,
        generation: Default::default(),
    }
}
