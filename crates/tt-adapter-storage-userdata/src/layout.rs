//! Where everything lives under the data root, and the validation of every id that becomes a
//! path segment (`[A-Za-z0-9_-]{1,128}`).

use std::path::{Path, PathBuf};
use tt_domain::ids::is_valid_storage_segment;
use tt_ports::{RunDocument, StorageError, StorageResult};

pub(crate) const RUN_FILE: &str = "run.json";
pub(crate) const MANIFEST_FILE: &str = "manifest.json";
pub(crate) const EVENTS_FILE: &str = "events.jsonl";
/// Task, invocation, audit and checkpoint records of a run (the latest line of a key wins).
pub(crate) const RECORDS_FILE: &str = "records.jsonl";
/// File contents referenced by checkpoints, once per sha256.
pub(crate) const BLOBS_FILE: &str = "blobs.jsonl";
/// Held (flock) by the process that writes the run; holds its pid.
pub(crate) const LOCK_FILE: &str = "owner.lock";
pub(crate) const PERSIST_DIR: &str = "persist";

pub(crate) struct Layout {
    root: PathBuf,
}

impl Layout {
    pub(crate) fn new(root: PathBuf) -> Self {
        Self { root }
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    pub(crate) fn index_runs_dir(&self) -> PathBuf {
        self.root.join("index").join("runs")
    }

    /// `index/run-summaries/<runId>.json`: the summary of a run that has ended; the caller has
    /// validated the run id.
    pub(crate) fn summary_file(&self, run_id: &str) -> PathBuf {
        self.root
            .join("index")
            .join("run-summaries")
            .join(format!("{run_id}.json"))
    }

    /// `index/runs/<runId>.json`; the caller has validated the run id.
    pub(crate) fn index_file(&self, run_id: &str) -> PathBuf {
        self.index_runs_dir().join(format!("{run_id}.json"))
    }

    pub(crate) fn profiles_dir(&self) -> PathBuf {
        self.root.join("profiles")
    }

    /// `chats/<workspaceId>/runs/<runId>`.
    pub(crate) fn run_dir(&self, workspace_id: &str, run_id: &str) -> StorageResult<PathBuf> {
        check_segment("workspace id", workspace_id)?;
        check_segment("run id", run_id)?;
        Ok(self
            .root
            .join("chats")
            .join(workspace_id)
            .join("runs")
            .join(run_id))
    }

    /// Finds `chats/*/runs/<runId>` when the run's index copy is missing or unreadable (a run
    /// directory whose `run.json` is gone too is still found: its record may be rebuilt).
    pub(crate) fn find_run_dir(&self, run_id: &str) -> StorageResult<Option<PathBuf>> {
        check_segment("run id", run_id)?;
        let chats = self.root.join("chats");
        let entries = match std::fs::read_dir(&chats) {
            Ok(entries) => entries,
            Err(err) if crate::fsutil::is_missing(&err) => return Ok(None),
            Err(err) => return Err(StorageError::io(chats.display().to_string(), err)),
        };
        for entry in entries.flatten() {
            let candidate = entry.path().join("runs").join(run_id);
            if candidate.is_dir() {
                return Ok(Some(candidate));
            }
        }
        Ok(None)
    }

    /// Every run directory under `chats/*/runs/`, for listings that must not depend on the
    /// index alone.
    pub(crate) fn all_run_dirs(&self) -> StorageResult<Vec<PathBuf>> {
        let chats = self.root.join("chats");
        let entries = match std::fs::read_dir(&chats) {
            Ok(entries) => entries,
            Err(err) if crate::fsutil::is_missing(&err) => return Ok(Vec::new()),
            Err(err) => return Err(StorageError::io(chats.display().to_string(), err)),
        };
        let mut dirs = Vec::new();
        for chat in entries.flatten() {
            let Ok(runs) = std::fs::read_dir(chat.path().join("runs")) else {
                continue;
            };
            for run in runs.flatten() {
                let name = run.file_name();
                if name.to_str().is_some_and(is_valid_storage_segment) {
                    dirs.push(run.path());
                }
            }
        }
        dirs.sort();
        Ok(dirs)
    }

    /// `chats/<workspaceId>`.
    pub(crate) fn chat_dir(&self, workspace_id: &str) -> StorageResult<PathBuf> {
        check_segment("workspace id", workspace_id)?;
        Ok(self.root.join("chats").join(workspace_id))
    }

    /// `chats/<workspaceId>/persistent-states`.
    pub(crate) fn states_dir(&self, workspace_id: &str) -> StorageResult<PathBuf> {
        check_segment("workspace id", workspace_id)?;
        Ok(self
            .root
            .join("chats")
            .join(workspace_id)
            .join("persistent-states"))
    }
}

/// Refuses an id that is not a safe single path segment (`tt_ports::store_inputs`).
pub(crate) fn check_segment(what: &str, raw: &str) -> StorageResult<()> {
    tt_ports::store_inputs::check_storage_segment(what, raw)
}

/// Where a run document lives: the run's input snapshots stay files a person can open; every
/// other document is a record in `records.jsonl`, keyed by its logical path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Placement {
    File(String),
    Record(String),
}

