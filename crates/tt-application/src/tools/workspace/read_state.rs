//! What one agent has seen of each workspace file during its tool loop: whole-file reads, the
//! exact text returned by partial reads, and whether a whole-file re-read is required before it
//! may patch again. Write and patch check it against the file's current sha256.

use std::collections::BTreeMap;

use tt_domain::workspace::WorkspacePath;

/// Per-agent read-state. One lives for each tool loop; agents never share one, so changes made
/// by another agent are caught by the sha256 comparison.
#[derive(Debug, Default)]
pub(crate) struct ReadState {
    files: BTreeMap<WorkspacePath, FileKnowledge>,
}

/// Knowledge of one file at one version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FileKnowledge {
    /// The version this knowledge is about.
    pub sha256: String,
    /// The whole file at `sha256` is known.
    pub full: bool,
    /// Exact texts returned by partial reads (or written by patches) at `sha256`.
    pub observed: Vec<String>,
    /// A patch based on partial knowledge failed; only a whole-file read clears this.
    pub reread_required: bool,
}

impl FileKnowledge {
    fn fully_known(sha256: &str) -> Self {
        Self {
            sha256: sha256.to_owned(),
            full: true,
            observed: Vec::new(),
            reread_required: false,
        }
    }

    /// True when `needle` lies inside text this agent has seen at this version.
    pub(super) fn has_seen(&self, needle: &str) -> bool {
        self.full || self.observed.iter().any(|text| text.contains(needle))
    }
}

