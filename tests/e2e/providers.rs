//! Full runs through each HTTP provider adapter: a lead delegates to a helper, the helper
//! returns, the lead awaits, writes, commits and finishes, all against a fake model server on
//! 127.0.0.1 that answers in the provider's real wire format (streamed or whole).

use serde_json::{Value, json};
use std::sync::Arc;
use tt_adapter_provider_anthropic::{AnthropicConfig, AnthropicProvider};
use tt_adapter_provider_openai::{OpenAiConfig, OpenAiProvider};
use tt_runtime::{
    AgentProfileDefinition, AgentRunStatus, AgentRuntime, AgentRuntimeBuilder, CommitBridgeChoice,
    ConnectionSpec, ModelProvider, ReadEventsRequest, TaskStatus, build_provider,
};

use crate::support::start_request;
use tt_provider_http::test_server::{Recorded, Reply, TestServer};

const LEAD: &str = include_str!("../../crates/tt-cli/scenarios/writers-room/writer.json");
const HELPER: &str =
    include_str!("../../crates/tt-cli/scenarios/writers-room/continuity-critic.json");
pub(crate) const SCENE: &str = "The lamp turned all night.\n";
const INPUT_TOKENS: u64 = 100;
const OUTPUT_TOKENS: u64 = 10;

fn profile(text: &str, id: &str) -> AgentProfileDefinition {
    let mut profile: AgentProfileDefinition = serde_json::from_str(text).unwrap();
    profile.id = tt_domain::ids::ProfileId::parse(id).unwrap();
    if id == "helper" {
        // The demo's critic hands a claim on to a fact checker; this helper only works.
        profile.delegation.can_delegate = false;
        profile.delegation.allow_nested_delegation = false;
        profile
            .tools
            .allow
            .retain(|tool| !tool.starts_with("agent."));
    }
    profile
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Agent {
    Lead,
    Helper,
}

/// What the fake model answers: which agent (from the tools it was offered) and which of its
/// turns (from the assistant messages so far) decide the tool calls.
fn plan(agent: Agent, turn: usize) -> Option<Vec<(String, &'static str, Value)>> {
    let call = |name: &'static str, args: Value| {
        let who = match agent {
            Agent::Lead => "lead",
            Agent::Helper => "helper",
        };
        (format!("{who}_{turn}_{name}"), name, args)
    };
    let calls = match (agent, turn) {
        (Agent::Lead, 0) => vec![call(
            "agent_delegate",
            json!({"agentId": "helper", "task": {"objective": "Check the scene for continuity."}}),
        )],
        (Agent::Lead, 1) => vec![call(
            "agent_await",
            json!({"mode": "allCompleted", "timeoutMs": 300_000}),
        )],
        (Agent::Lead, 2) => vec![call(
            "workspace_write_file",
            json!({"path": "output/main.md", "content": SCENE}),
        )],
        (Agent::Lead, 3) => vec![call("workspace_commit", json!({}))],
        (Agent::Lead, 4) => vec![call("workspace_finish", json!({}))],
        (Agent::Helper, 0) => vec![call(
            "workspace_write_file",
            json!({"path": "scratch/notes.md", "content": "No breaks found.\n"}),
        )],
        (Agent::Helper, 1) => vec![call(
            "task_return",
            json!({"summary": "The scene is consistent."}),
        )],
        _ => return None,
    };
    Some(calls)
}

fn agent_of(tool_names: &[&str]) -> Option<Agent> {
    if tool_names.contains(&"agent_delegate") {
        Some(Agent::Lead)
    } else if tool_names.contains(&"task_return") {
        Some(Agent::Helper)
    } else {
        None
    }
}

fn assistant_turns(body: &Value) -> usize {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "assistant")
        .count()
}

/// Cuts an SSE body every few characters, so lines and JSON are split across network pieces.
fn pieces(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(37)
        .map(|chunk| chunk.iter().collect())
        .collect()
}

fn refusal(message: &str) -> Reply {
    Reply::json(400, &json!({"error": {"message": message}}))
}

// ---- OpenAI Chat Completions ----------------------------------------------------------------

