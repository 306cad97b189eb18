//! Symlinks that leave the run directory are refused for read, write, append, list, walk and
//! checkpoints; links that stay inside keep working.

use std::os::unix::fs::symlink;
use tt_domain::workspace::{CheckpointReason, WorkspaceRoot, WriteGuard};
use tt_ports::WorkspaceRepository;
use tt_testkit::contract::{ts, wp};

use super::{Fixture, assert_escape};

#[tokio::test]
async fn escaping_symlinks_are_refused() {
    let fx = Fixture::new();
    let (run, dir) = fx.run(1).await;
    let outside = fx.outside_dir("outside");
    std::fs::write(outside.join("secret.md"), "secret").unwrap();
    symlink(&outside, dir.join("output/evil")).unwrap();
    symlink(outside.join("secret.md"), dir.join("scratch/link.md")).unwrap();
    symlink(outside.join("nothing-yet.md"), dir.join("plan/dangling.md")).unwrap();

    let store = &fx.store;
    let id = &run.id;
    assert_escape(store.read(id, &wp("output/evil/secret.md")).await);
    assert_escape(store.read(id, &wp("scratch/link.md")).await);
    assert_escape(store.sha256(id, &wp("scratch/link.md")).await);
    for (path, text) in [
        ("output/evil/new.md", "x"),
        ("output/evil/deeper/new.md", "x"),
        ("scratch/link.md", "overwrite"),
        ("plan/dangling.md", "x"),
    ] {
        assert_escape(store.write(id, &wp(path), text, &WriteGuard::None).await);
    }
    assert_escape(store.append(id, &wp("scratch/link.md"), "more").await);
    assert_escape(store.list(id, Some(&wp("output/evil")), 1).await);
    assert_escape(store.list(id, Some(&wp("output")), 1).await);
    assert_escape(store.list(id, None, 2).await);
    assert_escape(store.walk_files(id, &[WorkspaceRoot::Output], 5, 10).await);
    assert_escape(
        store
            .create_checkpoint(
                id,
                CheckpointReason::ToolWorkspaceWrite,
                1,
                &[wp("scratch/link.md")],
                ts(1),
            )
            .await,
    );

    // Nothing outside was read into the run or changed.
    assert_eq!(
        std::fs::read_to_string(outside.join("secret.md")).unwrap(),
        "secret"
    );
    assert!(!outside.join("new.md").exists());
    assert!(!outside.join("deeper").exists());
    assert!(!outside.join("nothing-yet.md").exists());
}

#[tokio::test]
async fn escaping_workspace_root_is_refused() {
    let fx = Fixture::new();
    let (run, dir) = fx.run(1).await;
    let outside = fx.outside_dir("outside-root");
    std::fs::remove_dir(dir.join("summaries")).unwrap();
    symlink(&outside, dir.join("summaries")).unwrap();
    assert_escape(
        fx.store
            .write(&run.id, &wp("summaries/a.md"), "x", &WriteGuard::None)
            .await,
    );
    assert_escape(fx.store.list(&run.id, None, 1).await);
    assert!(std::fs::read_dir(&outside).unwrap().next().is_none());
}

#[tokio::test]
async fn symlinks_inside_the_run_directory_work() {
    let fx = Fixture::new();
    let (run, dir) = fx.run(1).await;
    fx.store
        .write(
            &run.id,
            &wp("scratch/notes/a.md"),
            "inside",
            &WriteGuard::None,
        )
        .await
        .unwrap();
    symlink(dir.join("scratch/notes"), dir.join("output/notes")).unwrap();
    assert_eq!(fx.text(&run.id, "output/notes/a.md").await, "inside");
    let listed: Vec<String> = fx
        .store
        .list(&run.id, Some(&wp("output")), 2)
        .await
        .unwrap()
        .into_iter()
        .map(|entry| entry.path.to_string())
        .collect();
    assert_eq!(listed, ["output/notes", "output/notes/a.md"]);
}
