//! Behaviour tests of the workspace tools against `tt_testkit`'s in-memory store: every rule
//! and error code of reference §2.6, the read-state guards, and the model-facing texts.

use std::sync::Arc;

use serde_json::{Value, json};
use tt_domain::ids::RunId;
use tt_domain::text::sha256_hex;
use tt_domain::tool::ToolName;
use tt_domain::workspace::{WorkspaceAccessPolicy, WorkspacePath, WorkspaceRoot, WriteGuard};
use tt_ports::{StorageError, WorkspaceRepository};
use tt_testkit::fakes::{InMemoryStore, StoreOp};

use super::{ReadState, WorkspaceToolEnv, execute};
use crate::error::{ApplicationError, ToolCallError};
use crate::tools::test_calls::CallsTools;
use crate::tools::{ToolEffect, ToolSuccess};

const LIST: ToolName = ToolName::WorkspaceListFiles;
const SEARCH: ToolName = ToolName::WorkspaceSearchFiles;
const READ: ToolName = ToolName::WorkspaceReadFile;
const WRITE: ToolName = ToolName::WorkspaceWriteFile;
const PATCH: ToolName = ToolName::WorkspaceApplyPatch;

fn p(raw: &str) -> WorkspacePath {
    WorkspacePath::parse(raw).unwrap()
}

fn sha(text: &str) -> String {
    sha256_hex(text.as_bytes())
}

/// `read_file` arguments for `count` lines of `path` from `start`.
fn line_range(path: &str, start: u64, count: u64) -> Value {
    json!({"path": path, "start_line": start, "line_count": count})
}

/// `apply_patch` arguments replacing `old` with `new` once in `path`.
fn patch(path: &str, old: &str, new: &str) -> Value {
    json!({"path": path, "old_string": old, "new_string": new})
}

/// One agent working in one run: the store, its roots and its read-state.
struct Agent {
    store: Arc<InMemoryStore>,
    run_id: RunId,
    policy: WorkspaceAccessPolicy,
    state: ReadState,
}

impl Agent {
    async fn owner() -> Self {
        Self::with_policy(WorkspaceAccessPolicy::full()).await
    }

    /// The delegated audience of the brief: sees output, summaries, scratch; writes scratch.
    async fn delegated() -> Self {
        Self::with_policy(WorkspaceAccessPolicy::new(
            vec![
                WorkspaceRoot::Output,
                WorkspaceRoot::Summaries,
                WorkspaceRoot::Scratch,
            ],
            vec![WorkspaceRoot::Scratch],
        ))
        .await
    }

    async fn with_policy(policy: WorkspaceAccessPolicy) -> Self {
        let (store, run_id) = tt_testkit::contract::store_with_run("run_workspace_tools").await;
        Self {
            store,
            run_id,
            policy,
            state: ReadState::default(),
        }
    }

    /// Another agent (or the host) writes the file, bypassing this agent's read-state.
    async fn seed(&self, path: &str, text: &str) {
        self.store
            .write(&self.run_id, &p(path), text, &WriteGuard::None)
            .await
            .unwrap();
    }

    /// Whether the agent must read `path` whole again before patching it.
    fn reread_required(&self, path: &str) -> bool {
        self.state
            .get(&p(path))
            .is_some_and(|known| known.reread_required)
    }

    fn file(&self, path: &str) -> Option<String> {
        self.store.file_text(&self.run_id, path)
    }
}

impl CallsTools for Agent {
    async fn call(&mut self, tool: ToolName, args: Value) -> Result<ToolSuccess, ToolCallError> {
        let env = WorkspaceToolEnv {
            repo: self.store.as_ref(),
            run_id: &self.run_id,
            policy: &self.policy,
            read_state: &mut self.state,
        };
        execute(tool, &args, env).await
    }
}

// ----- list ---------------------------------------------------------------------------------

