//! Resuming interrupted runs (docs/resume.md): a fan-out of 16 delegated agents is interrupted
//! at each kind of step, then resumed by a new runtime over the same data dir. The end must be
//! what an uninterrupted run leaves: the same workspace and committed text byte for byte,
//! each of the 16 results delivered exactly once, and no model call made twice.
//!
//! An interruption is a real `kill -9`: the first part runs in a child process (this test
//! binary, running [`first_process`]), which is killed with SIGKILL at the chosen step; a new
//! runtime in this process then finds the run `interrupted` and resumes it. Model calls after
//! the chosen moment never return, so the child is frozen at that step when it is killed.
//!
//! The same scenario harness also checks the end of a run that is not interrupted: it comes
//! after every agent of the run has closed (`a_run_ends_after_every_agent_of_it_has_closed`).

use async_trait::async_trait;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use tt_domain::model::{AgentModelRequest, AgentModelResponse};
use tt_runtime::{
    AgentProfileDefinition, AgentRunEvent, AgentRunStatus, AgentRuntime, AgentRuntimeBuilder,
    FnProvider, ModelError, ModelProvider, ModelReply,
};
use tt_testkit::fakes::FakePromptBroker;

use crate::delegation::all_events;
use crate::support::start_request;

pub(crate) const N: usize = 16;

fn lead_profile() -> Value {
    json!({
        "schemaVersion": 2, "kind": "tauritavern.agentProfile", "id": "lead",
        "displayName": "Lead", "description": "Delegates notes and publishes a summary.",
        "preset": {"mode": "currentPromptSnapshot"}, "model": {"mode": "currentPromptSnapshot"},
        "run": {"presentation": "foreground"},
        "delegation": {"canDelegate": true, "maxConcurrentInvocations": 4, "maxInvocationsPerRun": 20},
        "tools": {"allow": ["agent.delegate", "agent.await", "workspace.read_file",
            "workspace.write_file", "workspace.commit", "workspace.finish"], "maxRounds": 10},
        "skills": {"visible": ["*"]}, "plan": {"mode": "none"},
        "workspace": {"visibleRoots": ["output", "summaries"], "writableRoots": ["output"]},
        "output": {"artifacts": [{"id": "main", "path": "output/main.md", "kind": "markdown",
            "target": "messageBody", "required": true}]}
    })
}

fn note_profile() -> Value {
    json!({
        "schemaVersion": 2, "kind": "tauritavern.agentProfile", "id": "note-taker",
        "displayName": "Note taker", "description": "Writes one numbered note.",
        "preset": {"mode": "currentPromptSnapshot"}, "model": {"mode": "currentPromptSnapshot"},
        "run": {"presentation": "background", "directRunnable": false},
        "delegation": {"callable": true, "allowAsSubagent": true,
            "descriptionForAgents": "Writes the numbered note it is asked for."},
        "tools": {"allow": ["workspace.write_file"], "maxRounds": 4},
        "skills": {"visible": ["*"]}, "plan": {"mode": "none"},
        "workspace": {"visibleRoots": ["summaries"], "writableRoots": ["summaries"]},
        "output": {"artifacts": [{"id": "notes", "path": "summaries/notes.md", "kind": "markdown",
            "target": "messageBody"}]}
    })
}

fn opener_profile() -> Value {
    json!({
        "schemaVersion": 2, "kind": "tauritavern.agentProfile", "id": "opener",
        "displayName": "Opener", "description": "Hands the job to the closer.",
        "preset": {"mode": "currentPromptSnapshot"}, "model": {"mode": "currentPromptSnapshot"},
        "run": {"presentation": "foreground"},
        "delegation": {"canHandoff": true},
        "tools": {"allow": ["agent.handoff", "workspace.write_file", "workspace.commit",
            "workspace.finish"], "maxRounds": 10},
        "skills": {"visible": ["*"]}, "plan": {"mode": "none"},
        "workspace": {"visibleRoots": ["output"], "writableRoots": ["output"]},
        "output": {"artifacts": [{"id": "main", "path": "output/main.md", "kind": "markdown",
            "target": "messageBody", "required": true}]}
    })
}

fn closer_profile() -> Value {
    json!({
        "schemaVersion": 2, "kind": "tauritavern.agentProfile", "id": "closer",
        "displayName": "Closer", "description": "Writes, publishes and finishes.",
        "preset": {"mode": "currentPromptSnapshot"}, "model": {"mode": "currentPromptSnapshot"},
        "run": {"presentation": "foreground", "directRunnable": false},
        "delegation": {"callable": true, "allowAsHandoffTarget": true,
            "descriptionForAgents": "Writes the reply, publishes it and finishes the job."},
        "tools": {"allow": ["workspace.write_file", "workspace.commit", "workspace.finish"],
            "maxRounds": 10},
        "skills": {"visible": ["*"]}, "plan": {"mode": "none"},
        "workspace": {"visibleRoots": ["output"], "writableRoots": ["output"]},
        "output": {"artifacts": [{"id": "main", "path": "output/main.md", "kind": "markdown",
            "target": "messageBody", "required": true}]}
    })
}

/// A foreground writer whose prompt the host assembles (`preset.mode = "ref"`).
fn assembled_profile() -> Value {
    let mut profile = closer_profile();
    profile["id"] = json!("assembled");
    profile["displayName"] = json!("Assembled");
    profile["description"] = json!("Writes from a host-assembled prompt.");
    profile["preset"] = json!({"mode": "ref", "ref": {"apiId": "local", "name": "house"}});
    profile["run"] = json!({"presentation": "foreground"});
    profile.as_object_mut().unwrap().remove("delegation");
    profile
}

/// A foreground writer that first answers in plain text (and gets a reminder), then writes,
/// publishes and finishes.
fn drifter_profile() -> Value {
    let mut profile = assembled_profile();
    profile["id"] = json!("drifter");
    profile["displayName"] = json!("Drifter");
    profile["description"] = json!("Answers in plain text first.");
    profile["preset"] = json!({"mode": "currentPromptSnapshot"});
    profile
}

/// A lead that delegates one note and, without waiting for it, publishes and finishes.
fn solo_profile() -> Value {
    let mut profile = lead_profile();
    profile["id"] = json!("solo");
    profile["displayName"] = json!("Solo");
    profile
}

