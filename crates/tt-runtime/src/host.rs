//! The host API: start and cancel runs, read and follow their journals, answer commits, list
//! runs, read workspace files, and shut down.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio_util::sync::CancellationToken;
use tt_application::{AgentRunService, RunEventStream, StartRunRequest};
use tt_application::{GuidanceReceipt, SubmitGuidanceRequest};
use tt_domain::damage::{RunDamage, UnreadableRun};
use tt_domain::event::AgentRunEvent;
use tt_domain::ids::{CommitId, RunId, TaskId};
use tt_domain::run::AgentRun;
use tt_domain::task::AgentTaskRecord;
use tt_ports::{ChatCommitRequest, EventPage, RunListPage};

use crate::bridges::{HostApiCommitBridge, TranscriptCommitBridge, TranscriptEntry};
use crate::dto::*;
use crate::named_connections::NamedConnections;
use crate::prompt_brokers::HostApiPromptBroker;
use crate::run_updates::RunUpdates;

mod fork;
mod otel;
mod profiles;
mod shutdown;
mod tools;

pub use tools::{RegisterHostToolRequest, ToolSummary};

pub use shutdown::SHUTDOWN_GRACE;

/// The code every call returns after [`AgentRuntime::shutdown`].
pub const RUNTIME_SHUT_DOWN: tt_domain::error_codes::Code =
    tt_domain::error_codes::AGENT_RUNTIME_SHUT_DOWN;

/// The code of the commit calls on a runtime whose commit bridge is not the host-API one.
pub const COMMIT_BRIDGE_NOT_HOST_API: tt_domain::error_codes::Code =
    tt_domain::error_codes::AGENT_CHAT_COMMIT_BRIDGE_NOT_HOST_API;

/// A running tt-agent-runtime instance.
pub struct AgentRuntime {
    pub(crate) service: Arc<AgentRunService>,
    /// `None` when the runtime was built with another commit bridge.
    host_commits: Option<Arc<HostApiCommitBridge>>,
    /// Runs this runtime started: what `shutdown` settles and closes.
    started: Mutex<Vec<RunId>>,
    /// Fired by `shutdown` once its runs are settled: every open subscription ends.
    streams_end: CancellationToken,
    shut_down: AtomicBool,
    host_prompts: Arc<HostApiPromptBroker>,
    /// Where skills are kept: the file store, or the store a URL named (PostgreSQL).
    skills: Arc<dyn tt_ports::SkillRepository>,
    /// Where the template prompt broker's preset templates are kept (the store's, else the
    /// data dir's `presets/`).
    pub(crate) preset_templates: Arc<dyn tt_ports::PresetTemplateRepository>,
    /// Host tools and MCP servers (docs/tools.md).
    pub(crate) tools: crate::tools::ToolRouter,
    transcripts: Arc<TranscriptCommitBridge>,
    pub(crate) connections: NamedConnections,
    data_dir: PathBuf,
    /// The live OpenTelemetry export, when configured (docs/observability.md).
    pub(crate) otel: Option<Arc<crate::otel_live::OtelLive>>,
}

impl std::fmt::Debug for AgentRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRuntime")
            .field("data_dir", &self.data_dir)
            .finish_non_exhaustive()
    }
}

type NextEvent = Pin<Box<dyn Future<Output = (RunEventStream, NextOutcome)> + Send>>;
type Drained = Pin<Box<dyn Future<Output = HostResult<Vec<AgentRunEvent>>> + Send>>;

enum NextOutcome {
    Event(AgentRunEvent),
    End,
    Failed(HostError),
    /// The runtime shut down while the stream waited.
    ShutDown,
}

enum SubscriptionState {
    Idle(RunEventStream),
    Waiting(NextEvent),
    /// After shutdown: reading what the journal still holds after the last delivered event.
    Draining(Drained),
    /// Events read by the drain, delivered one by one before the end.
    Rest(std::collections::VecDeque<AgentRunEvent>),
    /// `subscribe` after `shutdown`: one error item, then the end.
    Refused(HostError),
    Ended,
}

