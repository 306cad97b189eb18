//! Checkpoints of files the store just wrote take their hash and content from the write (no
//! read back), but only while the file on disk is still that write: a file changed by anyone
//! else since is read, so a checkpoint always records what the file holds.

use tt_domain::text::sha256_hex;
use tt_domain::workspace::{CheckpointReason, WriteGuard};
use tt_ports::{StorageError, WorkspaceRepository};
use tt_testkit::contract::wp;

use super::Fixture;

/// The text of the blob the checkpoint's only file names.
async fn checkpointed(fx: &Fixture, run: &tt_domain::run::AgentRun, seq: u64) -> (String, u64) {
    let record = super::checkpoint(
        &fx.store,
        &run.id,
        CheckpointReason::ToolWorkspaceWrite,
        seq,
        wp("output/a.md"),
        seq as i64,
    )
    .await;
    let [file] = record.files.as_slice() else {
        panic!("one file expected, got {:?}", record.files);
    };
    let blob = fx
        .store
        .read_record(&run.id, &format!("blobs/{}", file.sha256))
        .await
        .unwrap()
        .unwrap();
    let text = blob.as_str().unwrap().to_owned();
    assert_eq!(sha256_hex(text.as_bytes()), file.sha256);
    // The port reads the same blob (branching rebuilds a workspace from it).
    assert_eq!(
        fx.store
            .checkpoint_blob(&run.id, &file.sha256)
            .await
            .unwrap()
            .as_deref(),
        Some(text.as_str())
    );
    (text, file.bytes)
}

#[tokio::test]
async fn a_checkpoint_records_the_file_as_it_is_not_as_it_was_written() {
    let fx = Fixture::new();
    let (run, dir) = fx.run(1).await;
    let physical = dir.join("output/a.md");
    let store = fx.store.as_ref();

    store
        .write(&run.id, &wp("output/a.md"), "first", &WriteGuard::None)
        .await
        .unwrap();
    assert_eq!(checkpointed(&fx, &run, 1).await, ("first".to_owned(), 5));
    // Unchanged since: the same content again (its blob is stored once).
    assert_eq!(checkpointed(&fx, &run, 2).await, ("first".to_owned(), 5));

    // Edited in place by another program (same inode, longer).
    store
        .write(&run.id, &wp("output/a.md"), "second", &WriteGuard::None)
        .await
        .unwrap();
    std::fs::write(&physical, "edited elsewhere").unwrap();
    assert_eq!(
        checkpointed(&fx, &run, 3).await,
        ("edited elsewhere".to_owned(), 16)
    );

    // Replaced by another program with a file of the same length (another inode).
    store
        .write(&run.id, &wp("output/a.md"), "third", &WriteGuard::None)
        .await
        .unwrap();
    let other = dir.join("output/other.tmp");
    std::fs::write(&other, "THIRD").unwrap();
    std::fs::rename(&other, &physical).unwrap();
    assert_eq!(checkpointed(&fx, &run, 4).await, ("THIRD".to_owned(), 5));
    let current = store.sha256(&run.id, &wp("output/a.md")).await.unwrap();
    assert_eq!(current, Some(sha256_hex(b"THIRD")));
    // The write guard compares with the file on disk, not with the last write.
    match store
        .write(
            &run.id,
            &wp("output/a.md"),
            "fourth",
            &WriteGuard::MustMatchSha256(sha256_hex(b"third")),
        )
        .await
    {
        Err(StorageError::GuardShaMismatch { actual, .. }) => {
            assert_eq!(actual, sha256_hex(b"THIRD"));
        }
        other => panic!("expected a sha mismatch, got {other:?}"),
    }

    // Removed by another program: nothing to record.
    store
        .write(&run.id, &wp("output/a.md"), "fifth", &WriteGuard::None)
        .await
        .unwrap();
    std::fs::remove_file(&physical).unwrap();
    let record = super::checkpoint(
        store,
        &run.id,
        CheckpointReason::ToolWorkspaceWrite,
        5,
        wp("output/a.md"),
        5,
    )
    .await;
    assert!(record.files.is_empty(), "{:?}", record.files);
    assert_eq!(
        store.sha256(&run.id, &wp("output/a.md")).await.unwrap(),
        None
    );
}

#[tokio::test]
async fn appends_keep_checkpoints_and_guards_current() {
    let fx = Fixture::new();
    let (run, _dir) = fx.run(1).await;
    let store = fx.store.as_ref();
    store
        .write(&run.id, &wp("output/a.md"), "one", &WriteGuard::None)
        .await
        .unwrap();
    let outcome = store
        .append(&run.id, &wp("output/a.md"), " two")
        .await
        .unwrap();
    assert_eq!(outcome.previous_sha256, Some(sha256_hex(b"one")));
    assert_eq!(checkpointed(&fx, &run, 1).await, ("one two".to_owned(), 7));
    assert_eq!(
        store.sha256(&run.id, &wp("output/a.md")).await.unwrap(),
        Some(sha256_hex(b"one two"))
    );
}
