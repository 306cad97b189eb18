//! One agent's conversation as a chat (`AgentRunService::agent_conversation`, the inspector's
//! Conversation tab): what it started from (system prompt, brief or the run's conversation),
//! then round by round what it was given and what it answered, rebuilt from the journal and the
//! stored records through the ports, so it reads a live, finished or interrupted run on any
//! store. A read model: nothing the model sees depends on it.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use tt_domain::error_codes;
use tt_domain::event::{AgentRunEvent, RunEventType};
use tt_domain::ids::{InvocationId, RunId};
use tt_domain::invocation::{AgentInvocation, InvocationKind};
use tt_domain::model::{AgentModelResponse, ModelContentPart, ModelRole, ModelUsage};

use crate::engine::fork_prefix::ForkPrefix;
use tt_domain::tool::{AgentToolResult, InvocationToolSnapshot};
use tt_ports::{RunDocument, StorageError};

use crate::delegation::rendering::render_stored_brief;
use crate::error::{ApplicationError, ApplicationResult};
use crate::journal_read::JournalPages;
use crate::prompt_input::{PromptMessage, PromptRole, PromptSnapshot};

use super::AgentRunService;

/// One agent's conversation, oldest first.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentConversation {
    pub run_id: String,
    pub invocation_id: String,
    pub profile_id: String,
    /// `root`, `subagent` or `handoff`.
    pub kind: String,
    /// The agent's status as stored (`running`, `completed`, …).
    pub status: String,
    pub parent_invocation_id: Option<String>,
    /// Model calls answered, and their summed usage and cost: in a branch, only those after
    /// the fork point (what the branch paid); the earlier ones are in `inherited`.
    pub model_calls: u64,
    pub usage: ModelUsage,
    /// What the priced calls cost in US dollars (calls without a price are left out); `null`
    /// when no call had a price (unpriced is never free).
    #[serialize_always]
    pub cost_usd: Option<f64>,
    /// A branch's: the answers its source paid for, up to the fork point (docs/branching.md,
    /// "Usage of a branch"). Their entries are in `entries` all the same.
    pub inherited: Option<InheritedAnswers>,
    pub entries: Vec<ConversationEntry>,
}

/// The answers of a branch's agent that its source paid for: those journaled up to `seq`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InheritedAnswers {
    /// The fork point: the branch shares its source's journal up to this seq.
    pub seq: u64,
    pub model_calls: u64,
    pub usage: ModelUsage,
    /// `null` when none of them had a price.
    pub cost_usd: Option<f64>,
}

/// A tool call of an assistant turn, as the model wrote it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversationToolCall {
    pub call_id: String,
    /// The tool's name as the model called it (`workspace_write_file`).
    pub name: String,
    pub arguments: Value,
}

/// A delegated task whose result was added to the agent's next request.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InjectedTaskResult {
    pub task_id: String,
    pub profile_id: String,
    pub status: String,
    /// The result's summary, when the task returned one.
    pub summary: Option<String>,
}

/// One step of the conversation. `round` is the model round it belongs to: the answer of that
/// round, the results of its calls, or (guidance) the request it was read before.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum ConversationEntry {
    /// A system message the agent starts with: the runtime's system prompt, or a host's.
    System { text: String },
    /// The brief a delegated or handoff agent starts from.
    Brief { text: String },
    /// A message of the conversation the agent starts with (the run's chat for the root, a
    /// host-assembled prompt's history).
    History { role: String, text: String },
    /// User guidance the agent read before the request of `round`.
    Guidance { round: u32, text: String },
    /// The request of `round` was sent and has no stored answer (yet, in a live run).
    Requested { round: u32, message_count: u64 },
    /// A failed attempt at the model call of `round`.
    ModelError {
        round: u32,
        code: String,
        message: String,
        will_retry: bool,
    },
    /// The model's answer of `round`, with its usage and cost.
    Assistant {
        round: u32,
        text: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        reasoning: String,
        tool_calls: Vec<ConversationToolCall>,
        usage: Option<ModelUsage>,
        /// `null` when the model has no price (unpriced is never free).
        #[serde(default)]
        #[serialize_always]
        cost_usd: Option<f64>,
        model: Option<String>,
    },
    /// What a tool call of `round` returned to the model.
    ToolResult {
        round: u32,
        call_id: String,
        /// The tool's canonical name (`workspace.write_file`).
        tool: String,
        text: String,
        is_error: bool,
        error_code: Option<String>,
    },
    /// Finished delegated results added to the request after `round` (not awaited).
    InjectedResults {
        round: u32,
        tasks: Vec<InjectedTaskResult>,
    },
    /// The reminder the agent read after the answer of `round` had no tool call.
    Reminder {
        round: u32,
        attempt: u64,
        reason_code: String,
        text: String,
    },
    /// The history was trimmed or compacted to fit the window before `round`'s request.
    Context { round: u32, text: String },
    /// The result the agent handed back with `task.return` (the stored result document).
    Result { status: String, result: Value },
}

