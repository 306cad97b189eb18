//! The run: one shared workspace, one journal and one tree of invocations.
//!
//! Holds `AgentRun`, its status machine (including `partial_success`) and the derivation of the
//! workspace id from the host's stable conversation id.

use crate::error_codes;
use crate::generation::GenerationSettings;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::{ProfileId, RunId, WorkspaceId};
use crate::text::sha256_hex;
use crate::time::Timestamp;
use crate::{DomainError, DomainResult};

pub use crate::presentation::Presentation;

/// Kind of conversation a run belongs to; part of the workspace id derivation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ConversationKind {
    /// The default: a one-character conversation.
    #[default]
    Character,
    Group,
}

impl ConversationKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ConversationKind::Character => "character",
            ConversationKind::Group => "group",
        }
    }
}

/// Maximum byte length of a stable conversation id.
pub const MAX_STABLE_CHAT_ID_BYTES: usize = 512;

/// Trims and validates the host's stable conversation id.
pub fn normalize_stable_chat_id(raw: &str) -> DomainResult<String> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Err(DomainError::new(
            error_codes::AGENT_STABLE_CHAT_ID_INVALID,
            "the stable conversation id must not be empty",
        ));
    }
    if trimmed.len() > MAX_STABLE_CHAT_ID_BYTES {
        return Err(DomainError::new(
            error_codes::AGENT_STABLE_CHAT_ID_INVALID,
            format!("the stable conversation id is longer than {MAX_STABLE_CHAT_ID_BYTES} bytes"),
        ));
    }
    Ok(trimmed.to_owned())
}

/// `chat_` + hex of the first 8 bytes of sha256 over `{"kind":…,"stableChatId":…}`.
pub fn derive_workspace_id(kind: ConversationKind, stable_chat_id: &str) -> WorkspaceId {
    let identity = serde_json::json!({ "kind": kind.as_str(), "stableChatId": stable_chat_id });
    let digest = sha256_hex(identity.to_string().as_bytes());
    WorkspaceId::from_raw(format!("chat_{}", &digest[..16]))
}

/// Run status. Terminal: `completed`, `partial_success`, `cancelled`, `failed`, and
/// `interrupted` (the process that ran it went away before it finished; set by the store when it
/// reopens the data dir, never by the runtime while the run is live).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentRunStatus {
    Created,
    InitializingWorkspace,
    AssemblingContext,
    CallingModel,
    DispatchingTool,
    ApplyingWorkspacePatch,
    CreatingCheckpoint,
    AwaitingHostCommit,
    /// The foreground agent waits for a person to approve a tool call.
    AwaitingApproval,
    Finishing,
    Completed,
    PartialSuccess,
    Cancelling,
    Cancelled,
    Failed,
    Interrupted,
}

