//! The host API: start and cancel runs, read and follow their journals, answer commits, list
//! runs, read workspace files.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use tt_application::{AgentRunService, RunEventStream, StartRunRequest, timeline_projection};
use tt_domain::event::AgentRunEvent;
use tt_domain::ids::{CommitId, RunId, TaskId};
use tt_domain::run::AgentRun;
use tt_domain::task::AgentTaskRecord;
use tt_ports::{EventPage, RunListPage};

use crate::bridges::{HostApiCommitBridge, TranscriptCommitBridge, TranscriptEntry};
use crate::dto::*;
use crate::prompt_brokers::HostApiPromptBroker;

/// A running tt-agent-runtime instance.
pub struct AgentRuntime {
    service: Arc<AgentRunService>,
    host_commits: Arc<HostApiCommitBridge>,
    host_prompts: Arc<HostApiPromptBroker>,
    skill_store: Arc<tt_adapter_storage_userdata::UserDataStore>,
    transcripts: Arc<TranscriptCommitBridge>,
    data_dir: PathBuf,
}

impl std::fmt::Debug for AgentRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRuntime")
            .field("data_dir", &self.data_dir)
            .finish_non_exhaustive()
    }
}

/// A live stream of one run's events (see [`AgentRuntime::subscribe`]).
#[derive(Debug)]
pub struct EventSubscription {
    inner: RunEventStream,
}

impl EventSubscription {
    /// The next event in seq order; `Ok(None)` after the run's terminal event.
    pub async fn next(&mut self) -> HostResult<Option<AgentRunEvent>> {
        Ok(self.inner.next().await?)
    }
}

