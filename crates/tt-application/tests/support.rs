//! Test harness: an `AgentRunService` over the in-memory store, a fake model, a fake commit
//! bridge, a ticking manual clock and sequential ids.

use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tt_application::{
    AgentRunService, PromptMessage, PromptRole, RuntimeServices, StartRunRequest,
};
use tt_domain::event::AgentRunEvent;
use tt_domain::ids::RunId;
use tt_domain::model::{AgentModelRequest, AgentModelResponse};
use tt_domain::profile::{AgentProfileDefinition, default_writer_definition};
use tt_domain::run::{AgentRun, ConversationKind};
use tt_domain::task::{AgentTaskRecord, TaskStatus};
use tt_ports::ModelError;
use tt_testkit::fakes::{
    FakeCommitBridge, FakeModel, FakePromptBroker, InMemoryStore, ManualClock, SequentialIds,
    responses,
};

pub(crate) struct Harness {
    pub store: Arc<InMemoryStore>,
    pub model: Arc<FakeModel>,
    pub bridge: Arc<FakeCommitBridge>,
    pub broker: Arc<FakePromptBroker>,
    pub skills: Arc<tt_testkit::fakes::InMemorySkills>,
    pub service: Arc<AgentRunService>,
}

pub(crate) fn harness(model: Arc<FakeModel>) -> Harness {
    harness_on(model, Fakes::default())
}

pub(crate) fn harness_with_bridge(model: Arc<FakeModel>, bridge: Arc<FakeCommitBridge>) -> Harness {
    harness_on(
        model,
        Fakes {
            bridge,
            ..Fakes::default()
        },
    )
}

/// Every fake chosen by the test.
pub(crate) fn harness_full(
    model: Arc<FakeModel>,
    bridge: Arc<FakeCommitBridge>,
    broker: Arc<FakePromptBroker>,
    connections: Arc<dyn tt_ports::ModelConnections>,
) -> Harness {
    harness_on(
        model,
        Fakes {
            bridge,
            broker,
            connections,
            ..Fakes::default()
        },
    )
}

/// A harness whose default provider's connection says `model_info`.
pub(crate) fn harness_with_model_info(
    model: Arc<FakeModel>,
    model_info: tt_ports::ConnectionModelInfo,
) -> Harness {
    harness_on(
        model,
        Fakes {
            model_info,
            ..Fakes::default()
        },
    )
}

/// A harness on the given clock and id generator.
pub(crate) fn harness_with_system(
    model: Arc<FakeModel>,
    clock: Arc<dyn tt_ports::Clock>,
    ids: Arc<dyn tt_ports::IdGenerator>,
) -> Harness {
    harness_on(
        model,
        Fakes {
            clock,
            ids,
            ..Fakes::default()
        },
    )
}

/// The fakes of a harness besides its model and store; by default an approving bridge, an
/// answering broker, no connections, a ticking clock and sequential ids.
struct Fakes {
    bridge: Arc<FakeCommitBridge>,
    broker: Arc<FakePromptBroker>,
    connections: Arc<dyn tt_ports::ModelConnections>,
    clock: Arc<dyn tt_ports::Clock>,
    ids: Arc<dyn tt_ports::IdGenerator>,
    model_info: tt_ports::ConnectionModelInfo,
}

impl Default for Fakes {
    fn default() -> Self {
        Self {
            bridge: FakeCommitBridge::approving(),
            broker: FakePromptBroker::answering(),
            connections: Arc::new(tt_ports::NoConnections),
            clock: ManualClock::ticking(),
            ids: SequentialIds::new(),
            model_info: Default::default(),
        }
    }
}

fn harness_on(model: Arc<FakeModel>, fakes: Fakes) -> Harness {
    let store = InMemoryStore::new();
    let skills = tt_testkit::fakes::InMemorySkills::new();
    let services = RuntimeServices {
        skills: skills.clone(),
        model_info: fakes.model_info,
        connections: fakes.connections,
        commit_bridge: fakes.bridge.clone(),
        prompt_broker: fakes.broker.clone(),
        clock: fakes.clock,
        ids: fakes.ids,
        ..in_memory_services(&store, model.clone())
    };
    Harness {
        store,
        model,
        bridge: fakes.bridge,
        broker: fakes.broker,
        skills,
        service: AgentRunService::new(services),
    }
}