/// A live stream of one run's events (see [`AgentRuntime::subscribe`]).
///
/// It is a [`futures_core::Stream`] of `HostResult<AgentRunEvent>` (use `StreamExt` from
/// `futures-util` or `tokio-stream` to combine it), and also has its own [`next`](Self::next),
/// which Rust prefers over `StreamExt::next`. It ends (`None`) after the run's terminal event,
/// after an error item, and when the runtime shuts down (after delivering what the run's journal
/// holds by then).
pub struct EventSubscription {
    state: SubscriptionState,
    streams_end: CancellationToken,
    /// What a drain after shutdown reads.
    service: Arc<AgentRunService>,
    run_id: RunId,
    invocation_id: Option<String>,
    /// Seq of the last delivered event (or the `after_seq` asked for).
    last_seq: u64,
}

impl std::fmt::Debug for EventSubscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match &self.state {
            SubscriptionState::Idle(_) => "idle".to_owned(),
            SubscriptionState::Waiting(_) => "waiting".to_owned(),
            SubscriptionState::Draining(_) => "draining".to_owned(),
            SubscriptionState::Rest(rest) => format!("{} left", rest.len()),
            SubscriptionState::Refused(error) => format!("refused: {error}"),
            SubscriptionState::Ended => "ended".to_owned(),
        };
        f.debug_struct("EventSubscription")
            .field("run_id", &self.run_id)
            .field("last_seq", &self.last_seq)
            .field("state", &state)
            .finish()
    }
}

impl EventSubscription {
    /// For a run another process or host executes: keeps following past an end that a resume
    /// may undo (`interrupted`, `failed`, `cancelled`, not abandoned), so the stream goes on
    /// through `run_interrupted` and `run_resumed` when another host takes the run over, and
    /// ends after `run_completed` or `run_partial_success`, or once the run is no longer
    /// resumable (abandoned). A run nobody resumes is followed until the caller stops (or the
    /// runtime shuts down). No effect on a run this runtime executes, or once the stream has
    /// started.
    #[must_use]
    pub fn through_resumes(mut self) -> Self {
        self.state = match std::mem::replace(&mut self.state, SubscriptionState::Ended) {
            SubscriptionState::Idle(inner) => SubscriptionState::Idle(inner.through_resumes()),
            other => other,
        };
        self
    }

    /// The next event in seq order; `Ok(None)` once the stream has ended.
    pub async fn next(&mut self) -> HostResult<Option<AgentRunEvent>> {
        std::future::poll_fn(|cx| futures_core::Stream::poll_next(Pin::new(&mut *self), cx))
            .await
            .transpose()
    }

    fn next_event(mut inner: RunEventStream, streams_end: CancellationToken) -> NextEvent {
        Box::pin(async move {
            let outcome = tokio::select! {
                biased;
                next = inner.next() => match next {
                    Ok(Some(event)) => NextOutcome::Event(event),
                    Ok(None) => NextOutcome::End,
                    Err(error) => NextOutcome::Failed(error.into()),
                },
                () = streams_end.cancelled() => NextOutcome::ShutDown,
            };
            (inner, outcome)
        })
    }

    /// Reads every journaled event after the last delivered one (the run's end included when
    /// it was journaled before the shutdown finished).
    fn drain(&self) -> Drained {
        let service = Arc::clone(&self.service);
        let run_id = self.run_id.clone();
        let invocation_id = self.invocation_id.clone();
        let mut after = self.last_seq;
        Box::pin(async move {
            let mut rest = Vec::new();
            loop {
                let page = EventPage {
                    after_seq: Some(after),
                    limit: Some(500),
                    invocation_id: invocation_id.clone(),
                    ..EventPage::default()
                };
                let events = service.read_events(&run_id, &page).await?;
                let Some(last) = events.last() else {
                    return Ok(rest);
                };
                after = last.seq;
                rest.extend(events);
            }
        })
    }

    fn deliver(&mut self, event: AgentRunEvent) -> Poll<Option<HostResult<AgentRunEvent>>> {
        self.last_seq = event.seq;
        Poll::Ready(Some(Ok(event)))
    }
}