/// The note number of a delegated agent, from its brief.
fn note_number(request: &AgentModelRequest) -> usize {
    let text = serde_json::to_string(&request.messages).unwrap();
    let start = text.find("Note number ").unwrap() + "Note number ".len();
    text[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

/// The scenario's model: the lead delegates 16 notes in one turn, waits for all, writes and
/// publishes a summary and finishes; each note taker writes its note, appends a line to its
/// log in the same turn, and returns.
fn reply(request: &AgentModelRequest) -> ModelReply {
    match (request.agent_profile_id.as_str(), request.round) {
        ("opener", _) => {
            return ModelReply::tool_call(
                "agent_handoff",
                json!({"agentId": "closer", "handoff": {
                    "title": "Close", "reason": "The closer publishes.",
                    "objective": "Write the reply, publish it and finish.",
                    "contextSummary": "Nothing is written yet."}}),
            );
        }
        ("drifter", 1) => return ModelReply::text("Let me think about the reply first."),
        // The writers write, publish and finish (the drifter one round later).
        (profile @ ("closer" | "assembled" | "drifter"), round) => {
            let step = if profile == "drifter" {
                round - 1
            } else {
                round
            };
            return match step {
                1 => ModelReply::tool_call(
                    "workspace_write_file",
                    json!({"path": "output/main.md", "content": format!("Written by the {profile}.\n")}),
                ),
                2 => ModelReply::tool_call("workspace_commit", json!({"path": "output/main.md"})),
                _ => ModelReply::tool_call("workspace_finish", json!({})),
            };
        }
        _ => {}
    }
    if request.agent_profile_id.as_str() == "solo" {
        return match request.round {
            1 => ModelReply::tool_call(
                "agent_delegate",
                json!({"agentId": "note-taker", "task": {
                    "title": "Note 1", "objective": "Note number 1: write it to summaries/note-1.md."}}),
            ),
            // Long enough for the note to be returned (its result joins this turn's history),
            // not for the note taker to close (see `HoldAt::SlowReturn`).
            2 => ModelReply::tool_call(
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "One note.\n"}),
            )
            .after(std::time::Duration::from_millis(100)),
            3 => ModelReply::tool_call("workspace_commit", json!({"path": "output/main.md"})),
            _ => ModelReply::tool_call("workspace_finish", json!({})),
        };
    }
    if request.agent_profile_id.as_str() == "lead" {
        return match request.round {
            1 => (1..=N).fold(ModelReply::default(), |reply, n| {
                reply.with_tool_call(
                    "agent_delegate",
                    json!({"agentId": "note-taker", "task": {
                        "title": format!("Note {n}"),
                        "objective": format!("Note number {n}: write it to summaries/note-{n}.md."),
                    }}),
                )
            }),
            2 => ModelReply::tool_call(
                "agent_await",
                json!({"mode": "allCompleted", "timeoutMs": 300_000}),
            ),
            3 => ModelReply::tool_call(
                "workspace_write_file",
                json!({"path": "output/main.md", "content": format!("Sixteen notes, {N} of them.\n")}),
            ),
            4 => ModelReply::tool_call("workspace_commit", json!({"path": "output/main.md"})),
            _ => ModelReply::tool_call("workspace_finish", json!({})),
        };
    }
    let n = note_number(request);
    match request.round {
        1 => ModelReply::tool_call(
            "workspace_write_file",
            json!({"path": format!("summaries/note-{n}.md"), "content": format!("Note {n}.\n")}),
        )
        .with_tool_call(
            "workspace_write_file",
            json!({"path": format!("summaries/log-{n}.md"), "content": format!("wrote {n}\n"), "mode": "append"}),
        ),
        _ => ModelReply::tool_call(
            "task_return",
            json!({"summary": format!("Note {n} is written."), "confidence": "high"}),
        ),
    }
}

/// Where the first runtime stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Point {
    /// The lead's second model call never returns (it is between model calls).
    BetweenModelCalls,
    /// Right after the lead's first response is stored, while its 16 delegations run.
    AfterStoredResponse,
    /// A note taker has run the first of its two tool calls, not the second.
    MidChildToolCalls,
    /// The lead waits in `agent.await` while the note takers' model calls never return.
    WhileRootAwaits,
    /// The summary is offered to the host, which never answers.
    WhileCommitWaits,
    /// After a handoff: the agent that took the run over waits for its second answer.
    AfterHandoff,
    /// The handoff is registered and answered, and the agent that made it is not yet marked
    /// `transferred` (the process freezes when the `agent.handoff` call's span closes).
    HandoffBeforeTransfer,
    /// A root whose prompt the host assembled waits for its second answer.
    AssembledRootBetweenModelCalls,
    /// The lead's first `agent.delegate` call has written its agent's record and not yet
    /// registered the task (the process freezes at the store's `invocation record written` log,
    /// which the file store's one-by-one `RunJournal::commit` writes after the record).
    DelegateBeforeTask,
    /// A root that was reminded to use its tools (before it published) waits for its answer
    /// after publishing.
    AfterCommitWithEarlierReminder,
    /// The finishing run has promoted `persist/` and not yet journaled it (the process freezes
    /// at the runtime's `persist/ promoted` log).
    PromotedBeforeJournaled,
}

impl Point {
    /// The model request the first process froze at, `(profile, round)`, when it froze at one
    /// of the foreground agent's requests: the resumed run asks it again with the same
    /// messages, followed only by results that finished since.
    fn frozen_request(self) -> Option<(&'static str, u32)> {
        match self {
            Point::BetweenModelCalls => Some(("lead", 2)),
            Point::AfterHandoff => Some(("closer", 2)),
            Point::AssembledRootBetweenModelCalls => Some(("assembled", 2)),
            Point::AfterCommitWithEarlierReminder => Some(("drifter", 4)),
            _ => None,
        }
    }
}

/// Every model request a runtime made, `(profile, round, messages as JSON)`, in order.
type RequestLog = Arc<Mutex<Vec<(String, u32, String)>>>;

/// Counts returned model calls, and freezes every call once `freeze` says so.
struct Model {
    inner: FnProvider,
    calls: Arc<AtomicU64>,
    frozen: Arc<AtomicBool>,
    /// Whether this call is the last one that returns (every later one freezes).
    freeze_after: Box<dyn Fn(&AgentModelRequest) -> bool + Send + Sync>,
    /// Whether this call itself never returns.
    freeze_at: Box<dyn Fn(&AgentModelRequest) -> bool + Send + Sync>,
    requests: RequestLog,
}

#[async_trait]
impl ModelProvider for Model {
    fn name(&self) -> &str {
        "scripted"
    }

    async fn complete(
        &self,
        request: &AgentModelRequest,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        self.requests.lock().unwrap().push((
            request.agent_profile_id.to_string(),
            request.round,
            serde_json::to_string(&request.messages).unwrap(),
        ));
        if self.frozen.load(Ordering::SeqCst) || (self.freeze_at)(request) {
            self.frozen.store(true, Ordering::SeqCst);
            std::future::pending::<()>().await;
        }
        let last = (self.freeze_after)(request);
        let response = self.inner.complete(request, cancel).await;
        if last {
            self.frozen.store(true, Ordering::SeqCst);
        }
        if response.is_ok() {
            self.calls.fetch_add(1, Ordering::SeqCst);
        }
        response
    }
}

type Predicate = Box<dyn Fn(&AgentModelRequest) -> bool + Send + Sync>;

fn never() -> Predicate {
    Box::new(|_| false)
}

fn model(
    point: Option<Point>,
    calls: &Arc<AtomicU64>,
    frozen: &Arc<AtomicBool>,
    requests: &RequestLog,
) -> Arc<dyn ModelProvider> {
    let lead_round = |round: u32| -> Predicate {
        Box::new(move |r: &AgentModelRequest| {
            r.agent_profile_id.as_str() == "lead" && r.round == round
        })
    };
    let (freeze_at, freeze_after): (Predicate, Predicate) = match point {
        None | Some(Point::WhileCommitWaits) => (never(), never()),
        Some(Point::BetweenModelCalls) => (lead_round(2), never()),
        Some(Point::AfterStoredResponse) => (never(), lead_round(1)),
        Some(Point::MidChildToolCalls) => (
            never(),
            Box::new(|r: &AgentModelRequest| r.agent_profile_id.as_str() == "note-taker"),
        ),
        Some(Point::WhileRootAwaits) => (never(), lead_round(2)),
        Some(Point::AfterHandoff) => (
            Box::new(|r: &AgentModelRequest| {
                r.agent_profile_id.as_str() == "closer" && r.round == 2
            }),
            never(),
        ),
        Some(
            Point::HandoffBeforeTransfer
            | Point::DelegateBeforeTask
            | Point::PromotedBeforeJournaled,
        ) => (never(), never()),
        Some(Point::AssembledRootBetweenModelCalls) => (
            Box::new(|r: &AgentModelRequest| {
                r.agent_profile_id.as_str() == "assembled" && r.round == 2
            }),
            never(),
        ),
        Some(Point::AfterCommitWithEarlierReminder) => (
            Box::new(|r: &AgentModelRequest| {
                r.agent_profile_id.as_str() == "drifter" && r.round == 4
            }),
            never(),
        ),
    };
    Arc::new(Model {
        inner: FnProvider::new(|request| Ok(reply(request))),
        calls: Arc::clone(calls),
        frozen: Arc::clone(frozen),
        freeze_after,
        freeze_at,
        requests: Arc::clone(requests),
    })
}