impl AgentRuntime {
    pub(crate) fn new(
        service: Arc<AgentRunService>,
        host_commits: Arc<HostApiCommitBridge>,
        host_prompts: Arc<HostApiPromptBroker>,
        transcripts: Arc<TranscriptCommitBridge>,
        skill_store: Arc<tt_adapter_storage_userdata::UserDataStore>,
        data_dir: PathBuf,
    ) -> Self {
        Self {
            service,
            host_commits,
            host_prompts,
            skill_store,
            transcripts,
            data_dir,
        }
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Starts a run in the background and returns it as created.
    pub async fn start_run(&self, request: StartRunRequest) -> HostResult<AgentRun> {
        Ok(self.service.start_run(request).await?)
    }

    /// Cancels a run: model calls and host waits abort at once; the run ends `cancelled`.
    pub async fn cancel_run(&self, run_id: &str) -> HostResult<AgentRun> {
        Ok(self.service.cancel_run(&RunId::from_raw(run_id)).await?)
    }

    /// Cancels one delegated task of a run executing in this process, and every task it
    /// delegated in turn; the run and the other tasks go on. The task ends `cancelled`
    /// (`agent_task_cancelled` with `by: "host"`) and its delegating agent gets the result
    /// like any other. Coded errors: `agent.task_not_found`, `agent.task_not_cancellable`,
    /// `agent.task_already_finished`, `agent.run_not_running`, and `agent.run_locked` for a
    /// run executed by another process (in-process only for now).
    pub async fn cancel_task(&self, run_id: &str, task_id: &str) -> HostResult<AgentTaskRecord> {
        Ok(self
            .service
            .cancel_task(&RunId::from_raw(run_id), &TaskId::from_raw(task_id))
            .await?)
    }

    /// Waits until the run stops executing and returns its final record.
    pub async fn wait_for_run(&self, run_id: &str) -> HostResult<AgentRun> {
        Ok(self.service.wait_for_run(&RunId::from_raw(run_id)).await?)
    }

    /// One page of a run's journal, optionally with the timeline projection.
    pub async fn read_events(&self, request: ReadEventsRequest) -> HostResult<ReadEventsResponse> {
        let run_id = RunId::from_raw(request.run_id);
        let page = EventPage {
            after_seq: request.after_seq,
            before_seq: request.before_seq,
            limit: request.limit,
            invocation_id: request.invocation_id,
        };
        let events = self.service.read_events(&run_id, &page).await?;
        let timeline_projection = if request.include_timeline_projection {
            Some(timeline_projection(self.service.services().invocations.as_ref(), &run_id).await?)
        } else {
            None
        };
        Ok(ReadEventsResponse {
            events,
            timeline_projection,
        })
    }

    /// Why a run ended when the disk kept its `run_failed` / `run_partial_success` out of the
    /// journal (full, read-only): that payload plus `unrecordedBecause`. `None` otherwise.
    pub fn unrecorded_failure(&self, run_id: &str) -> Option<serde_json::Value> {
        self.service.unrecorded_failure(&RunId::from_raw(run_id))
    }

    /// Token usage of a run: total and per invocation, from its journal.
    pub async fn usage(&self, run_id: &str) -> HostResult<tt_application::RunUsage> {
        Ok(tt_application::run_usage(
            self.service.services().journal.as_ref(),
            &RunId::from_raw(run_id),
        )
        .await?)
    }

    /// The agent graph of a run.
    pub async fn timeline_projection(
        &self,
        run_id: &str,
    ) -> HostResult<tt_application::TimelineProjection> {
        Ok(timeline_projection(
            self.service.services().invocations.as_ref(),
            &RunId::from_raw(run_id),
        )
        .await?)
    }

    /// Live events of a run after `after_seq` (0 = from the start), optionally only those of
    /// one invocation. Ends after the run's terminal event.
    pub fn subscribe(
        &self,
        run_id: &str,
        after_seq: u64,
        invocation_id: Option<String>,
    ) -> EventSubscription {
        EventSubscription {
            inner: self
                .service
                .subscribe(RunId::from_raw(run_id), after_seq, invocation_id),
        }
    }

    /// Answers a pending `chat_commit_requested` (host-API commit bridge only).
    pub fn resolve_chat_commit(&self, request: ResolveChatCommitRequest) -> HostResult<()> {
        Ok(self.host_commits.resolve(
            &RunId::from_raw(request.run_id),
            &CommitId::from_raw(request.commit_id),
            request.message_id,
            request.error,
        )?)
    }

    /// Validates and stores an agent profile (`<data dir>/profiles/<id>.json`).
    pub async fn save_profile(
        &self,
        definition: tt_domain::profile::AgentProfileDefinition,
    ) -> HostResult<()> {
        self.service.save_profile(definition).await?;
        Ok(())
    }

    /// The full request of a pending prompt assembly (host-API prompt broker only). Errors:
    /// `agent.prompt_assembly_not_pending`, `agent.prompt_assembly_run_mismatch`.
    pub fn read_prompt_assembly_request(
        &self,
        request: ReadPromptAssemblyRequest,
    ) -> HostResult<tt_ports::PromptAssemblyRequest> {
        self.host_prompts
            .read_request(&request.run_id, &request.assembly_id)
    }

    /// Answers a pending prompt assembly with a prompt snapshot
    /// (`{messages: [{role, content}], contextPolicy}`) or an error.
    pub fn resolve_prompt_assembly(&self, request: ResolvePromptAssemblyRequest) -> HostResult<()> {
        self.host_prompts.resolve(
            &request.run_id,
            &request.assembly_id,
            request.prompt_snapshot,
            request.assembly,
            request.error,
        )
    }

    /// Writes one file of a skill (`SKILL.md` or a supporting text file) in a scope.
    pub fn save_skill_file(
        &self,
        scope: &tt_domain::skill::SkillScope,
        skill_id: &str,
        path: &str,
        text: &str,
    ) -> HostResult<()> {
        let invalid = |err: tt_domain::DomainError| HostError {
            code: err.code.to_owned(),
            message: err.message,
        };
        let skill_id = tt_domain::skill::SkillId::parse(skill_id).map_err(invalid)?;
        let path = tt_domain::skill::SkillFilePath::parse(path).map_err(invalid)?;
        self.skill_store
            .put_skill_file(scope, &skill_id, &path, text)
            .map_err(|err| HostError {
                code: err.code().to_owned(),
                message: err.to_string(),
            })
    }

    /// Any stored record of a run by the reference its events use (`argumentsRef`,
    /// `modelResponsePath`, `resultRef`, `checkpoints/<id>`, `tasks/<id>.json`, …; see
    /// docs/storage.md). `agent.not_found` when the run has no such record.
    pub async fn read_record(
        &self,
        run_id: &str,
        reference: &str,
    ) -> HostResult<serde_json::Value> {
        let to_host = |err: tt_ports::StorageError| HostError {
            code: err.code().to_owned(),
            message: err.to_string(),
        };
        self.skill_store
            .read_record(&RunId::from_raw(run_id), reference)
            .await
            .map_err(to_host)?
            .ok_or_else(|| HostError {
                code: "agent.not_found".to_owned(),
                message: format!("run {run_id} has no record `{reference}`"),
            })
    }

    /// The newest promoted `persist/` state of a conversation (`stableChatId`), which its next
    /// run names as `persistBaseStateId` to start from what the last successful run kept: the
    /// state the newest completed run promoted or, when it changed nothing, the state it
    /// started from. `None` when no completed run of the conversation has one.
    pub async fn latest_persist_state(&self, stable_chat_id: &str) -> HostResult<Option<String>> {
        const PAGE: usize = 200;
        let mut offset = 0;
        loop {
            let runs = self
                .service
                .list_runs(RunListPage {
                    offset,
                    limit: PAGE,
                })
                .await?;
            for run in runs.iter().filter(|run| {
                run.stable_chat_id == stable_chat_id
                    && run.status == tt_domain::run::AgentRunStatus::Completed
            }) {
                if let Some(state) = self.promoted_state(&run.id).await? {
                    return Ok(Some(state));
                }
            }
            if runs.len() < PAGE {
                return Ok(None);
            }
            offset += runs.len();
        }
    }

    /// `stateId` (else `baseStateId`) of a run's `persistent_changes_committed` event.
    async fn promoted_state(&self, run_id: &RunId) -> HostResult<Option<String>> {
        let mut after = 0;
        loop {
            let page = EventPage {
                after_seq: Some(after),
                limit: Some(500),
                ..EventPage::default()
            };
            let events = self.service.read_events(run_id, &page).await?;
            let Some(last) = events.last() else {
                return Ok(None);
            };
            after = last.seq;
            if let Some(event) = events
                .iter()
                .find(|event| event.event_type == "persistent_changes_committed")
            {
                return Ok(["stateId", "baseStateId"].into_iter().find_map(|key| {
                    event
                        .payload
                        .get(key)
                        .and_then(|value| value.as_str())
                        .map(str::to_owned)
                }));
            }
        }
    }

    /// Newest runs first.
    pub async fn list_runs(&self, request: ListRunsRequest) -> HostResult<Vec<AgentRun>> {
        let limit = request.limit.clamp(1, 500);
        Ok(self
            .service
            .list_runs(RunListPage {
                offset: request.offset,
                limit,
            })
            .await?)
    }

    pub async fn read_workspace_file(
        &self,
        run_id: &str,
        path: &str,
    ) -> HostResult<WorkspaceFileDto> {
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

    /// Messages published through the transcript commit bridge for a workspace.
    pub fn transcript(&self, workspace_id: &str) -> HostResult<Vec<TranscriptEntry>> {
        self.transcripts
            .read_transcript(workspace_id)
            .map_err(|err| HostError {
                code: "agent.transcript_unreadable".to_owned(),
                message: err.to_string(),
            })
    }
}