impl ReadState {
    /// Brings the read-state to where a stored successful call left it, when a resumed agent
    /// replays its calls (docs/resume.md). Stored results keep each file's new sha256, not the
    /// text a partial read returned, so a replayed partial read leaves the file known at that
    /// version with nothing observed (a patch then asks for a read first).
    pub(crate) fn replay(
        &mut self,
        tool: tt_domain::tool::ToolName,
        arguments: &serde_json::Value,
        result: &tt_domain::tool::AgentToolResult,
    ) {
        use tt_domain::tool::ToolName;
        if result.is_error {
            if result.error_code.as_deref()
                == Some(tt_domain::error_codes::WORKSPACE_PATCH_REQUIRES_FULL_READ.as_str())
                && let Some(path) = stored_path(arguments)
            {
                self.require_full_reread(&path);
            }
            return;
        }
        let structured = &result.structured;
        let (Some(path), Some(sha256)) = (
            stored_path(structured),
            structured.get("sha256").and_then(serde_json::Value::as_str),
        ) else {
            return;
        };
        let full = match tool {
            ToolName::WorkspaceReadFile => structured
                .get("fullRead")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false),
            ToolName::WorkspaceWriteFile => {
                // An append keeps whole knowledge only of a file known whole (or new).
                let append =
                    structured.get("mode").and_then(serde_json::Value::as_str) == Some("append");
                !append || self.files.get(&path).is_none_or(|known| known.full)
            }
            ToolName::WorkspaceApplyPatch => self.files.get(&path).is_some_and(|known| known.full),
            // Every other built-in is named: a new tool that reads or writes files decides
            // here what a replayed call leaves the agent knowing.
            ToolName::WorkspaceListFiles
            | ToolName::WorkspaceSearchFiles
            | ToolName::WorkspaceCommit
            | ToolName::WorkspaceFinish
            | ToolName::AgentList
            | ToolName::AgentDelegate
            | ToolName::AgentHandoff
            | ToolName::AgentAwait
            | ToolName::AgentCancelTask
            | ToolName::TaskReturn
            | ToolName::SkillList
            | ToolName::SkillSearch
            | ToolName::SkillRead => return,
        };
        if full {
            self.record_full(&path, sha256);
        } else {
            self.record_partial(&path, sha256, "");
        }
    }

    /// A resumed agent's write that had reached the file before the interruption: the agent
    /// knows the file whole, as the write itself would have recorded.
    pub(crate) fn know_written(&mut self, path: &WorkspacePath, sha256: &str) {
        self.record_full(path, sha256);
    }

    /// True when the agent knows the whole file at exactly this version.
    pub(crate) fn is_fully_known(&self, path: &WorkspacePath, sha256: &str) -> bool {
        self.files
            .get(path)
            .is_some_and(|known| known.full && known.sha256 == sha256)
    }

    /// True when the agent has read (fully or partly) this version of the file.
    #[cfg(test)]
    pub(crate) fn has_read(&self, path: &WorkspacePath, sha256: &str) -> bool {
        self.files
            .get(path)
            .is_some_and(|known| known.sha256 == sha256)
    }

    /// The version of `path` this agent last knew of, if any.
    pub(crate) fn known_version(&self, path: &WorkspacePath) -> Option<&str> {
        self.files.get(path).map(|known| known.sha256.as_str())
    }

    pub(super) fn get(&self, path: &WorkspacePath) -> Option<&FileKnowledge> {
        self.files.get(path)
    }

    /// A whole-file read, or a write of the whole content: everything is known, flags clear.
    pub(super) fn record_full(&mut self, path: &WorkspacePath, sha256: &str) {
        self.files
            .insert(path.clone(), FileKnowledge::fully_known(sha256));
    }

    /// A partial read returned `text` of version `sha256`. Whole-file knowledge of the same
    /// version stays; knowledge of another version is replaced. The re-read flag survives.
    pub(super) fn record_partial(&mut self, path: &WorkspacePath, sha256: &str, text: &str) {
        match self.files.get_mut(path) {
            Some(known) if known.sha256 == sha256 => {
                if !known.full {
                    add_observed(&mut known.observed, text);
                }
            }
            Some(known) => {
                known.sha256 = sha256.to_owned();
                known.full = false;
                known.observed = vec![text.to_owned()];
            }
            None => {
                self.files.insert(
                    path.clone(),
                    FileKnowledge {
                        sha256: sha256.to_owned(),
                        full: false,
                        observed: vec![text.to_owned()],
                        reread_required: false,
                    },
                );
            }
        }
    }

    /// After a patch based on partial knowledge failed: patching needs a whole-file read first.
    pub(super) fn require_full_reread(&mut self, path: &WorkspacePath) {
        if let Some(known) = self.files.get_mut(path) {
            known.reread_required = true;
        }
    }

    /// After an append: the file stays fully known only when it was created by the append or
    /// was fully known at the version the append started from. Otherwise the agent must read
    /// the new version before rewriting or patching it.
    pub(super) fn record_append(
        &mut self,
        path: &WorkspacePath,
        previous_sha256: Option<&str>,
        sha256: &str,
    ) {
        let stays_known = match previous_sha256 {
            None => true,
            Some(previous) => self.is_fully_known(path, previous),
        };
        if stays_known {
            self.record_full(path, sha256);
        } else {
            self.files.remove(path);
        }
    }

    /// After a successful patch that turned `old_string` into `new_string`, producing
    /// `new_text` with `sha256`. Whole-file knowledge stays whole; partial knowledge is carried
    /// over to the new version (observed texts with the replacement applied, plus the new
    /// text), keeping only texts that really occur in the new version.
    pub(super) fn record_patch(
        &mut self,
        path: &WorkspacePath,
        old_string: &str,
        new_string: &str,
        new_text: &str,
        sha256: &str,
    ) {
        let Some(known) = self.files.get_mut(path) else {
            return;
        };
        if known.full {
            *known = FileKnowledge::fully_known(sha256);
            return;
        }
        let mut observed = Vec::with_capacity(known.observed.len() + 1);
        for text in &known.observed {
            let updated = text.replacen(old_string, new_string, 1);
            if new_text.contains(&updated) {
                add_observed(&mut observed, &updated);
            }
        }
        if new_text.contains(new_string) {
            add_observed(&mut observed, new_string);
        }
        known.sha256 = sha256.to_owned();
        known.observed = observed;
    }
}

/// Adds `text` unless an observed text already contains it; drops texts it contains.
fn add_observed(observed: &mut Vec<String>, text: &str) {
    if text.is_empty() || observed.iter().any(|seen| seen.contains(text)) {
        return;
    }
    observed.retain(|seen| !text.contains(seen.as_str()));
    observed.push(text.to_owned());
}