#[tokio::test]
async fn list_shows_roots_and_files_to_the_default_depth() {
    let mut agent = Agent::owner().await;
    agent.seed("output/main.md", "hi").await;
    agent.seed("output/drafts/one.md", "1").await;
    agent.seed("output/drafts/deep/two.md", "2").await;
    let listed = agent.ok(LIST, json!({})).await;
    insta::assert_snapshot!(listed.content, @r"
    output/
    output/drafts/
    output/main.md
    persist/
    plan/
    scratch/
    summaries/
    ");
    assert_eq!(listed.structured["truncated"], json!(false));
    assert_eq!(
        listed.structured["entries"][0],
        json!({"path": "output", "kind": "directory"})
    );
    assert_eq!(
        listed.structured["entries"][2],
        json!({"path": "output/main.md", "kind": "file"})
    );
    for root in ["", ".", "./"] {
        assert_eq!(
            agent.ok(LIST, json!({"path": root})).await,
            listed,
            "{root:?}"
        );
    }

    let deeper = agent.ok(LIST, json!({"path": "output", "depth": 4})).await;
    assert_eq!(
        deeper.content,
        "output/drafts/\noutput/drafts/deep/\noutput/drafts/deep/two.md\noutput/drafts/one.md\noutput/main.md"
    );
    let shallow = agent.ok(LIST, json!({"path": "output", "depth": 1})).await;
    assert_eq!(shallow.content, "output/drafts/\noutput/main.md");
}

#[tokio::test]
async fn list_filters_to_visible_roots() {
    let mut agent = Agent::delegated().await;
    agent.seed("plan/secret.md", "x").await;
    agent.seed("summaries/a.md", "x").await;
    let listed = agent.ok(LIST, json!({"depth": 2})).await;
    assert_eq!(
        listed.content,
        "output/\nscratch/\nsummaries/\nsummaries/a.md"
    );
    let (code, message) = agent.fail(LIST, json!({"path": "plan"})).await;
    assert_eq!(code, "workspace.path_not_visible");
    assert!(!message.contains("secret"));
    agent
        .refuses(LIST, json!({"path": "input"}), "workspace.path_not_visible")
        .await;
}

#[tokio::test]
async fn list_errors_and_edge_cases() {
    let mut agent = Agent::owner().await;
    agent.seed("output/main.md", "hi").await;
    agent
        .refuses(LIST, json!({"depth": 5}), "workspace.list_depth_too_large")
        .await;
    agent
        .refuses(LIST, json!({"depth": 0}), "tool.invalid_arguments")
        .await;
    agent
        .refuses(
            LIST,
            json!({"path": "output/missing"}),
            "workspace.path_not_found",
        )
        .await;
    agent
        .refuses(LIST, json!({"path": "../x"}), "workspace.invalid_path")
        .await;
    agent
        .refuses(LIST, json!({"recursive": true}), "tool.invalid_arguments")
        .await;
    let file = agent.ok(LIST, json!({"path": "output/main.md"})).await;
    assert_eq!(file.content, "output/main.md");
    let empty = agent.ok(LIST, json!({"path": "scratch"})).await;
    assert_eq!(empty.content, "No visible workspace files found.");
    assert_eq!(empty.structured, json!({"entries": [], "truncated": false}));
}

#[tokio::test]
async fn list_truncates_after_the_entry_limit() {
    let mut agent = Agent::owner().await;
    for n in 0..205 {
        agent.seed(&format!("scratch/f{n:03}.md"), "x").await;
    }
    let listed = agent.ok(LIST, json!({"path": "scratch", "depth": 1})).await;
    assert_eq!(listed.structured["truncated"], json!(true));
    assert_eq!(listed.structured["entries"].as_array().unwrap().len(), 200);
    assert!(listed.content.starts_with("scratch/f000.md\n"));
    assert!(listed.content.ends_with(
        "(Only the first 200 entries are shown. List a narrower folder or use a smaller depth to see the rest.)"
    ));
}

// ----- read ---------------------------------------------------------------------------------

#[tokio::test]
async fn whole_read_renders_numbered_lines_and_records_full_state() {
    let mut agent = Agent::owner().await;
    let text = "# Title\n\nFirst paragraph here.\n";
    agent.seed("output/main.md", text).await;
    let read = agent.ok(READ, json!({"path": "output/./main.md"})).await;
    insta::assert_snapshot!(read.content);
    assert_eq!(
        read.structured,
        json!({
            "path": "output/main.md",
            "sha256": sha(text),
            "totalLines": 3,
            "startLine": 1,
            "endLine": 3,
            "startChar": 0,
            "endChar": 31,
            "totalChars": 31,
            "chars": 31,
            "words": 5,
            "fullRead": true,
        })
    );
    assert_eq!(read.resource_refs, vec!["workspace:output/main.md"]);
    assert_eq!(read.effect, ToolEffect::None);
    assert!(agent.state.is_fully_known(&p("output/main.md"), &sha(text)));
}

#[tokio::test]
async fn ranged_reads_record_only_what_they_returned() {
    let mut agent = Agent::owner().await;
    let text = "alpha\nbeta\ngamma\ndelta\n";
    agent.seed("output/main.md", text).await;
    let lines = agent.ok(READ, line_range("output/main.md", 2, 2)).await;
    insta::assert_snapshot!(lines.content);
    assert_eq!(lines.structured["fullRead"], json!(false));
    assert_eq!(lines.structured["startLine"], json!(2));
    assert_eq!(lines.structured["endLine"], json!(3));
    assert_eq!(lines.structured["chars"], json!(11));
    let known = agent.state.get(&p("output/main.md")).unwrap().clone();
    assert!(!known.full);
    assert_eq!(known.observed, vec!["beta\ngamma\n"]);
    assert!(agent.state.has_read(&p("output/main.md"), &sha(text)));
    assert!(!agent.state.is_fully_known(&p("output/main.md"), &sha(text)));

    let chars = agent
        .ok(
            READ,
            json!({"path": "output/main.md", "start_char": 3, "max_chars": 5}),
        )
        .await;
    insta::assert_snapshot!(chars.content);
    assert_eq!(chars.structured["startChar"], json!(3));
    assert_eq!(chars.structured["endChar"], json!(8));
    assert_eq!(chars.structured["startLine"], json!(1));
    assert_eq!(chars.structured["endLine"], json!(2));
    assert_eq!(
        agent.state.get(&p("output/main.md")).unwrap().observed,
        vec!["beta\ngamma\n", "ha\nbe"]
    );

    // A range that happens to cover the whole file counts as a whole read.
    agent.ok(READ, line_range("output/main.md", 1, 10)).await;
    assert!(agent.state.is_fully_known(&p("output/main.md"), &sha(text)));
}

#[tokio::test]
async fn read_errors_carry_contract_codes() {
    let mut agent = Agent::delegated().await;
    agent.seed("output/main.md", "one\ntwo\n").await;
    agent.seed("plan/outline.md", "x").await;
    agent.seed("scratch/long.md", &"line\n".repeat(1201)).await;
    let wide = format!("{}\n", "w".repeat(80_001));
    agent.seed("scratch/wide.md", &wide).await;

    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"path": "output/missing.md"}),
            "workspace.file_not_found",
        ),
        (json!({"path": "output"}), "workspace.path_is_directory"),
        (
            json!({"path": "plan/outline.md"}),
            "workspace.path_not_visible",
        ),
        (json!({"path": "/etc/passwd"}), "workspace.invalid_path"),
        (
            json!({"path": "output/main.md", "start_line": 1, "start_char": 0}),
            "workspace.mixed_read_range",
        ),
        (
            json!({"path": "output/main.md", "start_line": 0}),
            "workspace.invalid_line_range",
        ),
        (
            json!({"path": "output/main.md", "start_line": 3}),
            "workspace.invalid_line_range",
        ),
        (
            json!({"path": "output/main.md", "line_count": 1201}),
            "workspace.read_line_count_too_large",
        ),
        (
            json!({"path": "output/main.md", "start_char": 8}),
            "workspace.invalid_char_range",
        ),
        (
            json!({"path": "output/main.md", "max_chars": 0}),
            "workspace.invalid_char_range",
        ),
        (
            json!({"path": "output/main.md", "max_chars": 80_001}),
            "workspace.read_char_count_too_large",
        ),
        (
            json!({"path": "scratch/long.md"}),
            "workspace.read_too_large",
        ),
        (
            json!({"path": "scratch/wide.md", "start_line": 1}),
            "workspace.read_too_large",
        ),
        (
            json!({"path": "output/main.md", "offset": 1}),
            "tool.invalid_arguments",
        ),
        (json!({}), "tool.invalid_arguments"),
    ];
    for (args, expected) in cases {
        agent.refuses(READ, args, expected).await;
    }
    let (_, message) = agent.fail(READ, json!({"path": "output"})).await;
    assert!(message.contains("workspace_list_files"), "{message}");
    let (_, message) = agent.fail(READ, json!({"path": "scratch/long.md"})).await;
    assert!(message.contains("start_line"), "{message}");
    // A long file can still be read in parts, and the big one by characters.
    agent.ok(READ, line_range("scratch/long.md", 1200, 2)).await;
    agent
        .ok(
            READ,
            json!({"path": "scratch/wide.md", "start_char": 0, "max_chars": 80_000}),
        )
        .await;
    assert!(
        agent.state.get(&p("output/main.md")).is_none(),
        "failed reads record nothing"
    );
}