impl AgentRunStatus {
    /// Whether the run has ended: every other status is a working one.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            AgentRunStatus::Completed
                | AgentRunStatus::PartialSuccess
                | AgentRunStatus::Cancelled
                | AgentRunStatus::Failed
                | AgentRunStatus::Interrupted
        )
    }

    /// Legal moves: a terminal status never changes; `cancelling` may only end `cancelled`
    /// (or, if a failure races the cancel, `failed` / `partial_success`); `completed` is reached
    /// only through `finishing`. Every other working status may move to any non-terminal status.
    pub fn can_transition_to(self, next: AgentRunStatus) -> bool {
        if self.is_terminal() {
            return false;
        }
        match next {
            AgentRunStatus::Completed => self == AgentRunStatus::Finishing,
            AgentRunStatus::Cancelled
            | AgentRunStatus::Failed
            | AgentRunStatus::PartialSuccess
            | AgentRunStatus::Cancelling
            | AgentRunStatus::Interrupted => true,
            AgentRunStatus::Created => false,
            AgentRunStatus::InitializingWorkspace
            | AgentRunStatus::AssemblingContext
            | AgentRunStatus::CallingModel
            | AgentRunStatus::DispatchingTool
            | AgentRunStatus::ApplyingWorkspacePatch
            | AgentRunStatus::CreatingCheckpoint
            | AgentRunStatus::AwaitingHostCommit
            | AgentRunStatus::AwaitingApproval
            | AgentRunStatus::Finishing => self != AgentRunStatus::Cancelling,
        }
    }

    /// Working states a run passes through many times per model turn. They are journaled but
    /// not worth rewriting the stored run record for: a host reading a live run gets them from
    /// the runtime, and a run that stops is stored with its final status.
    pub fn is_transient(self) -> bool {
        match self {
            AgentRunStatus::AssemblingContext
            | AgentRunStatus::CallingModel
            | AgentRunStatus::DispatchingTool
            | AgentRunStatus::ApplyingWorkspacePatch
            | AgentRunStatus::CreatingCheckpoint => true,
            AgentRunStatus::Created
            | AgentRunStatus::InitializingWorkspace
            | AgentRunStatus::AwaitingHostCommit
            | AgentRunStatus::AwaitingApproval
            | AgentRunStatus::Finishing
            | AgentRunStatus::Completed
            | AgentRunStatus::PartialSuccess
            | AgentRunStatus::Cancelling
            | AgentRunStatus::Cancelled
            | AgentRunStatus::Failed
            | AgentRunStatus::Interrupted => false,
        }
    }

    /// Every status, in the order a run passes them (terminal ones last).
    pub const ALL: [AgentRunStatus; 16] = [
        AgentRunStatus::Created,
        AgentRunStatus::InitializingWorkspace,
        AgentRunStatus::AssemblingContext,
        AgentRunStatus::CallingModel,
        AgentRunStatus::DispatchingTool,
        AgentRunStatus::ApplyingWorkspacePatch,
        AgentRunStatus::CreatingCheckpoint,
        AgentRunStatus::AwaitingHostCommit,
        AgentRunStatus::AwaitingApproval,
        AgentRunStatus::Cancelling,
        AgentRunStatus::Finishing,
        AgentRunStatus::Completed,
        AgentRunStatus::PartialSuccess,
        AgentRunStatus::Failed,
        AgentRunStatus::Cancelled,
        AgentRunStatus::Interrupted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AgentRunStatus::Created => "created",
            AgentRunStatus::InitializingWorkspace => "initializing_workspace",
            AgentRunStatus::AssemblingContext => "assembling_context",
            AgentRunStatus::CallingModel => "calling_model",
            AgentRunStatus::DispatchingTool => "dispatching_tool",
            AgentRunStatus::ApplyingWorkspacePatch => "applying_workspace_patch",
            AgentRunStatus::CreatingCheckpoint => "creating_checkpoint",
            AgentRunStatus::AwaitingHostCommit => "awaiting_host_commit",
            AgentRunStatus::AwaitingApproval => "awaiting_approval",
            AgentRunStatus::Finishing => "finishing",
            AgentRunStatus::Completed => "completed",
            AgentRunStatus::PartialSuccess => "partial_success",
            AgentRunStatus::Cancelling => "cancelling",
            AgentRunStatus::Cancelled => "cancelled",
            AgentRunStatus::Failed => "failed",
            AgentRunStatus::Interrupted => "interrupted",
        }
    }
}

