//! Golden whole-run journals: the demo (the writers' room), a delegation and a handoff, run on
//! the userdata adapter with a ticking manual clock and sequential ids, normalised and pinned as
//! insta snapshots so a restructure that changes what is journaled shows up as a snapshot diff.
//!
//! The demo's two reviews are ordered against the writer (see [`WritersRoomSequencer`]), so
//! what each agent reads is the same in every run. Agents delegated to still run concurrently, so the global order of their events (and so the seqs
//! and the sequential ids each event draws) may differ from run to run. A snapshot is therefore a
//! set of per-invocation projections: events grouped by `payload.eventScope.invocationId`
//! (events of no invocation form the group `run`; the status events of a delegated task go to
//! the delegated agent's group, whose worker writes them), in seq order within each group, groups ordered
//! by profile id. Ids and checkpoint ids are renumbered by first appearance in that projection;
//! timestamps, hashes, seqs and durations are replaced by placeholders. Each scenario runs twice
//! in its test and both projections must agree.

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use tempfile::TempDir;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tt_domain::model::{AgentModelRequest, AgentModelResponse};
use tt_ports::{ModelDeltaSink, ModelError};
use tt_runtime::ModelProvider;
use tt_runtime::{
    AgentRunEvent, AgentRunStatus, AgentRuntime, AgentRuntimeBuilder, CommitBridgeChoice,
    PromptBrokerChoice, ScriptedProvider,
};
use tt_testkit::fakes::{ManualClock, SequentialIds};

use crate::delegation::{WRITERS_ROOM_SCRIPT, all_events, install_writers_room};
use crate::support::start_request;

/// Payload keys whose values depend on the global interleaving (seqs) or on wall time, and
/// `inputTokens`: the `agent.await` result lists the other delegated tasks with their state at
/// that instant (`running` or `completed`), so what the writer reads next varies by a token.
const UNSTABLE_NUMBER_KEYS: [&str; 9] = [
    "inputTokens",
    "seq",
    "eventSeq",
    "afterSeq",
    "lastSeq",
    "durationMs",
    "elapsedMs",
    "waitedMs",
    "latencyMs",
];

fn runtime(dir: &TempDir, provider: Arc<dyn ModelProvider>) -> AgentRuntime {
    AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(provider)
        .commit_bridge(CommitBridgeChoice::Transcript)
        .prompt_broker(PromptBrokerChoice::Templates)
        .clock(ManualClock::ticking())
        .ids(SequentialIds::new())
        .build()
        .unwrap()
}

/// How far the writers' room has got: the writer's and the critic's latest model rounds.
#[derive(Debug, Default)]
struct Progress {
    writer_round: u32,
    critic_round: u32,
}

/// The demo's script, with the reviews ordered against the writer: left alone, which of them
/// reaches which point first (and so what each agent reads) is a race. Both reviewers start once
/// the writer makes its round-5 call (its `agent.await` for all tasks), so that await delivers
/// both; the fact checker the critic delegates starts once the critic makes its round-3 call
/// (its own await), so that await delivers it.
struct WritersRoomSequencer {
    inner: ScriptedProvider,
    progress: Arc<watch::Sender<Progress>>,
}

impl WritersRoomSequencer {
    async fn until(&self, reached: impl FnMut(&Progress) -> bool) {
        let mut receiver = self.progress.subscribe();
        receiver.wait_for(reached).await.unwrap();
    }

    async fn before(&self, request: &AgentModelRequest) {
        match (request.agent_profile_id.as_str(), request.round) {
            ("writer", round) => self.progress.send_modify(|p| p.writer_round = round),
            ("continuity-critic", round) => {
                self.progress.send_modify(|p| p.critic_round = round);
                if round == 1 {
                    self.until(|p| p.writer_round >= 5).await;
                }
            }
            // The fact checker starts once the critic waits for it, so its result is awaited.
            ("fact-checker", 1) => self.until(|p| p.critic_round >= 3).await,
            ("style-advisor", 1) => self.until(|p| p.writer_round >= 5).await,
            _ => {}
        }
    }
}

#[async_trait]
impl ModelProvider for WritersRoomSequencer {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn complete(
        &self,
        request: &AgentModelRequest,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        self.before(request).await;
        self.inner.complete(request, cancel).await
    }

    async fn stream(
        &self,
        request: &AgentModelRequest,
        sink: Arc<dyn ModelDeltaSink>,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        self.before(request).await;
        self.inner.stream(request, sink, cancel).await
    }
}

/// Runs `profile` to its end with the writers' room installed and returns the projection.
async fn run_projection(script: &str, profile: &str, sequenced: bool) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let scripted = ScriptedProvider::from_json_str(script).unwrap();
    let (progress, _) = watch::channel(Progress::default());
    let progress = Arc::new(progress);
    let provider: Arc<dyn ModelProvider> = if sequenced {
        Arc::new(WritersRoomSequencer {
            inner: scripted,
            progress: progress.clone(),
        })
    } else {
        Arc::new(scripted)
    };
    let runtime = runtime(&dir, provider);
    install_writers_room(&runtime, dir.path()).await;
    let mut request = start_request();
    request.profile_id = Some(profile.into());
    let run = runtime.start_run(request).await.unwrap();
    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);
    journal_projection(&runtime, run.id.as_str()).await
}