impl AgentRunService {
    /// The conversation of agent `invocation_id` in run `run_id`, rebuilt from the journal and
    /// the stored records as they are now (so a live run reads what it has stored so far).
    /// `agent.not_found` for an unknown run or agent.
    pub async fn agent_conversation(
        &self,
        run_id: &RunId,
        invocation_id: &InvocationId,
    ) -> ApplicationResult<AgentConversation> {
        let run = self.load_run(run_id).await?;
        let invocation = match self
            .services
            .invocations
            .load_invocation(run_id, invocation_id)
            .await
        {
            Ok(invocation) => invocation,
            Err(StorageError::NotFound { .. }) => {
                return Err(ApplicationError::fatal(
                    error_codes::AGENT_NOT_FOUND,
                    format!("run {run_id} has no agent {invocation_id}"),
                ));
            }
            Err(other) => return Err(other.into()),
        };
        let mut conversation = AgentConversation {
            run_id: run_id.to_string(),
            invocation_id: invocation.id.to_string(),
            profile_id: invocation.profile_id.to_string(),
            kind: invocation.kind.as_str().to_owned(),
            status: invocation.status.as_str().to_owned(),
            parent_invocation_id: invocation
                .parent_invocation_id
                .as_ref()
                .map(ToString::to_string),
            model_calls: 0,
            usage: ModelUsage::default(),
            cost_usd: None,
            inherited: run.forked_from.as_ref().map(|from| InheritedAnswers {
                seq: from.seq,
                ..InheritedAnswers::default()
            }),
            entries: Vec::new(),
        };
        let snapshot: Option<InvocationToolSnapshot> = self
            .services
            .runs
            .read_document(
                run_id,
                &RunDocument::InvocationToolSnapshot(invocation.id.clone()),
            )
            .await?
            .and_then(|value| serde_json::from_value(value).ok());
        conversation.entries = self.opening(run_id, &invocation, snapshot.as_ref()).await?;
        self.rounds(run_id, &invocation.id, snapshot.as_ref(), &mut conversation)
            .await?;
        conversation.cost_usd = conversation.cost_usd.map(tt_domain::cost::round_usd);
        if let Some(inherited) = &mut conversation.inherited {
            inherited.cost_usd = inherited.cost_usd.map(tt_domain::cost::round_usd);
        }
        Ok(conversation)
    }

    /// What the agent read before its first answer: a host-assembled prompt as stored, else
    /// its system prompt (rendered again from its stored tool snapshot and its profile) and
    /// the run's conversation (root) or its brief (delegated, handoff).
    async fn opening(
        &self,
        run_id: &RunId,
        invocation: &AgentInvocation,
        snapshot: Option<&InvocationToolSnapshot>,
    ) -> ApplicationResult<Vec<ConversationEntry>> {
        let runs = &self.services.runs;
        if invocation.kind == InvocationKind::Subagent
            && let Some(entries) = self.fork_opening(run_id, invocation, snapshot).await?
        {
            return Ok(entries);
        }
        let brief = match invocation.kind {
            InvocationKind::Root => None,
            _ => self
                .services
                .invocations
                .list_tasks_by_child(run_id, &invocation.id)
                .await?
                .first()
                .map(|task| render_stored_brief(&task.task, task.continuation)),
        };
        let assembled = runs
            .read_document(
                run_id,
                &RunDocument::InvocationPromptSnapshot(invocation.id.clone()),
            )
            .await?;
        if let Some(messages) = assembled.as_ref().and_then(prompt_messages) {
            return Ok(messages
                .into_iter()
                .map(|message| opening_entry(message, brief.as_deref()))
                .collect());
        }
        let mut entries = Vec::new();
        if let Some(snapshot) = snapshot {
            let profile = match invocation.kind {
                InvocationKind::Root => runs
                    .read_document(run_id, &RunDocument::ResolvedProfile)
                    .await?
                    .and_then(|value| serde_json::from_value(value).ok()),
                _ => crate::profiles::resolve(
                    self.services.profiles.as_ref(),
                    Some(invocation.profile_id.as_str()),
                )
                .await
                .ok(),
            };
            let text = match profile {
                Some(profile) => crate::prompt::agent_system_prompt(&profile, snapshot),
                None => crate::prompt::default_system_prompt(snapshot),
            };
            entries.push(ConversationEntry::System { text });
        }
        match invocation.kind {
            InvocationKind::Root => {
                let snapshot: Option<PromptSnapshot> = runs
                    .read_document(run_id, &RunDocument::PromptSnapshot)
                    .await?
                    .and_then(|value| serde_json::from_value(value).ok());
                for message in snapshot.map(|s| s.messages).unwrap_or_default() {
                    entries.push(opening_entry(message, None));
                }
            }
            _ => entries.extend(brief.map(|text| ConversationEntry::Brief { text })),
        }
        Ok(entries)
    }

