//! Logical workspace paths, the five model-visible roots and the access policy over them.
//!
//! Every agent sees the same logical paths (`output/main.md`); only which roots are visible or
//! writable differs per agent. Physical locations are the storage adapter's business.

use crate::error_codes;
use serde::{Deserialize, Serialize};
use std::fmt;

use crate::ids::{parsed_string_conversions, truncate_for_message};
use crate::{DomainError, DomainResult};

/// The longest workspace path accepted, in bytes (UTF-8), as given.
pub const MAX_PATH_BYTES: usize = 1024;
/// The longest file or folder name accepted, in bytes (UTF-8): what common file systems store.
pub const MAX_SEGMENT_BYTES: usize = 255;

/// A normalized logical path inside a run workspace: `/`-separated, relative, no `.`/`..`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct WorkspacePath(String);

impl WorkspacePath {
    /// Parses model or host input into a normalized path, or `workspace.invalid_path`.
    ///
    /// Rejected: empty, NUL, leading `/` or `\`, a Windows drive prefix (`C:`), any `..`
    /// component, more than [`MAX_PATH_BYTES`] bytes in all or more than [`MAX_SEGMENT_BYTES`]
    /// in one segment (so no file system ever sees a name it cannot store). `\` becomes `/`;
    /// `.` components and empty segments are dropped.
    pub fn parse(raw: &str) -> DomainResult<Self> {
        let invalid = |why: &str| {
            DomainError::new(
                error_codes::WORKSPACE_INVALID_PATH,
                format!(
                    "`{}` is not a usable workspace path: {why}. Use a relative path such as `output/main.md`.",
                    truncate_for_message(raw)
                ),
            )
        };
        if raw.trim().is_empty() {
            return Err(invalid("it is empty"));
        }
        if raw.len() > MAX_PATH_BYTES {
            return Err(invalid(&format!(
                "it is {} bytes long; at most {MAX_PATH_BYTES} bytes are allowed",
                raw.len()
            )));
        }
        if raw.contains('\0') {
            return Err(invalid("it contains a NUL character"));
        }
        if raw.starts_with('/') || raw.starts_with('\\') {
            return Err(invalid("absolute paths are not allowed"));
        }
        let bytes = raw.as_bytes();
        if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' {
            return Err(invalid("drive prefixes are not allowed"));
        }
        let unified = raw.replace('\\', "/");
        let mut segments = Vec::new();
        for segment in unified.split('/') {
            match segment {
                "" | "." => {}
                ".." => return Err(invalid("`..` segments are not allowed")),
                other => {
                    if other.contains(':') && segments.is_empty() && other.len() == 2 {
                        return Err(invalid("drive prefixes are not allowed"));
                    }
                    if other.len() > MAX_SEGMENT_BYTES {
                        return Err(invalid(&format!(
                            "the name `{}` is {} bytes long; at most {MAX_SEGMENT_BYTES} bytes are allowed per file or folder name",
                            truncate_for_message(other),
                            other.len()
                        )));
                    }
                    segments.push(other);
                }
            }
        }
        if segments.is_empty() {
            return Err(invalid("it names no file or folder"));
        }
        Ok(Self(segments.join("/")))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('/')
    }

    /// First segment: the root this path lives in (not necessarily a known root).
    pub fn first_segment(&self) -> &str {
        self.0.split('/').next().unwrap_or(&self.0)
    }

    /// The known workspace root this path belongs to, if any.
    pub fn root(&self) -> Option<WorkspaceRoot> {
        WorkspaceRoot::from_name(self.first_segment())
    }

    /// True when the path is exactly a root (one segment).
    pub fn is_root_itself(&self) -> bool {
        !self.0.contains('/')
    }

    /// True when `self` equals `ancestor` or lies under it.
    pub fn is_under_or_equal(&self, ancestor: &WorkspacePath) -> bool {
        self.0 == ancestor.0
            || (self.0.len() > ancestor.0.len()
                && self.0.starts_with(&ancestor.0)
                && self.0.as_bytes()[ancestor.0.len()] == b'/')
    }

    pub fn join(&self, child: &str) -> DomainResult<Self> {
        Self::parse(&format!("{}/{child}", self.0))
    }

    pub fn file_name(&self) -> &str {
        self.0.rsplit('/').next().unwrap_or(&self.0)
    }
}

parsed_string_conversions!(WorkspacePath);

/// The model-visible roots, in their canonical order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkspaceRoot {
    Output,
    Scratch,
    Plan,
    Summaries,
    Persist,
}

