//! Contract cases for `WorkspaceRepository`: write guards, append, read errors, listings, bounded
//! walks, the `persist/` projection and promotion chain, and the chat head.

use std::sync::Arc;
use tt_domain::error_codes;
use tt_domain::ids::RunId;
use tt_domain::run::AgentRun;
use tt_domain::text::sha256_hex;
use tt_domain::workspace::{
    EntryKind, FileFingerprint, PersistSnapshot, PersistentChangeKind, PersistentChangeSet,
    WorkspaceRoot, WriteGuard,
};
use tt_ports::{StorageError, WorkspaceEntry, WorkspaceRepository};

use super::{StorageUnderTest, assert_code, assert_not_found, create_sample_run, ts, wp};

pub async fn write_guards(s: StorageUnderTest) {
    let run = create_sample_run(&s, 1).await;
    let ws = &s.workspace;
    let path = wp("output/main.md");

    let created = ws
        .write(&run.id, &path, "first", &WriteGuard::MustNotExist)
        .await
        .unwrap();
    assert_eq!(created.previous_sha256, None);
    assert_eq!(created.sha256, sha256_hex(b"first"));
    assert_eq!(created.bytes, 5);

    guarded_writes_are_refused(&s, &run.id, &created.sha256).await;
    // Failed guards change nothing.
    assert_eq!(ws.read(&run.id, &path).await.unwrap().text, "first");
    assert_eq!(
        ws.sha256(&run.id, &wp("output/missing.md")).await.unwrap(),
        None
    );

    let matched = ws
        .write(
            &run.id,
            &path,
            "second",
            &WriteGuard::MustMatchSha256(created.sha256.clone()),
        )
        .await
        .unwrap();
    assert_eq!(matched.previous_sha256, Some(created.sha256));
    let forced = ws
        .write(&run.id, &path, "third ✓", &WriteGuard::None)
        .await
        .unwrap();
    assert_eq!(forced.previous_sha256, Some(matched.sha256));
    assert_eq!(forced.bytes, "third ✓".len() as u64);
    let read = ws.read(&run.id, &path).await.unwrap();
    assert_eq!(read.text, "third ✓");
    assert_eq!(read.sha256, forced.sha256);

    directories_and_roots(&s, &run.id).await;
}

/// [`write_guards`]: `output/main.md` exists with `created_sha`; each guard that does not hold
/// is refused with its own error.
async fn guarded_writes_are_refused(s: &StorageUnderTest, run_id: &RunId, created_sha: &str) {
    let ws = &s.workspace;
    let path = wp("output/main.md");
    match ws
        .write(run_id, &path, "again", &WriteGuard::MustNotExist)
        .await
    {
        Err(StorageError::GuardFileExists {
            path: shown,
            current_sha256,
        }) => {
            assert_eq!(shown, "output/main.md");
            assert_eq!(current_sha256, created_sha);
        }
        other => panic!("expected GuardFileExists, got {other:?}"),
    }
    let wrong = sha256_hex(b"something else");
    match ws
        .write(
            run_id,
            &path,
            "x",
            &WriteGuard::MustMatchSha256(wrong.clone()),
        )
        .await
    {
        Err(StorageError::GuardShaMismatch {
            expected, actual, ..
        }) => {
            assert_eq!(expected, wrong);
            assert_eq!(actual, created_sha);
        }
        other => panic!("expected GuardShaMismatch, got {other:?}"),
    }
    match ws
        .write(
            run_id,
            &wp("output/missing.md"),
            "x",
            &WriteGuard::MustMatchSha256(wrong),
        )
        .await
    {
        Err(StorageError::GuardFileMissing { path: shown }) => {
            assert_eq!(shown, "output/missing.md");
        }
        other => panic!("expected GuardFileMissing, got {other:?}"),
    }
}