    /// The opening of an agent started in fork mode, if `invocation` is one: the messages it
    /// was forked from (the system prompt and history its delegating agent sent), then its note
    /// and brief.
    async fn fork_opening(
        &self,
        run_id: &RunId,
        invocation: &AgentInvocation,
        snapshot: Option<&InvocationToolSnapshot>,
    ) -> ApplicationResult<Option<Vec<ConversationEntry>>> {
        let document = RunDocument::InvocationForkPrefix(invocation.id.clone());
        let Some(stored) = self.services.runs.read_document(run_id, &document).await? else {
            return Ok(None);
        };
        let Ok(prefix) = serde_json::from_value::<ForkPrefix>(stored) else {
            return Ok(None);
        };
        let mut entries: Vec<ConversationEntry> = prefix
            .messages
            .iter()
            .map(|message| match message.role {
                ModelRole::System | ModelRole::Developer => ConversationEntry::System {
                    text: message.text_content(),
                },
                role => ConversationEntry::History {
                    role: serde_json::to_value(role)
                        .ok()
                        .and_then(|role| role.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                    text: message_text(message),
                },
            })
            .collect();
        let tasks = self
            .services
            .invocations
            .list_tasks_by_child(run_id, &invocation.id)
            .await?;
        let profile = crate::profiles::resolve(
            self.services.profiles.as_ref(),
            Some(invocation.profile_id.as_str()),
        )
        .await
        .ok();
        if let (Some(task), Some(profile), Some(snapshot)) = (tasks.first(), profile, snapshot) {
            let brief = crate::delegation::rendering::render_fork_brief(&task.task);
            entries.push(ConversationEntry::Brief {
                text: crate::engine::fork_prefix::note_and_brief(
                    &profile,
                    snapshot,
                    &prefix.tools,
                    &brief,
                ),
            });
        }
        Ok(Some(entries))
    }

    /// Round by round, from the agent's events in the journal and the records they name.
    async fn rounds(
        &self,
        run_id: &RunId,
        invocation_id: &InvocationId,
        snapshot: Option<&InvocationToolSnapshot>,
        conversation: &mut AgentConversation,
    ) -> ApplicationResult<()> {
        let mut reader = RoundsReader {
            service: self,
            run_id,
            invocation_id,
            snapshot,
            captured: HashMap::new(),
            guidance_texts: HashMap::new(),
            waiting: HashMap::new(),
            last_answered: 0,
            result: None,
        };
        let mut pages = JournalPages::new(self.services.journal.as_ref(), run_id);
        while let Some(page) = pages.next().await? {
            for event in &page {
                reader.read(event, conversation).await?;
            }
        }
        conversation.entries.extend(reader.result);
        Ok(())
    }

    /// A record by the reference an event carries; `None` when it is absent or names no
    /// document.
    async fn document(&self, run_id: &RunId, reference: &str) -> ApplicationResult<Option<Value>> {
        match RunDocument::from_relative_path(reference) {
            Some(document) => Ok(self.services.runs.read_document(run_id, &document).await?),
            None => Ok(None),
        }
    }

    /// A stored model response (`{round, invocationId, response}`).
    async fn stored_response(
        &self,
        run_id: &RunId,
        reference: &str,
    ) -> ApplicationResult<Option<AgentModelResponse>> {
        Ok(self
            .document(run_id, reference)
            .await?
            .and_then(|mut value| value.get_mut("response").map(Value::take))
            .and_then(|value| serde_json::from_value(value).ok()))
    }

    /// A delegated task whose result was injected: its agent, status and summary.
    async fn injected_task(
        &self,
        run_id: &RunId,
        task_id: &str,
    ) -> ApplicationResult<InjectedTaskResult> {
        let id = tt_domain::ids::TaskId::from_raw(task_id);
        let task = match self.services.invocations.load_task(run_id, &id).await {
            Ok(task) => Some(task),
            Err(StorageError::NotFound { .. }) => None,
            Err(other) => return Err(other.into()),
        };
        let summary = match &task {
            Some(task) => self
                .services
                .runs
                .read_document(
                    run_id,
                    &RunDocument::AgentResult(task.child_invocation_id.clone()),
                )
                .await?
                .and_then(|value| str_of(&value, "summary").map(str::to_owned)),
            None => None,
        };
        Ok(InjectedTaskResult {
            task_id: task_id.to_owned(),
            profile_id: task
                .as_ref()
                .map(|task| task.target_profile_id.to_string())
                .unwrap_or_default(),
            status: task
                .as_ref()
                .map(|task| task.status.as_str().to_owned())
                .unwrap_or_default(),
            summary,
        })
    }
}

/// What reading an agent's events carries from one event to the next (`AgentRunService::rounds`).
struct RoundsReader<'a> {
    service: &'a AgentRunService,
    run_id: &'a RunId,
    invocation_id: &'a InvocationId,
    snapshot: Option<&'a InvocationToolSnapshot>,
    /// Where a plain-text answer was saved, by round: the reminder after it names the file.
    captured: HashMap<u32, String>,
    guidance_texts: HashMap<String, String>,
    /// Index in `entries` of a request still waiting for its answer, by round.
    waiting: HashMap<u32, usize>,
    last_answered: u32,
    /// The result handed back with `task.return`, which ends the conversation.
    result: Option<ConversationEntry>,
}

