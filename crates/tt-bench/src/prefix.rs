//! `tt-bench prefix`: how much of each model request a provider's prompt cache can reuse, and
//! how large each profile's first request is (docs/benchmarks.md, "Cacheable prefix").
//!
//! Every request of a workload goes through a [`PrefixMeter`], which compares it with the
//! previous request of the same agent: the cacheable prefix is the tool specs plus the leading
//! messages that are byte-identical (as JSON) to the previous request's, counted in bytes.
//! `prefixShare` is that prefix over the previous request (1.0 when each request only appends
//! to the one before); `reusableInputShare` is it over the new request (what a cache holding
//! the previous request can serve). A provider caches at token granularity, so both are lower
//! bounds. Workloads: the writers'
//! room (the demo's five profiles on its scripted model), the fan-out (16 children) and a
//! reader on a small window, whose history is trimmed and compacted (the only one where the
//! share may drop below 1).
//!
//! With a server (`--server openai:http://127.0.0.1:PORT/v1`, a llama.cpp `llama-server`), each
//! profile's first request is also sent there as the runtime's adapter sends it, with an answer
//! of one token, and the server's count of its prompt tokens is reported beside the estimate;
//! the workload itself goes on with its in-process model, undelayed (the counts are awaited
//! after the run).
//!
//! [`check`] holds the figures to their bounds: every profile's first request at most
//! [`FIRST_REQUEST_BUDGET_TOKENS`] estimated tokens (the estimate the engine fits windows
//! with), and a prefix share of at least [`MIN_PREFIX_SHARE`] in every workload that is not
//! shortened to fit a small window. `tt-bench prefix` exits nonzero when they are not met.

use anyhow::{Context, Result, anyhow, ensure};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use tt_domain::context_window::{request_tokens, tools_tokens};
use tt_domain::model::AgentModelRequest;
use tt_ports::{CancellationToken, ModelProvider};
use tt_runtime::{
    AgentProfileDefinition, AgentRunStatus, AgentRuntime, AgentRuntimeBuilder, CommitBridgeChoice,
    ConnectionModelInfo, FnProvider, ModelReply, PromptBrokerChoice, ScriptedProvider,
    StartRunRequest,
};

/// The most estimated tokens a measured profile's first request may have: a 4,096-token window
/// keeps room for the work and the answer.
pub(crate) const FIRST_REQUEST_BUDGET_TOKENS: u64 = 2_000;

/// The least prefix share of a workload whose history is not shortened to fit its window.
pub(crate) const MIN_PREFIX_SHARE: f64 = 0.95;

/// One agent's requests, as bytes.
#[derive(Debug, Default)]
struct AgentRequests {
    profile: String,
    /// The previous request's messages, serialized.
    previous: Option<Vec<String>>,
    first_tokens: Option<u64>,
    first_parts: Option<FirstRequestParts>,
    /// The first agent of its profile to send a request: its first request stands for the
    /// profile's.
    profile_first: bool,
    /// The server's prompt tokens for the first request (or why there are none).
    first_server: Option<Result<u64, String>>,
    later_requests: u64,
    later_bytes: u64,
    /// Bytes of the previous request, summed over later requests.
    previous_bytes: u64,
    later_prefix_bytes: u64,
    whole_prefix_requests: u64,
}

/// What an agent's first request is made of, in estimated tokens.
#[derive(Debug, Clone)]
struct FirstRequestParts {
    messages: Vec<(String, u64)>,
    tools: Vec<(String, u64)>,
}

/// A server's count of one agent's first request: the agent's session and the prompt tokens
/// (or why there are none).
type ServerCount = tokio::task::JoinHandle<(String, Result<u64, String>)>;

/// A provider that measures every request before passing it on.
pub(crate) struct PrefixMeter {
    inner: Arc<dyn ModelProvider>,
    /// Where each agent's first request is also sent, to count its tokens.
    server: Option<Arc<dyn ModelProvider>>,
    agents: Mutex<BTreeMap<String, AgentRequests>>,
    /// The server's counts still under way.
    counting: Mutex<Vec<ServerCount>>,
    /// One count at a time: a server with one slot would keep the others waiting past their
    /// timeouts.
    one_at_a_time: Arc<tokio::sync::Semaphore>,
}