/// [`write_guards`]: parents are created, directories are not overwritten, a name that only
/// starts like a directory is not below it, and an unknown root does not exist.
async fn directories_and_roots(s: &StorageUnderTest, run_id: &RunId) {
    let ws = &s.workspace;
    // Parent directories are created as needed.
    ws.write(
        run_id,
        &wp("output/drafts/deep/a.md"),
        "deep",
        &WriteGuard::MustNotExist,
    )
    .await
    .unwrap();
    assert_eq!(
        ws.read(run_id, &wp("output/drafts/deep/a.md"))
            .await
            .unwrap()
            .text,
        "deep"
    );
    // Directories cannot be overwritten; unknown roots do not exist.
    for dir in ["output/drafts", "output"] {
        match ws.write(run_id, &wp(dir), "x", &WriteGuard::None).await {
            Err(StorageError::IsDirectory { .. }) => {}
            other => panic!("expected IsDirectory for {dir}, got {other:?}"),
        }
    }
    // A file beside a directory whose name it starts is not below it.
    for path in [
        "output/drafts-old/a.md",
        "output/drafts0/a.md",
        "output/drafts.md",
    ] {
        ws.write(run_id, &wp(path), "beside", &WriteGuard::None)
            .await
            .unwrap();
    }
    ws.write(run_id, &wp("output/draft"), "x", &WriteGuard::None)
        .await
        .unwrap();
    assert_not_found(
        ws.write(run_id, &wp("input/x.md"), "x", &WriteGuard::None)
            .await,
    );
}

pub async fn concurrent_guarded_creates_have_one_winner(s: StorageUnderTest) {
    let run = create_sample_run(&s, 1).await;
    let ws = Arc::clone(&s.workspace);
    let mut handles = Vec::new();
    for i in 0..16 {
        let ws = Arc::clone(&ws);
        let run_id = run.id.clone();
        handles.push(tokio::spawn(async move {
            let content = format!("writer {i}");
            let result = ws
                .write(
                    &run_id,
                    &wp("scratch/race.md"),
                    &content,
                    &WriteGuard::MustNotExist,
                )
                .await;
            (result, content)
        }));
    }
    let mut winners = Vec::new();
    for handle in handles {
        let (result, content) = handle.await.unwrap();
        match result {
            Ok(_) => winners.push(content),
            Err(StorageError::GuardFileExists { .. }) => {}
            Err(other) => panic!("unexpected error {other:?}"),
        }
    }
    assert_eq!(winners.len(), 1);
    assert_eq!(
        ws.read(&run.id, &wp("scratch/race.md")).await.unwrap().text,
        winners[0]
    );
}

pub async fn append_semantics(s: StorageUnderTest) {
    let run = create_sample_run(&s, 1).await;
    let ws = &s.workspace;
    let path = wp("summaries/log/notes.md");

    let first = ws.append(&run.id, &path, "line one").await.unwrap();
    assert_eq!(first.previous_sha256, None);
    assert_eq!(first.sha256, sha256_hex(b"line one"));
    assert_eq!(first.bytes, 8);

    let second = ws.append(&run.id, &path, "\nline two ✓").await.unwrap();
    assert_eq!(second.previous_sha256, Some(first.sha256));
    let expected = "line one\nline two ✓";
    assert_eq!(second.sha256, sha256_hex(expected.as_bytes()));
    assert_eq!(second.bytes, expected.len() as u64);

    let empty = ws.append(&run.id, &path, "").await.unwrap();
    assert_eq!(empty.previous_sha256, Some(second.sha256.clone()));
    assert_eq!(empty.sha256, second.sha256);
    assert_eq!(ws.read(&run.id, &path).await.unwrap().text, expected);

    match ws.append(&run.id, &wp("summaries/log"), "x").await {
        Err(StorageError::IsDirectory { .. }) => {}
        other => panic!("expected IsDirectory, got {other:?}"),
    }
    assert_not_found(ws.append(&run.id, &wp("checkpoints/x.md"), "x").await);
}