// ----- write --------------------------------------------------------------------------------

#[tokio::test]
async fn replace_creates_new_files_and_never_echoes_content() {
    let mut agent = Agent::owner().await;
    let content = "The secret draft body.";
    let wrote = agent
        .ok(WRITE, json!({"path": "output/main.md", "content": content}))
        .await;
    assert_eq!(wrote.content, "Wrote 22 chars / 4 words to output/main.md.");
    assert!(!wrote.content.contains("secret"));
    assert_eq!(
        wrote.structured,
        json!({"path": "output/main.md", "mode": "replace", "chars": 22, "words": 4, "sha256": sha(content)})
    );
    assert_eq!(
        wrote.effect,
        ToolEffect::FileWritten {
            path: p("output/main.md"),
            mode: "replace",
            chars: 22,
            words: 4,
            sha256: sha(content),
        }
    );
    assert_eq!(wrote.resource_refs, vec!["workspace:output/main.md"]);
    // What it wrote, it knows: rewriting needs no read.
    agent
        .ok(
            WRITE,
            json!({"path": "output/main.md", "content": "v2", "mode": "replace"}),
        )
        .await;
    assert_eq!(agent.file("output/main.md").as_deref(), Some("v2"));
}

#[tokio::test]
async fn replace_requires_a_read_of_the_current_version() {
    let mut agent = Agent::owner().await;
    agent.seed("output/main.md", "by someone else").await;
    let (code, message) = agent
        .fail(WRITE, json!({"path": "output/main.md", "content": "mine"}))
        .await;
    assert_eq!(code, "workspace.write_requires_read");
    assert!(message.contains("workspace_read_file"));
    assert_eq!(
        agent.file("output/main.md").as_deref(),
        Some("by someone else")
    );

    agent.ok(READ, json!({"path": "output/main.md"})).await;
    agent.seed("output/main.md", "changed again").await;
    agent
        .refuses(
            WRITE,
            json!({"path": "output/main.md", "content": "mine"}),
            "workspace.write_stale_file",
        )
        .await;
    assert_eq!(
        agent.file("output/main.md").as_deref(),
        Some("changed again")
    );

    // A partial read of the current version is enough for a replace.
    agent.seed("output/main.md", "one\ntwo\n").await;
    agent
        .ok(READ, json!({"path": "output/main.md", "start_line": 2}))
        .await;
    agent
        .ok(WRITE, json!({"path": "output/main.md", "content": "mine"}))
        .await;
    assert_eq!(agent.file("output/main.md").as_deref(), Some("mine"));
}

