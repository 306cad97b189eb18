//! User guidance.

use serde::{Deserialize, Serialize};

use crate::ids::InvocationId;

/// `user_guidance_submitted`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserGuidanceSubmitted {
    pub guidance_id: String,
    pub client_guidance_id: Option<String>,
    pub text: String,
    pub chars: u64,
    pub words: u64,
    pub pending_count: u64,
    pub pending_chars: u64,
    pub status: String,
}

/// `user_guidance_applied`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserGuidanceApplied {
    pub guidance_ids: Vec<String>,
    pub client_guidance_ids: Vec<String>,
    pub invocation_id: InvocationId,
    pub round: u32,
    pub count: u64,
    pub chars: u64,
    pub words: u64,
    pub preview: String,
    pub message_index: u64,
    pub request_message_count: u64,
    pub status: String,
}

/// `user_guidance_discarded`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserGuidanceDiscarded {
    pub guidance_ids: Vec<String>,
    pub client_guidance_ids: Vec<String>,
    pub count: u64,
    pub chars: u64,
    pub reason: String,
    pub status: String,
}