impl futures_core::Stream for EventSubscription {
    type Item = HostResult<AgentRunEvent>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            match std::mem::replace(&mut self.state, SubscriptionState::Ended) {
                SubscriptionState::Idle(inner) => {
                    let waiting = Self::next_event(inner, self.streams_end.clone());
                    self.state = SubscriptionState::Waiting(waiting);
                }
                SubscriptionState::Waiting(mut waiting) => match waiting.as_mut().poll(cx) {
                    Poll::Pending => {
                        self.state = SubscriptionState::Waiting(waiting);
                        return Poll::Pending;
                    }
                    Poll::Ready((inner, NextOutcome::Event(event))) => {
                        self.state = SubscriptionState::Idle(inner);
                        return self.deliver(event);
                    }
                    Poll::Ready((_, NextOutcome::End)) => return Poll::Ready(None),
                    Poll::Ready((_, NextOutcome::Failed(error))) => {
                        return Poll::Ready(Some(Err(error)));
                    }
                    Poll::Ready((_, NextOutcome::ShutDown)) => {
                        self.state = SubscriptionState::Draining(self.drain());
                    }
                },
                SubscriptionState::Draining(mut drained) => match drained.as_mut().poll(cx) {
                    Poll::Pending => {
                        self.state = SubscriptionState::Draining(drained);
                        return Poll::Pending;
                    }
                    Poll::Ready(Ok(events)) => {
                        self.state = SubscriptionState::Rest(events.into());
                    }
                    Poll::Ready(Err(error)) => return Poll::Ready(Some(Err(error))),
                },
                SubscriptionState::Rest(mut rest) => {
                    return match rest.pop_front() {
                        Some(event) => {
                            self.state = SubscriptionState::Rest(rest);
                            self.deliver(event)
                        }
                        None => Poll::Ready(None),
                    };
                }
                SubscriptionState::Refused(error) => return Poll::Ready(Some(Err(error))),
                SubscriptionState::Ended => return Poll::Ready(None),
            }
        }
    }
}

fn shut_down_error() -> HostError {
    HostError::new(
        RUNTIME_SHUT_DOWN,
        "the runtime has been shut down; build a new one to continue",
    )
}

impl AgentRuntime {
    pub(crate) fn new(
        service: Arc<AgentRunService>,
        host_commits: Option<Arc<HostApiCommitBridge>>,
        host_prompts: Arc<HostApiPromptBroker>,
        transcripts: Arc<TranscriptCommitBridge>,
        (skills, preset_templates, tools): (
            Arc<dyn tt_ports::SkillRepository>,
            Arc<dyn tt_ports::PresetTemplateRepository>,
            crate::tools::ToolRouter,
        ),
        connections: NamedConnections,
        (data_dir, otel): (PathBuf, Option<Arc<crate::otel_live::OtelLive>>),
    ) -> Self {
        Self {
            service,
            host_commits,
            started: Mutex::new(Vec::new()),
            streams_end: CancellationToken::new(),
            shut_down: AtomicBool::new(false),
            host_prompts,
            skills,
            preset_templates,
            tools,
            transcripts,
            connections,
            data_dir,
            otel,
        }
    }

    /// The data dir this runtime stores runs, profiles and transcripts under.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// `agent.runtime_shut_down` once [`shutdown`](Self::shutdown) has begun.
    pub(crate) fn ensure_open(&self) -> HostResult<()> {
        if self.shut_down.load(Ordering::SeqCst) {
            return Err(shut_down_error());
        }
        if let Some(otel) = &self.otel {
            otel.ensure_started(&self.service, &self.streams_end);
        }
        Ok(())
    }

    fn started_runs(&self) -> std::sync::MutexGuard<'_, Vec<RunId>> {
        self.started
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn host_commits(&self) -> HostResult<&HostApiCommitBridge> {
        self.ensure_open()?;
        self.host_commits.as_deref().ok_or_else(|| {
            HostError::new(
                COMMIT_BRIDGE_NOT_HOST_API,
                "this runtime publishes commits through its own commit bridge; build it with \
                 CommitBridgeChoice::HostApi to answer commits through the host API",
            )
        })
    }

    /// Starts a run in the background and returns it as created.
    pub async fn start_run(&self, request: StartRunRequest) -> HostResult<AgentRun> {
        self.ensure_open()?;
        let run = self.service.start_run(request).await?;
        self.track_started(run).await
    }

    /// Keeps a run this runtime just started or resumed in the list a shutdown stops. A
    /// shutdown that began while the run was being created may have taken the list before the
    /// push: then this call settles the run itself and answers the shutdown's error.
    async fn track_started(&self, run: AgentRun) -> HostResult<AgentRun> {
        self.started_runs().push(run.id.clone());
        if self.shut_down.load(Ordering::SeqCst) {
            self.stop_late_run(&run.id).await;
            return Err(shut_down_error());
        }
        Ok(run)
    }