/// Whether the first runtime is dropped at this event.
fn stop_here(point: Point, event: &AgentRunEvent) -> bool {
    let payload = &event.payload;
    let lead = payload["invocationId"] == json!("inv_root");
    match point {
        Point::BetweenModelCalls => {
            event.event_type == "model_call_attempt_started" && lead && payload["round"] == json!(2)
        }
        Point::AfterStoredResponse => {
            event.event_type == "model_response_stored" && lead && payload["round"] == json!(1)
        }
        Point::MidChildToolCalls => {
            event.event_type == "tool_call_completed"
                && !lead
                && payload["callId"] == json!("call_1_1")
        }
        Point::WhileRootAwaits => event.event_type == "agent_await_started",
        Point::WhileCommitWaits => event.event_type == "chat_commit_requested",
        Point::AfterHandoff => {
            event.event_type == "model_call_attempt_started"
                && !lead
                && payload["round"] == json!(2)
        }
        // The process is stopped by `Hold`, not by an event.
        Point::HandoffBeforeTransfer
        | Point::DelegateBeforeTask
        | Point::PromotedBeforeJournaled => false,
        Point::AssembledRootBetweenModelCalls => {
            event.event_type == "model_call_attempt_started" && lead && payload["round"] == json!(2)
        }
        Point::AfterCommitWithEarlierReminder => {
            event.event_type == "model_call_attempt_started" && lead && payload["round"] == json!(4)
        }
    }
}

/// Whether a thread of the runtime is frozen at the chosen point (see [`Hold`]).
static FROZEN: AtomicBool = AtomicBool::new(false);

/// What [`Hold`] does.
#[derive(Clone, Copy, PartialEq, Eq)]
enum HoldAt {
    /// Freeze, for good, the runtime thread that reaches a point of the first process that no
    /// event marks (the process is killed there):
    /// - `HandoffBeforeTransfer`: the close of the `tool_call` span of an `agent.handoff` call
    ///   (its handoff registered and answered, its caller not yet `transferred`);
    /// - `DelegateBeforeTask`: the `invocation record written` log of `tt_ports::commit_in_order`
    ///   (the file store's `RunJournal::commit`), written between an agent's record and the
    ///   rest of its unit (`agent_invocation_created`, its task's record and events);
    /// - `PromotedBeforeJournaled`: the runtime's `persist/ promoted` log, written between
    ///   the promotion and its event.
    Freeze(Point),
    /// Hold for 300 ms the thread of a note taker whose loop has ended (the runtime's
    /// `invocation loop ended` log inside its `invocation` span): its task has ended and its
    /// delegating agent goes on, but the agent has not closed.
    SlowReturn,
}

/// A tracing subscriber that holds a runtime thread at a point the journal cannot show.
struct Hold {
    at: HoldAt,
    next_id: AtomicU64,
    /// Open spans: their handle count and their `tool` and `profile` fields.
    spans: Mutex<HashMap<u64, (usize, Fields)>>,
}

std::thread_local! {
    /// The spans entered on this thread, innermost last.
    static ENTERED: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The fields of a span or event that [`Hold`] looks at.
#[derive(Default)]
struct Fields {
    tool: Option<String>,
    profile: Option<String>,
    message: String,
}

impl tracing::field::Visit for Fields {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        match field.name() {
            "tool" => self.tool = Some(value.to_owned()),
            "profile" => self.profile = Some(value.to_owned()),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
        }
    }
}

impl Hold {
    fn new(at: HoldAt) -> Self {
        Self {
            at,
            next_id: AtomicU64::new(0),
            spans: Mutex::default(),
        }
    }

    fn freeze() -> ! {
        FROZEN.store(true, Ordering::SeqCst);
        loop {
            std::thread::park();
        }
    }

    /// The `profile` of the innermost span entered on this thread.
    fn current_profile(&self) -> Option<String> {
        let id = ENTERED.with(|entered| entered.borrow().last().copied())?;
        self.spans.lock().unwrap().get(&id)?.1.profile.clone()
    }
}

impl tracing::Subscriber for Hold {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let mut fields = Fields::default();
        span.record(&mut fields);
        let id = self.next_id.fetch_add(1, Ordering::SeqCst) + 1;
        self.spans.lock().unwrap().insert(id, (1, fields));
        tracing::span::Id::from_u64(id)
    }

    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

    fn event(&self, event: &tracing::Event<'_>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let has = |text: &str| fields.message.contains(text);
        match self.at {
            HoldAt::Freeze(Point::DelegateBeforeTask) if has("invocation record written") => {
                Hold::freeze()
            }
            HoldAt::Freeze(Point::PromotedBeforeJournaled) if has("persist/ promoted") => {
                Hold::freeze()
            }
            HoldAt::SlowReturn
                if has("invocation loop ended")
                    && self.current_profile().as_deref() == Some("note-taker") =>
            {
                std::thread::sleep(std::time::Duration::from_millis(300));
            }
            _ => {}
        }
    }

    fn enter(&self, id: &tracing::span::Id) {
        ENTERED.with(|entered| entered.borrow_mut().push(id.into_u64()));
    }

    fn exit(&self, _: &tracing::span::Id) {
        ENTERED.with(|entered| entered.borrow_mut().pop());
    }

    fn clone_span(&self, id: &tracing::span::Id) -> tracing::span::Id {
        if let Some(entry) = self.spans.lock().unwrap().get_mut(&id.into_u64()) {
            entry.0 += 1;
        }
        id.clone()
    }

    fn try_close(&self, id: tracing::span::Id) -> bool {
        let closed_handoff = {
            let mut spans = self.spans.lock().unwrap();
            let Some(entry) = spans.get_mut(&id.into_u64()) else {
                return false;
            };
            entry.0 -= 1;
            if entry.0 > 0 {
                return false;
            }
            let (_, fields) = spans.remove(&id.into_u64()).unwrap();
            fields.tool.as_deref() == Some("agent.handoff")
        };
        if closed_handoff && self.at == HoldAt::Freeze(Point::HandoffBeforeTransfer) {
            Hold::freeze();
        }
        true
    }
}

/// What the commit handler and the prompt assembler of a runtime saw.
pub(crate) struct Host {
    /// `(commitId, content)` of every commit offered.
    pub(crate) offered: Mutex<Vec<(String, String)>>,
    /// Assembles the prompts of `preset.mode = "ref"` agents.
    assembler: Arc<FakePromptBroker>,
    /// The model requests of the runtime.
    requests: RequestLog,
}

impl Default for Host {
    fn default() -> Self {
        Self {
            offered: Mutex::default(),
            assembler: FakePromptBroker::answering(),
            requests: RequestLog::default(),
        }
    }
}

