//! The transcript port: where the transcript commit bridge keeps the messages it published,
//! per workspace, so every host of one store reads the same conversation.

use async_trait::async_trait;
use tt_domain::transcript::TranscriptEntry;

use crate::error::StorageResult;

#[async_trait]
pub trait TranscriptRepository: Send + Sync {
    /// Appends `entry` to the transcript of `workspace_id`; durable when it returns. A
    /// workspace id that is not a storage segment (1 to 128 letters, digits, `-`, `_`) is
    /// `StorageError::Domain` (`agent.storage_segment_invalid`), for reads too.
    async fn append_transcript_entry(
        &self,
        workspace_id: &str,
        entry: &TranscriptEntry,
    ) -> StorageResult<()>;

    /// The transcript of `workspace_id`, oldest first; empty when nothing was published.
    async fn read_transcript(&self, workspace_id: &str) -> StorageResult<Vec<TranscriptEntry>>;
}
