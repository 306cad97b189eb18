//! The requests and answers of host commands that have no type of their own elsewhere: a run
//! or a task named by id, and the requests that name a run beside another operation's body.
//! Every one is camelCase and refuses unknown fields, so a typo is `host.request_invalid`.

use serde::{Deserialize, Serialize};

use tt_application::{
    AnswerSpendLimitRequest, ForkRunRequest, ResolveToolApprovalRequest, SubmitGuidanceRequest,
};
use tt_domain::skill::SkillScope;

/// A JSON value, as command answers carry it (a stored record, an OTel export).
pub type JsonValue = serde_json::Value;

/// The request of a command that takes nothing: `{}` (or `null`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoInput {}

/// A run, by id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunRef {
    pub run_id: String,
}

impl RunRef {
    pub fn new(run_id: impl Into<String>) -> Self {
        Self {
            run_id: run_id.into(),
        }
    }
}

/// A stored profile, by id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProfileRef {
    pub profile_id: String,
}

/// A delegated task of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskRef {
    pub run_id: String,
    pub task_id: String,
}

/// `submit_agent_guidance`: the run, and the note as [`SubmitGuidanceRequest`] has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GuidanceRequest {
    pub run_id: String,
    #[serde(flatten)]
    pub guidance: SubmitGuidanceRequest,
}

/// `fork_agent_run`: the source run, and where and how to branch it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkAgentRunRequest {
    pub run_id: String,
    #[serde(flatten)]
    pub fork: ForkRunRequest,
}

/// `read_agent_conversation`: one agent of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConversationRequest {
    pub run_id: String,
    pub invocation_id: String,
}

/// `read_agent_workspace_file`: a file of a run's workspace by its logical path
/// (`output/draft.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkspaceFileRequest {
    pub run_id: String,
    pub path: String,
}

/// `read_agent_record`: a stored record by the reference an event names (`argumentsRef`,
/// `blobs/<sha256>`, …).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecordRequest {
    pub run_id: String,
    pub reference: String,
}

/// `read_agent_transcript`: the messages published for a workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TranscriptRequest {
    pub workspace_id: String,
}

/// `read_agent_persist_state`: a conversation by its `stableChatId`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PersistStateRequest {
    pub stable_chat_id: String,
}

/// The newest promoted `persist/` state of a conversation, if any.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PersistStateAnswer {
    pub state_id: Option<String>,
}

/// `approve_agent_tool_call`: the waiting call, and the decision (`{decision: "approve"}`,
/// `{decision: "approve_with_arguments", arguments}` or `{decision: "deny", message?}`, with
/// an optional `decidedBy`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApproveToolCallRequest {
    pub run_id: String,
    pub approval_id: String,
    #[serde(flatten)]
    pub resolution: ResolveToolApprovalRequest,
}

/// `answer_agent_spend_limit`: the run parked at its spend limit, and the answer
/// (`{decision: "raise", limitUsd}` or `{decision: "refuse"}`, with an optional `decidedBy`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnswerSpendLimitCommand {
    pub run_id: String,
    #[serde(flatten)]
    pub answer: AnswerSpendLimitRequest,
}

/// `save_agent_skill_file`: one file of a skill in a scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SaveSkillFileRequest {
    pub scope: SkillScope,
    pub skill_id: String,
    /// `SKILL.md` or a supporting text file's path in the skill.
    pub path: String,
    pub text: String,
}

/// `save_agent_connection`: a named model connection's document (the form of a connection
/// file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SaveConnectionRequest {
    pub name: String,
    pub document: serde_json::Value,
}

/// `remove_agent_connection`: a stored connection by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConnectionName {
    pub name: String,
}

/// `save_agent_preset_template`: the template of preset `{apiId, name}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SavePresetTemplateRequest {
    pub api_id: String,
    pub name: String,
    pub template: serde_json::Value,
}

/// `read_agent_mcp_server`: one registered server; with `refresh`, its catalog read again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpServerRequest {
    pub name: String,
    #[serde(default)]
    pub refresh: bool,
}

/// `remove_agent_mcp_server`: a registered server by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpServerName {
    pub name: String,
}

/// `call_agent_mcp_tool`: one tool of a registered server, called by hand outside any run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpToolCallRequest {
    pub server: String,
    pub tool: String,
    /// A JSON object.
    #[serde(default = "empty_object")]
    pub arguments: serde_json::Value,
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}