/// A run as stored in `run.json` and in the run index.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentRun {
    pub id: RunId,
    pub workspace_id: WorkspaceId,
    pub stable_chat_id: String,
    pub conversation_kind: ConversationKind,
    /// Opaque host metadata (the original's `chatRef`), carried to events and bridges.
    #[serde(default)]
    pub chat_ref: Value,
    /// Opaque host metadata (the original's `generationType`).
    #[serde(default)]
    pub generation_type: Value,
    #[serialize_always]
    pub profile_id: Option<ProfileId>,
    #[serialize_always]
    pub persist_base_state_id: Option<String>,
    /// The preset and character the conversation runs with, for skill scopes.
    #[serde(default)]
    pub skill_scope_refs: crate::skill::SkillScopeRefs,
    /// The named model connection the host chose for this run: what profiles whose model is
    /// the conversation's current one (`currentPromptSnapshot`) talk to. `None`: the runtime's
    /// default model.
    pub connection_ref: Option<String>,
    /// Generation settings the host set for every agent of this run: the top layer, over the
    /// connection's, the profile's and the prompt assembly's.
    #[serde(default, skip_serializing_if = "GenerationSettings::is_empty")]
    pub generation: GenerationSettings,
    pub presentation: Presentation,
    pub status: AgentRunStatus,
    /// Messages of the conversation frozen at start (`input/prompt_snapshot.json`): host system
    /// messages, the kept history and the user's request.
    #[serde(default)]
    pub input_message_count: usize,
    /// The run and journal seq this run was branched from (`fork_run`, docs/branching.md);
    /// `None` for a run started from a request.
    pub forked_from: Option<ForkedFrom>,
    /// Model changes for the agents of chosen profiles, by profile id, over what their profile
    /// says (set by `fork_run`'s changes, docs/branching.md).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub profile_models: std::collections::BTreeMap<ProfileId, ProfileModelChange>,
    /// When the host gave the run up (`abandon_run`): an `interrupted`, `failed` or
    /// `cancelled` run stays resumable until then (docs/resume.md).
    pub abandoned_at: Option<Timestamp>,
    /// The end of the run the journal refused (a full or read-only disk kept its `run_failed`
    /// / `run_partial_success` out): kept on the record, one small write, so a later reader
    /// still learns how the run ended (docs/storage.md, "Damage"). Cleared when the run moves
    /// on (a resume).
    pub unrecorded_end: Option<UnrecordedEnd>,
    /// The stored record was missing or unreadable and was rebuilt from what else the store
    /// keeps (its index copy, or its journal): how, and why (docs/storage.md, "Recovery").
    /// `check_run` reports it; cleared when the run moves on (a resume).
    pub rebuilt: Option<RebuiltRecord>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// Where a rebuilt run record came from ([`AgentRun::rebuilt`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RebuiltRecord {
    /// What it was rebuilt from: [`REBUILT_FROM_INDEX`] or [`REBUILT_FROM_JOURNAL`].
    pub from: String,
    /// What was wrong with the record (missing, or why it could not be read), and what the
    /// rebuild could not restore.
    pub because: String,
}

/// [`RebuiltRecord::from`] of a record rebuilt from the store's copy of it in the run index.
pub const REBUILT_FROM_INDEX: &str = "index_copy";
/// [`RebuiltRecord::from`] of a record rebuilt from the run's journal (`run_created`,
/// `generation_intent_recorded` and the events after them).
pub const REBUILT_FROM_JOURNAL: &str = "journal";

/// A run's end event that the journal refused, as it would have been journaled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnrecordedEnd {
    /// The event type: `run_failed` or `run_partial_success`.
    #[serde(rename = "type")]
    pub event_type: String,
    /// The event's payload (`code`, `message`, …).
    pub payload: Value,
    /// Why the journal refused it: the storage error.
    pub unrecorded_because: String,
}

/// A change of the model of one profile's agents in a run: another named connection (its
/// default model), and generation settings over the run's.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProfileModelChange {
    pub connection_ref: Option<String>,
    #[serde(default, skip_serializing_if = "GenerationSettings::is_empty")]
    pub generation: GenerationSettings,
}

/// Where a branched run came from: its source run and the last seq of the source's journal
/// the branch shares (docs/branching.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkedFrom {
    pub run_id: RunId,
    pub seq: u64,
}

impl AgentRun {
    /// Run `id` of the `conversation_kind` conversation `stable_chat_id`, created `now`, as it
    /// is before anything is chosen for it or happens in it: in the foreground, with no chat
    /// metadata, profile, persistent state, skill scopes, connection or settings. Callers set
    /// what they choose on the result.
    pub fn new(
        id: RunId,
        conversation_kind: ConversationKind,
        stable_chat_id: impl Into<String>,
        now: Timestamp,
    ) -> Self {
        let stable_chat_id = stable_chat_id.into();
        Self {
            id,
            workspace_id: derive_workspace_id(conversation_kind, &stable_chat_id),
            stable_chat_id,
            conversation_kind,
            chat_ref: Value::Null,
            generation_type: Value::Null,
            profile_id: None,
            persist_base_state_id: None,
            skill_scope_refs: crate::skill::SkillScopeRefs::default(),
            connection_ref: None,
            generation: GenerationSettings::default(),
            presentation: Presentation::Foreground,
            status: AgentRunStatus::Created,
            input_message_count: 0,
            forked_from: None,
            profile_models: std::collections::BTreeMap::new(),
            abandoned_at: None,
            unrecorded_end: None,
            rebuilt: None,
            created_at: now,
            updated_at: now,
        }
    }