#[tokio::test]
async fn storage_guard_conflicts_map_to_the_write_codes() {
    let mut agent = Agent::owner().await;
    let conflicts = [
        (
            StorageError::GuardFileExists {
                path: "output/a.md".into(),
                current_sha256: "x".into(),
            },
            "workspace.write_requires_read",
        ),
        (
            StorageError::GuardShaMismatch {
                path: "output/a.md".into(),
                expected: "x".into(),
                actual: "y".into(),
            },
            "workspace.write_stale_file",
        ),
        (
            StorageError::GuardFileMissing {
                path: "output/a.md".into(),
            },
            "workspace.write_stale_file",
        ),
    ];
    for (error, expected) in conflicts {
        agent.store.fail_next(StoreOp::WorkspaceWrite, error);
        assert_eq!(
            agent
                .code(WRITE, json!({"path": "output/a.md", "content": "x"}))
                .await,
            expected
        );
    }
    assert_eq!(agent.file("output/a.md"), None);
}

#[tokio::test]
async fn write_rejects_bad_modes_and_non_writable_paths() {
    let mut agent = Agent::delegated().await;
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"path": "scratch/a.md", "content": "x", "mode": "prepend"}),
            "workspace.write_mode_invalid",
        ),
        (
            json!({"path": "output/main.md", "content": "x"}),
            "workspace.path_not_writable",
        ),
        (
            json!({"path": "plan/a.md", "content": "x"}),
            "workspace.path_not_writable",
        ),
        (
            json!({"path": "scratch", "content": "x"}),
            "workspace.path_not_writable",
        ),
        (
            json!({"path": "input/prompt_snapshot.json", "content": "x"}),
            "workspace.path_not_writable",
        ),
        (
            json!({"path": "scratch/../output/a.md", "content": "x"}),
            "workspace.invalid_path",
        ),
        (json!({"path": "scratch/a.md"}), "tool.invalid_arguments"),
        (
            json!({"path": "scratch/a.md", "content": 5}),
            "tool.invalid_arguments",
        ),
    ];
    for (args, expected) in cases {
        agent.refuses(WRITE, args, expected).await;
    }
    let (_, message) = agent
        .fail(WRITE, json!({"path": "output/main.md", "content": "x"}))
        .await;
    assert!(message.contains("`scratch/`"), "{message}");
    assert!(agent.store.files(&agent.run_id).is_empty());

    agent.seed("scratch/dir/inner.md", "x").await;
    agent
        .refuses(
            WRITE,
            json!({"path": "scratch/dir", "content": "x", "mode": "append"}),
            "workspace.path_is_directory",
        )
        .await;
    agent
        .refuses(
            WRITE,
            json!({"path": "scratch/dir", "content": "x"}),
            "workspace.path_is_directory",
        )
        .await;
}

#[tokio::test]
async fn append_adds_text_exactly_and_creates_missing_files() {
    let mut agent = Agent::owner().await;
    let first = agent
        .ok(
            WRITE,
            json!({"path": "scratch/log.md", "content": "one", "mode": "append"}),
        )
        .await;
    assert_eq!(
        first.content,
        "Appended 3 chars / 1 words to scratch/log.md."
    );
    agent
        .ok(
            WRITE,
            json!({"path": "scratch/log.md", "content": " two", "mode": "append"}),
        )
        .await;
    assert_eq!(agent.file("scratch/log.md").as_deref(), Some("one two"));
    // Created by this agent and only appended since: still fully known, rewrite allowed.
    assert!(
        agent
            .state
            .is_fully_known(&p("scratch/log.md"), &sha("one two"))
    );
    let rewrite = agent
        .ok(WRITE, json!({"path": "scratch/log.md", "content": "fresh"}))
        .await;
    assert_eq!(rewrite.structured["mode"], json!("replace"));
    assert!(matches!(
        rewrite.effect,
        ToolEffect::FileWritten {
            mode: "replace",
            ..
        }
    ));
}

#[tokio::test]
async fn append_keeps_full_knowledge_only_after_a_full_read() {
    let mut agent = Agent::owner().await;
    agent.seed("output/known.md", "base\n").await;
    agent.ok(READ, json!({"path": "output/known.md"})).await;
    let appended = agent
        .ok(
            WRITE,
            json!({"path": "output/known.md", "content": "more\n", "mode": "append"}),
        )
        .await;
    assert_eq!(appended.structured["sha256"], json!(sha("base\nmore\n")));
    assert_eq!(
        appended.effect,
        ToolEffect::FileWritten {
            path: p("output/known.md"),
            mode: "append",
            chars: 5,
            words: 1,
            sha256: sha("base\nmore\n"),
        }
    );
    agent
        .ok(
            WRITE,
            json!({"path": "output/known.md", "content": "rewritten"}),
        )
        .await;

    // Appending to a file never read leaves it unknown: rewriting needs a read first.
    agent.seed("output/unread.md", "theirs\n").await;
    agent
        .ok(
            WRITE,
            json!({"path": "output/unread.md", "content": "mine\n", "mode": "append"}),
        )
        .await;
    assert_eq!(
        agent.file("output/unread.md").as_deref(),
        Some("theirs\nmine\n")
    );
    agent
        .refuses(
            WRITE,
            json!({"path": "output/unread.md", "content": "x"}),
            "workspace.write_requires_read",
        )
        .await;
    agent
        .refuses(
            PATCH,
            patch("output/unread.md", "mine", "ours"),
            "workspace.patch_requires_read",
        )
        .await;
    // An explicit read after the append unlocks the rewrite.
    agent.ok(READ, json!({"path": "output/unread.md"})).await;
    agent
        .ok(WRITE, json!({"path": "output/unread.md", "content": "x"}))
        .await;

    // After only a partial read, an append also leaves the file unknown.
    agent.seed("output/partial.md", "a\nb\n").await;
    agent.ok(READ, line_range("output/partial.md", 1, 1)).await;
    agent
        .ok(
            WRITE,
            json!({"path": "output/partial.md", "content": "c\n", "mode": "append"}),
        )
        .await;
    agent
        .refuses(
            WRITE,
            json!({"path": "output/partial.md", "content": "x"}),
            "workspace.write_requires_read",
        )
        .await;
}