/// A file cannot be written or appended below another file, however deep, and nothing is
/// written. (Which path the error names is the adapter's: the file in the way or the path
/// asked for.)
pub async fn a_write_below_a_file_is_refused(s: StorageUnderTest) {
    let run = create_sample_run(&s, 1).await;
    let ws = &s.workspace;
    put(ws, &run.id, "plan/a/b.md", "plan").await;
    for below in ["plan/a/b.md/c.md", "plan/a/b.md/c/d.md"] {
        match ws.write(&run.id, &wp(below), "x", &WriteGuard::None).await {
            Err(StorageError::NotADirectory { .. }) => {}
            other => panic!("expected NotADirectory for {below}, got {other:?}"),
        }
        match ws.append(&run.id, &wp(below), "x").await {
            Err(StorageError::NotADirectory { .. }) => {}
            other => panic!("expected NotADirectory for {below}, got {other:?}"),
        }
    }
    assert_eq!(
        ws.read(&run.id, &wp("plan/a/b.md")).await.unwrap().text,
        "plan"
    );
    assert_not_found(ws.read(&run.id, &wp("plan/a/b.md/c.md")).await);
}

pub async fn read_and_sha_errors(s: StorageUnderTest) {
    let run = create_sample_run(&s, 1).await;
    let ws = &s.workspace;
    put(ws, &run.id, "plan/a/b.md", "plan").await;
    let read = ws.read(&run.id, &wp("plan/a/b.md")).await.unwrap();
    assert_eq!(read.text, "plan");
    assert_eq!(read.sha256, sha256_hex(b"plan"));
    assert_eq!(
        ws.sha256(&run.id, &wp("plan/a/b.md")).await.unwrap(),
        Some(sha256_hex(b"plan"))
    );

    assert_not_found(ws.read(&run.id, &wp("plan/missing.md")).await);
    assert_not_found(ws.read(&run.id, &wp("plan/a/b.md/below")).await);
    assert_not_found(ws.read(&run.id, &wp("run.json")).await);
    assert_not_found(ws.read(&run.id, &wp("input/prompt_snapshot.json")).await);
    assert_eq!(ws.sha256(&run.id, &wp("plan/none.md")).await.unwrap(), None);
    for dir in ["plan/a", "plan"] {
        match ws.read(&run.id, &wp(dir)).await {
            Err(StorageError::IsDirectory { .. }) => {}
            other => panic!("expected IsDirectory for {dir}, got {other:?}"),
        }
        match ws.sha256(&run.id, &wp(dir)).await {
            Err(StorageError::IsDirectory { .. }) => {}
            other => panic!("expected IsDirectory for {dir}, got {other:?}"),
        }
    }
    assert_not_found(
        ws.read(
            &tt_domain::ids::RunId::from_raw("run_missing"),
            &wp("plan/a/b.md"),
        )
        .await,
    );
}

/// Writes `text` at `path`, unguarded.
pub(super) async fn put(ws: &Arc<dyn WorkspaceRepository>, run_id: &RunId, path: &str, text: &str) {
    ws.write(run_id, &wp(path), text, &WriteGuard::None)
        .await
        .unwrap();
}

/// A file's fingerprint as a checkpoint or a persist snapshot records it.
pub(super) fn fingerprint(path: &str, text: &str) -> FileFingerprint {
    FileFingerprint {
        path: wp(path),
        sha256: sha256_hex(text.as_bytes()),
        bytes: text.len() as u64,
    }
}

/// The path and kind of each change of a promoted set.
fn change_kinds(set: &PersistentChangeSet) -> Vec<(String, PersistentChangeKind)> {
    set.changes
        .iter()
        .map(|change| (change.path.to_string(), change.kind))
        .collect()
}

fn listing(entries: Vec<WorkspaceEntry>) -> Vec<(String, EntryKind)> {
    entries
        .into_iter()
        .map(|entry| (entry.path.to_string(), entry.kind))
        .collect()
}