    /// Moves to `next` if legal; returns whether the status changed.
    pub fn transition(&mut self, next: AgentRunStatus, now: Timestamp) -> DomainResult<bool> {
        if self.status == next {
            return Ok(false);
        }
        if !self.status.can_transition_to(next) {
            return Err(DomainError::new(
                error_codes::AGENT_RUN_STATUS_TRANSITION_INVALID,
                format!(
                    "run {} cannot move from {} to {}",
                    self.id,
                    self.status.as_str(),
                    next.as_str()
                ),
            ));
        }
        self.status = next;
        self.updated_at = now;
        // An end the journal refused describes the end the record shows, not a later one.
        self.unrecorded_end = None;
        Ok(true)
    }

    /// Whether `resume_run` may continue this run: it ended without finishing its work
    /// (`interrupted`, `failed` or `cancelled`) and the host has not abandoned it.
    pub fn is_resumable(&self) -> bool {
        self.abandoned_at.is_none()
            && matches!(
                self.status,
                AgentRunStatus::Interrupted | AgentRunStatus::Failed | AgentRunStatus::Cancelled
            )
    }

    /// Takes a resumable run up again (`resume_run`): the one move out of a terminal status.
    /// It continues in `assembling_context` while its agents are rebuilt; a run that is not
    /// resumable is `agent.run_not_resumable`. A `failed` or `cancelled` run is first reopened
    /// as `interrupted` ([`AgentRun::reopen`]).
    pub fn resume(&mut self, now: Timestamp) -> DomainResult<()> {
        if self.status != AgentRunStatus::Interrupted || self.abandoned_at.is_some() {
            return Err(self.not_resumable());
        }
        self.status = AgentRunStatus::AssemblingContext;
        self.updated_at = now;
        self.unrecorded_end = None;
        self.rebuilt = None;
        Ok(())
    }

    /// Marks a `failed` or `cancelled` run `interrupted` so that `resume_run` continues it
    /// where its agents stopped; returns the status it had.
    pub fn reopen(&mut self, now: Timestamp) -> DomainResult<AgentRunStatus> {
        let previous = self.status;
        if !self.is_resumable() || previous == AgentRunStatus::Interrupted {
            return Err(self.not_resumable());
        }
        self.status = AgentRunStatus::Interrupted;
        self.updated_at = now;
        self.unrecorded_end = None;
        self.rebuilt = None;
        Ok(previous)
    }

    /// Gives a resumable run up for good (`abandon_run`): its status stays, and `resume_run`
    /// refuses it from now on.
    pub fn abandon(&mut self, now: Timestamp) -> DomainResult<()> {
        if !self.is_resumable() {
            return Err(DomainError::new(
                error_codes::AGENT_RUN_NOT_ABANDONABLE,
                if self.abandoned_at.is_some() {
                    format!("run {} was already abandoned", self.id)
                } else {
                    format!(
                        "run {} is {}; only an interrupted, failed or cancelled run can be \
                         abandoned",
                        self.id,
                        self.status.as_str()
                    )
                },
            ));
        }
        self.abandoned_at = Some(now);
        self.updated_at = now;
        Ok(())
    }