// ----- patch --------------------------------------------------------------------------------

#[tokio::test]
async fn patch_after_full_read_replaces_and_keeps_the_file_known() {
    let mut agent = Agent::owner().await;
    let before = "The cat sat on the mat.\n";
    agent.seed("output/main.md", before).await;
    agent.ok(READ, json!({"path": "output/main.md"})).await;
    let patched = agent.ok(PATCH, patch("output/main.md", "cat", "dog")).await;
    let after = "The dog sat on the mat.\n";
    assert_eq!(agent.file("output/main.md").as_deref(), Some(after));
    assert_eq!(
        patched.content,
        "Patched output/main.md with 1 replacement; the file now has 24 chars / 6 words."
    );
    assert_eq!(
        patched.structured,
        json!({
            "path": "output/main.md",
            "chars": 24,
            "words": 6,
            "oldSha256": sha(before),
            "sha256": sha(after),
            "replacements": 1,
        })
    );
    assert_eq!(
        patched.effect,
        ToolEffect::PatchApplied {
            path: p("output/main.md"),
            chars: 24,
            words: 6,
            old_sha256: sha(before),
            sha256: sha(after),
            replacements: 1,
        }
    );
    assert!(
        agent
            .state
            .is_fully_known(&p("output/main.md"), &sha(after))
    );
    // Still fully known: replace_all works without another read.
    let all = agent
        .ok(PATCH, json!({"path": "output/main.md", "old_string": "at", "new_string": "AT", "replace_all": true}))
        .await;
    assert_eq!(all.structured["replacements"], json!(2));
    assert!(all.content.contains("2 replacements"));
    assert_eq!(
        agent.file("output/main.md").as_deref(),
        Some("The dog sAT on the mAT.\n")
    );
}

#[tokio::test]
async fn patch_checks_run_in_contract_order() {
    let mut agent = Agent::delegated().await;
    // Not writable wins over everything else.
    agent
        .refuses(
            PATCH,
            patch("output/main.md", "", ""),
            "workspace.path_not_writable",
        )
        .await;
    // Empty old_string before "no change".
    agent
        .refuses(
            PATCH,
            patch("scratch/a.md", "", ""),
            "workspace.patch_empty_old_string",
        )
        .await;
    // No change before the read requirement.
    agent
        .refuses(
            PATCH,
            patch("scratch/a.md", "x", "x"),
            "workspace.patch_no_change",
        )
        .await;
    agent
        .refuses(
            PATCH,
            patch("scratch/a.md", "x", "y"),
            "workspace.patch_requires_read",
        )
        .await;
    agent.refuses(PATCH, json!({"path": "scratch/a.md", "old_string": "x", "new_string": "y", "replace_all": "yes"}), "tool.invalid_arguments").await;
}

#[tokio::test]
async fn patch_match_failures_after_a_full_read() {
    let mut agent = Agent::owner().await;
    agent.seed("output/main.md", "one two one\n").await;
    agent.ok(READ, json!({"path": "output/main.md"})).await;
    let (code, message) = agent
        .fail(PATCH, patch("output/main.md", "three", "3"))
        .await;
    assert_eq!(code, "workspace.patch_old_string_not_found");
    assert!(message.contains("exactly"), "{message}");
    let (code, message) = agent.fail(PATCH, patch("output/main.md", "one", "1")).await;
    assert_eq!(code, "workspace.patch_old_string_not_unique");
    assert!(
        message.contains("2 times") && message.contains("replace_all"),
        "{message}"
    );
    // Full-read failures set no re-read flag: a unique patch goes through right away.
    agent
        .ok(PATCH, patch("output/main.md", "one two", "1 2"))
        .await;
    assert_eq!(agent.file("output/main.md").as_deref(), Some("1 2 one\n"));
}

#[tokio::test]
async fn patch_detects_changes_by_others() {
    let mut agent = Agent::owner().await;
    agent.seed("output/main.md", "alpha\n").await;
    agent.ok(READ, json!({"path": "output/main.md"})).await;
    agent.seed("output/main.md", "alpha beta\n").await;
    agent
        .refuses(
            PATCH,
            patch("output/main.md", "alpha", "A"),
            "workspace.patch_stale_file",
        )
        .await;
    agent.ok(READ, json!({"path": "output/main.md"})).await;
    // A conflicting write between the check and the guarded write is also stale.
    agent.store.fail_next(
        StoreOp::WorkspaceWrite,
        StorageError::GuardShaMismatch {
            path: "output/main.md".into(),
            expected: "a".into(),
            actual: "b".into(),
        },
    );
    agent
        .refuses(
            PATCH,
            patch("output/main.md", "alpha", "A"),
            "workspace.patch_stale_file",
        )
        .await;
    assert_eq!(
        agent.file("output/main.md").as_deref(),
        Some("alpha beta\n")
    );
    agent.ok(PATCH, patch("output/main.md", "alpha", "A")).await;
}