pub async fn list_depth_and_ordering(s: StorageUnderTest) {
    use EntryKind::{Directory as D, File as F};
    let run = create_sample_run(&s, 1).await;
    let ws = &s.workspace;
    for path in [
        "output/b.md",
        "output/sub/deeper/d.md",
        "output/a.md",
        "output/sub/c.md",
        "output/a.md.bak",
        "scratch/x.md",
    ] {
        put(ws, &run.id, path, path).await;
    }
    let own = |items: &[(&str, EntryKind)]| {
        items
            .iter()
            .map(|(path, kind)| ((*path).to_owned(), *kind))
            .collect::<Vec<_>>()
    };

    assert_eq!(
        listing(ws.list(&run.id, None, 1).await.unwrap()),
        own(&[
            ("output", D),
            ("persist", D),
            ("plan", D),
            ("scratch", D),
            ("summaries", D)
        ])
    );
    assert_eq!(
        listing(ws.list(&run.id, None, 2).await.unwrap()),
        own(&[
            ("output", D),
            ("output/a.md", F),
            ("output/a.md.bak", F),
            ("output/b.md", F),
            ("output/sub", D),
            ("persist", D),
            ("plan", D),
            ("scratch", D),
            ("scratch/x.md", F),
            ("summaries", D)
        ])
    );
    let output = wp("output");
    assert_eq!(
        listing(ws.list(&run.id, Some(&output), 1).await.unwrap()),
        own(&[
            ("output/a.md", F),
            ("output/a.md.bak", F),
            ("output/b.md", F),
            ("output/sub", D)
        ])
    );
    assert_eq!(
        listing(ws.list(&run.id, Some(&output), 2).await.unwrap()),
        own(&[
            ("output/a.md", F),
            ("output/a.md.bak", F),
            ("output/b.md", F),
            ("output/sub", D),
            ("output/sub/c.md", F),
            ("output/sub/deeper", D)
        ])
    );
    assert_eq!(
        listing(ws.list(&run.id, Some(&wp("output/sub")), 5).await.unwrap()),
        own(&[
            ("output/sub/c.md", F),
            ("output/sub/deeper", D),
            ("output/sub/deeper/d.md", F)
        ])
    );
    assert!(
        ws.list(&run.id, Some(&wp("plan")), 3)
            .await
            .unwrap()
            .is_empty()
    );
    match ws.list(&run.id, Some(&wp("output/a.md")), 1).await {
        Err(StorageError::NotADirectory { .. }) => {}
        other => panic!("expected NotADirectory, got {other:?}"),
    }
    assert_not_found(ws.list(&run.id, Some(&wp("output/nope")), 1).await);
    assert_not_found(ws.list(&run.id, Some(&wp("input")), 1).await);
}

pub async fn walk_files_bounds(s: StorageUnderTest) {
    let run = create_sample_run(&s, 1).await;
    let ws = &s.workspace;
    for path in [
        "summaries/z.md",
        "output/b.md",
        "output/a/inner.md",
        "output/a.md",
        "output/a/deep/er.md",
        "scratch/hidden.md",
    ] {
        put(ws, &run.id, path, "x").await;
    }
    let walk = |roots: Vec<WorkspaceRoot>, depth: u32, max: usize| {
        let ws = Arc::clone(ws);
        let run_id = run.id.clone();
        async move {
            ws.walk_files(&run_id, &roots, depth, max)
                .await
                .unwrap()
                .into_iter()
                .map(|path| path.to_string())
                .collect::<Vec<_>>()
        }
    };
    let roots = vec![WorkspaceRoot::Summaries, WorkspaceRoot::Output];
    assert_eq!(
        walk(roots.clone(), 10, 100).await,
        [
            "output/a.md",
            "output/a/deep/er.md",
            "output/a/inner.md",
            "output/b.md",
            "summaries/z.md"
        ]
    );
    assert_eq!(
        walk(roots.clone(), 10, 2).await,
        ["output/a.md", "output/a/deep/er.md"]
    );
    assert_eq!(
        walk(roots.clone(), 1, 100).await,
        ["output/a.md", "output/b.md", "summaries/z.md"]
    );
    assert_eq!(
        walk(roots, 2, 100).await,
        [
            "output/a.md",
            "output/a/inner.md",
            "output/b.md",
            "summaries/z.md"
        ]
    );
    assert!(walk(vec![WorkspaceRoot::Plan], 10, 100).await.is_empty());
    assert!(walk(vec![WorkspaceRoot::Output], 10, 0).await.is_empty());
}