/// Runtime services over one in-memory store with the default fakes (approving bridge,
/// answering broker, no connections or external tools, ticking clock, sequential ids): a test
/// replaces the fields it exercises (`RuntimeServices { journal, ..in_memory_services(..) }`).
pub(crate) fn in_memory_services(
    store: &Arc<InMemoryStore>,
    model: Arc<dyn tt_ports::ModelProvider>,
) -> RuntimeServices {
    RuntimeServices {
        runs: store.clone(),
        invocations: store.clone(),
        journal: store.clone(),
        workspace: store.clone(),
        profiles: store.clone(),
        skills: tt_testkit::fakes::InMemorySkills::new(),
        model,
        model_info: Default::default(),
        connections: Arc::new(tt_ports::NoConnections),
        commit_bridge: FakeCommitBridge::approving(),
        external_tools: Arc::new(tt_ports::NoExternalTools),
        prompt_broker: FakePromptBroker::answering(),
        clock: ManualClock::ticking(),
        ids: SequentialIds::new(),
    }
}

/// [`in_memory_services`] whose runs, invocations, journal and workspace go through `faulty`
/// (over `inner`, which keeps the profiles).
pub(crate) fn faulty_services(
    inner: &Arc<InMemoryStore>,
    faulty: &Arc<tt_testkit::fakes::FaultyStore<InMemoryStore>>,
    model: Arc<dyn tt_ports::ModelProvider>,
) -> RuntimeServices {
    RuntimeServices {
        runs: faulty.clone(),
        invocations: faulty.clone(),
        journal: faulty.clone(),
        workspace: faulty.clone(),
        ..in_memory_services(inner, model)
    }
}

/// Starts a run on `service` and waits for it to stop executing.
pub(crate) async fn start_and_wait(
    service: &Arc<AgentRunService>,
    request: StartRunRequest,
) -> AgentRun {
    let run = service.start_run(request).await.expect("start_run");
    service.wait_for_run(&run.id).await.expect("wait_for_run")
}

pub(crate) fn request(profile: Option<&str>) -> StartRunRequest {
    StartRunRequest {
        stable_chat_id: "chat-1".into(),
        conversation_kind: ConversationKind::Character,
        chat_ref: json!({"kind": "character", "characterId": "c1", "fileName": "f"}),
        generation_type: json!("normal"),
        profile_id: profile.map(str::to_owned),
        history: vec![PromptMessage {
            role: PromptRole::Assistant,
            content: "Earlier reply.".into(),
        }],
        user_request: Some("Write a short scene.".into()),
        persist_base_state_id: None,
        skill_scope_refs: Default::default(),
        connection_ref: None,
        generation: Default::default(),
    }
}

impl Harness {
    /// Starts a run and waits (bounded) for it to stop executing.
    pub(crate) async fn run_to_end(&self, request: StartRunRequest) -> AgentRun {
        let run = self.service.start_run(request).await.expect("start_run");
        self.wait(&run.id).await
    }

    /// Starts a run and waits for it to end; it must complete.
    pub(crate) async fn run_completed(&self, request: StartRunRequest) -> AgentRun {
        let run = self.run_to_end(request).await;
        assert_eq!(
            run.status,
            tt_domain::run::AgentRunStatus::Completed,
            "{:?}",
            self.event_types(&run.id)
        );
        run
    }

    /// Waits (bounded) for a run to stop executing; its journal must be what docs/events.md
    /// documents and what the typed payloads describe.
    pub(crate) async fn wait(&self, run_id: &RunId) -> AgentRun {
        let run = tokio::time::timeout(Duration::from_secs(600), self.service.wait_for_run(run_id))
            .await
            .expect("run did not end")
            .expect("wait_for_run");
        let events = self.events(run_id);
        tt_testkit::events_doc::assert_documented(&events);
        tt_testkit::events_doc::assert_typed(&events);
        run
    }