impl PrefixMeter {
    pub(crate) fn new(
        inner: Arc<dyn ModelProvider>,
        server: Option<Arc<dyn ModelProvider>>,
    ) -> Self {
        Self {
            inner,
            server,
            agents: Mutex::new(BTreeMap::new()),
            counting: Mutex::new(Vec::new()),
            one_at_a_time: Arc::new(tokio::sync::Semaphore::new(1)),
        }
    }

    /// Measures `request`, and when it is its profile's first and there is a server, has the
    /// server count its prompt tokens in the background (a slow server must not change the
    /// workload's timing).
    fn measure(&self, request: &AgentModelRequest) {
        let first = self.observe(request);
        let Some(server) = self.server.as_ref().filter(|_| first) else {
            return;
        };
        let server = Arc::clone(server);
        let request = request.clone();
        let one_at_a_time = Arc::clone(&self.one_at_a_time);
        let count = tokio::spawn(async move {
            let session = request.session.session_id.clone();
            let Ok(_turn) = one_at_a_time.acquire().await else {
                return (session, Err("the bench stopped counting".to_owned()));
            };
            let counted = match server.complete(&request, CancellationToken::new()).await {
                Ok(response) => response
                    .usage
                    .map(|usage| usage.input_tokens)
                    .ok_or_else(|| "the server reported no usage".to_owned()),
                Err(error) => Err(error.to_string()),
            };
            (session, counted)
        });
        self.counting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(count);
    }

    /// Waits for the server's counts and records them.
    async fn settle(&self) {
        let counting: Vec<ServerCount> =
            std::mem::take(&mut *self.counting.lock().unwrap_or_else(PoisonError::into_inner));
        for count in counting {
            // A count that panicked is left out: its profile shows no server figure.
            let Ok((session, counted)) = count.await else {
                continue;
            };
            let mut agents = self.agents.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(agent) = agents.get_mut(&session) {
                agent.first_server = Some(counted);
            }
        }
    }

    /// Records `request`; true when it is the first request of its profile (its first agent's
    /// first).
    fn observe(&self, request: &AgentModelRequest) -> bool {
        // A summarizing call (no tools) is not a turn of the agent's conversation.
        if request.tools.is_empty() {
            return false;
        }
        let messages: Vec<String> = request
            .messages
            .iter()
            .map(|message| serde_json::to_string(message).unwrap_or_default())
            .collect();
        let tools_bytes = serde_json::to_string(&*request.tools).map_or(0, |t| t.len()) as u64;
        let mut agents = self.agents.lock().unwrap_or_else(PoisonError::into_inner);
        let profile = request.agent_profile_id.to_string();
        let profile_seen = agents.values().any(|agent| agent.profile == profile);
        let agent = agents
            .entry(request.session.session_id.clone())
            .or_default();
        let first = agent.previous.is_none();
        if first && agent.profile.is_empty() {
            agent.profile_first = !profile_seen;
        }
        agent.profile = profile;
        let profile_first = first && agent.profile_first;
        match &agent.previous {
            None => {
                agent.first_tokens = Some(request_tokens(
                    &request.messages,
                    tools_tokens(&request.tools),
                ));
                agent.first_parts = Some(FirstRequestParts {
                    messages: request
                        .messages
                        .iter()
                        .map(|message| {
                            (
                                format!("{:?} message", message.role).to_lowercase(),
                                request_tokens(std::slice::from_ref(message), 0),
                            )
                        })
                        .collect(),
                    tools: request
                        .tools
                        .iter()
                        .map(|spec| {
                            (
                                spec.model_name.clone(),
                                tools_tokens(std::slice::from_ref(spec)),
                            )
                        })
                        .collect(),
                });
            }
            Some(previous) => {
                let total: u64 = tools_bytes + messages.iter().map(|m| m.len() as u64).sum::<u64>();
                let same = previous
                    .iter()
                    .zip(&messages)
                    .take_while(|(a, b)| a == b)
                    .count();
                let prefix: u64 =
                    tools_bytes + messages[..same].iter().map(|m| m.len() as u64).sum::<u64>();
                agent.later_requests += 1;
                agent.later_bytes += total;
                agent.previous_bytes +=
                    tools_bytes + previous.iter().map(|m| m.len() as u64).sum::<u64>();
                agent.later_prefix_bytes += prefix;
                if same == previous.len() {
                    agent.whole_prefix_requests += 1;
                }
            }
        }
        agent.previous = Some(messages);
        profile_first
    }