    fn not_resumable(&self) -> DomainError {
        DomainError::new(
            error_codes::AGENT_RUN_NOT_RESUMABLE,
            if self.abandoned_at.is_some() {
                format!("run {} was abandoned; it cannot be resumed", self.id)
            } else {
                format!(
                    "run {} is {}; only an interrupted, failed or cancelled run can be resumed",
                    self.id,
                    self.status.as_str()
                )
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> AgentRun {
        let created = Timestamp::from_unix_millis(0);
        AgentRun {
            status: AgentRunStatus::Completed,
            ..AgentRun::new(
                RunId::from_raw("run_x"),
                ConversationKind::Character,
                "chat-1",
                created,
            )
        }
    }

    #[test]
    fn only_an_interrupted_run_resumes() {
        let mut run = sample();
        let error = run.resume(Timestamp::from_unix_millis(1)).unwrap_err();
        assert_eq!(error.code, "agent.run_not_resumable");
        assert_eq!(
            run.reopen(Timestamp::from_unix_millis(1)).unwrap_err().code,
            "agent.run_not_resumable"
        );
        assert_eq!(
            run.abandon(Timestamp::from_unix_millis(1))
                .unwrap_err()
                .code,
            "agent.run_not_abandonable"
        );
        run.status = AgentRunStatus::Interrupted;
        run.resume(Timestamp::from_unix_millis(2)).unwrap();
        assert_eq!(run.status, AgentRunStatus::AssemblingContext);
        assert_eq!(run.updated_at, Timestamp::from_unix_millis(2));
        assert!(run.status.can_transition_to(AgentRunStatus::CallingModel));
    }

    #[test]
    fn a_failed_or_cancelled_run_reopens_until_it_is_abandoned() {
        let mut run = sample();
        for ended in [AgentRunStatus::Failed, AgentRunStatus::Cancelled] {
            run.status = ended;
            assert!(run.is_resumable());
            assert_eq!(run.reopen(Timestamp::from_unix_millis(3)).unwrap(), ended);
            assert_eq!(run.status, AgentRunStatus::Interrupted);
            // Reopening is for ended runs; an interrupted one resumes as it is.
            assert!(run.reopen(Timestamp::from_unix_millis(3)).is_err());
        }
        run.status = AgentRunStatus::Failed;
        run.abandon(Timestamp::from_unix_millis(4)).unwrap();
        assert_eq!(run.status, AgentRunStatus::Failed);
        assert!(!run.is_resumable());
        assert!(run.abandon(Timestamp::from_unix_millis(5)).is_err());
        assert!(run.reopen(Timestamp::from_unix_millis(5)).is_err());
        run.status = AgentRunStatus::Interrupted;
        assert!(run.resume(Timestamp::from_unix_millis(5)).is_err());
    }

    #[test]
    fn workspace_id_is_stable_and_kind_dependent() {
        let a = derive_workspace_id(ConversationKind::Character, "chat-1");
        let b = derive_workspace_id(ConversationKind::Character, "chat-1");
        let c = derive_workspace_id(ConversationKind::Group, "chat-1");
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.as_str().starts_with("chat_"));
        assert_eq!(a.as_str().len(), 5 + 16);
    }

    #[test]
    fn stable_chat_id_is_trimmed_and_bounded() {
        assert_eq!(normalize_stable_chat_id("  x ").unwrap(), "x");
        assert!(normalize_stable_chat_id("   ").is_err());
        assert!(normalize_stable_chat_id(&"a".repeat(513)).is_err());
        assert!(normalize_stable_chat_id(&"a".repeat(512)).is_ok());
    }

    #[test]
    fn terminal_statuses_never_move() {
        use AgentRunStatus::*;
        for terminal in [Completed, PartialSuccess, Cancelled, Failed] {
            assert!(terminal.is_terminal());
            assert!(!terminal.can_transition_to(CallingModel));
            assert!(!terminal.can_transition_to(Failed));
        }
        assert!(!CallingModel.can_transition_to(Completed));
        assert!(Finishing.can_transition_to(Completed));
        assert!(Cancelling.can_transition_to(Cancelled));
        assert!(!Cancelling.can_transition_to(CallingModel));
        assert!(CallingModel.can_transition_to(PartialSuccess));
    }

    #[test]
    fn status_serializes_snake_case() {
        assert_eq!(
            serde_json::to_string(&AgentRunStatus::PartialSuccess).unwrap(),
            "\"partial_success\""
        );
        assert_eq!(
            AgentRunStatus::AwaitingHostCommit.as_str(),
            "awaiting_host_commit"
        );
    }
}

/// The summary of a run that has ended, stored at `index/run-summaries/<runId>.json` (the
/// contract's `AgentRunSummaryProjection`): what a host lists without opening the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentRunSummary {
    pub run_id: RunId,
    pub workspace_id: WorkspaceId,
    pub stable_chat_id: String,
    pub conversation_kind: ConversationKind,
    pub profile_id: Option<ProfileId>,
    pub presentation: Presentation,
    /// A terminal status.
    pub status: AgentRunStatus,
    pub input_message_count: usize,
    /// Set on a branched run (docs/branching.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkedFrom>,
    pub created_at: Timestamp,
    /// When the run reached its terminal status.
    pub ended_at: Timestamp,
}

impl AgentRunSummary {
    /// The summary of `run`, or `None` while it has not ended.
    pub fn of(run: &AgentRun) -> Option<Self> {
        run.status.is_terminal().then(|| Self {
            run_id: run.id.clone(),
            workspace_id: run.workspace_id.clone(),
            stable_chat_id: run.stable_chat_id.clone(),
            conversation_kind: run.conversation_kind,
            profile_id: run.profile_id.clone(),
            presentation: run.presentation,
            status: run.status,
            input_message_count: run.input_message_count,
            forked_from: run.forked_from.clone(),
            created_at: run.created_at,
            ended_at: run.updated_at,
        })
    }
}