    /// Resumes an `interrupted`, `failed` or `cancelled` run in this runtime (docs/resume.md):
    /// its agents continue from their stored model responses and tool results (a failed or
    /// cancelled run's from where its end stopped them), in the same run directory, journal and
    /// seq sequence, after `run_resumed`. Returns the run as resumed; follow it with
    /// [`subscribe`](Self::subscribe) and [`wait_for_run`](Self::wait_for_run) like a started
    /// run. A commit that was waiting for the host is offered again with the same `commitId`.
    ///
    /// Errors: `agent.run_not_resumable` (completed, abandoned, or already running here),
    /// `agent.resume_profile_changed` (a profile no longer gives an agent the tools it was
    /// frozen with), `agent.run_locked` (another process owns the run), `agent.not_found`.
    pub async fn resume_run(&self, run_id: &str) -> HostResult<AgentRun> {
        self.ensure_open()?;
        let run = self.service.resume_run(&RunId::from_raw(run_id)).await?;
        self.track_started(run).await
    }

    /// Gives up a run that ended without finishing its work (`interrupted`, `failed` or
    /// `cancelled`) so that it is never resumed: `run_abandoned` is journaled, `abandonedAt`
    /// set, and the status stays (docs/resume.md). Errors: `agent.run_not_abandonable`
    /// (completed, working, or abandoned already), `agent.run_locked`, `agent.not_found`.
    pub async fn abandon_run(&self, run_id: &str) -> HostResult<AgentRun> {
        self.ensure_open()?;
        Ok(self.service.abandon_run(&RunId::from_raw(run_id)).await?)
    }

    /// Asks a run to stop: model calls, retry waits and host waits abort at once. Returns the
    /// run as it is then, normally `cancelling` (a terminal run comes back unchanged, an
    /// orphaned one `cancelled`); [`wait_for_run`](Self::wait_for_run) returns it `cancelled`.
    pub async fn cancel_run(&self, run_id: &str) -> HostResult<AgentRun> {
        self.ensure_open()?;
        Ok(self.service.cancel_run(&RunId::from_raw(run_id)).await?)
    }

    /// Sends user guidance to a running run: its foreground agent reads it, wrapped in
    /// `<user_guidance>`, before its next model request. Limits and refusals: docs/host-api.md.
    pub async fn submit_guidance(
        &self,
        run_id: &str,
        request: SubmitGuidanceRequest,
    ) -> HostResult<GuidanceReceipt> {
        self.ensure_open()?;
        Ok(self
            .service
            .submit_guidance(&RunId::from_raw(run_id), request)
            .await?)
    }

    /// One run by id, as it is now (live status for a run this runtime executes).
    pub async fn get_run(&self, run_id: &str) -> HostResult<AgentRun> {
        self.ensure_open()?;
        Ok(self.service.get_run(&RunId::from_raw(run_id)).await?)
    }

    /// Cancels one delegated task of a run executing in this process, and every task it
    /// delegated in turn; the run and the other tasks go on. The task ends `cancelled`
    /// (`agent_task_cancelled` with `by: "host"`) and its delegating agent gets the result
    /// like any other. Coded errors: `agent.task_not_found`, `agent.task_not_cancellable`,
    /// `agent.task_already_finished`, `agent.run_not_running`, and `agent.run_locked` for a
    /// run executed by another process (in-process only for now).
    pub async fn cancel_task(&self, run_id: &str, task_id: &str) -> HostResult<AgentTaskRecord> {
        self.ensure_open()?;
        Ok(self
            .service
            .cancel_task(&RunId::from_raw(run_id), &TaskId::from_raw(task_id))
            .await?)
    }

    /// Waits until the run stops executing and returns its final record. A run another
    /// runtime (or process) executes is followed through its journal to its end. A run nobody
    /// is running returns at once as stored: after a restart, the `interrupted` record.
    pub async fn wait_for_run(&self, run_id: &str) -> HostResult<AgentRun> {
        self.ensure_open()?;
        Ok(self.service.wait_for_run(&RunId::from_raw(run_id)).await?)
    }