    /// The figures of every agent so far; `small_window`: the workload's history is shortened
    /// to fit its window, so its share is not held to [`MIN_PREFIX_SHARE`].
    fn report(&self, workload: &str, small_window: bool) -> Value {
        let agents = self.agents.lock().unwrap_or_else(PoisonError::into_inner);
        let later_requests: u64 = agents.values().map(|a| a.later_requests).sum();
        let later_bytes: u64 = agents.values().map(|a| a.later_bytes).sum();
        let prefix_bytes: u64 = agents.values().map(|a| a.later_prefix_bytes).sum();
        let previous_bytes: u64 = agents.values().map(|a| a.previous_bytes).sum();
        let share = |part: u64, whole: u64| {
            if whole == 0 {
                1.0
            } else {
                part as f64 / whole as f64
            }
        };
        let whole: u64 = agents.values().map(|a| a.whole_prefix_requests).sum();
        // The first request of each profile (its first agent).
        let mut first: BTreeMap<String, Value> = BTreeMap::new();
        let mut ordered: Vec<&AgentRequests> = agents.values().collect();
        ordered.sort_by_key(|agent| !agent.profile_first);
        for agent in ordered {
            if let (Some(tokens), Some(parts)) = (agent.first_tokens, &agent.first_parts) {
                first.entry(agent.profile.clone()).or_insert_with(|| {
                    let mut figures = json!({
                        "estimatedTokens": tokens,
                        "messages": parts.messages,
                        "tools": parts.tools,
                    });
                    match &agent.first_server {
                        Some(Ok(tokens)) => figures["serverPromptTokens"] = json!(tokens),
                        Some(Err(error)) => figures["serverError"] = json!(error),
                        None => {}
                    }
                    figures
                });
            }
        }
        json!({
            "workload": workload,
            "smallWindow": small_window,
            "agents": agents.len(),
            "laterRequests": later_requests,
            // Of each previous request, the share the next one starts with (1.0: append-only).
            "prefixShare": share(prefix_bytes, previous_bytes),
            // Of each request, the share a cache holding the previous one can serve.
            "reusableInputShare": share(prefix_bytes, later_bytes),
            "wholePrefixRequests": whole,
            "firstRequests": first,
        })
    }
}

tt_ports::decorated_model_provider!(PrefixMeter, inner, before_each_call measure, forward [
    name, complete, stream, close_session, provider_format, transport, check_settings,
    context_window, remember_context_window,
], {});

const WRITERS_ROOM: &str = "../../tt-cli/scenarios/writers-room";
const SCRIPT: &str = include_str!("../../tt-cli/scenarios/writers-room/script.json");
const SKILL: &str = include_str!("../../tt-cli/scenarios/writers-room/skill-scene-craft.md");
const PRESET: &str = include_str!("../../tt-cli/scenarios/writers-room/preset-advisors.json");
const PROFILES: [&str; 5] = [
    include_str!("../../tt-cli/scenarios/writers-room/writer.json"),
    include_str!("../../tt-cli/scenarios/writers-room/continuity-critic.json"),
    include_str!("../../tt-cli/scenarios/writers-room/style-advisor.json"),
    include_str!("../../tt-cli/scenarios/writers-room/final-editor.json"),
    include_str!("../../tt-cli/scenarios/writers-room/fact-checker.json"),
];

/// Runs `request` on a fresh runtime over `provider` (measured; first requests also counted by
/// `server`) and returns the report.
async fn measure(
    workload: &str,
    provider: Arc<dyn ModelProvider>,
    server: Option<Arc<dyn ModelProvider>>,
    info: ConnectionModelInfo,
    install: impl AsyncFnOnce(&AgentRuntime) -> Result<()>,
    request: StartRunRequest,
) -> Result<Value> {
    let dir = tempfile::Builder::new()
        .prefix("tt-bench-prefix-")
        .tempdir()
        .context("creating a temporary data dir")?;
    let meter = Arc::new(PrefixMeter::new(provider, server));
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(Arc::clone(&meter) as Arc<dyn ModelProvider>)
        .provider_model_info(info.clone())
        .commit_bridge(CommitBridgeChoice::Transcript)
        .prompt_broker(PromptBrokerChoice::Templates)
        .build()?;
    install(&runtime).await?;
    let run = runtime
        .start_run(request)
        .await
        .map_err(|err| anyhow!("{workload}: start_run failed: {err}"))?;
    let ended = runtime
        .wait_for_run(run.id.as_str())
        .await
        .map_err(|err| anyhow!("{workload}: wait_for_run failed: {err}"))?;
    ensure!(
        ended.status == AgentRunStatus::Completed,
        "{workload}: the run ended `{}`",
        ended.status.as_str()
    );
    runtime
        .shutdown()
        .await
        .map_err(|err| anyhow!("{workload}: shutdown failed: {err}"))?;
    meter.settle().await;
    Ok(meter.report(workload, info.context_window_tokens.is_some()))
}

