//! `InMemoryTranscripts`: the transcript port in memory, with the same id rule as the stores.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use tt_domain::transcript::TranscriptEntry;
use tt_ports::{StorageResult, TranscriptRepository};

/// Transcripts per workspace id, in append order.
#[derive(Debug, Default)]
pub struct InMemoryTranscripts {
    entries: Mutex<HashMap<String, Vec<TranscriptEntry>>>,
}

fn check(workspace_id: &str) -> StorageResult<()> {
    tt_ports::store_inputs::check_storage_segment("workspace id", workspace_id)
}

#[async_trait]
impl TranscriptRepository for InMemoryTranscripts {
    async fn append_transcript_entry(
        &self,
        workspace_id: &str,
        entry: &TranscriptEntry,
    ) -> StorageResult<()> {
        check(workspace_id)?;
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(workspace_id.to_owned())
            .or_default()
            .push(entry.clone());
        Ok(())
    }

    async fn read_transcript(&self, workspace_id: &str) -> StorageResult<Vec<TranscriptEntry>> {
        check(workspace_id)?;
        Ok(self
            .entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(workspace_id)
            .cloned()
            .unwrap_or_default())
    }
}