impl WorkspaceRoot {
    pub const ALL: [WorkspaceRoot; 5] = [
        WorkspaceRoot::Output,
        WorkspaceRoot::Scratch,
        WorkspaceRoot::Plan,
        WorkspaceRoot::Summaries,
        WorkspaceRoot::Persist,
    ];

    pub fn name(self) -> &'static str {
        match self {
            WorkspaceRoot::Output => "output",
            WorkspaceRoot::Scratch => "scratch",
            WorkspaceRoot::Plan => "plan",
            WorkspaceRoot::Summaries => "summaries",
            WorkspaceRoot::Persist => "persist",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|root| root.name() == name)
    }

    pub fn path(self) -> WorkspacePath {
        WorkspacePath(self.name().to_owned())
    }

    /// `persist/` outlives the run (projected from and promoted to chat-scoped state).
    pub fn is_persistent(self) -> bool {
        matches!(self, WorkspaceRoot::Persist)
    }
}

impl fmt::Display for WorkspaceRoot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Names that can never be used as a workspace root: the run directory's own bookkeeping.
pub const RESERVED_ROOT_NAMES: [&str; 9] = [
    "runs",
    "input",
    "model-responses",
    "tool-args",
    "tool-results",
    "checkpoints",
    "events.jsonl",
    "manifest.json",
    "run.json",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RootLifecycle {
    Run,
    Persistent,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RootScope {
    Run,
    Chat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RootMount {
    Materialized,
    ProjectedOverlay,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RootCommit {
    Never,
    OnRunCompleted,
}

/// One root as recorded in the run manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestRoot {
    pub path: WorkspaceRoot,
    pub lifecycle: RootLifecycle,
    pub scope: RootScope,
    pub mount: RootMount,
    pub visible: bool,
    pub writable: bool,
    pub commit: RootCommit,
}

impl ManifestRoot {
    pub fn new(root: WorkspaceRoot, visible: bool, writable: bool) -> Self {
        let persistent = root.is_persistent();
        Self {
            path: root,
            lifecycle: if persistent {
                RootLifecycle::Persistent
            } else {
                RootLifecycle::Run
            },
            scope: if persistent {
                RootScope::Chat
            } else {
                RootScope::Run
            },
            mount: if persistent {
                RootMount::ProjectedOverlay
            } else {
                RootMount::Materialized
            },
            visible,
            writable,
            commit: if persistent {
                RootCommit::OnRunCompleted
            } else {
                RootCommit::Never
            },
        }
    }
}

/// Which roots an agent may see and write. Built from a profile's `workspace` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceAccessPolicy {
    pub visible_roots: Vec<WorkspaceRoot>,
    pub writable_roots: Vec<WorkspaceRoot>,
}

impl WorkspaceAccessPolicy {
    pub fn new(visible_roots: Vec<WorkspaceRoot>, writable_roots: Vec<WorkspaceRoot>) -> Self {
        let mut visible_roots = visible_roots;
        visible_roots.sort();
        visible_roots.dedup();
        let mut writable_roots = writable_roots;
        writable_roots.sort();
        writable_roots.dedup();
        Self {
            visible_roots,
            writable_roots,
        }
    }

    /// The whole workspace: every root visible and writable.
    pub fn full() -> Self {
        Self::new(WorkspaceRoot::ALL.to_vec(), WorkspaceRoot::ALL.to_vec())
    }

    /// Visible: the path equals a visible root or lies under one.
    pub fn is_visible(&self, path: &WorkspacePath) -> bool {
        path.root()
            .is_some_and(|root| self.visible_roots.contains(&root))
    }

    /// Writable: the path lies strictly under a writable root (never the root itself).
    pub fn is_writable(&self, path: &WorkspacePath) -> bool {
        !path.is_root_itself()
            && path
                .root()
                .is_some_and(|root| self.writable_roots.contains(&root))
    }

    pub fn manifest_roots(&self) -> Vec<ManifestRoot> {
        WorkspaceRoot::ALL
            .into_iter()
            .map(|root| {
                ManifestRoot::new(
                    root,
                    self.visible_roots.contains(&root),
                    self.writable_roots.contains(&root),
                )
            })
            .collect()
    }

    pub fn visible_root_names(&self) -> Vec<&'static str> {
        self.visible_roots.iter().map(|root| root.name()).collect()
    }

    pub fn writable_root_names(&self) -> Vec<&'static str> {
        self.writable_roots.iter().map(|root| root.name()).collect()
    }

    /// `workspace.path_not_visible` with a message that names the roots the agent can use.
    pub fn not_visible_error(&self, path: &WorkspacePath) -> DomainError {
        DomainError::new(
            error_codes::WORKSPACE_PATH_NOT_VISIBLE,
            format!(
                "`{path}` is outside the workspace areas you can see. You can see: {}.",
                join_roots(&self.visible_root_names())
            ),
        )
    }

    /// `workspace.path_not_writable` with a message that names the writable roots.
    pub fn not_writable_error(&self, path: &WorkspacePath) -> DomainError {
        let roots = self.writable_root_names();
        let hint = if roots.is_empty() {
            "You cannot write any workspace files.".to_owned()
        } else {
            format!(
                "Write to a file inside one of: {} (for example `{}/notes.md`).",
                join_roots(&roots),
                roots[0]
            )
        };
        DomainError::new(
            error_codes::WORKSPACE_PATH_NOT_WRITABLE,
            format!("`{path}` is not writable. {hint}"),
        )
    }
}