pub(crate) fn runtime(
    dir: &Path,
    point: Option<Point>,
    calls: &Arc<AtomicU64>,
    frozen: &Arc<AtomicBool>,
    host: &Arc<Host>,
) -> AgentRuntime {
    let seen = Arc::clone(host);
    let answers = point != Some(Point::WhileCommitWaits);
    AgentRuntimeBuilder::new()
        .data_dir(dir)
        .provider(model(point, calls, frozen, &host.requests))
        .prompt_broker(tt_runtime::PromptBrokerChoice::Custom(
            Arc::clone(&host.assembler) as _,
        ))
        .commit_handler(move |request| {
            seen.offered
                .lock()
                .unwrap()
                .push((request.commit_id.to_string(), request.content.clone()));
            async move {
                if !answers {
                    std::future::pending::<()>().await;
                }
                Ok("41".to_owned())
            }
        })
        .build()
        .unwrap()
}

pub(crate) async fn install(runtime: &AgentRuntime) {
    for profile in [
        lead_profile(),
        note_profile(),
        opener_profile(),
        closer_profile(),
        assembled_profile(),
        drifter_profile(),
        solo_profile(),
    ] {
        let definition: AgentProfileDefinition = serde_json::from_value(profile).unwrap();
        runtime.save_profile(definition).await.unwrap();
    }
}

pub(crate) fn request_for(profile: &str) -> tt_runtime::StartRunRequest {
    let mut request = start_request();
    request.profile_id = Some(profile.into());
    request
}

/// The profile the run of `point` starts with.
fn profile_of(point: Point) -> &'static str {
    match point {
        Point::AfterHandoff | Point::HandoffBeforeTransfer => "opener",
        Point::AssembledRootBetweenModelCalls => "assembled",
        Point::AfterCommitWithEarlierReminder | Point::PromotedBeforeJournaled => "drifter",
        _ => "lead",
    }
}

/// Every file under the run's model-visible roots, by relative path, task ids left out.
pub(crate) fn workspace(dir: &Path, run_id: &str) -> BTreeMap<String, String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(base, &path, out);
            } else {
                let key = path.strip_prefix(base).unwrap().display().to_string();
                out.insert(
                    key,
                    without_task_ids(&std::fs::read_to_string(&path).unwrap()),
                );
            }
        }
    }
    let mut run_dirs = Vec::new();
    for chat in std::fs::read_dir(dir.join("chats")).unwrap().flatten() {
        let candidate = chat.path().join("runs").join(run_id);
        if candidate.is_dir() {
            run_dirs.push(candidate);
        }
    }
    let run_dir = run_dirs.pop().unwrap();
    let mut files = BTreeMap::new();
    for root in ["output", "summaries", "scratch", "plan", "persist"] {
        let path = run_dir.join(root);
        if path.is_dir() {
            walk(&run_dir, &path, &mut files);
        }
    }
    files
}

/// `text` with each task id (random in every run, interrupted or not) written `task_…`.
fn without_task_ids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("task_") {
        out.push_str(&rest[..at]);
        out.push_str("task_…");
        rest = rest[at + "task_".len()..].trim_start_matches(|c: char| c.is_ascii_hexdigit());
    }
    out.push_str(rest);
    out
}

/// How many events of `kind` are in `events`.
fn count(events: &[AgentRunEvent], kind: &str) -> usize {
    events
        .iter()
        .filter(|event| event.event_type == kind)
        .count()
}

/// The events the first process wrote (up to `run_resumed.fromSeq`).
fn first_part(events: &[AgentRunEvent]) -> Vec<AgentRunEvent> {
    let from_seq = events
        .iter()
        .find(|event| event.event_type == "run_resumed")
        .and_then(|event| event.payload["fromSeq"].as_u64())
        .unwrap();
    events
        .iter()
        .filter(|event| event.seq <= from_seq)
        .cloned()
        .collect()
}

/// The last status each agent's `agent_invocation_*` events gave it in `events`.
fn last_statuses(events: &[AgentRunEvent]) -> HashMap<String, String> {
    let mut last = HashMap::new();
    for event in events {
        if event.event_type.as_str().starts_with("agent_invocation_")
            && let Some(id) = event.payload["invocationId"].as_str()
        {
            let status = event.payload["status"].as_str().unwrap_or_default();
            last.insert(id.to_owned(), status.to_owned());
        }
    }
    last
}

/// Each finished result reached the lead once, by `agent.await` or injection.
pub(crate) fn deliveries(events: &[AgentRunEvent]) -> HashMap<String, usize> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    for event in events {
        let ids = match event.event_type.as_str() {
            "agent_await_completed" => &event.payload["deliveredTaskIds"],
            "agent_results_injected" => &event.payload["taskIds"],
            _ => continue,
        };
        for id in ids.as_array().unwrap() {
            *seen.entry(id.as_str().unwrap().to_owned()).or_default() += 1;
        }
    }
    seen
}

struct Outcome {
    status: AgentRunStatus,
    files: BTreeMap<String, String>,
    committed: String,
    calls: u64,
    events: Vec<AgentRunEvent>,
    host: Arc<Host>,
}

fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn uninterrupted() -> Outcome {
    uninterrupted_with("lead")
}

fn uninterrupted_with(profile: &str) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let calls = Arc::new(AtomicU64::new(0));
    let host = Arc::new(Host::default());
    tokio_runtime().block_on(async {
        let runtime = runtime(dir.path(), None, &calls, &Arc::default(), &host);
        install(&runtime).await;
        let run = runtime.start_run(request_for(profile)).await.unwrap();
        let done = runtime.wait_for_run(run.id.as_str()).await.unwrap();
        let events = all_events(&runtime, run.id.as_str()).await;
        let committed = host.offered.lock().unwrap().last().unwrap().1.clone();
        Outcome {
            status: done.status,
            files: workspace(dir.path(), run.id.as_str()),
            committed,
            calls: calls.load(Ordering::SeqCst),
            events,
            host: Arc::clone(&host),
        }
    })
}

const DIR_VAR: &str = "TT_RESUME_TEST_DIR";
const POINT_VAR: &str = "TT_RESUME_TEST_POINT";
const STOPPED: &str = "TT_RESUME_TEST_STOPPED";
/// Where the first process leaves its model requests (`RequestLog`), in the data dir.
const FIRST_REQUESTS: &str = "first-requests.json";

impl Point {
    fn parse(name: &str) -> Point {
        [
            Point::BetweenModelCalls,
            Point::AfterStoredResponse,
            Point::MidChildToolCalls,
            Point::WhileRootAwaits,
            Point::WhileCommitWaits,
            Point::AfterHandoff,
            Point::HandoffBeforeTransfer,
            Point::AssembledRootBetweenModelCalls,
            Point::DelegateBeforeTask,
            Point::AfterCommitWithEarlierReminder,
            Point::PromotedBeforeJournaled,
        ]
        .into_iter()
        .find(|point| format!("{point:?}") == name)
        .unwrap()
    }
}