#[tokio::test]
async fn patch_after_partial_read_uses_observed_text() {
    let mut agent = Agent::owner().await;
    agent
        .seed("output/main.md", "intro\nthe cat sat\noutro\n")
        .await;
    agent.ok(READ, line_range("output/main.md", 2, 1)).await;
    agent.ok(PATCH, patch("output/main.md", "cat", "dog")).await;
    assert_eq!(
        agent.file("output/main.md").as_deref(),
        Some("intro\nthe dog sat\noutro\n")
    );
    // The observed text now includes the replacement, so a follow-up patch of it works.
    let known = agent.state.get(&p("output/main.md")).unwrap();
    assert!(!known.full);
    assert_eq!(known.observed, vec!["the dog sat\n"]);
    agent
        .ok(PATCH, patch("output/main.md", "dog sat", "dog slept"))
        .await;
    // Text never seen is refused even though it exists in the file.
    let (code, message) = agent
        .fail(PATCH, patch("output/main.md", "intro", "Intro"))
        .await;
    assert_eq!(code, "workspace.patch_requires_full_read");
    assert!(message.contains("no range"), "{message}");
}

#[tokio::test]
async fn failed_partial_patch_requires_a_full_reread() {
    let mut agent = Agent::owner().await;
    agent.seed("output/main.md", "a b\nc d\na b\n").await;
    agent.ok(READ, line_range("output/main.md", 1, 1)).await;
    // Observed, but not unique in the file: fails and sets the re-read flag.
    agent
        .refuses(
            PATCH,
            patch("output/main.md", "a b", "x"),
            "workspace.patch_old_string_not_unique",
        )
        .await;
    assert!(agent.reread_required("output/main.md"));
    // Even a patch of seen, unique text is refused now, and a partial read does not help.
    let unique = patch("output/main.md", "a b\nc", "x\nc");
    agent.ok(READ, line_range("output/main.md", 1, 2)).await;
    let (code, message) = agent.fail(PATCH, unique.clone()).await;
    assert_eq!(code, "workspace.patch_requires_full_read");
    assert!(message.contains("did not apply"), "{message}");
    // A whole-file read clears it.
    agent.ok(READ, json!({"path": "output/main.md"})).await;
    agent.ok(PATCH, unique).await;
    assert_eq!(
        agent.file("output/main.md").as_deref(),
        Some("x\nc d\na b\n")
    );
}

#[tokio::test]
async fn partial_read_rules_set_the_reread_flag() {
    // replace_all after a partial read.
    let mut agent = Agent::owner().await;
    agent.seed("output/main.md", "x y\nx z\n").await;
    agent.ok(READ, line_range("output/main.md", 1, 1)).await;
    agent.refuses(PATCH, json!({"path": "output/main.md", "old_string": "x", "new_string": "w", "replace_all": true}), "workspace.patch_requires_full_read").await;
    assert!(agent.reread_required("output/main.md"));

    // old_string outside the observed text.
    let mut agent = Agent::owner().await;
    agent.seed("output/main.md", "x y\nx z\n").await;
    agent.ok(READ, line_range("output/main.md", 1, 1)).await;
    agent
        .refuses(
            PATCH,
            patch("output/main.md", "x z", "w"),
            "workspace.patch_requires_full_read",
        )
        .await;
    assert!(agent.reread_required("output/main.md"));

    // A stale file after a partial read.
    let mut agent = Agent::owner().await;
    agent.seed("output/main.md", "x y\nx z\n").await;
    agent.ok(READ, line_range("output/main.md", 1, 1)).await;
    agent.seed("output/main.md", "x y\nx z\nmore\n").await;
    agent
        .refuses(
            PATCH,
            patch("output/main.md", "x y", "w"),
            "workspace.patch_stale_file",
        )
        .await;
    assert!(agent.reread_required("output/main.md"));
    agent.ok(READ, line_range("output/main.md", 1, 1)).await;
    assert_eq!(
        agent.code(PATCH, patch("output/main.md", "x y", "w")).await,
        "workspace.patch_requires_full_read",
        "a partial re-read does not clear the flag"
    );
}

#[tokio::test]
async fn patch_reports_missing_files_and_folders() {
    let mut agent = Agent::owner().await;
    agent.seed("output/main.md", "x").await;
    agent.ok(READ, json!({"path": "output/main.md"})).await;
    // The file vanishes between the agent's read and its patch.
    agent.store.fail_next(
        StoreOp::WorkspaceRead,
        StorageError::not_found("workspace path output/main.md"),
    );
    agent
        .refuses(
            PATCH,
            patch("output/main.md", "x", "y"),
            "workspace.file_not_found",
        )
        .await;
}

// ----- search -------------------------------------------------------------------------------