async fn install_writers_room(runtime: &AgentRuntime) -> Result<()> {
    let presets = runtime.data_dir().join("presets").join("writers-room");
    std::fs::create_dir_all(&presets)?;
    std::fs::write(presets.join("advisors.json"), PRESET)?;
    runtime
        .save_skill_file(
            &tt_runtime::SkillScope::Global,
            "scene-craft",
            "SKILL.md",
            SKILL,
        )
        .await
        .map_err(|err| anyhow!("installing the skill: {err}"))?;
    for text in PROFILES {
        let profile: AgentProfileDefinition =
            serde_json::from_str(text).with_context(|| format!("a profile in {WRITERS_ROOM}"))?;
        runtime
            .save_profile(profile)
            .await
            .map_err(|err| anyhow!("installing a writers' room profile: {err}"))?;
    }
    Ok(())
}

fn start(profile: Option<&str>, text: &str) -> StartRunRequest {
    let mut request = StartRunRequest::new("tt-bench-prefix", text);
    if let Some(profile) = profile {
        request = request.profile(profile);
    }
    request
}

/// The reader: writes a long note, then small parts, reading the note again now and then;
/// finishes at round 40. On a 5,000-token window its history is trimmed and compacted.
fn reader() -> Arc<dyn ModelProvider> {
    let note: String = (1..=150)
        .map(|n| format!("Note {n}: the lighthouse keeper counts ships at dusk.\n"))
        .collect();
    let part = "The keeper logs each ship. ".repeat(50);
    Arc::new(FnProvider::new(move |request| {
        if request.tools.is_empty() {
            return Ok(ModelReply::text(
                "I wrote scratch/notes.md and parts, and read the note again.",
            ));
        }
        Ok(match request.round {
            1 => ModelReply::tool_call(
                "workspace_write_file",
                json!({"path": "scratch/notes.md", "content": note}),
            ),
            40 => ModelReply::tool_call(
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "Ships at dusk.\n"}),
            ),
            41 => ModelReply::tool_call("workspace_commit", json!({})),
            n if n > 41 => ModelReply::tool_call("workspace_finish", json!({})),
            n if n % 4 == 0 => {
                ModelReply::tool_call("workspace_read_file", json!({"path": "scratch/notes.md"}))
            }
            n => ModelReply::tool_call(
                "workspace_write_file",
                json!({"path": format!("scratch/part-{n}.md"), "content": part}),
            ),
        })
    }))
}

/// The provider that counts first requests on `connection` (`openai:http://…/v1`): answers of
/// one token, never streamed, with 15 minutes for a slow CPU server to read a long prompt.
pub(crate) fn server(connection: &str) -> Result<Arc<dyn ModelProvider>> {
    let patience = std::time::Duration::from_secs(900);
    let spec = tt_runtime::ConnectionSpec::parse(connection)?
        .with_model("local")
        .with_stream(false)
        .with_max_tokens(1)
        .with_header_timeout(patience)
        .with_request_timeout(patience)
        .with_call_deadline(patience);
    tt_runtime::build_provider(&spec)
}

