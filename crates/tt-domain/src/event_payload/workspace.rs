//! Workspace writes, patches and checkpoints.

use serde::{Deserialize, Serialize};

use crate::ids::{CheckpointId, InvocationId};

/// `workspace_file_written`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceFileWritten {
    pub invocation_id: InvocationId,
    pub path: String,
    pub mode: String,
    pub chars: u64,
    pub words: u64,
    pub sha256: String,
}

/// `workspace_patch_applied`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspacePatchApplied {
    pub invocation_id: InvocationId,
    pub path: String,
    pub chars: u64,
    pub words: u64,
    pub old_sha256: String,
    pub sha256: String,
    pub replacements: u64,
}

/// `checkpoint_created`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointCreated {
    pub invocation_id: InvocationId,
    pub checkpoint_id: CheckpointId,
    pub reason: crate::workspace::CheckpointReason,
    pub event_seq: u64,
    pub files: Vec<crate::workspace::FileFingerprint>,
}