#[tokio::test]
async fn search_ranks_by_score_then_path_then_line() {
    let mut agent = Agent::owner().await;
    agent
        .seed("output/b.md", "a red dragon\n\n\n\n\n\n\nred\n")
        .await;
    agent.seed("output/a.md", "red\n").await;
    agent
        .seed("summaries/c.md", "The Red Dragon, red dragon!\n")
        .await;
    let found = agent
        .ok(SEARCH, json!({"query": "Red Dragon", "context_lines": 0}))
        .await;
    let order: Vec<(String, u64, u64)> = found.structured["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| {
            (
                hit["path"].as_str().unwrap().to_owned(),
                hit["score"].as_u64().unwrap(),
                hit["startLine"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        order,
        vec![
            ("summaries/c.md".to_owned(), 34, 1),
            ("output/b.md".to_owned(), 22, 1),
            ("output/a.md".to_owned(), 6, 1),
            ("output/b.md".to_owned(), 6, 8),
        ]
    );
    let text = "The Red Dragon, red dragon!\n";
    assert_eq!(
        found.structured["hits"][0],
        json!({
            "path": "summaries/c.md",
            "score": 34,
            "startLine": 1,
            "endLine": 1,
            "snippet": "The Red Dragon, red dragon!",
            "chars": 28,
            "words": 5,
            "sha256": sha(text),
            "ref": "workspace:summaries/c.md#L1-L1",
        })
    );
    assert_eq!(found.structured["totalHits"], json!(4));
    assert_eq!(found.resource_refs[1], "workspace:output/b.md#L1-L1");
    insta::assert_snapshot!(found.content);

    let limited = agent.ok(SEARCH, json!({"query": "red", "limit": 2})).await;
    assert_eq!(limited.structured["hits"].as_array().unwrap().len(), 2);
    assert_eq!(limited.structured["totalHits"], json!(4));
    insta::assert_snapshot!(limited.content);
}

#[tokio::test]
async fn search_sees_only_visible_roots_and_the_given_scope() {
    let mut agent = Agent::delegated().await;
    agent.seed("plan/hidden.md", "needle\n").await;
    agent.seed("output/main.md", "needle\n").await;
    agent.seed("scratch/notes/a.md", "needle\n").await;
    let all = agent.ok(SEARCH, json!({"query": "needle"})).await;
    let paths: Vec<&str> = all.structured["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| hit["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, vec!["output/main.md", "scratch/notes/a.md"]);
    let scoped = agent
        .ok(SEARCH, json!({"query": "needle", "path": "scratch"}))
        .await;
    assert_eq!(
        scoped.structured["hits"][0]["path"],
        json!("scratch/notes/a.md")
    );
    assert_eq!(scoped.structured["totalHits"], json!(1));
    let file = agent
        .ok(SEARCH, json!({"query": "needle", "path": "output/main.md"}))
        .await;
    assert_eq!(file.structured["totalHits"], json!(1));
    agent
        .refuses(
            SEARCH,
            json!({"query": "needle", "path": "plan"}),
            "workspace.path_not_visible",
        )
        .await;
    agent
        .refuses(
            SEARCH,
            json!({"query": "needle", "path": "output/nope"}),
            "workspace.path_not_found",
        )
        .await;
}

#[tokio::test]
async fn search_with_no_hits_is_a_success() {
    let mut agent = Agent::owner().await;
    agent.seed("output/main.md", "nothing here\n").await;
    let found = agent.ok(SEARCH, json!({"query": "unicorn"})).await;
    assert_eq!(found.structured["hits"], json!([]));
    assert_eq!(found.structured["totalHits"], json!(0));
    assert_eq!(
        found.content,
        "No matches for \"unicorn\" in 1 visible file. Try other or fewer words, or see which files exist with `workspace_list_files`."
    );
    assert!(found.resource_refs.is_empty());
}

#[tokio::test]
async fn search_argument_errors_carry_contract_codes() {
    let mut agent = Agent::owner().await;
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"query": "x", "limit": 0}),
            "workspace.search_limit_invalid",
        ),
        (
            json!({"query": "x", "limit": 51}),
            "workspace.search_limit_too_large",
        ),
        (
            json!({"query": "x", "context_lines": 6}),
            "workspace.search_context_too_large",
        ),
        (
            json!({"query": "x", "context_lines": -1}),
            "tool.invalid_arguments",
        ),
        (json!({"query": "   "}), "tool.invalid_arguments"),
        (json!({}), "tool.invalid_arguments"),
        (
            json!({"query": "x", "regex": true}),
            "tool.invalid_arguments",
        ),
        (
            json!({"query": "x", "path": "C:/x"}),
            "workspace.invalid_path",
        ),
    ];
    for (args, expected) in cases {
        agent.refuses(SEARCH, args, expected).await;
    }
}

// ----- fatal paths and dispatch -------------------------------------------------------------

#[tokio::test]
async fn storage_faults_fail_fast() {
    let mut agent = Agent::owner().await;
    agent.seed("output/main.md", "x").await;
    let faults = [
        StorageError::io("output/main.md", "disk gone"),
        StorageError::SymlinkEscape {
            path: "output/main.md".into(),
        },
        StorageError::corrupt("output/main.md", "not utf-8"),
    ];
    for fault in faults {
        agent.store.fail_next(StoreOp::WorkspaceRead, fault.clone());
        let result = agent.call(READ, json!({"path": "output/main.md"})).await;
        assert_eq!(
            result,
            Err(ToolCallError::Fatal(ApplicationError::Storage(fault)))
        );
    }
    agent.store.fail_next(
        StoreOp::WorkspaceAppend,
        StorageError::io("scratch/a.md", "disk gone"),
    );
    let result = agent
        .call(
            WRITE,
            json!({"path": "scratch/a.md", "content": "x", "mode": "append"}),
        )
        .await;
    assert!(matches!(result, Err(ToolCallError::Fatal(_))), "{result:?}");
}