    pub(crate) fn events(&self, run_id: &RunId) -> Vec<AgentRunEvent> {
        self.store.events(run_id)
    }

    pub(crate) fn event_types(&self, run_id: &RunId) -> Vec<String> {
        self.store.event_types(run_id)
    }

    pub(crate) fn first_event(&self, run_id: &RunId, event_type: &str) -> AgentRunEvent {
        self.events(run_id)
            .into_iter()
            .find(|event| event.event_type == event_type)
            .unwrap_or_else(|| panic!("no {event_type} event in {:?}", self.event_types(run_id)))
    }

    /// Starts a run and waits (bounded) until `parked` model calls are parked on the fake model.
    pub(crate) async fn start_parked(&self, request: StartRunRequest, parked: usize) -> AgentRun {
        let run = self.service.start_run(request).await.expect("start_run");
        self.parked(parked).await;
        run
    }

    /// Starts a run whose model holds a call until a delegated agent has completed, then
    /// lets it go; the run must complete.
    pub(crate) async fn completed_after_a_task(&self, request: StartRunRequest) -> AgentRun {
        let run = self.service.start_run(request).await.expect("start_run");
        self.store
            .wait_for_event_type(&run.id, "agent_invocation_completed")
            .await;
        self.release_to_completion(&run.id).await
    }

    /// Cancels the run and waits (bounded) for it to stop; it must end cancelled.
    pub(crate) async fn cancel_to_end(&self, run_id: &RunId) -> AgentRun {
        self.service.cancel_run(run_id).await.expect("cancel_run");
        let run = self.wait(run_id).await;
        assert_eq!(run.status, tt_domain::run::AgentRunStatus::Cancelled);
        run
    }

    /// Lets every held model call go and hangs no more; the run must complete.
    pub(crate) async fn release_to_completion(&self, run_id: &RunId) -> AgentRun {
        self.model.stop_hanging();
        self.model.release_parked();
        let run = self.wait(run_id).await;
        assert_eq!(run.status, tt_domain::run::AgentRunStatus::Completed);
        run
    }

    /// Polls every `poll` until the run waits on tool approvals, and returns them.
    pub(crate) async fn pending_approvals(
        &self,
        run_id: &RunId,
        poll: Duration,
    ) -> Vec<tt_application::PendingToolApproval> {
        loop {
            let pending = self.service.pending_approvals_now(run_id);
            if !pending.is_empty() {
                return pending;
            }
            tokio::time::sleep(poll).await;
        }
    }

    /// Waits (bounded) until `count` model calls are parked on the fake model.
    pub(crate) async fn parked(&self, count: usize) {
        tokio::time::timeout(Duration::from_secs(60), self.model.wait_for_parked(count))
            .await
            .expect("model calls parked");
    }

    /// The run's first invocation of `kind`.
    pub(crate) fn invocation_of_kind(
        &self,
        run_id: &RunId,
        kind: tt_domain::invocation::InvocationKind,
    ) -> tt_domain::invocation::AgentInvocation {
        self.store
            .invocations(run_id)
            .into_iter()
            .find(|invocation| invocation.kind == kind)
            .unwrap_or_else(|| panic!("no {kind:?} invocation"))
    }

    /// Asserts that `run` failed and its `run_failed` says `code`.
    pub(crate) fn assert_failed_with(&self, run: &AgentRun, code: &str) {
        assert_eq!(run.status, tt_domain::run::AgentRunStatus::Failed);
        self.run_failed(&run.id, code);
    }

    /// The run's `run_failed`, which must say `code`.
    pub(crate) fn run_failed(&self, run_id: &RunId, code: &str) -> AgentRunEvent {
        let failed = self.first_event(run_id, "run_failed");
        assert_eq!(failed.payload["code"], code);
        failed
    }