fn join_roots(roots: &[&str]) -> String {
    if roots.is_empty() {
        "none".to_owned()
    } else {
        roots
            .iter()
            .map(|root| format!("`{root}/`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Guard for a conditional workspace write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind", content = "sha256")]
pub enum WriteGuard {
    /// Write unconditionally.
    None,
    /// The file must not exist yet.
    MustNotExist,
    /// The file must exist with exactly this sha256.
    MustMatchSha256(String),
}

/// Why a guarded write was refused (each store maps it to its error with the path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuardViolation {
    /// `MustNotExist` found a file with this sha256.
    FileExists { current_sha256: String },
    /// `MustMatchSha256` found no file.
    FileMissing,
    /// `MustMatchSha256` found other content.
    ShaMismatch { expected: String, actual: String },
}

impl WriteGuard {
    /// Whether a write under this guard may go ahead when the file's sha256 is `current`
    /// (`None`: no file there). Every store checks its guard here, under its own lock of the
    /// path.
    pub fn check(&self, current: Option<&str>) -> Result<(), GuardViolation> {
        match (self, current) {
            (WriteGuard::None, _) | (WriteGuard::MustNotExist, None) => Ok(()),
            (WriteGuard::MustNotExist, Some(current)) => Err(GuardViolation::FileExists {
                current_sha256: current.to_owned(),
            }),
            (WriteGuard::MustMatchSha256(_), None) => Err(GuardViolation::FileMissing),
            (WriteGuard::MustMatchSha256(expected), Some(actual)) if expected != actual => {
                Err(GuardViolation::ShaMismatch {
                    expected: expected.clone(),
                    actual: actual.to_owned(),
                })
            }
            (WriteGuard::MustMatchSha256(_), Some(_)) => Ok(()),
        }
    }
}

/// A file entry in a listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    File,
    Directory,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn print(path: &str, sha256: &str) -> FileFingerprint {
        FileFingerprint {
            path: WorkspacePath::parse(path).unwrap(),
            sha256: sha256.to_owned(),
            bytes: 3,
        }
    }

    #[test]
    fn write_guards_pass_or_say_why_not() {
        let sha = |s: &str| s.to_owned();
        assert_eq!(WriteGuard::None.check(Some("a")), Ok(()));
        assert_eq!(WriteGuard::MustNotExist.check(None), Ok(()));
        assert_eq!(
            WriteGuard::MustNotExist.check(Some("a")),
            Err(GuardViolation::FileExists {
                current_sha256: sha("a")
            })
        );
        let must = WriteGuard::MustMatchSha256(sha("a"));
        assert_eq!(must.check(Some("a")), Ok(()));
        assert_eq!(must.check(None), Err(GuardViolation::FileMissing));
        assert_eq!(
            must.check(Some("b")),
            Err(GuardViolation::ShaMismatch {
                expected: sha("a"),
                actual: sha("b")
            })
        );
    }

    #[test]
    fn persist_changes_are_additions_and_modifications_in_current_order() {
        let snapshot = PersistSnapshot {
            base_state_id: None,
            files: vec![
                print("persist/kept.md", "aa"),
                print("persist/edited.md", "bb"),
            ],
        };
        let current = [
            print("persist/edited.md", "cc"),
            print("persist/kept.md", "aa"),
            print("persist/new.md", "dd"),
        ];
        let changes = snapshot.changes_to(&current).unwrap();
        let seen: Vec<(&str, PersistentChangeKind, &str)> = changes
            .iter()
            .map(|c| (c.path.as_str(), c.kind, c.sha256.as_str()))
            .collect();
        assert_eq!(
            seen,
            [
                ("persist/edited.md", PersistentChangeKind::Modified, "cc"),
                ("persist/new.md", PersistentChangeKind::Added, "dd"),
            ]
        );
        let deleted = snapshot.changes_to(&current[..1]).unwrap_err();
        assert_eq!(deleted.code, "agent.persistent_delete_unsupported");
        assert!(
            deleted.message.contains("persist/kept.md"),
            "{}",
            deleted.message
        );
    }

    fn parse(raw: &str) -> Result<String, &'static str> {
        WorkspacePath::parse(raw)
            .map(|p| p.0)
            .map_err(|e| e.code.as_str())
    }

    #[test]
    fn normalizes_dots_backslashes_and_empty_segments() {
        assert_eq!(parse("output/./main.md"), Ok("output/main.md".into()));
        assert_eq!(
            parse("output\\drafts\\a.md"),
            Ok("output/drafts/a.md".into())
        );
        assert_eq!(parse("output//a.md/"), Ok("output/a.md".into()));
        assert_eq!(parse("./output"), Ok("output".into()));
    }

    #[test]
    fn over_long_paths_and_names_are_invalid_paths_not_storage_errors() {
        let name = "a".repeat(MAX_SEGMENT_BYTES);
        assert!(parse(&format!("output/{name}")).is_ok());
        assert_eq!(
            parse(&format!("output/{name}b")),
            Err("workspace.invalid_path")
        );
        // Multi-byte characters count in bytes: 128 × 2 bytes = 256.
        assert_eq!(
            parse(&format!("output/{}", "é".repeat(128))),
            Err("workspace.invalid_path")
        );
        let segment = "b".repeat(200);
        let at_limit = format!("output/{}", [segment.as_str(); 5].join("/"));
        let at_limit = format!(
            "{at_limit}/{}",
            "c".repeat(MAX_PATH_BYTES - at_limit.len() - 1)
        );
        assert_eq!(at_limit.len(), MAX_PATH_BYTES);
        assert!(parse(&at_limit).is_ok());
        assert_eq!(
            parse(&format!("{at_limit}c")),
            Err("workspace.invalid_path")
        );
        let huge = "x".repeat(5000);
        let err = WorkspacePath::parse(&huge).unwrap_err();
        assert!(err.message.contains("5000 bytes"), "{}", err.message);
        assert!(err.message.chars().count() < 300, "{}", err.message);
    }

    #[test]
    fn rejects_dangerous_paths() {
        for bad in [
            "",
            "  ",
            "/etc/passwd",
            "\\x",
            "C:/x",
            "c:x",
            "output/../x",
            "..",
            "a\0b",
            ".",
            "./",
            "x/C:",
        ] {
            if bad == "x/C:" {
                // A colon later in a path is an ordinary character.
                assert!(parse(bad).is_ok());
                continue;
            }
            assert_eq!(parse(bad), Err("workspace.invalid_path"), "{bad:?}");
        }
    }

    #[test]
    fn root_matching_respects_segment_boundaries() {
        let out = WorkspacePath::parse("output").unwrap();
        assert!(
            WorkspacePath::parse("output/a.md")
                .unwrap()
                .is_under_or_equal(&out)
        );
        assert!(
            !WorkspacePath::parse("outputs/a.md")
                .unwrap()
                .is_under_or_equal(&out)
        );
        assert_eq!(WorkspacePath::parse("outputs/a.md").unwrap().root(), None);
    }

    #[test]
    fn writable_requires_a_path_under_the_root() {
        let policy = WorkspaceAccessPolicy::new(
            vec![WorkspaceRoot::Output, WorkspaceRoot::Summaries],
            vec![WorkspaceRoot::Summaries],
        );
        let p = |s: &str| WorkspacePath::parse(s).unwrap();
        assert!(policy.is_visible(&p("output")));
        assert!(policy.is_visible(&p("output/main.md")));
        assert!(!policy.is_visible(&p("scratch/a.md")));
        assert!(!policy.is_visible(&p("input/prompt_snapshot.json")));
        assert!(policy.is_writable(&p("summaries/a.md")));
        assert!(!policy.is_writable(&p("summaries")));
        assert!(!policy.is_writable(&p("output/main.md")));
        assert!(!policy.is_writable(&p("input/x.json")));
    }

    proptest! {
        #[test]
        fn parsed_paths_are_canonical(raw in "[a-z./\\\\]{0,24}") {
            if let Ok(path) = WorkspacePath::parse(&raw) {
                let text = path.as_str();
                prop_assert!(!text.is_empty());
                prop_assert!(!text.starts_with('/'));
                prop_assert!(!text.contains('\\'));
                prop_assert!(!text.contains("//"));
                prop_assert!(path.segments().all(|s| s != "." && s != ".." && !s.is_empty()));
                // Normalization is idempotent.
                prop_assert_eq!(WorkspacePath::parse(text).unwrap(), path.clone());
            }
        }

        #[test]
        fn traversal_is_never_accepted(prefix in "[a-z]{0,5}", suffix in "[a-z]{0,5}") {
            let raw = format!("{prefix}/../{suffix}");
            prop_assert!(WorkspacePath::parse(&raw).is_err());
        }

        #[test]
        fn arbitrary_input_never_panics(raw in any::<String>()) {
            let _ = WorkspacePath::parse(&raw);
        }
    }
}