/// A finished run's journal as a normalised per-invocation projection (see the module docs).
pub(crate) async fn journal_projection(runtime: &AgentRuntime, run_id: &str) -> Value {
    let projection = runtime.timeline_projection(run_id).await.unwrap();
    let labels: HashMap<String, String> = projection
        .invocations
        .iter()
        .map(|inv| {
            (
                inv.invocation_id.to_string(),
                inv.profile_id.as_str().to_owned(),
            )
        })
        .collect();
    let subagents: HashSet<String> = projection
        .invocations
        .iter()
        .filter(|inv| inv.kind.as_str() == "subagent")
        .map(|inv| inv.invocation_id.to_string())
        .collect();
    let events = all_events(runtime, run_id).await;
    project(&events, &labels, &subagents)
}

/// Groups events by invocation (labelled by profile id) and normalises them.
fn project(
    events: &[AgentRunEvent],
    labels: &HashMap<String, String>,
    subagents: &HashSet<String>,
) -> Value {
    let mut groups: BTreeMap<String, Vec<&AgentRunEvent>> = BTreeMap::new();
    for event in events {
        let label = match writer_invocation(event, subagents) {
            Some(id) => labels
                .get(id)
                .cloned()
                .unwrap_or_else(|| panic!("event of unknown invocation {id}")),
            None => "run".to_owned(),
        };
        groups.entry(label).or_default().push(event);
    }
    // `run` first, then invocations by profile id.
    let mut ordered: Vec<(String, Vec<&AgentRunEvent>)> = groups.into_iter().collect();
    ordered.sort_by_key(|(label, _)| (label != "run", label.clone()));
    let mut normaliser = Normaliser::default();
    let groups: Vec<Value> = ordered
        .into_iter()
        .map(|(label, events)| {
            let events: Vec<Value> = events
                .into_iter()
                .map(|event| {
                    let raw = json!({
                        "type": event.event_type,
                        "level": event.level,
                        "payload": event.payload,
                    });
                    normaliser.value(&raw, None)
                })
                .collect();
            json!({ "invocation": label, "events": events })
        })
        .collect();
    Value::Array(groups)
}

/// The invocation whose agent wrote `event`: its scope's invocation, except for the status
/// events of a delegated task, which its worker writes (scoped to the delegating agent) while
/// that agent goes on, so they sit in the worker's group.
fn writer_invocation<'a>(event: &'a AgentRunEvent, subagents: &HashSet<String>) -> Option<&'a str> {
    let child = event.payload["childInvocationId"].as_str();
    match (event.event_type.as_str(), child) {
        ("agent_task_started" | "agent_task_completed" | "agent_task_failed", Some(child))
            if subagents.contains(child) =>
        {
            Some(child)
        }
        _ => event.scope_invocation_id(),
    }
}

/// Replaces what differs between equivalent runs with stable placeholders.
#[derive(Default)]
struct Normaliser {
    /// 32-hex-digit id tokens, numbered by first appearance.
    ids: HashMap<String, usize>,
    /// Checkpoint ids (`cp_000003`), numbered per run in the order agents happened to take them.
    checkpoints: HashMap<String, usize>,
}

impl Normaliser {
    fn value(&mut self, value: &Value, key: Option<&str>) -> Value {
        match value {
            Value::String(text) => Value::String(self.text(text)),
            Value::Number(_) if key.is_some_and(|k| UNSTABLE_NUMBER_KEYS.contains(&k)) => {
                Value::String(format!("<{}>", key.unwrap_or_default()))
            }
            Value::Array(items) => {
                Value::Array(items.iter().map(|item| self.value(item, None)).collect())
            }
            Value::Object(map) => {
                let mut out = Map::new();
                for (k, v) in map {
                    let v = self.value(v, Some(k));
                    out.insert(self.text(k), v);
                }
                Value::Object(out)
            }
            other => other.clone(),
        }
    }

    fn text(&mut self, text: &str) -> String {
        if is_timestamp(text) {
            return "<timestamp>".to_owned();
        }
        if let Some(number) = text.strip_prefix("cp_")
            && !number.is_empty()
            && number.bytes().all(|b| b.is_ascii_digit())
        {
            let next = self.checkpoints.len() + 1;
            let n = *self.checkpoints.entry(text.to_owned()).or_insert(next);
            return format!("cp_#{n}");
        }
        let mut out = String::with_capacity(text.len());
        let mut word = String::new();
        for ch in text.chars().chain(std::iter::once('\0')) {
            if ch.is_ascii_alphanumeric() {
                word.push(ch);
                continue;
            }
            if !word.is_empty() {
                out.push_str(&self.word(&word));
                word.clear();
            }
            if ch != '\0' {
                out.push(ch);
            }
        }
        out
    }