    /// The run's first delegated task, which ended `status` with `error`.
    pub(crate) fn first_task_ended(
        &self,
        run_id: &RunId,
        status: TaskStatus,
        error: &str,
    ) -> AgentTaskRecord {
        let task = self.store.tasks(run_id).remove(0);
        assert_eq!(task.status, status);
        assert_eq!(task.error.as_deref(), Some(error));
        task
    }

    /// The run's first delegated task, which failed with an error starting with `prefix`.
    pub(crate) fn failed_task(&self, run_id: &RunId, prefix: &str) -> AgentTaskRecord {
        let task = self.store.tasks(run_id).remove(0);
        assert_eq!(task.status, TaskStatus::Failed);
        let error = task.error.as_deref().unwrap_or_default();
        assert!(error.starts_with(prefix), "{:?}", task.error);
        task
    }

    /// Run document `document` of `run_id`, which must be stored.
    pub(crate) fn document(&self, run_id: &RunId, document: tt_ports::RunDocument) -> Value {
        self.store
            .document(run_id, &document)
            .unwrap_or_else(|| panic!("no {document:?}"))
    }

    /// Whether run document `document` of `run_id` is stored.
    pub(crate) fn has_document(&self, run_id: &RunId, document: tt_ports::RunDocument) -> bool {
        self.store.document(run_id, &document).is_some()
    }

    /// Forks `source` at `at` with `changes` and waits for the branch to end.
    pub(crate) async fn fork_and_wait(
        &self,
        source: &RunId,
        at: tt_application::ForkPoint,
        changes: tt_application::ForkChanges,
    ) -> AgentRun {
        let branch = self
            .service
            .fork_run(source, tt_application::ForkRunRequest { at, changes })
            .await
            .expect("fork_run");
        self.wait(&branch.id).await
    }

    pub(crate) fn put_profile(&self, profile: AgentProfileDefinition) {
        self.store.put_profile(profile);
    }
}

/// Round `round` of `invocation_id`, as a fork point.
pub(crate) fn at_round(
    invocation_id: tt_domain::ids::InvocationId,
    round: u32,
) -> tt_application::ForkPoint {
    tt_application::ForkPoint::AgentRound {
        invocation_id,
        round,
    }
}

/// A model that answers by round: round n of an invocation gets `turns[n - 1]`.
pub(crate) fn by_turn(turns: Vec<AgentModelResponse>) -> Arc<FakeModel> {
    FakeModel::new(move |request: &AgentModelRequest| scripted(&turns, request))
}

/// Round n of an invocation gets `turns[n - 1]`; past the end, `model.script_exhausted`.
pub(crate) fn scripted(
    turns: &[AgentModelResponse],
    request: &AgentModelRequest,
) -> Result<AgentModelResponse, ModelError> {
    turns
        .get(request.round as usize - 1)
        .cloned()
        .ok_or_else(|| ModelError::Unavailable {
            code: tt_domain::error_codes::MODEL_SCRIPT_EXHAUSTED,
            message: format!("no turn {}", request.round),
        })
}

/// A model that answers its n-th summarizing request (one offering no tools) with
/// `summary(n)` and the agent's rounds with `turns`.
pub(crate) fn summarizing(
    turns: Vec<AgentModelResponse>,
    summary: impl Fn(usize) -> String + Send + Sync + 'static,
) -> Arc<FakeModel> {
    let summaries = std::sync::atomic::AtomicUsize::new(0);
    FakeModel::new(move |request: &AgentModelRequest| {
        if request.tools.is_empty() {
            let n = summaries.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            return Ok(tt_testkit::fakes::responses::text(&summary(n)));
        }
        scripted(&turns, request)
    })
}

/// The estimate of a request as the runtime makes it (no usage reported: no calibration).
pub(crate) fn estimate(request: &AgentModelRequest) -> u64 {
    tt_domain::context_window::request_tokens(
        &request.messages,
        tt_domain::context_window::tools_tokens(&request.tools),
    )
}