/// `manifest.json` of a run: which roots exist and how they behave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunManifest {
    pub schema_version: u32,
    pub run_id: crate::ids::RunId,
    pub workspace_id: crate::ids::WorkspaceId,
    pub stable_chat_id: String,
    pub roots: Vec<ManifestRoot>,
    pub created_at: crate::time::Timestamp,
}

/// A file recorded in a checkpoint or snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileFingerprint {
    pub path: WorkspacePath,
    pub sha256: String,
    pub bytes: u64,
}

/// Why a checkpoint was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointReason {
    ToolWorkspaceWrite,
    ToolWorkspacePatch,
    DirectOutputCapture,
    ChatCommit,
}

/// `checkpoints/cp_NNNNNN/checkpoint.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointRecord {
    pub id: crate::ids::CheckpointId,
    pub seq: u64,
    pub run_id: crate::ids::RunId,
    pub created_at: crate::time::Timestamp,
    pub reason: CheckpointReason,
    /// Seq of the journal event that triggered the checkpoint.
    pub event_seq: u64,
    pub files: Vec<FileFingerprint>,
}

/// `input/persist_snapshot.json`: what `persist/` held when the run started.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PersistSnapshot {
    pub base_state_id: Option<String>,
    pub files: Vec<FileFingerprint>,
}