impl RoundsReader<'_> {
    /// What `event` adds to `conversation`, if it is one of this agent's (or guidance it may
    /// read later).
    async fn read(
        &mut self,
        event: &AgentRunEvent,
        conversation: &mut AgentConversation,
    ) -> ApplicationResult<()> {
        let p = &event.payload;
        if event.event_type == RunEventType::UserGuidanceSubmitted {
            if let (Some(id), Some(text)) = (str_of(p, "guidanceId"), str_of(p, "text")) {
                self.guidance_texts.insert(id.to_owned(), text.to_owned());
            }
            return Ok(());
        }
        if str_of(p, "invocationId") != Some(self.invocation_id.as_str()) {
            return Ok(());
        }
        let round = round_of(event);
        let entries = &mut conversation.entries;
        match event.event_type {
            RunEventType::UserGuidanceApplied => entries.push(self.guidance(p, round)),
            RunEventType::ModelRequestCreated => {
                self.waiting.insert(round, entries.len());
                entries.push(ConversationEntry::Requested {
                    round,
                    message_count: p
                        .pointer("/request/messageCount")
                        .and_then(Value::as_u64)
                        .unwrap_or(0),
                });
            }
            RunEventType::ModelCallAttemptFailed => {
                entries.push(ConversationEntry::ModelError {
                    round,
                    code: str_of(p, "code").unwrap_or_default().to_owned(),
                    message: str_of(p, "message").unwrap_or_default().to_owned(),
                    will_retry: p.get("willRetry").and_then(Value::as_bool) == Some(true),
                });
            }
            RunEventType::ModelCompleted => self.answer(event, round, conversation).await?,
            RunEventType::ToolResultStored => {
                if let Some(entry) = self.tool_result(p, round).await? {
                    entries.push(entry);
                }
            }
            RunEventType::AgentResultsInjected => {
                let mut tasks = Vec::new();
                for task_id in p
                    .get("taskIds")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    tasks.push(self.service.injected_task(self.run_id, task_id).await?);
                }
                entries.push(ConversationEntry::InjectedResults {
                    round: self.last_answered,
                    tasks,
                });
            }
            RunEventType::DirectOutputCaptured => {
                if let Some(path) = str_of(p, "path") {
                    self.captured.insert(round, path.to_owned());
                }
            }
            RunEventType::DriftRecoveryAttempted => entries.push(self.reminder(p, round)),
            RunEventType::ContextTrimmed => {
                let count = |key: &str| p.get(key).and_then(Value::as_array).map_or(0, Vec::len);
                entries.push(ConversationEntry::Context {
                    round,
                    text: trimmed_text(count("stubbedMessages"), count("removedMessages")),
                });
            }
            RunEventType::ContextCompacted => entries.push(ConversationEntry::Context {
                round,
                text: format!(
                    "{} older messages were replaced by this summary:\n\n{}",
                    p.get("replacedMessages")
                        .and_then(Value::as_u64)
                        .unwrap_or(0),
                    str_of(p, "summary").unwrap_or_default()
                ),
            }),
            RunEventType::TaskReturnRecorded => self.result = Some(self.task_result(p).await?),
            _ => {}
        }
        Ok(())
    }

    /// The guidance applied before `round`'s request, as the agent read it.
    fn guidance(&self, p: &Value, round: u32) -> ConversationEntry {
        let texts: Vec<&str> = p
            .get("guidanceIds")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter_map(|id| self.guidance_texts.get(id).map(String::as_str))
            .collect();
        ConversationEntry::Guidance {
            round,
            text: crate::guidance::render_guidance_message(&texts),
        }
    }

    /// The model's answer of `round`: counted with its usage and cost (a branch's answers up to
    /// its fork point are its source's), in the place of its request.
    async fn answer(
        &mut self,
        event: &AgentRunEvent,
        round: u32,
        conversation: &mut AgentConversation,
    ) -> ApplicationResult<()> {
        let p = &event.payload;
        let usage: Option<ModelUsage> = p
            .get("usage")
            .and_then(|usage| serde_json::from_value(usage.clone()).ok());
        let cost_usd = p.get("costUsd").and_then(Value::as_f64);
        // A branch's answers up to its fork point are its source's.
        let (calls, total, cost) = match &mut conversation.inherited {
            Some(inherited) if event.seq <= inherited.seq => (
                &mut inherited.model_calls,
                &mut inherited.usage,
                &mut inherited.cost_usd,
            ),
            _ => (
                &mut conversation.model_calls,
                &mut conversation.usage,
                &mut conversation.cost_usd,
            ),
        };
        *calls += 1;
        if let Some(usage) = usage {
            total.input_tokens += usage.input_tokens;
            total.output_tokens += usage.output_tokens;
            total.cached_input_tokens += usage.cached_input_tokens;
            total.cache_write_tokens += usage.cache_write_tokens;
        }
        crate::usage::add_cost(cost, cost_usd);
        let response = match str_of(p, "modelResponsePath") {
            Some(path) => self.service.stored_response(self.run_id, path).await?,
            None => None,
        };
        let entries = &mut conversation.entries;
        // The answer takes the place of its request, after the failed attempts that came
        // between them (usually the last entry).
        if let Some(index) = self.waiting.remove(&round)
            && index < entries.len()
        {
            entries.remove(index);
        }
        entries.push(assistant_entry(round, response, usage, cost_usd));
        self.last_answered = round;
        Ok(())
    }

    /// What a tool call of `round` returned, from its stored result (`None` if it is missing).
    async fn tool_result(
        &self,
        p: &Value,
        round: u32,
    ) -> ApplicationResult<Option<ConversationEntry>> {
        let stored = match str_of(p, "path") {
            Some(path) => self.service.document(self.run_id, path).await?,
            None => None,
        };
        let Some(tool) =
            stored.and_then(|value| serde_json::from_value::<AgentToolResult>(value).ok())
        else {
            return Ok(None);
        };
        Ok(Some(ConversationEntry::ToolResult {
            round,
            call_id: tool.call_id,
            tool: tool.name,
            text: tool.content,
            is_error: tool.is_error,
            error_code: tool.error_code,
        }))
    }

    /// The reminder after `round`'s plain-text answer, rendered again as the loop wrote it.
    fn reminder(&self, p: &Value, round: u32) -> ConversationEntry {
        let attempt = p.get("attempt").and_then(Value::as_u64).unwrap_or(0);
        let commits = p.get("committedCount").and_then(Value::as_u64);
        let text = self
            .snapshot
            .map(|snapshot| {
                crate::engine::tool_loop::drift_nudge(
                    snapshot,
                    u32::try_from(attempt).unwrap_or(u32::MAX),
                    self.captured.get(&round).map(String::as_str),
                    commits.map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX)),
                )
            })
            .unwrap_or_default();
        ConversationEntry::Reminder {
            round,
            attempt,
            reason_code: str_of(p, "reasonCode").unwrap_or_default().to_owned(),
            text,
        }
    }

    /// The result the agent handed back, from its stored document.
    async fn task_result(&self, p: &Value) -> ApplicationResult<ConversationEntry> {
        let status = str_of(p, "status").unwrap_or_default().to_owned();
        let stored = match str_of(p, "resultRef") {
            Some(path) => self.service.document(self.run_id, path).await?,
            None => None,
        };
        Ok(ConversationEntry::Result {
            status,
            result: stored.unwrap_or(Value::Null),
        })
    }
}