/// The first process of [`an_interrupted_fan_out_resumes_at_every_kind_of_step_without_repeating_work`]:
/// runs the scenario in `$TT_RESUME_TEST_DIR` up to `$TT_RESUME_TEST_POINT`, prints a line
/// (run id, model calls made, commit ids offered) and waits to be killed.
#[test]
#[ignore = "the first process of the resume test, which starts it with its own arguments"]
fn first_process() {
    let dir = std::path::PathBuf::from(std::env::var(DIR_VAR).unwrap());
    let point = Point::parse(&std::env::var(POINT_VAR).unwrap());
    if matches!(
        point,
        Point::HandoffBeforeTransfer | Point::DelegateBeforeTask | Point::PromotedBeforeJournaled
    ) {
        tracing::subscriber::set_global_default(Hold::new(HoldAt::Freeze(point))).unwrap();
    }
    let calls = Arc::new(AtomicU64::new(0));
    let host = Arc::new(Host::default());
    tokio_runtime().block_on(async {
        let frozen = Arc::new(AtomicBool::new(false));
        let runtime = runtime(&dir, Some(point), &calls, &frozen, &host);
        install(&runtime).await;
        let run = runtime
            .start_run(request_for(profile_of(point)))
            .await
            .unwrap();
        let mut stream = runtime.subscribe(run.id.as_str(), 0, None);
        while !FROZEN.load(Ordering::SeqCst) {
            let event = tokio::select! {
                event = stream.next() => event.unwrap().expect("the run ended first"),
                () = tokio::time::sleep(std::time::Duration::from_millis(5)) => continue,
            };
            if stop_here(point, &event) {
                break;
            }
        }
        // A response that came back is stored before the process goes: this test is about
        // what happens after a stored step, not about the instant between the two.
        let expect_frozen = !matches!(
            point,
            Point::WhileCommitWaits
                | Point::HandoffBeforeTransfer
                | Point::DelegateBeforeTask
                | Point::PromotedBeforeJournaled
        );
        let mut changes = runtime.subscribe(run.id.as_str(), 0, None);
        let mut stored = 0;
        while stored != calls.load(Ordering::SeqCst)
            || (expect_frozen && !frozen.load(Ordering::SeqCst))
        {
            let event = tokio::select! {
                event = changes.next() => event.unwrap().expect("the run ended first"),
                () = tokio::time::sleep(std::time::Duration::from_millis(5)) => continue,
            };
            if event.event_type == "model_response_stored" {
                stored += 1;
            }
        }
        let commits: Vec<String> = host
            .offered
            .lock()
            .unwrap()
            .iter()
            .map(|(id, _)| id.clone())
            .collect();
        let requests = host.requests.lock().unwrap().clone();
        std::fs::write(
            dir.join(FIRST_REQUESTS),
            serde_json::to_string(&requests).unwrap(),
        )
        .unwrap();
        println!(
            "{STOPPED} {} {} {}",
            run.id,
            calls.load(Ordering::SeqCst),
            commits.join(",")
        );
        std::future::pending::<()>().await;
    });
}

