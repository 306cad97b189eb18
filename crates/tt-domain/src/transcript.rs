//! A transcript: the messages the transcript commit bridge published for one workspace (the
//! CLI's stand-in for a host's chat window), oldest first.

use serde::{Deserialize, Serialize};

/// One published message, or one later commit to it (`append` extends it, `replace`
/// overwrites it: the same `messageId`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TranscriptEntry {
    pub message_id: String,
    pub run_id: String,
    pub commit_id: String,
    pub mode: String,
    pub path: String,
    pub content: String,
}