impl PersistSnapshot {
    /// `agent.persistent_delete_unsupported` when a file of the snapshot is not among
    /// `current` (the paths `persist/` holds now): persistent files cannot be deleted.
    pub fn check_no_deletions<'a>(
        &self,
        current: impl IntoIterator<Item = &'a WorkspacePath>,
    ) -> DomainResult<()> {
        let current: std::collections::BTreeSet<&WorkspacePath> = current.into_iter().collect();
        match self.files.iter().find(|file| !current.contains(&file.path)) {
            Some(deleted) => Err(DomainError::new(
                error_codes::AGENT_PERSISTENT_DELETE_UNSUPPORTED,
                format!(
                    "`{}` was deleted from persist/, but persistent files cannot be deleted",
                    deleted.path
                ),
            )),
            None => Ok(()),
        }
    }

    /// The changes of `persist/` since this snapshot, one per file of `current` (what it holds
    /// now) that is new (`Added`) or whose sha256 differs (`Modified`), in `current`'s order.
    /// Every store's promotion reports these; the check of [`Self::check_no_deletions`]
    /// comes first.
    pub fn changes_to(&self, current: &[FileFingerprint]) -> DomainResult<Vec<PersistentChange>> {
        self.check_no_deletions(current.iter().map(|file| &file.path))?;
        let before: std::collections::BTreeMap<&WorkspacePath, &str> = self
            .files
            .iter()
            .map(|file| (&file.path, file.sha256.as_str()))
            .collect();
        Ok(current
            .iter()
            .filter_map(|file| {
                let kind = match before.get(&file.path) {
                    None => PersistentChangeKind::Added,
                    Some(sha256) if *sha256 != file.sha256 => PersistentChangeKind::Modified,
                    Some(_) => return None,
                };
                Some(PersistentChange {
                    path: file.path.clone(),
                    kind,
                    sha256: file.sha256.clone(),
                    bytes: file.bytes,
                })
            })
            .collect())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PersistentChangeKind {
    Added,
    Modified,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PersistentChange {
    pub path: WorkspacePath,
    pub kind: PersistentChangeKind,
    pub sha256: String,
    pub bytes: u64,
}

/// The result of promoting a run's `persist/` into a new chat-scoped state.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PersistentChangeSet {
    pub state_id: String,
    pub base_state_id: Option<String>,
    pub changes: Vec<PersistentChange>,
}