pub(crate) fn openai_reply(request: &Recorded, _number: usize) -> Reply {
    let body = &request.body;
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| tool["function"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    let Some(agent) = agent_of(&tools) else {
        return refusal("unknown agent");
    };
    let Some(calls) = plan(agent, assistant_turns(body)) else {
        return refusal("the fake model has no answer for this turn");
    };
    let usage = json!({"prompt_tokens": INPUT_TOKENS, "completion_tokens": OUTPUT_TOKENS});
    if body["stream"] != json!(true) {
        let tool_calls: Vec<Value> = calls
            .iter()
            .map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}))
            .collect();
        return Reply::json(
            200,
            &json!({"id": "chatcmpl-e2e", "object": "chat.completion", "model": "e2e-model",
                "choices": [{"index": 0, "finish_reason": "tool_calls",
                    "message": {"role": "assistant", "content": null, "tool_calls": tool_calls}}],
                "usage": usage}),
        );
    }
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-e2e", "object": "chat.completion.chunk", "model": "e2e-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut chunks = vec![chunk(
        json!({"role": "assistant", "content": null}),
        Value::Null,
    )];
    for (index, (id, name, args)) in calls.iter().enumerate() {
        let text = args.to_string();
        let (head, tail) = text.split_at(text.len() / 2);
        chunks.push(chunk(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": head}}]}),
            Value::Null,
        ));
        chunks.push(chunk(
            json!({"tool_calls": [{"index": index, "function": {"arguments": tail}}]}),
            Value::Null,
        ));
    }
    chunks.push(chunk(json!({}), json!("tool_calls")));
    chunks.push(json!({"id": "chatcmpl-e2e", "object": "chat.completion.chunk", "model": "e2e-model", "choices": [], "usage": usage}));
    let mut text: String = chunks
        .iter()
        .map(|chunk| format!("data: {chunk}\n\n"))
        .collect();
    text.push_str("data: [DONE]\n\n");
    Reply::sse(pieces(&text))
}

// ---- Anthropic Messages ---------------------------------------------------------------------

const THINKING_SIGNATURE: &str = "EqQBCgIYAhIMe2eSignatureOfTheLeadsThinking";

pub(crate) fn anthropic_reply(request: &Recorded, _number: usize) -> Reply {
    let body = &request.body;
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| tool["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    let Some(agent) = agent_of(&tools) else {
        return refusal("unknown agent");
    };
    let turn = assistant_turns(body);
    let Some(calls) = plan(agent, turn) else {
        return refusal("the fake model has no answer for this turn");
    };
    let thinks = agent == Agent::Lead && turn == 0;
    if body["stream"] != json!(true) {
        let mut content = Vec::new();
        if thinks {
            content.push(json!({"type": "thinking", "thinking": "A reviewer first.", "signature": THINKING_SIGNATURE}));
        }
        content.extend(calls.iter().map(
            |(id, name, args)| json!({"type": "tool_use", "id": id, "name": name, "input": args}),
        ));
        return Reply::json(
            200,
            &json!({"id": "msg_e2e", "type": "message", "role": "assistant", "model": "e2e-model",
                "content": content, "stop_reason": "tool_use",
                "usage": {"input_tokens": INPUT_TOKENS, "output_tokens": OUTPUT_TOKENS}}),
        );
    }
    let mut events = vec![
        json!({"type": "message_start", "message": {"id": "msg_e2e", "type": "message",
        "role": "assistant", "model": "e2e-model", "content": [], "stop_reason": null,
        "usage": {"input_tokens": INPUT_TOKENS, "output_tokens": 1}}}),
    ];
    let mut index = 0;
    if thinks {
        events.push(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}));
        events.push(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "A reviewer "}}));
        events.push(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "first."}}));
        events.push(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": THINKING_SIGNATURE}}));
        events.push(json!({"type": "content_block_stop", "index": 0}));
        index = 1;
    }
    for (id, name, args) in &calls {
        let text = args.to_string();
        let (head, tail) = text.split_at(text.len() / 2);
        events.push(json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}));
        for part in [head, tail] {
            events.push(json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": part}}));
        }
        events.push(json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    events.push(json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": OUTPUT_TOKENS}}));
    events.push(json!({"type": "message_stop"}));
    let text: String = events
        .iter()
        .map(|event| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap()
            )
        })
        .collect();
    Reply::sse(pieces(&text))
}

