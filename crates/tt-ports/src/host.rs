//! The host commit bridge: `workspace.commit` asks the host to publish an artifact as a chat
//! message and waits for its `messageId`, an error, or cancel; and, when a run finishes, asks
//! the host to bind the run's new persistent state to the last committed message.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tt_domain::ids::{CheckpointId, CommitId, InvocationId, RunId, WorkspaceId};

use crate::error::HostBridgeError;

/// Everything the host needs to publish one commit (the `chat_commit_requested` payload plus
/// the text itself).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatCommitRequest {
    pub commit_id: CommitId,
    pub run_id: RunId,
    pub invocation_id: InvocationId,
    pub call_id: String,
    pub workspace_id: WorkspaceId,
    pub stable_chat_id: String,
    pub chat_ref: Value,
    pub generation_type: Value,
    pub profile_id: Option<String>,
    pub path: String,
    /// `replace` or `append`.
    pub mode: String,
    pub reason: Option<String>,
    pub content: String,
    pub chars: usize,
    pub words: usize,
    pub sha256: String,
    pub checkpoint_id: CheckpointId,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatCommitReceipt {
    pub message_id: String,
}

/// The host's eventual answer to one registered commit. Dropping it withdraws the commit.
pub type CommitAnswer = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<ChatCommitReceipt, HostBridgeError>> + Send>,
>;

/// Publishing happens in two steps so a host can never answer a commit it has not been told
/// about yet: `request_commit` registers the commit and returns the pending answer; the runtime
/// then journals `chat_commit_requested` and awaits the answer, racing it against run cancel
/// (dropping the answer on cancel).
#[async_trait]
pub trait HostCommitBridge: Send + Sync {
    /// Registers the commit. From the moment this returns, the host may answer it.
    async fn request_commit(
        &self,
        request: ChatCommitRequest,
    ) -> Result<CommitAnswer, HostBridgeError>;

    /// The metadata handshake when a run finishes, in the same two steps as a commit: registers
    /// the update (the host may answer from the moment this returns); the runtime journals
    /// `persistent_state_metadata_update_requested` and awaits the answer, racing run cancel.
    /// A bridge that keeps no chat metadata answers at once (this default).
    async fn request_metadata_update(
        &self,
        request: PersistentStateMetadataUpdate,
    ) -> Result<MetadataUpdateAnswer, HostBridgeError> {
        let _ = request;
        Ok(Box::pin(async { Ok(()) }))
    }
}

/// What the host binds when a run finishes: the persistent state the run promoted, to the chat
/// message it committed last. It is the `persistent_state_metadata_update_requested` payload,
/// so the request the bridge gets and the event the host reads are one type.
pub type PersistentStateMetadataUpdate =
    tt_domain::event_payload::PersistentStateMetadataUpdateRequested;

/// The host's eventual answer to one registered metadata update. Dropping it withdraws it.
pub type MetadataUpdateAnswer =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), HostBridgeError>> + Send>>;