/// Runs the scenario until `point` in a child process, kills it there with SIGKILL, and
/// resumes the run in this one. Returns the model calls and commit ids of the killed process.
fn interrupted_then_resumed(point: Point) -> (u64, Vec<String>, Outcome) {
    use std::io::BufRead as _;
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "resume::first_process",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env(DIR_VAR, dir.path())
        .env(POINT_VAR, format!("{point:?}"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let line = stdout
        .lines()
        .map(Result::unwrap)
        .find(|line| line.starts_with(STOPPED))
        .unwrap_or_else(|| panic!("{point:?}: the first process ended early"));
    child.kill().unwrap();
    child.wait().unwrap();
    let fields: Vec<&str> = line.split(' ').collect();
    let run_id = fields[1].to_owned();
    let first_calls: u64 = fields[2].parse().unwrap();
    let first_commits: Vec<String> = fields
        .get(3)
        .filter(|ids| !ids.is_empty())
        .map(|ids| ids.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    let calls = Arc::new(AtomicU64::new(0));
    let host = Arc::new(Host::default());
    let resumed = tokio_runtime().block_on(async {
        let runtime = runtime(dir.path(), None, &calls, &Arc::default(), &host);
        let stored = runtime.get_run(&run_id).await.unwrap();
        assert_eq!(stored.status, AgentRunStatus::Interrupted, "{point:?}");
        if let Err(error) = runtime.resume_run(&run_id).await {
            let why: Vec<Value> = all_events(&runtime, &run_id)
                .await
                .into_iter()
                .filter(|event| event.level == tt_runtime::EventLevel::Error)
                .map(|event| event.payload)
                .collect();
            panic!("{point:?}: {error:?} after {why:?}");
        }
        let done = runtime.wait_for_run(&run_id).await.unwrap();
        let events = all_events(&runtime, &run_id).await;
        let committed = host
            .offered
            .lock()
            .unwrap()
            .last()
            .map(|(_, text)| text.clone())
            .unwrap_or_default();
        Outcome {
            status: done.status,
            files: workspace(dir.path(), &run_id),
            committed,
            calls: calls.load(Ordering::SeqCst),
            events,
            host: Arc::clone(&host),
        }
    });
    // The request the first process froze at is asked again with the messages it had: the
    // replayed history (responses, results, reminders, injections) is the one it had, and
    // only results that finished since may follow it.
    if let Some((profile, round)) = point.frozen_request() {
        let first: Vec<(String, u32, String)> = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join(FIRST_REQUESTS)).unwrap(),
        )
        .unwrap();
        let asked = |log: &[(String, u32, String)]| -> Option<Vec<Value>> {
            log.iter()
                .find(|(p, r, _)| p == profile && *r == round)
                .map(|(_, _, messages)| serde_json::from_str(&without_task_ids(messages)).unwrap())
        };
        let before = asked(&first).unwrap_or_else(|| panic!("{point:?}: never asked"));
        let again = asked(&resumed.host.requests.lock().unwrap())
            .unwrap_or_else(|| panic!("{point:?}: not asked again"));
        assert!(again.len() >= before.len(), "{point:?}: {again:#?}");
        assert_eq!(
            again[..before.len()],
            before[..],
            "{point:?}: the resumed agent's history differs from the one it had"
        );
        assert!(
            again[before.len()..].iter().all(|message| message
                .to_string()
                .contains("Results of tasks you delegated")),
            "{point:?}: {:#?}",
            &again[before.len()..]
        );
    }
    (first_calls, first_commits, resumed)
}

#[test]
fn an_interrupted_fan_out_resumes_at_every_kind_of_step_without_repeating_work() {
    let baseline = uninterrupted();
    assert_eq!(baseline.status, AgentRunStatus::Completed);
    assert_eq!(deliveries(&baseline.events).len(), N);
    for point in [
        Point::BetweenModelCalls,
        Point::AfterStoredResponse,
        Point::MidChildToolCalls,
        Point::WhileRootAwaits,
        Point::WhileCommitWaits,
    ] {
        let (first_calls, first_commits, resumed) = interrupted_then_resumed(point);
        assert_eq!(resumed.status, AgentRunStatus::Completed, "{point:?}");
        let failures: Vec<&Value> = resumed
            .events
            .iter()
            .filter(|event| event.event_type == "agent_child_invocation_failed")
            .map(|event| &event.payload["message"])
            .collect();
        assert!(failures.is_empty(), "{point:?}: {failures:?}");
        let differing: Vec<(&String, Option<&String>, Option<&String>)> = baseline
            .files
            .keys()
            .chain(resumed.files.keys())
            .filter(|key| baseline.files.get(*key) != resumed.files.get(*key))
            .map(|key| (key, baseline.files.get(key), resumed.files.get(key)))
            .collect();
        assert!(differing.is_empty(), "{point:?}: {differing:?}");
        assert_eq!(resumed.committed, baseline.committed, "{point:?}");
        assert_eq!(
            first_calls + resumed.calls,
            baseline.calls,
            "{point:?}: model calls over both processes"
        );
        let delivered = deliveries(&resumed.events);
        assert_eq!(delivered.len(), N, "{point:?}: {delivered:?}");
        assert!(
            delivered.values().all(|count| *count == 1),
            "{point:?}: {delivered:?}"
        );
        let resumes: Vec<&AgentRunEvent> = resumed
            .events
            .iter()
            .filter(|event| event.event_type == "run_resumed")
            .collect();
        assert_eq!(resumes.len(), 1, "{point:?}");
        let seqs: Vec<u64> = resumed.events.iter().map(|event| event.seq).collect();
        assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
        if point == Point::WhileCommitWaits {
            // Offered again under the same id, so the host can tell it already has it.
            let after = resumed.host.offered.lock().unwrap().clone();
            assert_eq!(first_commits.len(), 1);
            assert_eq!(after.len(), 1);
            assert_eq!(first_commits[0], after[0].0);
        }
        let _ = &baseline.host;
    }
}

/// Starts [`first_process`] at `point` in `dir` and returns it once it stopped there, with the
/// run id.
pub(crate) fn stopped_first_process(dir: &Path, point: Point) -> (std::process::Child, String) {
    use std::io::BufRead as _;
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "resume::first_process",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env(DIR_VAR, dir)
        .env(POINT_VAR, format!("{point:?}"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let line = stdout
        .lines()
        .map(Result::unwrap)
        .find(|line| line.starts_with(STOPPED))
        .unwrap();
    let run_id = line.split(' ').nth(1).unwrap().to_owned();
    (child, run_id)
}

#[test]
fn a_run_handed_off_before_the_interruption_resumes_with_the_agent_that_took_it_over() {
    let baseline = uninterrupted_with("opener");
    assert_eq!(baseline.status, AgentRunStatus::Completed);
    let (first_calls, _, resumed) = interrupted_then_resumed(Point::AfterHandoff);
    assert_eq!(resumed.status, AgentRunStatus::Completed);
    assert_eq!(resumed.files, baseline.files);
    assert_eq!(resumed.committed, baseline.committed);
    assert_eq!(first_calls + resumed.calls, baseline.calls);
    let resumed_event = resumed
        .events
        .iter()
        .find(|event| event.event_type == "run_resumed")
        .unwrap();
    let owner = resumed_event.payload["invocations"][0].as_str().unwrap();
    assert_ne!(owner, "inv_root");
    assert!(resumed.events.iter().any(|event| {
        event.event_type == "agent_task_resumed"
            && event.payload["childInvocationId"] == json!(owner)
    }));
}

#[test]
fn a_handoff_registered_before_the_interruption_is_not_made_twice() {
    let baseline = uninterrupted_with("opener");
    assert_eq!(baseline.status, AgentRunStatus::Completed);
    let (first_calls, _, resumed) = interrupted_then_resumed(Point::HandoffBeforeTransfer);
    assert_eq!(resumed.status, AgentRunStatus::Completed);
    assert_eq!(resumed.files, baseline.files);
    assert_eq!(resumed.committed, baseline.committed);
    assert_eq!(first_calls + resumed.calls, baseline.calls);
    // The first process stopped inside the window: the handoff registered, its caller not
    // yet `transferred`.
    let before = first_part(&resumed.events);
    assert_eq!(count(&before, "agent_handoff_accepted"), 1);
    assert_eq!(count(&before, "agent_invocation_transferred"), 0);
    // One handoff over both processes, and the resumed run ends as the uninterrupted one.
    let handoffs = |events: &[AgentRunEvent]| {
        events
            .iter()
            .filter(|event| {
                event.event_type == "agent_task_registered"
                    && event.payload["continuation"] == json!("transfer_control")
            })
            .count()
    };
    assert_eq!(handoffs(&resumed.events), 1);
    assert_eq!(handoffs(&baseline.events), 1);
    assert_eq!(count(&resumed.events, "agent_handoff_accepted"), 1);
    assert_eq!(count(&resumed.events, "agent_invocation_transferred"), 1);
}

#[test]
fn an_agent_written_before_its_task_is_taken_up_by_the_resumed_delegation() {
    let baseline = uninterrupted();
    let (first_calls, _, resumed) = interrupted_then_resumed(Point::DelegateBeforeTask);
    assert_eq!(resumed.status, AgentRunStatus::Completed);
    assert_eq!(resumed.files, baseline.files);
    assert_eq!(resumed.committed, baseline.committed);
    assert_eq!(first_calls + resumed.calls, baseline.calls);
    let delivered = deliveries(&resumed.events);
    assert_eq!(delivered.len(), N);
    assert!(delivered.values().all(|count| *count == 1), "{delivered:?}");
    // The first process wrote one agent and no task; its agent was left `interrupted` then.
    let first = first_part(&resumed.events);
    assert_eq!(count(&first, "agent_task_registered"), 0);
    // As many agents as an uninterrupted run, none of them left `interrupted`.
    assert_eq!(
        count(&resumed.events, "agent_invocation_created"),
        count(&baseline.events, "agent_invocation_created")
    );
    let last = last_statuses(&resumed.events[first.len()..]);
    assert_eq!(last.len(), N + 1, "{last:?}");
    assert!(
        last.values().all(|status| status == "completed"),
        "{last:?}"
    );
}

#[test]
fn a_replayed_reminder_says_what_it_said_before_the_interruption() {
    let baseline = uninterrupted_with("drifter");
    assert_eq!(baseline.status, AgentRunStatus::Completed);
    let (first_calls, first_commits, resumed) =
        interrupted_then_resumed(Point::AfterCommitWithEarlierReminder);
    assert_eq!(resumed.status, AgentRunStatus::Completed);
    assert_eq!(resumed.files, baseline.files);
    // Published by the first process, and not offered again.
    assert_eq!(first_commits.len(), 1);
    assert!(resumed.host.offered.lock().unwrap().is_empty());
    assert_eq!(first_calls + resumed.calls, baseline.calls);
    // The reminder after the first answer told it to write and publish (nothing was published
    // yet); the replay renders it so, though the run has published since.
    let asked = resumed.host.requests.lock().unwrap().clone();
    let (_, _, messages) = asked
        .iter()
        .find(|(profile, round, _)| profile == "drifter" && *round == 4)
        .unwrap();
    assert!(messages.contains("publish it with"), "{messages}");
    assert!(!messages.contains("already published"), "{messages}");
}

#[test]
fn a_promotion_made_before_the_interruption_is_read_back_not_made_again() {
    let baseline = uninterrupted_with("drifter");
    let (first_calls, first_commits, resumed) =
        interrupted_then_resumed(Point::PromotedBeforeJournaled);
    assert_eq!(resumed.status, AgentRunStatus::Completed);
    assert_eq!(resumed.files, baseline.files);
    assert_eq!(first_commits.len(), 1);
    assert!(resumed.host.offered.lock().unwrap().is_empty());
    assert_eq!(first_calls + resumed.calls, baseline.calls);
    // The first process promoted and died before journaling it; the resumed run journals the
    // promotion it reads back, once.
    let first = first_part(&resumed.events);
    assert_eq!(count(&first, "persistent_changes_committed"), 0);
    assert_eq!(count(&resumed.events, "persistent_changes_committed"), 1);
    assert_eq!(
        count(&resumed.events, "persistent_changes_commit_failed"),
        0
    );
    let promoted = resumed
        .events
        .iter()
        .find(|event| event.event_type == "persistent_changes_committed")
        .unwrap();
    let expected = baseline
        .events
        .iter()
        .find(|event| event.event_type == "persistent_changes_committed")
        .unwrap();
    assert_eq!(promoted.payload["changes"], expected.payload["changes"]);
}

#[test]
fn a_root_prompt_the_host_assembled_is_read_back_instead_of_assembled_again() {
    let baseline = uninterrupted_with("assembled");
    assert_eq!(baseline.status, AgentRunStatus::Completed);
    assert_eq!(baseline.host.assembler.requests().len(), 1);
    let (first_calls, _, resumed) = interrupted_then_resumed(Point::AssembledRootBetweenModelCalls);
    assert_eq!(resumed.status, AgentRunStatus::Completed);
    assert_eq!(resumed.files, baseline.files);
    assert_eq!(resumed.committed, baseline.committed);
    assert_eq!(first_calls + resumed.calls, baseline.calls);
    // The stored prompt the first answers were made with is the resumed root's prompt.
    assert!(resumed.host.assembler.requests().is_empty());
    let resumed_event = resumed
        .events
        .iter()
        .find(|event| event.event_type == "run_resumed")
        .unwrap();
    assert_eq!(resumed_event.payload["invocations"], json!(["inv_root"]));
}

#[test]
fn resume_refuses_runs_it_cannot_continue_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, run_id) = stopped_first_process(dir.path(), Point::BetweenModelCalls);
    let calls = Arc::new(AtomicU64::new(0));
    let host = Arc::new(Host::default());
    tokio_runtime().block_on(async {
        // The first process still owns the run.
        let owned_elsewhere = runtime(dir.path(), None, &calls, &Arc::default(), &host);
        let error = owned_elsewhere.resume_run(&run_id).await.unwrap_err();
        assert_eq!(error.code, "agent.run_locked", "{error:?}");
        drop(owned_elsewhere);
        child.kill().unwrap();
        child.wait().unwrap();

        // A profile that no longer offers the lead what it was frozen with.
        let second = runtime(dir.path(), None, &calls, &Arc::default(), &host);
        let runtime = second;
        let before = all_events(&runtime, &run_id).await.len();
        let mut changed = lead_profile();
        changed["tools"]["allow"] = json!([
            "agent.delegate",
            "agent.await",
            "workspace.write_file",
            "workspace.commit",
            "workspace.finish"
        ]);
        let definition: AgentProfileDefinition = serde_json::from_value(changed).unwrap();
        runtime.save_profile(definition).await.unwrap();
        let error = runtime.resume_run(&run_id).await.unwrap_err();
        assert_eq!(error.code, "agent.resume_profile_changed", "{error:?}");
        assert!(error.message.contains("lead"), "{error:?}");
        let run = runtime.get_run(&run_id).await.unwrap();
        assert_eq!(run.status, AgentRunStatus::Interrupted);
        assert_eq!(all_events(&runtime, &run_id).await.len(), before);

        // With the profile as it was, it resumes and completes; then it is over.
        install(&runtime).await;
        runtime.resume_run(&run_id).await.unwrap();
        let error = runtime.resume_run(&run_id).await.unwrap_err();
        assert_eq!(error.code, "agent.run_not_resumable", "{error:?}");
        let done = runtime.wait_for_run(&run_id).await.unwrap();
        assert_eq!(done.status, AgentRunStatus::Completed);
        let error = runtime.resume_run(&run_id).await.unwrap_err();
        assert_eq!(error.code, "agent.run_not_resumable", "{error:?}");
        assert!(error.message.contains("completed"), "{error:?}");
        let error = runtime.resume_run("run_missing").await.unwrap_err();
        assert_eq!(error.code, "agent.not_found", "{error:?}");
    });
}

const SOAK_MODE_VAR: &str = "TT_RESUME_SOAK_MODE";
const SOAK_PROFILE_VAR: &str = "TT_RESUME_SOAK_PROFILE";
const SOAK_RUN: &str = "TT_RESUME_SOAK_RUN";

/// A host that publishes each commit once: the published messages, one JSON line each, in
/// `<dir>/published.jsonl`; a commit offered again under a `commitId` it already published gets
/// the same message id back.
fn publishing_runtime(dir: &Path, calls: &Arc<AtomicU64>) -> AgentRuntime {
    let published = dir.join("published.jsonl");
    AgentRuntimeBuilder::new()
        .data_dir(dir)
        .provider(model(None, calls, &Arc::default(), &RequestLog::default()))
        .commit_handler(move |request| {
            let published = published.clone();
            async move {
                let mut text = std::fs::read_to_string(&published).unwrap_or_default();
                if !text.ends_with('\n') {
                    // A host killed while it wrote a line leaves it torn: a real host would
                    // not have published that one, so it is dropped.
                    text.truncate(text.rfind('\n').map_or(0, |end| end + 1));
                    std::fs::write(&published, &text).unwrap();
                }
                let id = request.commit_id.to_string();
                let known = text.lines().position(|line| {
                    serde_json::from_str::<Value>(line).unwrap()["commitId"] == json!(id)
                });
                let index = match known {
                    Some(index) => index,
                    None => {
                        use std::io::Write as _;
                        let mut file = std::fs::OpenOptions::new()
                            .create(true)
                            .append(true)
                            .open(&published)
                            .unwrap();
                        let line = json!({"commitId": id, "content": request.content});
                        writeln!(file, "{line}").unwrap();
                        text.lines().count()
                    }
                };
                Ok(index.to_string())
            }
        })
        .build()
        .unwrap()
}

/// One process of the soak: starts the scenario (`start`) or resumes a run (`resume:<runId>`)
/// in `$TT_RESUME_TEST_DIR` and runs it to its end, unless it is killed first.
#[test]
#[ignore = "a process of the resume soak, which starts it with its own arguments"]
fn soak_process() {
    let dir = std::path::PathBuf::from(std::env::var(DIR_VAR).unwrap());
    let mode = std::env::var(SOAK_MODE_VAR).unwrap();
    let calls = Arc::new(AtomicU64::new(0));
    tokio_runtime().block_on(async {
        let runtime = publishing_runtime(&dir, &calls);
        let run_id = match mode.strip_prefix("resume:") {
            Some(run_id) => {
                // Killed after its end was recorded: nothing is left to resume.
                if runtime.get_run(run_id).await.unwrap().status != AgentRunStatus::Completed {
                    runtime.resume_run(run_id).await.unwrap();
                }
                run_id.to_owned()
            }
            None => {
                install(&runtime).await;
                let profile = std::env::var(SOAK_PROFILE_VAR).unwrap();
                runtime
                    .start_run(request_for(&profile))
                    .await
                    .unwrap()
                    .id
                    .to_string()
            }
        };
        println!("{SOAK_RUN} {run_id}");
        let done = runtime.wait_for_run(&run_id).await.unwrap();
        if done.status != AgentRunStatus::Completed {
            let why: Vec<Value> = all_events(&runtime, &run_id)
                .await
                .into_iter()
                .filter(|event| event.level != tt_runtime::EventLevel::Info)
                .map(|event| json!([event.event_type, event.payload]))
                .collect();
            panic!("{mode}: {done:?} after {why:?}");
        }
    });
}

fn soak_trials() -> u64 {
    std::env::var("TT_RESUME_SOAK_TRIALS")
        .ok()
        .and_then(|raw| raw.parse().ok())
        .unwrap_or(2)
}

fn journal_bytes(dir: &Path) -> u64 {
    let Ok(chats) = std::fs::read_dir(dir.join("chats")) else {
        return 0;
    };
    let mut total = 0;
    for chat in chats.flatten() {
        let Ok(runs) = std::fs::read_dir(chat.path().join("runs")) else {
            continue;
        };
        for run in runs.flatten() {
            total +=
                std::fs::metadata(run.path().join("events.jsonl")).map_or(0, |meta| meta.len());
        }
    }
    total
}

/// `cargo xtask soak crash --resume --trials N` runs this with many trials: the scenario is
/// killed with SIGKILL at a pseudo-random point, resumed in a new process, killed again
/// further on, and so on until a process completes it. Each trial must end `completed` with
/// the workspace and published text of an uninterrupted run, each model turn stored once and as
/// many as an uninterrupted run stores, the summary published once, and one handoff at most.
/// Trials alternate between the fan-out (the lead and its 16 note takers) and the handoff
/// (the opener hands the run to the closer).
#[test]
fn killed_at_random_moments_and_resumed_until_it_completes() {
    use std::io::BufRead as _;
    let scenarios = ["lead", "opener"].map(|profile| (profile, uninterrupted_with(profile)));
    let turns = |events: &[AgentRunEvent]| -> Vec<(String, u64)> {
        let mut turns: Vec<(String, u64)> = events
            .iter()
            .filter(|event| event.event_type == "model_response_stored")
            .map(|event| {
                (
                    event.payload["invocationId"].as_str().unwrap().to_owned(),
                    event.payload["round"].as_u64().unwrap(),
                )
            })
            .collect();
        turns.sort();
        turns
    };
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for trial in 0..soak_trials() {
        let (profile, baseline) = &scenarios[usize::try_from(trial).unwrap() % scenarios.len()];
        let baseline_turns = turns(&baseline.events).len();
        let total_bytes = baseline
            .events
            .iter()
            .map(|event| serde_json::to_string(event).unwrap().len() as u64 + 1)
            .sum::<u64>();
        let dir = tempfile::tempdir().unwrap();
        let mut run_id: Option<String> = None;
        let mut kills = 0;
        loop {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let target = journal_bytes(dir.path()) + 1 + (seed >> 33) % (total_bytes / 3);
            let mode = run_id
                .as_ref()
                .map_or_else(|| "start".to_owned(), |id| format!("resume:{id}"));
            let mut child = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "resume::soak_process",
                    "--exact",
                    "--ignored",
                    "--nocapture",
                ])
                .env(DIR_VAR, dir.path())
                .env(SOAK_MODE_VAR, &mode)
                .env(SOAK_PROFILE_VAR, profile)
                .stdout(std::process::Stdio::piped())
                .stderr(std::fs::File::create(dir.path().join("process.log")).unwrap())
                .spawn()
                .unwrap();
            let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
            let (sender, receiver) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                for line in stdout.lines().map_while(Result::ok) {
                    if let Some(id) = line.strip_prefix(&format!("{SOAK_RUN} ")) {
                        let _ = sender.send(id.to_owned());
                    }
                }
            });
            let ended = loop {
                if let Some(status) = child.try_wait().unwrap() {
                    break Some(status);
                }
                if run_id.is_some() && journal_bytes(dir.path()) >= target {
                    break None;
                }
                if run_id.is_none()
                    && let Ok(id) = receiver.try_recv()
                {
                    run_id = Some(id);
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            };
            if run_id.is_none() {
                run_id = receiver.try_recv().ok();
            }
            match ended {
                Some(status) => {
                    assert!(
                        status.success(),
                        "trial {trial}: a process failed ({mode}): {}",
                        std::fs::read_to_string(dir.path().join("process.log")).unwrap()
                    );
                    break;
                }
                None => {
                    child.kill().unwrap();
                    child.wait().unwrap();
                    kills += 1;
                    assert!(kills < 50, "trial {trial}: never completed");
                }
            }
        }
        let run_id = run_id.unwrap();
        let calls = Arc::new(AtomicU64::new(0));
        tokio_runtime().block_on(async {
            let runtime = publishing_runtime(dir.path(), &calls);
            let run = runtime.get_run(&run_id).await.unwrap();
            assert_eq!(run.status, AgentRunStatus::Completed, "trial {trial}");
            let events = all_events(&runtime, &run_id).await;
            let stored = turns(&events);
            let mut unique = stored.clone();
            unique.dedup();
            assert_eq!(
                unique.len(),
                stored.len(),
                "trial {trial}: a turn stored twice"
            );
            let steps = || -> Vec<String> {
                events
                    .iter()
                    .filter(|event| {
                        matches!(
                            event.event_type.as_str(),
                            "model_response_stored"
                                | "run_resumed"
                                | "run_interrupted"
                                | "agent_task_registered"
                                | "agent_task_resumed"
                                | "agent_invocation_resumed"
                                | "agent_task_completed"
                                | "agent_loop_finished"
                                | "tool_call_started"
                        )
                    })
                    .map(|event| format!("{} {} {}", event.seq, event.event_type, event.payload))
                    .collect()
            };
            assert_eq!(
                stored.len(),
                baseline_turns,
                "trial {trial} ({profile}): {:#?}",
                steps()
            );
            let handoffs = events
                .iter()
                .filter(|event| {
                    event.event_type == "agent_task_registered"
                        && event.payload["continuation"] == json!("transfer_control")
                })
                .count();
            assert!(handoffs <= 1, "trial {trial} ({profile}): {:#?}", steps());
            // No agent was left `interrupted`, not even one a delegation or handoff had
            // written before its task when it was killed (the resumed call takes it up).
            let last = last_statuses(&events);
            assert!(
                last.values().all(|status| status != "interrupted"),
                "trial {trial}: {last:?}"
            );
        });
        assert_eq!(
            workspace(dir.path(), &run_id),
            baseline.files,
            "trial {trial}"
        );
        let published = std::fs::read_to_string(dir.path().join("published.jsonl")).unwrap();
        let lines: Vec<Value> = published
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(lines.len(), 1, "trial {trial}: {lines:?}");
        assert_eq!(
            lines[0]["content"],
            json!(baseline.committed),
            "trial {trial}"
        );
        eprintln!("trial {trial} ({profile}): completed after {kills} kill(s)");
    }
}

