//! Where everything lives under the data root, and the validation of every id that becomes a
//! path segment (`[A-Za-z0-9_-]{1,128}`).

use std::path::{Path, PathBuf};
use tt_domain::DomainError;
use tt_domain::ids::is_valid_storage_segment;
use tt_ports::{RunDocument, StorageError, StorageResult};

pub(crate) const RUN_FILE: &str = "run.json";
pub(crate) const MANIFEST_FILE: &str = "manifest.json";
pub(crate) const EVENTS_FILE: &str = "events.jsonl";
pub(crate) const INVOCATIONS_DIR: &str = "invocations";
pub(crate) const TASKS_DIR: &str = "tasks";
pub(crate) const CHECKPOINTS_DIR: &str = "checkpoints";
pub(crate) const CHECKPOINT_FILE: &str = "checkpoint.json";
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

/// Refuses an id that is not a safe single path segment.
pub(crate) fn check_segment(what: &str, raw: &str) -> StorageResult<()> {
    if is_valid_storage_segment(raw) {
        Ok(())
    } else {
        Err(StorageError::Domain(DomainError::new(
            "agent.storage_segment_invalid",
            format!(
                "{what} `{}` must be 1 to 128 characters of letters, digits, `-` or `_`",
                raw.chars().take(80).collect::<String>()
            ),
        )))
    }
}

/// The path of a run document relative to the run directory, after checking that every id or
/// key it embeds is a safe segment.
pub(crate) fn document_path(run_dir: &Path, document: &RunDocument) -> StorageResult<PathBuf> {
    match document {
        RunDocument::PromptSnapshot
        | RunDocument::ResolvedProfile
        | RunDocument::PersistSnapshot => {}
        RunDocument::InvocationToolSnapshot(id)
        | RunDocument::InvocationResolvedSkills(id)
        | RunDocument::InvocationPromptSnapshot(id)
        | RunDocument::InvocationPromptAssembly(id)
        | RunDocument::AgentResult(id)
        | RunDocument::ModelResponse {
            invocation_id: id, ..
        } => check_segment("invocation id", id.as_str())?,
        RunDocument::ToolArgs { call_file_key } | RunDocument::ToolResult { call_file_key } => {
            check_segment("call file key", call_file_key)?;
        }
    }
    Ok(join_relative(run_dir, &document.relative_path()))
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
    fn documents_map_under_the_run_directory() {
        let run = Path::new("/data/chats/chat_x/runs/run_1");
        assert_eq!(
            document_path(
                run,
                &RunDocument::ModelResponse {
                    invocation_id: InvocationId::from_raw("inv_a"),
                    round: 3
                }
            )
            .unwrap(),
            run.join("model-responses")
                .join("inv_a")
                .join("round-003.json")
        );
    }

    #[test]
    fn unsafe_segments_are_refused() {
        let run = Path::new("/data/run");
        for bad in ["../x", "a/b", "", "x y"] {
            let doc = RunDocument::ToolResult {
                call_file_key: bad.to_owned(),
            };
            let err = document_path(run, &doc).unwrap_err();
            assert_eq!(err.code(), "agent.storage_segment_invalid");
            let err = document_path(run, &RunDocument::AgentResult(InvocationId::from_raw(bad)))
                .unwrap_err();
            assert_eq!(err.code(), "agent.storage_segment_invalid");
        }
        let layout = Layout::new(PathBuf::from("/data"));
        assert!(layout.run_dir("chat_1", "..").is_err());
        assert!(layout.states_dir("chat/1").is_err());
    }
}
