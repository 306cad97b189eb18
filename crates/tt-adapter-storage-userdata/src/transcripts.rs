//! `TranscriptRepository` as files: `transcripts/<workspaceId>.jsonl` under the data root, one
//! JSON line per entry, each append flushed to disk before it returns.

use async_trait::async_trait;
use std::io::Write;
use std::path::PathBuf;
use tt_domain::transcript::TranscriptEntry;
use tt_ports::{StorageError, StorageResult, TranscriptRepository};

use crate::UserDataStore;
use crate::fsutil::{self, read_bytes};
use crate::layout::check_segment;

impl UserDataStore {
    fn transcript_file(&self, workspace_id: &str) -> StorageResult<PathBuf> {
        check_segment("workspace id", workspace_id)?;
        Ok(self
            .inner
            .layout
            .root()
            .join("transcripts")
            .join(format!("{workspace_id}.jsonl")))
    }
}

#[async_trait]
impl TranscriptRepository for UserDataStore {
    async fn append_transcript_entry(
        &self,
        workspace_id: &str,
        entry: &TranscriptEntry,
    ) -> StorageResult<()> {
        let path = self.transcript_file(workspace_id)?;
        if self.is_read_only() {
            return Err(self
                .inner
                .read_only_error(&format!("the transcript of {workspace_id}")));
        }
        let mut line = serde_json::to_vec(entry).map_err(|err| {
            StorageError::Other(format!("cannot encode a transcript entry: {err}"))
        })?;
        line.push(b'\n');
        if let Some(dir) = path.parent() {
            fsutil::create_dir_all(dir)?;
        }
        // One write of the whole line to a file opened for appending, then to disk.
        let shown = path.display().to_string();
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|err| StorageError::io(shown.clone(), err))?;
        file.write_all(&line)
            .and_then(|()| file.sync_data())
            .map_err(|err| StorageError::io(shown, err))
    }

    async fn read_transcript(&self, workspace_id: &str) -> StorageResult<Vec<TranscriptEntry>> {
        let path = self.transcript_file(workspace_id)?;
        let Some(bytes) = read_bytes(&path)? else {
            return Ok(Vec::new());
        };
        // A line cut short by a crash (the last one) is skipped, as are lines of no entry.
        Ok(bytes
            .split(|byte| *byte == b'\n')
            .filter_map(|line| serde_json::from_slice(line).ok())
            .collect())
    }
}