// ---- The run ------------------------------------------------------------------------------

pub(crate) async fn runtime_with(
    dir: &tempfile::TempDir,
    provider: Arc<dyn ModelProvider>,
) -> AgentRuntime {
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(provider)
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap();
    install_profiles(&runtime).await;
    runtime
}

/// Saves the lead and the helper it delegates to.
pub(crate) async fn install_profiles(runtime: &AgentRuntime) {
    runtime.save_profile(profile(LEAD, "lead")).await.unwrap();
    runtime
        .save_profile(profile(HELPER, "helper"))
        .await
        .unwrap();
}

/// Runs the lead to the end and checks what every provider run must show; returns the
/// requests the server received, in arrival order.
async fn full_run(runtime: &AgentRuntime, server: &mut TestServer) -> (String, Vec<Recorded>) {
    let mut request = start_request();
    request.profile_id = Some("lead".into());
    let run = runtime.start_run(request).await.unwrap();
    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);

    let projection = runtime.timeline_projection(run.id.as_str()).await.unwrap();
    assert_eq!(projection.invocations.len(), 2);
    assert_eq!(projection.delegation_edges.len(), 1);
    assert_eq!(projection.delegation_edges[0].status, TaskStatus::Completed);
    let published = runtime.transcript(run.workspace_id.as_str()).await.unwrap();
    assert_eq!(published.len(), 1);
    assert_eq!(published[0].content, SCENE);
    let notes = runtime
        .read_workspace_file(run.id.as_str(), "scratch/notes.md")
        .await
        .unwrap();
    assert_eq!(notes.text, "No breaks found.\n");

    // Five lead turns and two helper turns, each with the fake usage.
    let usage = runtime.usage(run.id.as_str()).await.unwrap();
    assert_eq!(usage.model_calls, 7);
    assert_eq!(usage.input_tokens, 7 * INPUT_TOKENS);
    assert_eq!(usage.output_tokens, 7 * OUTPUT_TOKENS);

    // The model calls only: an OpenAI-compatible connection first asks the server for its
    // window (`/props`, `/v1/models`, `/api/show`, `/api/ps`), which this server does not know.
    let mut requests = Vec::new();
    while requests.len() < 7 {
        let recorded = server.next_request().await;
        if recorded.path.ends_with("/chat/completions") || recorded.path.ends_with("/messages") {
            requests.push(recorded);
        }
    }
    for recorded in &requests {
        assert_eq!(recorded.body["model"], "e2e-model");
    }
    (run.id.to_string(), requests)
}

fn find<'a>(requests: &'a [Recorded], tool: &str, turn: usize) -> &'a Recorded {
    requests
        .iter()
        .find(|recorded| {
            recorded.body.to_string().contains(&format!("\"{tool}\""))
                && assistant_turns(&recorded.body) == turn
        })
        .unwrap()
}

async fn has_model_deltas(runtime: &AgentRuntime, run_id: &str) -> bool {
    let page = runtime
        .read_events(ReadEventsRequest {
            run_id: run_id.to_owned(),
            limit: Some(1000),
            ..Default::default()
        })
        .await
        .unwrap();
    page.events
        .iter()
        .any(|event| event.event_type == "model_delta")
}