pub async fn persist_projection_and_promotion(s: StorageUnderTest) {
    let ws = &s.workspace;
    let a = a_first_state_adds_its_files(&s).await;
    let b = a_projected_state_promotes_its_changes(&s, &a).await;
    a_deletion_is_refused_and_no_change_still_promotes(&s, &b).await;

    // A base state that does not exist.
    let e = create_sample_run(&s, 5).await;
    assert_code(
        ws.init_persist_projection(&e.id, Some("run_never_promoted"))
            .await,
        error_codes::AGENT_PERSISTENT_STATE_ROOT_MISSING,
    );
}

/// [`persist_projection_and_promotion`]: run A starts from nothing, adds two files and
/// promotes them; returns it.
async fn a_first_state_adds_its_files(s: &StorageUnderTest) -> AgentRun {
    let ws = &s.workspace;
    // Run A starts from nothing and adds two files.
    let a = create_sample_run(s, 1).await;
    let snap_a = ws.init_persist_projection(&a.id, None).await.unwrap();
    assert_eq!(snap_a, PersistSnapshot::default());
    put(ws, &a.id, "persist/memory.md", "m1").await;
    put(ws, &a.id, "persist/notes/a.md", "a1").await;
    assert_eq!(ws.promoted_state(&a.id).await.unwrap(), None);
    let promoted_a = ws.promote_persist(&a.id, &snap_a, ts(10)).await.unwrap();
    // What it promoted can be read back (a resumed run finishing again reads it).
    assert_eq!(
        ws.promoted_state(&a.id).await.unwrap().as_ref(),
        Some(&promoted_a)
    );
    assert_eq!(promoted_a.state_id, a.id.as_str());
    assert_eq!(promoted_a.base_state_id, None);
    assert_eq!(
        change_kinds(&promoted_a),
        [
            ("persist/memory.md".to_owned(), PersistentChangeKind::Added),
            ("persist/notes/a.md".to_owned(), PersistentChangeKind::Added)
        ]
    );
    assert_eq!(promoted_a.changes[0].sha256, sha256_hex(b"m1"));
    assert_eq!(promoted_a.changes[0].bytes, 2);
    // A state is immutable: the same run cannot promote twice.
    assert_code(
        ws.promote_persist(&a.id, &snap_a, ts(11)).await,
        error_codes::AGENT_PERSISTENT_STATE_EXISTS,
    );

    a
}

/// [`persist_projection_and_promotion`]: run B projects `a`'s state, changes it and promotes;
/// returns it.
async fn a_projected_state_promotes_its_changes(s: &StorageUnderTest, a: &AgentRun) -> AgentRun {
    let ws = &s.workspace;
    // Run B projects A, modifies one file and adds another.
    let b = create_sample_run(s, 2).await;
    let snap_b = ws
        .init_persist_projection(&b.id, Some(a.id.as_str()))
        .await
        .unwrap();
    assert_eq!(snap_b.base_state_id.as_deref(), Some(a.id.as_str()));
    assert_eq!(
        snap_b.files,
        vec![
            fingerprint("persist/memory.md", "m1"),
            fingerprint("persist/notes/a.md", "a1")
        ]
    );
    assert_eq!(
        ws.read(&b.id, &wp("persist/notes/a.md"))
            .await
            .unwrap()
            .text,
        "a1"
    );
    put(ws, &b.id, "persist/memory.md", "m2").await;
    ws.append(&b.id, &wp("persist/new.md"), "n1").await.unwrap();
    let promoted_b = ws.promote_persist(&b.id, &snap_b, ts(20)).await.unwrap();
    assert_eq!(promoted_b.state_id, b.id.as_str());
    assert_eq!(promoted_b.base_state_id.as_deref(), Some(a.id.as_str()));
    assert_eq!(
        change_kinds(&promoted_b),
        [
            (
                "persist/memory.md".to_owned(),
                PersistentChangeKind::Modified
            ),
            ("persist/new.md".to_owned(), PersistentChangeKind::Added)
        ]
    );

    b
}

