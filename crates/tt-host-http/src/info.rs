//! `ServerInfo`: what `GET /api/info` tells the page about the server it talks to. Its own
//! module because both the server's options and the routes hold it.

use serde::{Deserialize, Serialize};

/// `GET /api/info`: what the page needs to know about the runtime it drives.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerInfo {
    /// The model connection every run of this server uses (e.g. `scripted (writers' room)` or
    /// `openai:http://127.0.0.1:8080/v1 model qwen`); runs cannot choose another one yet.
    pub connection: String,
    /// Whether `workspace.commit` waits for the host (`host`: the page publishes or rejects)
    /// or is recorded at once in a transcript (`transcript`).
    pub commit_bridge: CommitBridgeMode,
    /// Profiles the start form offers (the first is preselected); any id may be typed.
    pub suggested_profiles: Vec<String>,
    /// The request the start form is prefilled with.
    pub default_request: Option<String>,
    /// The host calls that exist in this build beyond the ones every build has.
    pub features: Features,
}

/// Who answers `workspace.commit`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CommitBridgeMode {
    /// The host (this server's page) publishes or rejects each pending commit.
    Host,
    /// Commits are recorded in `<data dir>/transcripts/<workspaceId>.jsonl` at once.
    #[default]
    Transcript,
}

/// Optional controls; the page shows a control only when its flag is set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Features {
    /// Send guidance to a running run's foreground agent (`POST …/guidance`).
    pub guidance: bool,
    /// Cancel one delegated task (`POST …/tasks/{taskId}/cancel`).
    pub cancel_task: bool,
    /// Resume an interrupted, failed or cancelled run (`POST …/resume`) and abandon one (`POST …/abandon`).
    pub resume: bool,
    /// Approve, edit or deny tool calls that wait for a person (`GET …/approvals`,
    /// `POST …/approvals/{approvalId}/resolve`).
    #[serde(default)]
    pub approvals: bool,
}