    /// Whether [`shutdown`](Self::shutdown) has been called.
    pub fn is_shut_down(&self) -> bool {
        self.shut_down.load(Ordering::SeqCst)
    }

    /// One page of a run's journal, optionally with the timeline projection.
    pub async fn read_events(&self, request: ReadEventsRequest) -> HostResult<ReadEventsResponse> {
        self.ensure_open()?;
        let run_id = RunId::from_raw(request.run_id);
        let page = EventPage {
            after_seq: request.after_seq,
            before_seq: request.before_seq,
            limit: request.limit,
            invocation_id: request.invocation_id,
        };
        let filtered = page.invocation_id.is_some();
        let after = page.after_seq;
        let events = self.service.read_events(&run_id, &page).await?;
        let missing_seqs = if filtered {
            Vec::new()
        } else {
            crate::dto::missing_seqs(after, &events)
        };
        let timeline_projection = if request.include_timeline_projection {
            Some(self.service.timeline_projection(&run_id).await?)
        } else {
            None
        };
        // The end the journal refused, from the run record (or this process's memory).
        let unrecorded_end = match self.service.get_run(&run_id).await?.unrecorded_end {
            Some(end) => Some(end),
            None => self.service.remembered_end(&run_id),
        };
        Ok(ReadEventsResponse {
            events,
            timeline_projection,
            missing_seqs,
            unrecorded_end,
        })
    }

    /// Checks a stored run for damage, read-only (docs/storage.md, "Damage"): journal gaps
    /// over the whole journal, an empty journal, a journal that does not end with the end the
    /// run record shows, records that stop short of it, an end the journal refused. Each
    /// finding has a code and one line; none for a whole run. `agent.not_found` for an
    /// unknown run.
    pub async fn check_run(&self, run_id: &str) -> HostResult<RunDamage> {
        self.ensure_open()?;
        Ok(self.service.check_run(&RunId::from_raw(run_id)).await?)
    }

    /// Why a run ended when the disk kept its `run_failed` / `run_partial_success` out of the
    /// journal (full, read-only): that payload plus `unrecordedBecause`. `None` otherwise;
    /// `agent.not_found` for an unknown run.
    pub async fn unrecorded_failure(&self, run_id: &str) -> HostResult<Option<serde_json::Value>> {
        self.ensure_open()?;
        let run_id = RunId::from_raw(run_id);
        match self.service.unrecorded_failure(&run_id) {
            Some(failure) => Ok(Some(failure)),
            None => {
                self.service.get_run(&run_id).await?;
                Ok(None)
            }
        }
    }

    /// Token usage of a run: total and per invocation, from its journal; a branch's apart from
    /// what it inherited from its source (docs/branching.md). `agent.not_found` for an unknown
    /// run (every store refuses to read the journal of a run it does not hold).
    pub async fn usage(&self, run_id: &str) -> HostResult<tt_application::RunUsage> {
        self.ensure_open()?;
        let run_id = RunId::from_raw(run_id);
        Ok(tt_application::run_usage(self.service.services().journal.as_ref(), &run_id).await?)
    }

    /// The agent graph of a run, with `damage`: what the run record and the records show
    /// wrong (records that stop short of the run's recorded end, an end the journal refused),
    /// without reading the journal; [`check_run`](Self::check_run) checks the journal too.
    pub async fn timeline_projection(
        &self,
        run_id: &str,
    ) -> HostResult<tt_application::TimelineProjection> {
        self.ensure_open()?;
        Ok(self
            .service
            .timeline_projection(&RunId::from_raw(run_id))
            .await?)
    }

    /// Live events of a run after `after_seq` (0 = from the start), optionally only those of
    /// one invocation. Ends after the run's terminal event (for an interrupted run: after
    /// replaying its journal up to `run_interrupted`), or when the runtime shuts down (after
    /// what the journal holds by then). Subscribing after `shutdown` yields one
    /// `agent.runtime_shut_down` error, then the end.
    pub fn subscribe(
        &self,
        run_id: &str,
        after_seq: u64,
        invocation_id: Option<String>,
    ) -> EventSubscription {
        let run_id = RunId::from_raw(run_id);
        let state = match self.ensure_open() {
            Ok(()) => SubscriptionState::Idle(self.service.subscribe(
                run_id.clone(),
                after_seq,
                invocation_id.clone(),
            )),
            Err(error) => SubscriptionState::Refused(error),
        };
        EventSubscription {
            state,
            streams_end: self.streams_end.clone(),
            service: Arc::clone(&self.service),
            run_id,
            invocation_id,
            last_seq: after_seq,
        }
    }