    fn word(&mut self, word: &str) -> String {
        let hex = word
            .chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c));
        match (hex, word.len()) {
            (true, 32) => {
                let next = self.ids.len() + 1;
                let n = *self.ids.entry(word.to_owned()).or_insert(next);
                format!("#{n}")
            }
            (true, 64) => "<sha256>".to_owned(),
            (true, 16) => "<hex16>".to_owned(),
            _ => word.to_owned(),
        }
    }
}

/// `2026-01-01T00:00:00.000Z` and the like.
fn is_timestamp(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() >= 20
        && bytes.len() <= 30
        && bytes[4] == b'-'
        && bytes[7] == b'-'
        && bytes[10] == b'T'
        && bytes[13] == b':'
        && text.ends_with('Z')
}

/// Runs a scenario twice, checks both projections agree, and returns one.
async fn stable_projection(script: &str, profile: &str, sequenced: bool) -> Value {
    let first = run_projection(script, profile, sequenced).await;
    let second = run_projection(script, profile, sequenced).await;
    // GOLDEN_DUMP=DIR writes both projections there, to diff them when they disagree.
    if let Ok(dir) = std::env::var("GOLDEN_DUMP") {
        std::fs::write(
            format!("{dir}/{}-1.json", script.len()),
            serde_json::to_string_pretty(&first).unwrap(),
        )
        .unwrap();
        std::fs::write(
            format!("{dir}/{}-2.json", script.len()),
            serde_json::to_string_pretty(&second).unwrap(),
        )
        .unwrap();
    }
    assert_eq!(
        first, second,
        "two runs of the same scenario journaled differently"
    );
    first
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_room_journal_is_golden() {
    let projection = stable_projection(WRITERS_ROOM_SCRIPT, "writer", true).await;
    insta::assert_json_snapshot!("writers_room_journal", projection);
}

/// The writer delegates one review and awaits it in the same round (so the result is always
/// delivered by `agent.await`, never injected), then publishes and finishes.
fn delegation_script() -> String {
    json!({
        "schemaVersion": 1,
        "agents": {
            "writer": [
                {"toolCalls": [
                    {"id": "draft", "name": "workspace_write_file", "arguments": {"path": "output/main.md", "content": "Mara was never afraid of the dark.\n"}},
                    {"id": "review", "name": "agent_delegate", "arguments": {"agentId": "continuity-critic", "task": {"title": "Continuity check", "objective": "Check the draft against the known facts.", "context": {"draft": "output/main.md"}}}},
                    {"id": "wait", "name": "agent_await", "arguments": {"mode": "allCompleted", "timeoutMs": 60000}}
                ]},
                {"toolCalls": [{"id": "fix", "name": "workspace_apply_patch", "arguments": {"path": "output/main.md", "old_string": "never", "new_string": "always"}}]},
                {"toolCalls": [{"id": "publish", "name": "workspace_commit", "arguments": {"reason": "reviewed"}}]},
                {"toolCalls": [{"id": "done", "name": "workspace_finish", "arguments": {}}]}
            ],
            "continuity-critic": [
                {"toolCalls": [{"id": "read", "name": "workspace_read_file", "arguments": {"path": "output/main.md"}}]},
                {"toolCalls": [{"id": "return", "name": "task_return", "arguments": {"summary": "Mara has always been afraid of the dark.", "confidence": "high"}}]}
            ]
        }
    })
    .to_string()
}

/// The writer drafts and hands the foreground to the final editor, who publishes and finishes.
fn handoff_script() -> String {
    json!({
        "schemaVersion": 1,
        "agents": {
            "writer": [
                {"toolCalls": [{"id": "draft", "name": "workspace_write_file", "arguments": {"path": "output/main.md", "content": "# Draft\n\nThe lamp held.\n"}}]},
                {"toolCalls": [{"id": "pass", "name": "agent_handoff", "arguments": {"agentId": "final-editor", "handoff": {"title": "Final polish", "reason": "The draft is complete.", "objective": "Polish the title, publish and finish.", "contextSummary": "The draft is in output/main.md."}}}]}
            ],
            "final-editor": [
                {"toolCalls": [{"id": "read", "name": "workspace_read_file", "arguments": {"path": "output/main.md"}}]},
                {"toolCalls": [{"id": "title", "name": "workspace_apply_patch", "arguments": {"path": "output/main.md", "old_string": "# Draft", "new_string": "# The Lamp"}}]},
                {"toolCalls": [{"id": "publish", "name": "workspace_commit", "arguments": {"reason": "final polish"}}]},
                {"toolCalls": [{"id": "done", "name": "workspace_finish", "arguments": {"reason": "published"}}]}
            ]
        }
    })
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delegation_journal_is_golden() {
    let projection = stable_projection(&delegation_script(), "writer", false).await;
    insta::assert_json_snapshot!("delegation_journal", projection);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handoff_journal_is_golden() {
    let projection = stable_projection(&handoff_script(), "writer", false).await;
    insta::assert_json_snapshot!("handoff_journal", projection);
}
