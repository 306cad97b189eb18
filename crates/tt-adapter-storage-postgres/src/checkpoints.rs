//! Reading a run's checkpoints back (`tt_checkpoints`: each row its record and its files'
//! texts), for `WorkspaceRepository::checkpoint_record` and `checkpoint_blob`; checkpoints
//! are written by the group commit (`commit.rs`).

use tt_domain::ids::{CheckpointId, RunId};
use tt_domain::workspace::CheckpointRecord;
use tt_ports::StorageResult;

use crate::PostgresStore;
use crate::error::parse;

impl PostgresStore {
    pub(crate) async fn read_checkpoint_record(
        &self,
        run_id: &RunId,
        id: &CheckpointId,
    ) -> StorageResult<Option<CheckpointRecord>> {
        // A checkpoint's id names its seq (`cp_000007` is seq 7); the row's record must hold
        // the same id, so `cp_7` is not found.
        let Some(seq) = id
            .as_str()
            .strip_prefix("cp_")
            .and_then(|digits| digits.parse::<i64>().ok())
        else {
            return Ok(None);
        };
        let row = self
            .row(
                "SELECT record FROM tt_checkpoints WHERE run_id = $1 AND seq = $2",
                &[&run_id.as_str(), &seq],
                &format!("checkpoint {id} of run {run_id}"),
            )
            .await?;
        let record: Option<CheckpointRecord> =
            row.map(|row| parse("checkpoint", row.get(0))).transpose()?;
        Ok(record.filter(|record| record.id == *id))
    }

    /// The text a checkpoint of the run kept with this sha256, newest checkpoint first (each
    /// row keeps its files' texts beside their fingerprints).
    pub(crate) async fn read_checkpoint_blob(
        &self,
        run_id: &RunId,
        sha256: &str,
    ) -> StorageResult<Option<String>> {
        let rows = self
            .rows(
                "SELECT record, files FROM tt_checkpoints WHERE run_id = $1 ORDER BY seq DESC",
                &[&run_id.as_str()],
                &format!("checkpoints of run {run_id}"),
            )
            .await?;
        for row in rows {
            let record: CheckpointRecord = parse("checkpoint", row.get(0))?;
            let texts: Vec<String> = parse("checkpoint files", row.get(1))?;
            if let Some(at) = record.files.iter().position(|file| file.sha256 == sha256)
                && let Some(text) = texts.get(at)
            {
                return Ok(Some(text.clone()));
            }
        }
        Ok(None)
    }
}