/// The first request of `profile` (saved under its id; a run of [`happy_turns`]), in
/// estimated tokens.
pub(crate) async fn first_request_tokens(profile: AgentProfileDefinition) -> u64 {
    let model = by_turn(happy_turns());
    let h = harness(model.clone());
    let id = profile.id.as_str().to_owned();
    h.put_profile(profile);
    let run = h.run_to_end(request(Some(&id))).await;
    assert_eq!(run.status, tt_domain::run::AgentRunStatus::Completed);
    estimate(&model.requests()[0])
}

/// A connection whose default model is `house-model`, priced (when `priced`) at $3 per million
/// prompt tokens and $15 per million answer tokens.
pub(crate) fn house_model_info(priced: bool) -> tt_ports::ConnectionModelInfo {
    if priced {
        return tt_testkit::fakes::priced_model_info("house-model");
    }
    tt_ports::ConnectionModelInfo {
        default_model: Some("house-model".into()),
        ..Default::default()
    }
}

/// [`happy_turns`], each reporting 1,000 prompt tokens and 500 answer tokens.
pub(crate) fn metered_turns() -> Vec<AgentModelResponse> {
    happy_turns()
        .into_iter()
        .map(|mut turn| {
            turn.usage = Some(tt_domain::model::ModelUsage {
                input_tokens: 1_000,
                output_tokens: 500,
                ..Default::default()
            });
            turn
        })
        .collect()
}

/// Between steps that change the history, each request starts with the previous one (what a
/// provider's prompt cache reuses): the append-only share outside those steps is 1. `steps`
/// are the rounds trimmed or compacted; a round asked again (a retry) is no new step.
pub(crate) fn assert_append_only(requests: &[AgentModelRequest], steps: &[u64]) {
    for pair in requests.windows(2) {
        if steps.contains(&u64::from(pair[1].round)) || pair[0].round == pair[1].round {
            continue;
        }
        assert_eq!(
            pair[0].messages[..],
            pair[1].messages[..pair[0].messages.len()],
            "round {} does not extend round {}",
            pair[1].round,
            pair[0].round
        );
    }
}

/// The `round` of each event.
pub(crate) fn rounds_of(events: &[AgentRunEvent]) -> Vec<u64> {
    events
        .iter()
        .map(|event| event.payload["round"].as_u64().unwrap())
        .collect()
}

/// Writes a short `scratch/a.md`, lists `scratch` `lists` times (small results that pile up),
/// then [`happy_turns`].
pub(crate) fn listing_turns(lists: usize) -> Vec<AgentModelResponse> {
    let first = turn(vec![write("w", "scratch/a.md", "short")]);
    let list = json!({"path": "scratch"});
    repeated_call(first, lists, ("l", "workspace_list_files", list))
}

/// `first`, then `times` turns that each make call `(id prefix, tool, arguments)` (ids
/// `<prefix>0`, `<prefix>1`, …), then [`happy_turns`].
pub(crate) fn repeated_call(
    first: AgentModelResponse,
    times: usize,
    (prefix, tool, args): (&str, &str, Value),
) -> Vec<AgentModelResponse> {
    let mut turns = vec![first];
    for n in 0..times {
        turns.push(turn(vec![call(
            &format!("{prefix}{n}"),
            tool,
            args.clone(),
        )]));
    }
    turns.extend(happy_turns());
    turns
}

pub(crate) fn write(id: &str, path: &str, content: &str) -> (String, String, Value) {
    (
        id.into(),
        "workspace_write_file".into(),
        json!({"path": path, "content": content}),
    )
}

pub(crate) fn call(id: &str, name: &str, args: Value) -> (String, String, Value) {
    (id.into(), name.into(), args)
}

pub(crate) fn turn(calls: Vec<(String, String, Value)>) -> AgentModelResponse {
    responses::tool_calls(
        calls
            .iter()
            .map(|(id, name, args)| (id.as_str(), name.as_str(), args.clone()))
            .collect(),
    )
}

/// A harness whose model follows [`happy_turns`].
pub(crate) fn happy_harness() -> Harness {
    harness(by_turn(happy_turns()))
}

/// A [`happy_harness`] and its run of [`happy_turns`] on the default profile, completed.
pub(crate) async fn happy_run() -> (Harness, AgentRun) {
    let h = happy_harness();
    let run = h.run_completed(request(None)).await;
    (h, run)
}

