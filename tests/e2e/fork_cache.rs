//! Fork mode and the prompt cache (docs/delegation.md, "Fork mode"; docs/benchmarks.md, "Fork
//! mode and the prompt cache"): how much of a delegated agent's first request a provider serves
//! from its cache, started in fork mode against started from its brief.
//!
//! The course is scripted (the writer drafts, then delegates and waits in the same reply, so the
//! delegated agent's first request is the next the server sees); every request still goes to a
//! server whose usage is what is measured:
//! - the Anthropic Messages wire, on a fake that caches like the API (prefixes of tools, system
//!   and message blocks written at each `cache_control` breakpoint, read at a breakpoint or up
//!   to 20 blocks before it; four bytes a token);
//! - a real llama.cpp server (its KV cache, `timings.cache_n`), when `TT_LLAMA_PREFIX` names an
//!   install prefix (the test passes without running otherwise, like the window tests).

use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tt_adapter_provider_anthropic::{AnthropicConfig, AnthropicProvider};
use tt_domain::profile::AgentProfileDefinition;
use tt_ports::{ModelError, ModelProvider};
use tt_provider_http::test_server::{Recorded, Reply, TestServer};
use tt_runtime::{
    AgentRunStatus, AgentRuntime, AgentRuntimeBuilder, CommitBridgeChoice, FnProvider, ModelReply,
    ReadEventsRequest,
};

use crate::real_llama::Steered;

/// The draft the writer writes first: it is in every later request of the writer.
fn draft() -> String {
    (1..=60)
        .map(|line| {
            format!("Line {line}: the keeper climbs the stair and counts ship {line} at dusk.\n")
        })
        .collect()
}