/// [`persist_projection_and_promotion`]: runs C and D over `b`'s state.
async fn a_deletion_is_refused_and_no_change_still_promotes(s: &StorageUnderTest, b: &AgentRun) {
    let ws = &s.workspace;
    // Run C projects B; a file missing from persist/ since the snapshot cannot be promoted.
    let c = create_sample_run(s, 3).await;
    let snap_c = ws
        .init_persist_projection(&c.id, Some(b.id.as_str()))
        .await
        .unwrap();
    assert_eq!(
        snap_c.files,
        vec![
            fingerprint("persist/memory.md", "m2"),
            fingerprint("persist/new.md", "n1"),
            fingerprint("persist/notes/a.md", "a1")
        ]
    );
    let mut with_deleted = snap_c.clone();
    with_deleted
        .files
        .push(fingerprint("persist/gone.md", "gone"));
    assert_code(
        ws.promote_persist(&c.id, &with_deleted, ts(30)).await,
        error_codes::AGENT_PERSISTENT_DELETE_UNSUPPORTED,
    );
    // Zero changes still promote, so the chain stays linear.
    let promoted_c = ws.promote_persist(&c.id, &snap_c, ts(31)).await.unwrap();
    assert_eq!(promoted_c.state_id, c.id.as_str());
    assert!(promoted_c.changes.is_empty());
    let d = create_sample_run(s, 4).await;
    let snap_d = ws
        .init_persist_projection(&d.id, Some(c.id.as_str()))
        .await
        .unwrap();
    assert_eq!(snap_d.files, snap_c.files);
}

/// The chat's head moves by compare-and-swap: of many runs swapping from the same head at once
/// exactly one wins, a swap from a head that moved meanwhile fails, the holder swapping again
/// is a no-op, and the head reads back (docs/storage.md, "One writer per conversation").
pub async fn concurrent_chat_head_swaps_have_one_winner(s: StorageUnderTest) {
    let ws = Arc::clone(&s.workspace);
    let mut runs = Vec::new();
    for n in 0..8 {
        runs.push(create_sample_run(&s, 10 + n).await);
    }
    let chat = runs[0].workspace_id.clone();
    assert_eq!(ws.chat_head(&chat).await.unwrap(), None);
    let mut handles = Vec::new();
    for run in &runs {
        let ws = Arc::clone(&ws);
        let (chat, run_id) = (chat.clone(), run.id.clone());
        handles.push(tokio::spawn(async move {
            let won = ws.swap_chat_head(&chat, None, &run_id).await.unwrap();
            (won, run_id)
        }));
    }
    let mut winners = Vec::new();
    for handle in handles {
        let (won, run_id) = handle.await.unwrap();
        if won {
            winners.push(run_id);
        }
    }
    assert_eq!(winners.len(), 1, "{winners:?}");
    let first = winners[0].clone();
    assert_eq!(ws.chat_head(&chat).await.unwrap().as_ref(), Some(&first));
    assert!(ws.swap_chat_head(&chat, None, &first).await.unwrap());
    let others: Vec<_> = runs.iter().filter(|run| run.id != first).collect();
    // From the head as it is: moves; from the head as it was: refused.
    assert!(
        ws.swap_chat_head(&chat, Some(&first), &others[0].id)
            .await
            .unwrap()
    );
    assert!(
        !ws.swap_chat_head(&chat, Some(&first), &others[1].id)
            .await
            .unwrap()
    );
    assert!(!ws.swap_chat_head(&chat, None, &others[1].id).await.unwrap());
    assert_eq!(
        ws.chat_head(&chat).await.unwrap().as_ref(),
        Some(&others[0].id)
    );
}

/// A base state id that is not a storage segment is refused with
/// `agent.persistent_state_root_invalid` by every store, before any lookup; one that is a
/// segment but names no state is `agent.persistent_state_root_missing`.
pub async fn a_base_state_id_that_is_no_storage_segment_is_refused(s: StorageUnderTest) {
    let run = create_sample_run(&s, 1).await;
    for bad in ["../other-chat/state", "a/b", ""] {
        assert_code(
            s.workspace
                .init_persist_projection(&run.id, Some(bad))
                .await,
            error_codes::AGENT_PERSISTENT_STATE_ROOT_INVALID,
        );
    }
    assert_code(
        s.workspace
            .init_persist_projection(&run.id, Some("no_such_state"))
            .await,
        error_codes::AGENT_PERSISTENT_STATE_ROOT_MISSING,
    );
}
