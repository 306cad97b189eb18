//! A server on 127.0.0.1:0 over a runtime with a scripted model, and a small HTTP client.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use tt_host_http::{CommitBridgeMode, HostHttpServer, ServerInfo, ServerOptions};
use tt_runtime::{
    AgentProfileDefinition, AgentRuntime, AgentRuntimeBuilder, CommitBridgeChoice, ModelReply,
    PromptBrokerChoice, ScriptedProvider, StartRunRequest,
};

pub(crate) struct TestServer {
    pub addr: std::net::SocketAddr,
    pub token: String,
    pub url: String,
    pub runtime: Arc<AgentRuntime>,
    pub client: reqwest::Client,
    _dir: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    served: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

/// One writer that drafts, patches, publishes and finishes.
pub(crate) fn writer_script() -> String {
    json!({"schemaVersion": 1, "agents": {"default-writer": [
        {"text": "Drafting.", "toolCalls": [{"id": "c1", "name": "workspace_write_file",
            "arguments": {"path": "output/main.md", "content": "# Scene\n\nThe lamp was dark.\n"}}]},
        {"toolCalls": [{"id": "c2", "name": "workspace_apply_patch",
            "arguments": {"path": "output/main.md", "old_string": "The lamp was dark.",
                          "new_string": "The lamp burned."}}]},
        {"toolCalls": [{"id": "c3", "name": "workspace_commit", "arguments": {"reason": "done"}}]},
        {"toolCalls": [{"id": "c4", "name": "workspace_finish", "arguments": {}}]}
    ]}})
    .to_string()
}

pub(crate) async fn server(
    script: &str,
    bridge: CommitBridgeChoice,
    max_body: Option<usize>,
) -> TestServer {
    let provider = Arc::new(ScriptedProvider::from_json_str(script).unwrap());
    server_with_provider(provider, bridge, max_body).await
}

pub(crate) async fn server_with_provider(
    provider: Arc<dyn tt_runtime::ModelProvider>,
    bridge: CommitBridgeChoice,
    max_body: Option<usize>,
) -> TestServer {
    server_in(tempfile::tempdir().unwrap(), provider, bridge, max_body).await
}

/// A server over the data dir `dir` (which may already hold runs).
pub(crate) async fn server_in(
    dir: tempfile::TempDir,
    provider: Arc<dyn tt_runtime::ModelProvider>,
    bridge: CommitBridgeChoice,
    max_body: Option<usize>,
) -> TestServer {
    server_with_features(dir, provider, bridge, max_body, Default::default()).await
}

/// A server whose page offers the optional controls `features` turns on.
pub(crate) async fn server_with_features(
    dir: tempfile::TempDir,
    provider: Arc<dyn tt_runtime::ModelProvider>,
    bridge: CommitBridgeChoice,
    max_body: Option<usize>,
    features: tt_host_http::Features,
) -> TestServer {
    let host_commits = matches!(bridge, CommitBridgeChoice::HostApi);
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(provider)
        .commit_bridge(bridge)
        .prompt_broker(PromptBrokerChoice::Templates)
        .build()
        .unwrap();
    server_over(dir, runtime, host_commits, max_body, features).await
}

/// A server over a runtime the test built on `dir`.
pub(crate) async fn server_over(
    dir: tempfile::TempDir,
    runtime: AgentRuntime,
    host_commits: bool,
    max_body: Option<usize>,
    features: tt_host_http::Features,
) -> TestServer {
    let runtime = Arc::new(runtime);
    let mut options = ServerOptions {
        info: ServerInfo {
            connection: "scripted".to_owned(),
            commit_bridge: if host_commits {
                CommitBridgeMode::Host
            } else {
                CommitBridgeMode::Transcript
            },
            suggested_profiles: vec!["default-writer".to_owned()],
            default_request: Some("Write a scene.".to_owned()),
            features,
        },
        ..ServerOptions::default()
    };
    if let Some(max) = max_body {
        options.max_body_bytes = max;
    }
    let server = HostHttpServer::bind(Arc::clone(&runtime), options)
        .await
        .unwrap();
    let addr = server.local_addr();
    let token = server.token().to_owned();
    let url = server.page_url();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(server.serve(async move {
        let _ = stopped.await;
    }));
    TestServer {
        addr,
        token,
        url,
        runtime,
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap(),
        _dir: dir,
        stop: Some(stop),
        served: Some(served),
    }
}

/// Writes the connection file `local` (a model `small` at a port nothing listens on) to the
/// runtime's data dir.
pub(crate) fn write_local_connection(runtime: &AgentRuntime) {
    let connections = runtime.data_dir().join("connections");
    std::fs::create_dir_all(&connections).unwrap();
    std::fs::write(
        connections.join("local.json"),
        r#"{"connection": "openai:http://127.0.0.1:9/v1", "model": "small"}"#,
    )
    .unwrap();
}

/// The reply in round `round` of a writer that gives `replies` in its first rounds, then
/// commits, then finishes.
pub(crate) fn writer_turn(round: u32, replies: &[ModelReply]) -> ModelReply {
    let index = usize::try_from(round).unwrap() - 1;
    match replies.get(index) {
        Some(reply) => reply.clone(),
        None if index == replies.len() => ModelReply::tool_call("workspace_commit", json!({})),
        None => ModelReply::tool_call("workspace_finish", json!({})),
    }
}

/// Writes `content` to output/main.md.
pub(crate) fn write_main(content: &str) -> ModelReply {
    ModelReply::tool_call(
        "workspace_write_file",
        json!({"path": "output/main.md", "content": content}),
    )
}

/// Runs the writer of [`writer_script`] to its end once per chat of `chats`, on a runtime over
/// `dir` that then shuts down (so a test can damage what it stored): the writer's provider and
/// each run's id and directory.
pub(crate) async fn finished_runs(
    dir: &std::path::Path,
    chats: &[&str],
) -> (Arc<ScriptedProvider>, Vec<(String, PathBuf)>) {
    let provider = Arc::new(ScriptedProvider::from_json_str(&writer_script()).unwrap());
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir)
        .commit_bridge(CommitBridgeChoice::Transcript)
        .provider(provider.clone())
        .build()
        .unwrap();
    let mut ids = Vec::new();
    for chat in chats {
        let run = runtime
            .start_run(StartRunRequest::new(*chat, "Write a scene."))
            .await
            .unwrap();
        runtime.wait_for_run(run.id.as_str()).await.unwrap();
        ids.push(run.id.to_string());
    }
    runtime.shutdown().await.unwrap();
    drop(runtime);
    let runs = ids
        .into_iter()
        .map(|id| {
            let run_dir = std::fs::read_dir(dir.join("chats"))
                .unwrap()
                .flatten()
                .map(|chat| chat.path().join("runs").join(&id))
                .find(|path| path.exists())
                .unwrap();
            (id, run_dir)
        })
        .collect();
    (provider, runs)
}