/// The process of [`a_run_ends_after_every_agent_of_it_has_closed`]: runs the solo scenario
/// in `$TT_RESUME_TEST_DIR` with the agent that returns held for a moment, and prints the run
/// id once the run ended.
#[test]
#[ignore = "a process of the run-end test, which starts it with its own arguments"]
fn slow_return_process() {
    tracing::subscriber::set_global_default(Hold::new(HoldAt::SlowReturn)).unwrap();
    let dir = std::path::PathBuf::from(std::env::var(DIR_VAR).unwrap());
    let calls = Arc::new(AtomicU64::new(0));
    let host = Arc::new(Host::default());
    tokio_runtime().block_on(async {
        let runtime = runtime(&dir, None, &calls, &Arc::default(), &host);
        install(&runtime).await;
        let run = runtime.start_run(request_for("solo")).await.unwrap();
        let done = runtime.wait_for_run(run.id.as_str()).await.unwrap();
        assert_eq!(done.status, AgentRunStatus::Completed);
        println!("{STOPPED} {}", run.id);
    });
}

/// A delegated agent that returned its result is still closing when its delegating agent
/// finishes the run (held 300 ms in another process, see [`HoldAt::SlowReturn`]): the run ends only
/// after it closed, so `run_completed` is the last event and no agent is left `running`, even
/// though the process exits right after the run's end.
#[test]
fn a_run_ends_after_every_agent_of_it_has_closed() {
    use std::io::BufRead as _;
    let dir = tempfile::tempdir().unwrap();
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "resume::slow_return_process",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env(DIR_VAR, dir.path())
        .stderr(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success());
    let run_id = output
        .stdout
        .lines()
        .map(Result::unwrap)
        .find_map(|line| line.strip_prefix(&format!("{STOPPED} ")).map(str::to_owned))
        .unwrap();
    tokio_runtime().block_on(async {
        let runtime = runtime(
            dir.path(),
            None,
            &Arc::default(),
            &Arc::default(),
            &Arc::default(),
        );
        let events = all_events(&runtime, &run_id).await;
        assert_eq!(events.last().unwrap().event_type, "run_completed");
        let last = last_statuses(&events);
        assert_eq!(last.len(), 2, "{last:?}");
        assert!(
            last.values().all(|status| status == "completed"),
            "{last:?}"
        );
    });
}