/// A [`happy_harness`] and its run on the default profile, parked at its model call of round
/// `round`.
pub(crate) async fn happy_run_parked_at(round: u32) -> (Harness, AgentRun) {
    let h = happy_harness();
    h.model.hang_when(move |request| request.round == round);
    let run = h.start_parked(request(None), 1).await;
    (h, run)
}

/// write output/main.md, commit, finish.
pub(crate) fn happy_turns() -> Vec<AgentModelResponse> {
    vec![
        turn(vec![write("c1", "output/main.md", "A storm rolled in.")]),
        turn(vec![call("c2", "workspace_commit", json!({}))]),
        turn(vec![call(
            "c3",
            "workspace_finish",
            json!({"reason": "done"}),
        )]),
    ]
}

/// `turns`, then: write `text` to output/main.md, commit, finish.
pub(crate) fn publish_after(
    mut turns: Vec<AgentModelResponse>,
    text: &str,
) -> Vec<AgentModelResponse> {
    turns.push(turn(vec![write("w", "output/main.md", text)]));
    turns.push(turn(vec![call("c", "workspace_commit", json!({}))]));
    turns.push(turn(vec![call("f", "workspace_finish", json!({}))]));
    turns
}

/// The lead's script: delegate one task (`objective`) to `agent`, wait for it with `wait`
/// (`agent_await`'s arguments), then [`publish_after`] with `text`.
pub(crate) fn delegate_wait_publish(
    agent: &str,
    objective: &str,
    wait: Value,
    text: &str,
) -> Vec<AgentModelResponse> {
    publish_after(
        vec![
            turn(vec![delegate("d1", agent, objective)]),
            turn(vec![call("a", "agent_await", wait)]),
        ],
        text,
    )
}

/// The writer delegates `objective` to the critic, waits for it and publishes "Final scene.";
/// the critic answers with `critic`.
pub(crate) fn writer_delegating_to_critic(
    objective: &str,
    critic: Vec<AgentModelResponse>,
) -> Arc<FakeModel> {
    by_agent(vec![
        (
            "writer",
            delegate_wait_publish("critic", objective, json!({}), "Final scene."),
        ),
        ("critic", critic),
    ])
}

/// The writer delegates "Check the draft." to the critic, waits and publishes; every call of
/// the critic hangs.
pub(crate) fn critic_hangs() -> Arc<FakeModel> {
    let model = writer_delegating_to_critic("Check the draft.", vec![]);
    model.hang_when(|request| request.agent_profile_id.as_str() == "critic");
    model
}

/// One `agent_await` call in `mode`.
pub(crate) fn await_turn(id: &str, mode: &str) -> AgentModelResponse {
    turn(vec![call(id, "agent_await", json!({ "mode": mode }))])
}

/// A workspace-only writer (the default writer without agent or skill tools, unable to delegate)
/// with a new id and changes applied; each test adds exactly the tools it exercises.
pub(crate) fn custom_profile(
    id: &str,
    change: impl FnOnce(&mut AgentProfileDefinition),
) -> AgentProfileDefinition {
    let mut profile = default_writer_definition();
    profile.id = tt_domain::ids::ProfileId::parse(id).expect("id");
    profile.delegation.can_delegate = false;
    profile.tools.allow = tt_domain::tool::ToolName::WORKSPACE
        .iter()
        .map(|tool| tool.canonical().to_owned())
        .collect();
    change(&mut profile);
    profile
}

/// The tool result of call `call_id` in `request`: `(call id, is error, error code, content)`.
pub(crate) fn tool_result(
    request: &AgentModelRequest,
    call_id: &str,
) -> (String, bool, Option<String>, String) {
    tool_results(request)
        .into_iter()
        .find(|result| result.0 == call_id)
        .unwrap_or_else(|| panic!("no result of `{call_id}`"))
}