    /// The host-API commit bridge, when the runtime was built with it.
    pub(crate) fn host_commit_bridge(&self) -> Option<&HostApiCommitBridge> {
        self.host_commits.as_deref()
    }

    /// The host-API prompt broker.
    pub(crate) fn host_prompt_broker(&self) -> &HostApiPromptBroker {
        &self.host_prompts
    }

    /// Every commit of a run still waiting for the host's answer, oldest first, with its text
    /// (host-API commit bridge only, else `agent.chat_commit_bridge_not_host_api`). A run this
    /// data dir does not hold is refused with its not-found code, never answered with `[]`.
    pub async fn pending_commits(&self, run_id: &str) -> HostResult<Vec<ChatCommitRequest>> {
        let run_id = RunId::from_raw(run_id);
        let pending = self.host_commits()?.pending_for_run(&run_id);
        if pending.is_empty() {
            self.ensure_open()?;
            self.service.get_run(&run_id).await?;
        }
        Ok(pending)
    }

    /// Answers a pending `chat_commit_requested` (host-API commit bridge only, else
    /// `agent.chat_commit_bridge_not_host_api`).
    pub fn resolve_chat_commit(&self, request: ResolveChatCommitRequest) -> HostResult<()> {
        Ok(self.host_commits()?.resolve(
            &RunId::from_raw(request.run_id),
            &CommitId::from_raw(request.commit_id),
            request.message_id,
            request.error,
        )?)
    }

    /// Answers a pending `persistent_state_metadata_update_requested` (host-API commit bridge
    /// only, else `agent.chat_commit_bridge_not_host_api`): the host has bound the run's new
    /// persistent state to the message, or says why not.
    pub fn resolve_agent_persistent_state_metadata_update(
        &self,
        request: ResolvePersistentStateMetadataUpdateRequest,
    ) -> HostResult<()> {
        Ok(self.host_commits()?.resolve_metadata_update(
            &RunId::from_raw(request.run_id),
            &request.update_id,
            request.error,
        )?)
    }

    /// Validates and stores an agent profile (`<data dir>/profiles/<id>.json`).
    pub async fn save_profile(
        &self,
        definition: tt_domain::profile::AgentProfileDefinition,
    ) -> HostResult<()> {
        self.ensure_open()?;
        self.service.save_profile(definition).await?;
        Ok(())
    }

    /// The full request of a pending prompt assembly (host-API prompt broker only). Errors:
    /// `agent.prompt_assembly_not_pending`, `agent.prompt_assembly_run_mismatch`.
    pub fn read_prompt_assembly_request(
        &self,
        request: ReadPromptAssemblyRequest,
    ) -> HostResult<tt_ports::PromptAssemblyRequest> {
        self.ensure_open()?;
        self.host_prompts
            .read_request(&request.run_id, &request.assembly_id)
    }

    /// Answers a pending prompt assembly with a prompt snapshot
    /// (`{messages: [{role, content}], contextPolicy}`) or an error.
    pub fn resolve_prompt_assembly(&self, request: ResolvePromptAssemblyRequest) -> HostResult<()> {
        self.ensure_open()?;
        self.host_prompts.resolve(
            &request.run_id,
            &request.assembly_id,
            request.prompt_snapshot,
            crate::prompt_brokers::HostAssemblyInput {
                assembly: request.assembly,
                frozen_run_input_snapshot: request.frozen_run_input_snapshot,
                generation_intent: request.generation_intent,
                settings: request.settings,
            },
            request.error,
        )
    }