fn str_of<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

fn round_of(event: &AgentRunEvent) -> u32 {
    event
        .payload
        .get("round")
        .and_then(Value::as_u64)
        .and_then(|round| u32::try_from(round).ok())
        .unwrap_or(0)
}

/// The messages of a stored prompt snapshot (`{messages: [{role, content}], …}`).
fn prompt_messages(snapshot: &Value) -> Option<Vec<PromptMessage>> {
    serde_json::from_value(snapshot.get("messages")?.clone()).ok()
}

/// A message the agent starts with: a system message, its brief, or the conversation.
fn opening_entry(message: PromptMessage, brief: Option<&str>) -> ConversationEntry {
    match message.role {
        PromptRole::System => ConversationEntry::System {
            text: message.content,
        },
        PromptRole::User if brief == Some(message.content.as_str()) => ConversationEntry::Brief {
            text: message.content,
        },
        PromptRole::User => ConversationEntry::History {
            role: "user".to_owned(),
            text: message.content,
        },
        PromptRole::Assistant => ConversationEntry::History {
            role: "assistant".to_owned(),
            text: message.content,
        },
    }
}

fn assistant_entry(
    round: u32,
    response: Option<AgentModelResponse>,
    usage: Option<ModelUsage>,
    cost_usd: Option<f64>,
) -> ConversationEntry {
    let (text, reasoning, tool_calls, model) = match response {
        Some(response) => (
            response.text(),
            response.reasoning_text(),
            response
                .tool_calls()
                .into_iter()
                .map(|call| ConversationToolCall {
                    call_id: call.id,
                    name: call.name,
                    arguments: call.arguments,
                })
                .collect(),
            response.model,
        ),
        None => (String::new(), String::new(), Vec::new(), None),
    };
    ConversationEntry::Assistant {
        round,
        text,
        reasoning,
        tool_calls,
        usage,
        cost_usd,
        model,
    }
}