/// Tool results the model saw in a request, in order: (callId, isError, errorCode, content).
pub(crate) fn tool_results(
    request: &AgentModelRequest,
) -> Vec<(String, bool, Option<String>, String)> {
    request
        .messages
        .iter()
        .flat_map(|message| message.parts.iter())
        .filter_map(|part| match part {
            tt_domain::model::ModelContentPart::ToolResult { result } => Some((
                result.call_id.clone(),
                result.is_error,
                result.error_code.clone(),
                result.content.clone(),
            )),
            _ => None,
        })
        .collect()
}

/// A model scripted per agent: the writer takes `turns`, then publishes "Final scene." and
/// finishes; each of `others` follows its own script.
pub(crate) fn writer_publishing_after(
    turns: Vec<AgentModelResponse>,
    mut others: Vec<(&str, Vec<AgentModelResponse>)>,
) -> Arc<FakeModel> {
    others.push(("writer", publish_after(turns, "Final scene.")));
    by_agent(others)
}

/// A model that answers by agent and round: `script[agent][round - 1]`.
pub(crate) fn by_agent(script: Vec<(&str, Vec<AgentModelResponse>)>) -> Arc<FakeModel> {
    let script: std::collections::HashMap<String, Vec<AgentModelResponse>> = script
        .into_iter()
        .map(|(agent, turns)| (agent.to_owned(), turns))
        .collect();
    FakeModel::new(move |request: &AgentModelRequest| {
        script
            .get(request.agent_profile_id.as_str())
            .and_then(|turns| turns.get(request.round as usize - 1))
            .cloned()
            .ok_or_else(|| ModelError::Unavailable {
                code: tt_domain::error_codes::MODEL_SCRIPT_EXHAUSTED,
                message: format!("no turn {} for {}", request.round, request.agent_profile_id),
            })
    })
}

/// A harness on `model` with a writer that may delegate ([`delegator`]) and a critic
/// ([`reviewer`]).
pub(crate) fn harness_with_critic(model: Arc<FakeModel>) -> Harness {
    let h = harness(model);
    h.put_profile(delegator("writer"));
    h.put_profile(reviewer("critic"));
    h
}

/// A foreground writer that may delegate.
pub(crate) fn delegator(id: &str) -> AgentProfileDefinition {
    custom_profile(id, |p| {
        p.delegation.can_delegate = true;
        for (index, tool) in ["agent.list", "agent.delegate", "agent.await"]
            .into_iter()
            .enumerate()
        {
            p.tools.allow.insert(index, tool.to_owned());
        }
    })
}

/// A reviewer that can only be delegated to: sees output/summaries/scratch, writes scratch/summaries.
pub(crate) fn reviewer(id: &str) -> AgentProfileDefinition {
    use tt_domain::workspace::WorkspaceRoot;
    custom_profile(id, |p| {
        p.run.direct_runnable = false;
        p.run.presentation = tt_domain::run::Presentation::Background;
        p.delegation.callable = true;
        p.delegation.allow_as_subagent = true;
        p.delegation.description_for_agents = Some(format!("Reviews drafts ({id})."));
        p.tools.allow = [
            "workspace.list_files",
            "workspace.read_file",
            "workspace.write_file",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect();
        p.tools.max_rounds = 6;
        p.workspace.visible_roots = vec![
            WorkspaceRoot::Output,
            WorkspaceRoot::Scratch,
            WorkspaceRoot::Summaries,
        ];
        p.workspace.writable_roots = vec![WorkspaceRoot::Scratch, WorkspaceRoot::Summaries];
        p.output.artifacts[0].path = format!("scratch/{id}.md");
        p.output.artifacts[0].required = false;
    })
}

pub(crate) fn delegate(id: &str, agent: &str, objective: &str) -> (String, String, Value) {
    call(
        id,
        "agent_delegate",
        json!({"agentId": agent, "task": {"title": "Review", "objective": objective}}),
    )
}

pub(crate) fn task_return(id: &str, summary: &str) -> AgentModelResponse {
    turn(vec![call(
        id,
        "task_return",
        json!({"summary": summary, "confidence": "high", "findings": [{"note": summary}]}),
    )])
}

/// Every request of `agent`, in order.
pub(crate) fn requests_of(h: &Harness, agent: &str) -> Vec<AgentModelRequest> {
    h.model
        .requests()
        .into_iter()
        .filter(|request| request.agent_profile_id.as_str() == agent)
        .collect()
}

/// The first request of `agent`.
pub(crate) fn first_request_of(h: &Harness, agent: &str) -> AgentModelRequest {
    let first = requests_of(h, agent).into_iter().next();
    first.unwrap_or_else(|| panic!("{agent} made no request"))
}

/// Tool results in the last request of `agent`.
pub(crate) fn last_request_of(h: &Harness, agent: &str) -> AgentModelRequest {
    let last = requests_of(h, agent).pop();
    last.unwrap_or_else(|| panic!("{agent} made no request"))
}

/// The text field `field` of each `event_type` event of the run, in order.
pub(crate) fn payload_texts(
    h: &Harness,
    run_id: &RunId,
    event_type: &str,
    field: &str,
) -> Vec<String> {
    events_of(h, run_id, event_type)
        .iter()
        .map(|event| event.payload[field].as_str().unwrap().to_owned())
        .collect()
}

/// Asserts that `text` says each of `parts`.
pub(crate) fn assert_says(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "{part:?} is not in: {text}");
    }
}