/// Every workload's report, one JSON object per line; with `server`, each agent's first
/// request is also counted there.
pub(crate) async fn run(server: Option<Arc<dyn ModelProvider>>) -> Result<Vec<Value>> {
    let writers_room =
        Arc::new(ScriptedProvider::from_json_str(SCRIPT).context("the writers' room script")?);
    let mut reports = vec![
        measure(
            "writers-room",
            writers_room,
            server.clone(),
            ConnectionModelInfo::default(),
            async |runtime: &AgentRuntime| install_writers_room(runtime).await,
            start(
                Some("writer"),
                "Write a short scene about a lighthouse keeper during a storm.",
            ),
        )
        .await?,
    ];
    let children = 16;
    let profiles = tt_bench::workload::profiles(children)?;
    reports.push(
        measure(
            "fanout-16",
            Arc::new(tt_bench::model::FanoutModel::new(children)),
            server.clone(),
            ConnectionModelInfo::default(),
            async move |runtime: &AgentRuntime| {
                for profile in profiles {
                    runtime
                        .save_profile(profile)
                        .await
                        .map_err(|err| anyhow!("installing a fan-out profile: {err}"))?;
                }
                Ok(())
            },
            tt_bench::workload::start_request(children),
        )
        .await?,
    );
    reports.push(
        measure(
            "default-writer",
            Arc::new(FnProvider::new(|request| {
                Ok(match request.round {
                    1 => ModelReply::tool_call(
                        "workspace_write_file",
                        json!({"path": "output/main.md", "content": "Night fell.\n"}),
                    ),
                    2 => ModelReply::tool_call("workspace_commit", json!({})),
                    _ => ModelReply::tool_call("workspace_finish", json!({})),
                })
            })),
            server.clone(),
            ConnectionModelInfo::default(),
            async |_: &AgentRuntime| Ok(()),
            start(None, "Write a scene."),
        )
        .await?,
    );
    reports.push(
        measure(
            "reader-5k-window",
            reader(),
            server,
            ConnectionModelInfo {
                context_window_tokens: Some(5_000),
                ..ConnectionModelInfo::default()
            },
            async |_: &AgentRuntime| Ok(()),
            start(None, "Keep notes on the ships."),
        )
        .await?,
    );
    Ok(reports)
}

/// What in `reports` breaks a bound: each profile whose first request is over
/// [`FIRST_REQUEST_BUDGET_TOKENS`], each workload (not shortened for a small window) whose
/// prefix share is under [`MIN_PREFIX_SHARE`]. Empty: every bound holds.
pub(crate) fn check(reports: &[Value]) -> Vec<String> {
    let mut broken = Vec::new();
    for report in reports {
        let workload = report["workload"].as_str().unwrap_or("?");
        let share = report["prefixShare"].as_f64().unwrap_or(0.0);
        if report["smallWindow"] != Value::Bool(true) && share < MIN_PREFIX_SHARE {
            broken.push(format!(
                "{workload}: prefix share {share:.4} is under {MIN_PREFIX_SHARE}"
            ));
        }
        let Some(first) = report["firstRequests"].as_object() else {
            continue;
        };
        for (profile, figures) in first {
            let tokens = figures["estimatedTokens"].as_u64().unwrap_or(u64::MAX);
            if tokens > FIRST_REQUEST_BUDGET_TOKENS {
                broken.push(format!(
                    "{workload}: `{profile}`'s first request is {tokens} estimated tokens, over {FIRST_REQUEST_BUDGET_TOKENS}"
                ));
            }
        }
    }
    broken
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The demo's profiles, the built-in writer and the fan-out's: each first request within
    /// the budget, measured as `tt-bench prefix` measures it, and every request of a workload
    /// that is not shortened for a small window append-only.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn first_requests_fit_the_budget() {
        let reports = run(None).await.unwrap();
        let profiles: Vec<&str> = reports
            .iter()
            .filter_map(|report| report["firstRequests"].as_object())
            .flat_map(|first| first.keys().map(String::as_str))
            .collect();
        for profile in ["writer", "final-editor", "default-writer", "fanout-child"] {
            assert!(profiles.contains(&profile), "{profile} not measured");
        }
        assert_eq!(check(&reports), Vec::<String>::new());
    }

    #[test]
    fn check_names_what_is_over_its_bound() {
        let report = |workload: &str, small_window: bool, share: f64, tokens: u64| {
            json!({
                "workload": workload,
                "smallWindow": small_window,
                "prefixShare": share,
                "firstRequests": {"writer": {"estimatedTokens": tokens}},
            })
        };
        assert!(check(&[report("room", false, 1.0, 2_000)]).is_empty());
        assert!(check(&[report("reader", true, 0.5, 1_000)]).is_empty());
        assert_eq!(
            check(&[report("room", false, 0.9, 2_001)]),
            vec![
                "room: prefix share 0.9000 is under 0.95".to_owned(),
                "room: `writer`'s first request is 2001 estimated tokens, over 2000".to_owned(),
            ]
        );
    }
}