/// What a conversation reader is told of a trim: `stubbed` messages shortened, `removed` ones
/// (turns the agent moved past) taken out.
fn trimmed_text(stubbed: usize, removed: usize) -> String {
    match (stubbed, removed) {
        (_, 0) => {
            format!("{stubbed} older messages were shortened to stubs to fit the context window.")
        }
        (0, _) => format!(
            "{removed} messages the agent had moved past (plain-text answers and their reminders, slipped calls) were removed to fit the context window."
        ),
        _ => format!(
            "{removed} messages the agent had moved past (plain-text answers and their reminders, slipped calls) were removed and {stubbed} older messages shortened to stubs to fit the context window."
        ),
    }
}

/// A message of a fork prefix as text: its text, its tool calls (`name {arguments}`) and the
/// content of its tool results.
fn message_text(message: &tt_domain::model::AgentModelMessage) -> String {
    message
        .parts
        .iter()
        .filter_map(|part| match part {
            ModelContentPart::Text { text } => Some(text.clone()),
            ModelContentPart::ToolCall { call } => {
                Some(format!("{} {}", call.name, call.arguments))
            }
            ModelContentPart::ToolResult { result } => Some(result.content.clone()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::trimmed_text;

    #[test]
    fn a_trim_says_what_was_shortened_and_what_was_removed() {
        insta::assert_snapshot!(
            [trimmed_text(3, 0), trimmed_text(0, 4), trimmed_text(2, 4)].join("\n"),
            @r"
        3 older messages were shortened to stubs to fit the context window.
        4 messages the agent had moved past (plain-text answers and their reminders, slipped calls) were removed to fit the context window.
        4 messages the agent had moved past (plain-text answers and their reminders, slipped calls) were removed and 2 older messages shortened to stubs to fit the context window.
        "
        );
    }
}