pub(crate) fn events_of(h: &Harness, run_id: &RunId, event_type: &str) -> Vec<AgentRunEvent> {
    h.events(run_id)
        .into_iter()
        .filter(|event| event.event_type == event_type)
        .collect()
}

/// Nothing is journaled for agent `child` after its `agent_invocation_cancelled`.
pub(crate) fn assert_nothing_after_cancellation(events: &[AgentRunEvent], child: &str) {
    let cancelled_at = events
        .iter()
        .position(|e| {
            e.event_type == "agent_invocation_cancelled" && e.payload["invocationId"] == child
        })
        .unwrap_or_else(|| panic!("{child} was not cancelled"));
    assert!(
        events[cancelled_at + 1..]
            .iter()
            .all(|e| e.scope_invocation_id() != Some(child)),
        "event for {child} after its cancellation"
    );
}

/// A foreground agent that may hand off (and delegate).
pub(crate) fn handing_off(id: &str) -> AgentProfileDefinition {
    let mut profile = delegator(id);
    profile.delegation.can_handoff = true;
    profile.tools.allow.insert(0, "agent.handoff".to_owned());
    profile
}

/// A foreground agent that can only be brought in by a handoff; it may hand off again.
pub(crate) fn handoff_target(id: &str) -> AgentProfileDefinition {
    let mut profile = handing_off(id);
    profile.run.direct_runnable = false;
    profile.delegation.callable = true;
    profile.delegation.allow_as_handoff_target = true;
    profile
}

pub(crate) fn handoff(id: &str, agent: &str, objective: &str) -> (String, String, Value) {
    call(
        id,
        "agent_handoff",
        json!({"agentId": agent, "handoff": {"title": "Polish", "objective": objective, "workspaceRefs": ["output/main.md"]}}),
    )
}

/// Replaces generated task ids (`task_` + 32 hex digits) with `task_[id]`.
pub(crate) fn redact_task_ids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("task_") {
        out.push_str(&rest[..at]);
        let candidate = &rest[at + 5..];
        let hex = candidate
            .chars()
            .take(32)
            .filter(char::is_ascii_hexdigit)
            .count();
        if hex == 32 {
            out.push_str("task_[id]");
            rest = &candidate[32..];
        } else {
            out.push_str("task_");
            rest = candidate;
        }
    }
    out.push_str(rest);
    out
}

/// Snapshot of model-facing text with generated task ids replaced, so adding an event elsewhere
/// (which takes ids from the same sequence) does not churn unrelated snapshots.
#[macro_export]
macro_rules! assert_text_snapshot {
    ($name:expr, $value:expr) => {
        insta::assert_snapshot!($name, $crate::support::redact_task_ids(&$value));
    };
}
