//! Contract cases for a run's checkpoints (`WorkspaceRepository::create_checkpoint`,
//! `checkpoint_record`, `checkpoint_blob`): numbering, what each holds, concurrent ones, and
//! reading them back.

use std::sync::Arc;
use tt_domain::ids::{CheckpointId, RunId};
use tt_domain::text::sha256_hex;
use tt_domain::workspace::{CheckpointReason, FileFingerprint, WriteGuard};
use tt_ports::WorkspaceRepository;

use super::workspace::{fingerprint, put};
use super::{StorageUnderTest, assert_not_found, at_once, create_sample_run, ts, wp};

/// Checkpoints taken at once (a fan-out's agents each checkpoint what they wrote) are
/// numbered once each, 1 to n with no gap, and each holds its own files.
pub async fn concurrent_checkpoints_are_numbered_once_each(s: StorageUnderTest) {
    let run = create_sample_run(&s, 1).await;
    let ws = Arc::clone(&s.workspace);
    let taken = at_once(24, |i| {
        let ws = Arc::clone(&ws);
        let run_id = run.id.clone();
        async move {
            let path = wp(&format!("scratch/agent-{i}.md"));
            let text = format!("notes {i}");
            ws.write(&run_id, &path, &text, &WriteGuard::None)
                .await
                .unwrap();
            let paths = if i % 8 == 0 {
                Vec::new()
            } else {
                vec![path.clone()]
            };
            let record = ws
                .create_checkpoint(
                    &run_id,
                    CheckpointReason::ToolWorkspaceWrite,
                    i + 1,
                    &paths,
                    ts(100 + i as i64),
                )
                .await
                .unwrap();
            (record, paths, text)
        }
    })
    .await;
    let mut numbers = Vec::new();
    for (record, paths, text) in taken {
        assert_eq!(record.id.as_str(), format!("cp_{:06}", record.seq));
        let expected: Vec<FileFingerprint> = paths
            .into_iter()
            .map(|path| FileFingerprint {
                path,
                sha256: sha256_hex(text.as_bytes()),
                bytes: text.len() as u64,
            })
            .collect();
        assert_eq!(record.files, expected, "checkpoint {}", record.seq);
        numbers.push(record.seq);
    }
    numbers.sort_unstable();
    assert_eq!(numbers, (1..=24).collect::<Vec<u64>>());
}

pub async fn checkpoints(s: StorageUnderTest) {
    let run = create_sample_run(&s, 1).await;
    let ws = &s.workspace;
    put(ws, &run.id, "output/main.md", "draft 1").await;
    put(ws, &run.id, "summaries/x.md", "summary").await;
    let paths = [
        wp("output/main.md"),
        wp("summaries/x.md"),
        wp("output/missing.md"),
    ];
    let first = ws
        .create_checkpoint(
            &run.id,
            CheckpointReason::ToolWorkspaceWrite,
            7,
            &paths,
            ts(100),
        )
        .await
        .unwrap();
    assert_eq!(first.id.as_str(), "cp_000001");
    assert_eq!(first.seq, 1);
    assert_eq!(first.run_id, run.id);
    assert_eq!(first.created_at, ts(100));
    assert_eq!(first.reason, CheckpointReason::ToolWorkspaceWrite);
    assert_eq!(first.event_seq, 7);
    assert_eq!(
        first.files,
        vec![
            fingerprint("output/main.md", "draft 1"),
            fingerprint("summaries/x.md", "summary"),
        ]
    );

    put(ws, &run.id, "output/main.md", "draft 2!").await;
    let second = ws
        .create_checkpoint(
            &run.id,
            CheckpointReason::ChatCommit,
            9,
            &[wp("output/main.md")],
            ts(200),
        )
        .await
        .unwrap();
    assert_eq!(second.id.as_str(), "cp_000002");
    assert_eq!(second.seq, 2);
    assert_eq!(second.reason, CheckpointReason::ChatCommit);
    assert_eq!(
        second.files,
        vec![fingerprint("output/main.md", "draft 2!")]
    );
    let third = ws
        .create_checkpoint(
            &run.id,
            CheckpointReason::DirectOutputCapture,
            10,
            &[],
            ts(300),
        )
        .await
        .unwrap();
    assert_eq!(third.id.as_str(), "cp_000003");
    assert!(third.files.is_empty());
    // Checkpoints are not workspace files.
    assert_not_found(
        ws.read(&run.id, &wp("checkpoints/cp_000001/checkpoint.json"))
            .await,
    );
    checkpointed_versions_read_back(ws, &run.id).await;
}

/// [`checkpoints`]: "draft 1" and "draft 2!" were checkpointed.
async fn checkpointed_versions_read_back(ws: &Arc<dyn WorkspaceRepository>, run_id: &RunId) {
    // A checkpointed version reads back by its sha256 where the store keeps contents (the
    // port's default keeps none); a version no checkpoint stored never does.
    for text in ["draft 1", "draft 2!"] {
        let blob = ws
            .checkpoint_blob(run_id, &sha256_hex(text.as_bytes()))
            .await
            .unwrap();
        assert!(blob.is_none() || blob.as_deref() == Some(text), "{blob:?}");
    }
    assert_eq!(
        ws.checkpoint_blob(run_id, &sha256_hex(b"never written"))
            .await
            .unwrap(),
        None
    );
}

/// A checkpoint reads back by its id as it was recorded, on any store (`read_record`'s
/// `checkpoints/<id>`); an id the run has not used, or another run's, is `None`.
pub async fn checkpoint_records_read_back(s: StorageUnderTest) {
    let run = create_sample_run(&s, 1).await;
    let other = create_sample_run(&s, 2).await;
    let ws = &s.workspace;
    ws.write(&run.id, &wp("output/main.md"), "draft", &WriteGuard::None)
        .await
        .unwrap();
    let mut made = Vec::new();
    for (event_seq, reason) in [
        (4, CheckpointReason::ToolWorkspaceWrite),
        (6, CheckpointReason::ChatCommit),
    ] {
        let record = ws
            .create_checkpoint(&run.id, reason, event_seq, &[wp("output/main.md")], ts(50))
            .await
            .unwrap();
        made.push(record);
    }
    for record in &made {
        let read = ws.checkpoint_record(&run.id, &record.id).await.unwrap();
        assert_eq!(read.as_ref(), Some(record));
    }
    for absent in ["cp_000003", "cp_2", "not-a-checkpoint"] {
        let read = ws
            .checkpoint_record(&run.id, &CheckpointId::from_raw(absent))
            .await
            .unwrap();
        assert_eq!(read, None, "{absent}");
    }
    let elsewhere = ws.checkpoint_record(&other.id, &made[0].id).await.unwrap();
    assert_eq!(elsewhere, None);
}