fn writer_profile() -> AgentProfileDefinition {
    let mut profile = tt_domain::profile::default_writer_definition();
    profile.id = tt_domain::ids::ProfileId::parse("writer").unwrap();
    profile.delegation.can_delegate = true;
    profile.tools.allow = [
        "agent.delegate",
        "agent.await",
        "workspace.list_files",
        "workspace.read_file",
        "workspace.write_file",
        "workspace.commit",
        "workspace.finish",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    profile
}

fn critic_profile() -> AgentProfileDefinition {
    use tt_domain::workspace::WorkspaceRoot;
    let mut profile = tt_domain::profile::default_writer_definition();
    profile.id = tt_domain::ids::ProfileId::parse("critic").unwrap();
    profile.run.direct_runnable = false;
    profile.run.presentation = tt_domain::run::Presentation::Background;
    profile.delegation.can_delegate = false;
    profile.delegation.callable = true;
    profile.delegation.allow_as_subagent = true;
    profile.delegation.allow_fork = true;
    profile.tools.allow = ["workspace.read_file", "workspace.write_file"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    profile.workspace.visible_roots = vec![WorkspaceRoot::Output, WorkspaceRoot::Scratch];
    profile.workspace.writable_roots = vec![WorkspaceRoot::Scratch];
    profile.output.artifacts[0].path = "scratch/critic.md".into();
    profile.output.artifacts[0].required = false;
    profile
}

/// The scripted course: the writer drafts, delegates (in `mode`) and waits in one reply,
/// publishes and finishes; the critic answers at once (in fork mode in plain text, from its
/// brief through `task_return`).
fn course(mode: &'static str) -> FnProvider {
    FnProvider::new(move |request| {
        let reply = match (request.agent_profile_id.as_str(), request.round) {
            ("writer", 1) => ModelReply::tool_call(
                "workspace_write_file",
                json!({"path": "output/main.md", "content": draft()}),
            ),
            ("writer", 2) => ModelReply::tool_call(
                "agent_delegate",
                json!({"agentId": "critic", "mode": mode, "task": {"objective": "Check the draft for continuity slips."}}),
            )
            .with_tool_call("agent_await", json!({"mode": "allCompleted"})),
            ("writer", 3) => ModelReply::tool_call("workspace_commit", json!({})),
            ("writer", _) => ModelReply::tool_call("workspace_finish", json!({})),
            ("critic", _) if mode == "fork" => ModelReply::text("No slips found."),
            ("critic", _) => ModelReply::tool_call("task_return", json!({"summary": "No slips found."})),
            _ => {
                return Err(ModelError::Other(format!(
                    "no answer for {}",
                    request.agent_profile_id
                )));
            }
        };
        Ok(reply)
    })
}

/// Runs the course in `mode` over `real` (one token asked of it per request); the critic's
/// first request's input and cached tokens as the server reported them.
async fn critic_first_request(real: Arc<dyn ModelProvider>, mode: &'static str) -> (u64, u64) {
    let mut steered = Steered::new(real, Arc::new(course(mode)));
    steered.one_token = true;
    let dir = tempfile::tempdir().unwrap();
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(Arc::new(steered) as Arc<dyn ModelProvider>)
        .provider_model_info(tt_runtime::ConnectionModelInfo {
            call_deadline: Some(Duration::from_secs(1800)),
            ..Default::default()
        })
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap();
    runtime.save_profile(writer_profile()).await.unwrap();
    runtime.save_profile(critic_profile()).await.unwrap();
    let mut request = crate::support::start_request();
    request.profile_id = Some("writer".into());
    let run = runtime.start_run(request).await.unwrap();
    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed, "{run:?}");
    first_usage_of(&runtime, run.id.as_str(), "critic").await
}

/// Input and cached tokens of `profile`'s first model call in the run's journal.
async fn first_usage_of(runtime: &AgentRuntime, run_id: &str, profile: &str) -> (u64, u64) {
    let events = runtime
        .read_events(ReadEventsRequest {
            run_id: run_id.to_owned(),
            limit: Some(1000),
            ..Default::default()
        })
        .await
        .unwrap()
        .events;
    let critic = events
        .iter()
        .find(|event| {
            event.event_type == "agent_invocation_created" && event.payload["profileId"] == profile
        })
        .map(|event| event.payload["invocationId"].clone())
        .unwrap();
    let usage = events
        .iter()
        .find(|event| {
            event.event_type == "model_completed" && event.payload["invocationId"] == critic
        })
        .map(|event| event.payload["usage"].clone())
        .unwrap();
    let count = |name: &str| usage[name].as_u64().unwrap_or(0);
    (count("inputTokens"), count("cachedInputTokens"))
}

fn share(input: u64, cached: u64) -> f64 {
    if input == 0 {
        0.0
    } else {
        cached as f64 / input as f64
    }
}

// ---- the Anthropic wire ---------------------------------------------------------------------

/// The blocks of a Messages request in the order the API caches them (tools, system, then
/// each message's content blocks, with their role), without their `cache_control`, and the
/// indexes of the blocks that carried one.
fn blocks(body: &Value) -> (Vec<String>, Vec<usize>) {
    let mut blocks = Vec::new();
    let mut breakpoints = Vec::new();
    let mut push = |role: &str, block: &Value| {
        let mut block = block.clone();
        if let Some(object) = block.as_object_mut()
            && object.remove("cache_control").is_some()
        {
            breakpoints.push(blocks.len());
        }
        blocks.push(format!("{role}:{block}"));
    };
    for tool in body["tools"].as_array().into_iter().flatten() {
        push("tool", tool);
    }
    match &body["system"] {
        Value::String(text) => push("system", &json!({"type": "text", "text": text})),
        Value::Array(system) => system.iter().for_each(|block| push("system", block)),
        _ => {}
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        let role = message["role"].as_str().unwrap_or_default();
        match &message["content"] {
            Value::String(text) => push(role, &json!({"type": "text", "text": text})),
            Value::Array(content) => content.iter().for_each(|block| push(role, block)),
            _ => {}
        }
    }
    (blocks, breakpoints)
}

/// The API's answer "ok", with the usage its cache gives `request`: the longest cached prefix
/// that ends at a breakpoint or up to 20 blocks before one is read; the prefixes up to each
/// breakpoint are written.
fn cached_reply(cache: &Mutex<HashSet<String>>, request: &Recorded) -> Reply {
    let (blocks, breakpoints) = blocks(&request.body);
    let prefixes: Vec<String> = blocks
        .iter()
        .scan(String::new(), |prefix, block| {
            prefix.push_str(block);
            prefix.push('\n');
            Some(prefix.clone())
        })
        .collect();
    let tokens = |text: &str| text.len().div_ceil(4) as u64;
    let total = prefixes.last().map_or(0, |prefix| tokens(prefix));
    let mut cache = cache.lock().unwrap();
    let read = breakpoints
        .iter()
        .flat_map(|&at| (at.saturating_sub(20)..=at).rev())
        .filter(|&at| cache.contains(&prefixes[at]))
        .map(|at| tokens(&prefixes[at]))
        .max()
        .unwrap_or(0);
    let written = breakpoints
        .last()
        .map_or(0, |&at| tokens(&prefixes[at]))
        .saturating_sub(read);
    for &at in &breakpoints {
        cache.insert(prefixes[at].clone());
    }
    Reply::json(
        200,
        &json!({
            "id": "msg_fake", "type": "message", "role": "assistant", "model": "fake",
            "content": [{"type": "text", "text": "ok"}],
            "stop_reason": "end_turn",
            "usage": {
                "input_tokens": total - read - written,
                "cache_read_input_tokens": read,
                "cache_creation_input_tokens": written,
                "output_tokens": 1,
            },
        }),
    )
}

async fn anthropic_first_request(mode: &'static str) -> (u64, u64) {
    let cache = Arc::new(Mutex::new(HashSet::new()));
    let server = TestServer::start(move |request, _| cached_reply(&cache, request)).await;
    let provider = AnthropicProvider::new(
        AnthropicConfig::new(server.url(""))
            .with_default_model("fake")
            .with_api_key("sk-ant-e2e"),
    )
    .unwrap();
    critic_first_request(Arc::new(provider), mode).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fork_mode_on_the_anthropic_wire_reads_most_of_the_first_request_from_the_cache() {
    let (fork_input, fork_cached) = anthropic_first_request("fork").await;
    let (brief_input, brief_cached) = anthropic_first_request("brief").await;
    eprintln!(
        "anthropic wire: fork mode {fork_cached} of {fork_input} input tokens cached ({:.1}%), brief mode {brief_cached} of {brief_input} ({:.1}%)",
        100.0 * share(fork_input, fork_cached),
        100.0 * share(brief_input, brief_cached),
    );
    assert!(share(fork_input, fork_cached) >= 0.8);
    assert!(share(brief_input, brief_cached) < share(fork_input, fork_cached));
}

// ---- a real llama.cpp server ----------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_llama_fork_mode_reads_most_of_the_first_request_from_the_kv_cache() {
    let Some(prefix) = crate::real_llama_window::prefix() else {
        return;
    };
    // One slot: the KV cache holds the request the server served last.
    let server = crate::real_llama_window::start(&prefix, 8192, 1).await;
    let real = crate::real_llama::llama_provider(&server);
    let (fork_input, fork_cached) = critic_first_request(Arc::clone(&real), "fork").await;
    let (brief_input, brief_cached) = critic_first_request(real, "brief").await;
    eprintln!(
        "llama.cpp: fork mode {fork_cached} of {fork_input} input tokens cached ({:.1}%), brief mode {brief_cached} of {brief_input} ({:.1}%)",
        100.0 * share(fork_input, fork_cached),
        100.0 * share(brief_input, brief_cached),
    );
    assert!(share(fork_input, fork_cached) >= 0.8);
    assert!(share(brief_input, brief_cached) < share(fork_input, fork_cached));
}