/// The `path` field of stored arguments or a stored result.
fn stored_path(value: &serde_json::Value) -> Option<WorkspacePath> {
    value
        .get("path")
        .and_then(serde_json::Value::as_str)
        .and_then(|path| WorkspacePath::parse(path).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(raw: &str) -> WorkspacePath {
        WorkspacePath::parse(raw).unwrap()
    }

    #[test]
    fn full_read_replaces_partial_knowledge_and_clears_the_flag() {
        let mut state = ReadState::default();
        let path = p("output/a.md");
        state.record_partial(&path, "s1", "alpha");
        state.require_full_reread(&path);
        assert!(state.get(&path).unwrap().reread_required);
        state.record_partial(&path, "s1", "beta");
        assert!(
            state.get(&path).unwrap().reread_required,
            "partial reads keep the flag"
        );
        state.record_full(&path, "s1");
        let known = state.get(&path).unwrap();
        assert!(known.full && !known.reread_required && known.observed.is_empty());
        assert!(state.is_fully_known(&path, "s1"));
        assert!(!state.is_fully_known(&path, "s2"));
    }

    #[test]
    fn partial_reads_accumulate_per_version() {
        let mut state = ReadState::default();
        let path = p("output/a.md");
        state.record_partial(&path, "s1", "one two");
        state.record_partial(&path, "s1", "two");
        state.record_partial(&path, "s1", "three");
        assert_eq!(state.get(&path).unwrap().observed, vec!["one two", "three"]);
        state.record_partial(&path, "s1", "one two three");
        assert_eq!(state.get(&path).unwrap().observed, vec!["one two three"]);
        state.record_partial(&path, "s2", "four");
        let known = state.get(&path).unwrap();
        assert_eq!(known.sha256, "s2");
        assert_eq!(known.observed, vec!["four"]);
        assert!(known.has_seen("ou") && !known.has_seen("one"));
    }

    #[test]
    fn partial_read_after_full_read_of_same_version_keeps_full() {
        let mut state = ReadState::default();
        let path = p("output/a.md");
        state.record_full(&path, "s1");
        state.record_partial(&path, "s1", "x");
        assert!(state.is_fully_known(&path, "s1"));
        state.record_partial(&path, "s2", "x");
        assert!(!state.is_fully_known(&path, "s2"));
        assert!(state.has_read(&path, "s2"));
    }

    #[test]
    fn append_keeps_knowledge_only_for_new_or_fully_known_files() {
        let mut state = ReadState::default();
        let new_file = p("output/new.md");
        state.record_append(&new_file, None, "n1");
        assert!(state.is_fully_known(&new_file, "n1"));
        state.record_append(&new_file, Some("n1"), "n2");
        assert!(state.is_fully_known(&new_file, "n2"));

        let partly = p("output/partly.md");
        state.record_partial(&partly, "p1", "x");
        state.record_append(&partly, Some("p1"), "p2");
        assert!(state.get(&partly).is_none());

        let unknown = p("output/unknown.md");
        state.record_append(&unknown, Some("u1"), "u2");
        assert!(state.get(&unknown).is_none());
    }

    #[test]
    fn patch_carries_partial_knowledge_to_the_new_version() {
        let mut state = ReadState::default();
        let path = p("output/a.md");
        state.record_partial(&path, "s1", "the cat sat");
        state.record_partial(&path, "s1", "on the mat");
        let new_text = "intro\nthe dog sat\non the mat\n";
        state.record_patch(&path, "cat", "dog", new_text, "s2");
        let known = state.get(&path).unwrap();
        assert_eq!(known.sha256, "s2");
        assert!(!known.full);
        assert_eq!(known.observed, vec!["the dog sat", "on the mat"]);
        assert!(known.has_seen("dog sat") && !known.has_seen("intro"));
    }

    #[test]
    fn patch_keeps_full_knowledge_full() {
        let mut state = ReadState::default();
        let path = p("output/a.md");
        state.record_full(&path, "s1");
        state.record_patch(&path, "a", "b", "b", "s2");
        assert!(state.is_fully_known(&path, "s2"));
    }
}