/// The placement of a run document, after checking that every id or key it embeds is a safe
/// segment.
pub(crate) fn placement(document: &RunDocument) -> StorageResult<Placement> {
    match document {
        RunDocument::PromptSnapshot
        | RunDocument::ResolvedProfile
        | RunDocument::PersistSnapshot => return Ok(Placement::File(document.relative_path())),
        RunDocument::InvocationToolSnapshot(id)
        | RunDocument::InvocationResolvedSkills(id)
        | RunDocument::InvocationPromptSnapshot(id)
        | RunDocument::InvocationPromptAssembly(id)
        | RunDocument::InvocationForkPrefix(id)
        | RunDocument::AgentResult(id)
        | RunDocument::ModelResponse {
            invocation_id: id, ..
        } => check_segment("invocation id", id.as_str())?,
        RunDocument::ToolArgs { call_file_key } | RunDocument::ToolResult { call_file_key } => {
            check_segment("call file key", call_file_key)?;
        }
    }
    Ok(Placement::Record(document.relative_path()))
}

/// Joins a `/`-separated relative path whose segments are already known to be safe.
pub(crate) fn join_relative(base: &Path, relative: &str) -> PathBuf {
    let mut path = base.to_path_buf();
    for segment in relative.split('/').filter(|s| !s.is_empty()) {
        path.push(segment);
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;
    use tt_domain::ids::InvocationId;

    #[test]
    fn audit_documents_are_records_and_input_snapshots_files() {
        assert_eq!(
            placement(&RunDocument::ModelResponse {
                invocation_id: InvocationId::from_raw("inv_a"),
                round: 3
            })
            .unwrap(),
            Placement::Record("model-responses/inv_a/round-003.json".to_owned())
        );
        assert_eq!(
            placement(&RunDocument::ResolvedProfile).unwrap(),
            Placement::File("input/resolved_profile.json".to_owned())
        );
    }

    #[test]
    fn unsafe_segments_are_refused() {
        for bad in ["../x", "a/b", "", "x y"] {
            let doc = RunDocument::ToolResult {
                call_file_key: bad.to_owned(),
            };
            let err = placement(&doc).unwrap_err();
            assert_eq!(err.code(), "agent.storage_segment_invalid");
            let err =
                placement(&RunDocument::AgentResult(InvocationId::from_raw(bad))).unwrap_err();
            assert_eq!(err.code(), "agent.storage_segment_invalid");
        }
        let layout = Layout::new(PathBuf::from("/data"));
        assert!(layout.run_dir("chat_1", "..").is_err());
        assert!(layout.states_dir("chat/1").is_err());
        assert!(layout.find_run_dir("../x").is_err());
    }
}