/// Cuts the last line (the run's end) off the journal of the run stored at `run_dir`; the
/// journal's lines before the cut.
pub(crate) fn cut_journal_end(run_dir: &std::path::Path) -> Vec<String> {
    let journal = run_dir.join("events.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    std::fs::write(&journal, lines[..lines.len() - 1].join("\n") + "\n").unwrap();
    lines
}

/// Installs profiles from JSON texts.
pub(crate) async fn install_profiles(runtime: &AgentRuntime, profiles: &[&str]) {
    for text in profiles {
        let definition: AgentProfileDefinition = serde_json::from_str(text).unwrap();
        runtime.save_profile(definition).await.unwrap();
    }
}

/// A status and a parsed JSON body (Null when empty).
pub(crate) struct Answer {
    pub status: u16,
    pub body: Value,
    pub headers: reqwest::header::HeaderMap,
}

impl Answer {
    /// Asserts the answer is a refusal with `status` and the coded error `code`.
    pub(crate) fn assert_refused(&self, status: u16, code: &str) {
        assert_eq!(self.status, status, "{}", self.body);
        assert_eq!(self.body["code"], code, "{}", self.body);
    }
}

impl TestServer {
    /// Stops the server and waits until it has stopped serving.
    pub(crate) async fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(served) = self.served.take() {
            served.await.unwrap().unwrap();
        }
    }

    pub(crate) fn endpoint(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// A `method` request to `path` carrying the token, for a test to add headers or a body to.
    pub(crate) fn authed(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.client
            .request(method, self.endpoint(path))
            .header("x-tt-token", &self.token)
    }

    pub(crate) async fn send(&self, request: reqwest::RequestBuilder) -> Answer {
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response.bytes().await.unwrap();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        };
        Answer {
            status,
            body,
            headers,
        }
    }

    pub(crate) async fn get(&self, path: &str) -> Answer {
        self.send(self.authed(Method::GET, path)).await
    }

    pub(crate) async fn post(&self, path: &str, body: &Value) -> Answer {
        self.send(self.json_request(Method::POST, path, body)).await
    }

    /// A `method` request to `path` carrying the token and `body` as JSON.
    pub(crate) fn json_request(
        &self,
        method: Method,
        path: &str,
        body: &Value,
    ) -> reqwest::RequestBuilder {
        self.authed(method, path)
            .header("content-type", "application/json")
            .body(body.to_string())
    }

    /// Posts `action` (`cancel`, `resume`, `abandon`, …) to the run `run_id`, with no body
    /// but `{}`.
    pub(crate) async fn act(&self, run_id: &str, action: &str) -> Answer {
        self.post(&format!("/api/runs/{run_id}/{action}"), &json!({}))
            .await
    }

    /// Starts a run of `profile` and returns its id.
    pub(crate) async fn start(&self, profile: &str, request: &str) -> String {
        let answer = self
            .post(
                "/api/runs",
                &json!({"stableChatId": "http-test", "profileId": profile, "userRequest": request}),
            )
            .await;
        assert_eq!(answer.status, 201, "{}", answer.body);
        answer.body["id"].as_str().unwrap().to_owned()
    }

    /// Reads the whole SSE stream of a run (until `end`), as (id, event name, data) triples.
    pub(crate) async fn read_stream(
        &self,
        run_id: &str,
        after: Option<u64>,
        last_event_id: Option<u64>,
    ) -> Vec<(Option<u64>, String, Value)> {
        let mut path = format!("/api/runs/{run_id}/stream");
        if let Some(after) = after {
            path.push_str(&format!("?after={after}"));
        }
        let mut request = self.authed(Method::GET, &path);
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id.to_string());
        }
        let mut response = request.send().await.unwrap();
        assert_eq!(response.status().as_u16(), 200);
        assert_eq!(
            response.headers()["content-type"].to_str().unwrap(),
            "text/event-stream"
        );
        let mut text = String::new();
        while let Some(chunk) = response.chunk().await.unwrap() {
            text.push_str(&String::from_utf8_lossy(&chunk));
        }
        parse_sse(&text)
    }
}

/// Splits an SSE body into messages (comments such as keep-alives are skipped).
pub(crate) fn parse_sse(text: &str) -> Vec<(Option<u64>, String, Value)> {
    text.split("\n\n")
        .filter(|block| block.lines().any(|line| line.starts_with("data:")))
        .map(|block| {
            let mut id = None;
            let mut name = "message".to_owned();
            let mut data = String::new();
            for line in block.lines() {
                if let Some(rest) = line.strip_prefix("id:") {
                    id = rest.trim().parse().ok();
                } else if let Some(rest) = line.strip_prefix("event:") {
                    name = rest.trim().to_owned();
                } else if let Some(rest) = line.strip_prefix("data:") {
                    data.push_str(rest.trim_start());
                }
            }
            (id, name, serde_json::from_str(&data).unwrap())
        })
        .collect()
}