    /// Writes one file of a skill (`SKILL.md` or a supporting text file) in a scope, in the
    /// store skills are kept in (the data dir's, or the PostgreSQL store a URL named).
    pub async fn save_skill_file(
        &self,
        scope: &tt_domain::skill::SkillScope,
        skill_id: &str,
        path: &str,
        text: &str,
    ) -> HostResult<()> {
        self.ensure_open()?;
        let invalid = |err: tt_domain::DomainError| HostError {
            code: err.code.to_string(),
            message: err.message,
        };
        let skill_id = tt_domain::skill::SkillId::parse(skill_id).map_err(invalid)?;
        let path = tt_domain::skill::SkillFilePath::parse(path).map_err(invalid)?;
        self.skills
            .put_skill_file(tt_ports::SkillFileRef::new(scope, &skill_id, &path), text)
            .await
            .map_err(|err| HostError {
                code: err.code().to_string(),
                message: err.to_string(),
            })
    }

    /// The newest promoted `persist/` state of a conversation (`stableChatId`), which its next
    /// run names as `persistBaseStateId` to start from what the last successful run kept: the
    /// state of the run that most recently completed with changes to `persist/` or, when no
    /// completed run changed anything, the newest completed run's state. `None` when no
    /// completed run of the conversation has one.
    pub async fn latest_persist_state(&self, stable_chat_id: &str) -> HostResult<Option<String>> {
        self.ensure_open()?;
        Ok(self.service.latest_persist_state(stable_chat_id).await?)
    }

    /// The stored runs whose record cannot be read, each with a code and a message:
    /// `list_runs` leaves them out (one damaged record never hides the others), so a reader
    /// that lists runs asks this too to say that some are missing. Read-only.
    pub async fn unreadable_runs(&self) -> HostResult<Vec<UnreadableRun>> {
        self.ensure_open()?;
        Ok(self.service.unreadable_runs().await?)
    }

    /// Newest runs first; a run whose record cannot be read is left out (see
    /// [`unreadable_runs`](Self::unreadable_runs)).
    pub async fn list_runs(&self, request: ListRunsRequest) -> HostResult<Vec<AgentRun>> {
        self.ensure_open()?;
        let limit = request.limit.clamp(1, 500);
        Ok(self
            .service
            .list_runs(RunListPage {
                offset: request.offset,
                limit,
            })
            .await?)
    }

    /// A file of a run's workspace (`output/`, `scratch/`, `plan/`, `summaries/`, `persist/`).
    pub async fn read_workspace_file(
        &self,
        run_id: &str,
        path: &str,
    ) -> HostResult<WorkspaceFileDto> {
        self.ensure_open()?;
        let file = self
            .service
            .read_workspace_file(&RunId::from_raw(run_id), path)
            .await?;
        Ok(WorkspaceFileDto {
            path: path.to_owned(),
            text: file.text,
            sha256: file.sha256,
        })
    }

    /// Every file of a run's workspace (`output/`, `scratch/`, `plan/`, `summaries/`,
    /// `persist/`), as logical paths sorted by path; at most 10,000.
    pub async fn list_workspace_files(&self, run_id: &str) -> HostResult<Vec<String>> {
        self.ensure_open()?;
        Ok(self
            .service
            .list_workspace_files(&RunId::from_raw(run_id))
            .await?)
    }

    /// The named model connections a run (`StartRunRequest::connection`) or a profile may
    /// name: those registered with the builder and the connections the store keeps (the
    /// connection files of the data dir unless the store keeps its own).
    pub async fn list_connections(&self) -> HostResult<Vec<ConnectionSummary>> {
        self.ensure_open()?;
        Ok(self.connections.list().await)
    }

    /// A live feed of the status changes of the runs this runtime writes: starts, status
    /// changes, ends (see [`RunUpdates`]). It ends when the runtime shuts down.
    pub fn run_updates(&self) -> HostResult<RunUpdates> {
        self.ensure_open()?;
        Ok(RunUpdates::new(
            self.service.event_sink().live(),
            Arc::clone(&self.service),
            self.streams_end.clone(),
        ))
    }

    /// Messages published through the transcript commit bridge for a workspace, from the
    /// store (so every host of one PostgreSQL database reads the same). The storage error's
    /// code when it cannot be read (`agent.storage_segment_invalid` for an id that is not one
    /// path segment).
    pub async fn transcript(&self, workspace_id: &str) -> HostResult<Vec<TranscriptEntry>> {
        self.ensure_open()?;
        self.transcripts
            .read_transcript(workspace_id)
            .await
            .map_err(|err| {
                HostError::new(
                    err.code(),
                    format!("cannot read the transcript of {workspace_id}: {err}"),
                )
            })
    }
}