#[tokio::test]
async fn other_tools_are_not_executed_here() {
    let mut agent = Agent::owner().await;
    for tool in [
        ToolName::WorkspaceCommit,
        ToolName::WorkspaceFinish,
        ToolName::AgentDelegate,
    ] {
        match agent.call(tool, json!({})).await {
            Err(ToolCallError::Fatal(err)) => assert_eq!(err.code(), "agent.internal_error"),
            other => panic!("{tool}: {other:?}"),
        }
    }
}

/// Every recoverable message an agent can get from these tools, reviewed as one snapshot.
#[tokio::test]
async fn error_messages_snapshot() {
    let mut agent = Agent::delegated().await;
    agent.seed("scratch/a.md", "one two one\nthree\n").await;
    agent.seed("output/big.md", &"l\n".repeat(1300)).await;
    let mut calls: Vec<(ToolName, Value)> = vec![
        (LIST, json!({"depth": 9})),
        (LIST, json!({"path": "output/none"})),
        (LIST, json!({"path": "plan"})),
        (READ, json!({"path": "output/none.md"})),
        (READ, json!({"path": "scratch"})),
        (READ, json!({"path": "output/big.md"})),
        (READ, json!({"path": "scratch/a.md", "start_line": 9})),
        (
            READ,
            json!({"path": "scratch/a.md", "start_line": 1, "max_chars": 3}),
        ),
        (READ, json!({"path": "..\\x"})),
        (WRITE, json!({"path": "output/x.md", "content": "x"})),
        (
            WRITE,
            json!({"path": "scratch/a.md", "content": "x", "mode": "merge"}),
        ),
        (WRITE, json!({"path": "scratch/a.md", "content": "x"})),
        (PATCH, patch("scratch/a.md", "", "x")),
        (PATCH, patch("scratch/a.md", "x", "x")),
        (PATCH, patch("scratch/a.md", "x", "y")),
        (SEARCH, json!({"query": "x", "limit": 99})),
        (SEARCH, json!({"query": "x", "context_lines": 9})),
    ];
    let mut lines = Vec::new();
    for (tool, args) in calls.drain(..) {
        let (code, message) = agent.fail(tool, args.clone()).await;
        lines.push(format!(
            "{} {args}\n  {code}: {message}",
            tool.model_alias()
        ));
    }
    // Partial-read variants, each on its own file so no re-read flag carries over.
    let partial_cases = [
        (
            "scratch/p1.md",
            "one\nthree\n",
            None,
            json!({"old_string": "three", "new_string": "3"}),
        ),
        (
            "scratch/p2.md",
            "one\none\n",
            None,
            json!({"old_string": "one", "new_string": "1", "replace_all": true}),
        ),
        (
            "scratch/p3.md",
            "one\none\n",
            None,
            json!({"old_string": "one", "new_string": "1"}),
        ),
        (
            "scratch/p4.md",
            "one\ntwo\n",
            Some("one\ntwo\nthree\n"),
            json!({"old_string": "one", "new_string": "1"}),
        ),
    ];
    for (path, text, changed, mut args) in partial_cases {
        agent.seed(path, text).await;
        agent
            .ok(
                READ,
                json!({"path": path, "start_line": 1, "line_count": 1}),
            )
            .await;
        if let Some(changed) = changed {
            agent.seed(path, changed).await;
        }
        args["path"] = json!(path);
        let (code, message) = agent.fail(PATCH, args.clone()).await;
        lines.push(format!(
            "workspace_apply_patch {args} (after a partial read)\n  {code}: {message}"
        ));
        if path == "scratch/p1.md" {
            let (code, message) = agent.fail(PATCH, args.clone()).await;
            lines.push(format!(
                "workspace_apply_patch {args} (again)\n  {code}: {message}"
            ));
        }
    }
    agent.ok(READ, json!({"path": "scratch/a.md"})).await;
    agent.seed("scratch/a.md", "changed\n").await;
    for (tool, args) in [
        (PATCH, patch("scratch/a.md", "one", "1")),
        (WRITE, json!({"path": "scratch/a.md", "content": "x"})),
    ] {
        let (code, message) = agent.fail(tool, args.clone()).await;
        lines.push(format!(
            "{} {args}\n  {code}: {message}",
            tool.model_alias()
        ));
    }
    agent.seed("scratch/b.md", "dup dup\n").await;
    agent.ok(READ, json!({"path": "scratch/b.md"})).await;
    for args in [
        patch("scratch/b.md", "zzz", "1"),
        patch("scratch/b.md", "dup", "1"),
    ] {
        let (code, message) = agent.fail(PATCH, args.clone()).await;
        lines.push(format!("workspace_apply_patch {args}\n  {code}: {message}"));
    }
    insta::assert_snapshot!(lines.join("\n"));
}
