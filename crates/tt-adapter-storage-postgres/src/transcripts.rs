//! Transcripts, one row per entry (`tt_transcript_entries`: the workspace id and the entry as
//! JSON, numbered by a sequence), so every host sharing the database reads the messages the
//! transcript commit bridge published.

use async_trait::async_trait;
use tt_domain::transcript::TranscriptEntry;
use tt_ports::{StorageResult, TranscriptRepository};

use crate::PostgresStore;
use crate::error::{io, parse, to_json};
use crate::retry::retrying;

/// The same rule as every store (`tt_ports::store_inputs`).
fn check_workspace_id(workspace_id: &str) -> StorageResult<()> {
    tt_ports::store_inputs::check_storage_segment("workspace id", workspace_id)
}

#[async_trait]
impl TranscriptRepository for PostgresStore {
    async fn append_transcript_entry(
        &self,
        workspace_id: &str,
        entry: &TranscriptEntry,
    ) -> StorageResult<()> {
        retrying(|attempt| async move {
            check_workspace_id(workspace_id)?;
            let body = to_json("transcript entry", entry)?;
            let conn = self.pool.get().await?;
            // A try whose connection was lost may have appended the entry already.
            if attempt.retried
                && conn
                    .query_opt(
                        "SELECT 1 FROM tt_transcript_entries WHERE workspace_id = $1 AND body = $2
                         LIMIT 1",
                        &[&workspace_id, &body],
                    )
                    .await
                    .map_err(io(format!("the transcript of {workspace_id}")))?
                    .is_some()
            {
                return Ok(());
            }
            conn.execute(
                "INSERT INTO tt_transcript_entries (workspace_id, body) VALUES ($1, $2)",
                &[&workspace_id, &body],
            )
            .await
            .map_err(io(format!("the transcript of {workspace_id}")))?;
            Ok(())
        })
        .await
    }

    async fn read_transcript(&self, workspace_id: &str) -> StorageResult<Vec<TranscriptEntry>> {
        retrying(|_| async move {
            check_workspace_id(workspace_id)?;
            let conn = self.pool.get().await?;
            let rows = conn
                .query(
                    "SELECT body FROM tt_transcript_entries WHERE workspace_id = $1 ORDER BY entry_id",
                    &[&workspace_id],
                )
                .await
                .map_err(io(format!("the transcript of {workspace_id}")))?;
            rows.iter()
                .map(|row| parse(format!("a transcript entry of {workspace_id}"), row.get(0)))
                .collect()
        })
        .await
    }
}