/// The provider fields of the run's first `provider_state_updated`.
async fn provider_state(runtime: &AgentRuntime, run_id: &str) -> Value {
    let page = runtime
        .read_events(ReadEventsRequest {
            run_id: run_id.to_owned(),
            limit: Some(1000),
            ..Default::default()
        })
        .await
        .unwrap();
    page.events
        .into_iter()
        .find(|event| event.event_type == "provider_state_updated")
        .map(|event| event.payload["providerState"].clone())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_run_through_the_openai_adapter_streamed() {
    let mut server = TestServer::start(openai_reply).await;
    let provider = OpenAiProvider::new(
        OpenAiConfig::new(server.url("/v1"))
            .with_default_model("e2e-model")
            .with_stream(true),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime_with(&dir, Arc::new(provider)).await;
    let (run_id, requests) = full_run(&runtime, &mut server).await;
    assert!(requests.iter().all(|r| r.body["stream"] == json!(true)));
    assert!(has_model_deltas(&runtime, &run_id).await);
    let state = provider_state(&runtime, &run_id).await;
    assert_eq!(state["chatCompletionSource"], "openai");
    assert_eq!(state["providerFormat"], "openai_chat_completions");
    assert_eq!(state["transport"], "http");
    assert_eq!(state["nativeContinuation"], false);

    // The lead's second turn carries its delegate call and the result under the same id.
    let second = find(&requests, "agent_delegate", 1);
    let messages = second.body["messages"].as_array().unwrap();
    let replayed = messages.iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(
        replayed["tool_calls"][0]["id"],
        json!("lead_0_agent_delegate")
    );
    assert_eq!(replayed["content"], Value::Null);
    assert!(
        messages
            .iter()
            .any(|m| m["role"] == "tool" && m["tool_call_id"] == json!("lead_0_agent_delegate"))
    );
    // The helper saw its brief and a task_return tool.
    let helper = find(&requests, "task_return", 0);
    assert!(
        helper.body["messages"]
            .to_string()
            .contains("Check the scene for continuity.")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_run_through_an_openai_connection_spec_without_streaming() {
    let mut server = TestServer::start(openai_reply).await;
    let spec = ConnectionSpec::parse(&format!("openai:{}", server.url("/v1")))
        .unwrap()
        .with_model("e2e-model")
        .with_api_key_env("TT_AGENT_E2E_KEY_THAT_IS_NEVER_SET");
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime_with(&dir, build_provider(&spec).unwrap()).await;
    let (run_id, requests) = full_run(&runtime, &mut server).await;
    assert!(requests.iter().all(|r| r.body["stream"] == json!(false)));
    assert!(requests.iter().all(|r| r.header("authorization").is_none()));
    assert!(!has_model_deltas(&runtime, &run_id).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_run_through_the_anthropic_adapter_streamed_with_thinking_replayed() {
    let mut server = TestServer::start(anthropic_reply).await;
    let provider = AnthropicProvider::new(
        AnthropicConfig::new(server.url(""))
            .with_default_model("e2e-model")
            .with_api_key("sk-ant-e2e")
            .with_stream(true),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime_with(&dir, Arc::new(provider)).await;
    let (run_id, requests) = full_run(&runtime, &mut server).await;
    assert!(requests.iter().all(|r| r.path == "/v1/messages"));
    assert!(
        requests
            .iter()
            .all(|r| r.header("x-api-key") == Some("sk-ant-e2e"))
    );
    assert!(has_model_deltas(&runtime, &run_id).await);

    let second = find(&requests, "agent_delegate", 1);
    let messages = second.body["messages"].as_array().unwrap();
    let (position, replayed) = messages
        .iter()
        .enumerate()
        .find(|(_, m)| m["role"] == "assistant")
        .unwrap();
    assert_eq!(
        replayed["content"],
        json!([
            {"type": "thinking", "thinking": "A reviewer first.", "signature": THINKING_SIGNATURE},
            {"type": "tool_use", "id": "lead_0_agent_delegate", "name": "agent_delegate",
             "input": {"agentId": "helper", "task": {"objective": "Check the scene for continuity."}}},
        ])
    );
    let results = &messages[position + 1];
    assert_eq!(results["role"], "user");
    assert_eq!(results["content"][0]["type"], "tool_result");
    assert_eq!(
        results["content"][0]["tool_use_id"],
        "lead_0_agent_delegate"
    );
    assert!(
        second.body["system"][0]["text"]
            .as_str()
            .is_some_and(|s| !s.is_empty()),
        "the system prompt goes out as one cached text block"
    );
}
