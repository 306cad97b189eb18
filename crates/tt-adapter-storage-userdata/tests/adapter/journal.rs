//! The journal on disk: torn-tail repair on reopen, corrupt middle lines, and page reads that
//! touch only a small part of a large file.

use std::fs::OpenOptions;
use std::io::Write;
use tt_domain::event::AgentRunEvent;
use tt_ports::{EventPage, RunJournal, StorageError};
use tt_testkit::contract::tool_event;
use tt_testkit::store_tests::append_tool_events;

use super::Fixture;

fn all_pages() -> EventPage {
    EventPage {
        limit: Some(500),
        ..EventPage::default()
    }
}

fn append_raw(path: &std::path::Path, bytes: &[u8]) {
    let mut file = OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(bytes).unwrap();
}

#[tokio::test]
async fn torn_last_line_is_repaired_on_reopen() {
    let mut fx = Fixture::new();
    let (run, dir) = fx.run(1).await;
    append_tool_events(fx.store.as_ref(), &run.id, 1..=3).await;
    let events_path = dir.join("events.jsonl");
    let intact_len = std::fs::metadata(&events_path).unwrap().len();
    // A crash in the middle of the fourth append.
    append_raw(&events_path, br#"{"seq":4,"id":"evt_torn","runId":"#);

    let store = fx.reopen();
    let before = store.read(&run.id, &all_pages()).await.unwrap();
    assert_eq!(before.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(store.last_seq(&run.id).await.unwrap(), 3);
    // Reading never writes: the torn tail is the next owner's to repair.
    assert!(std::fs::metadata(&events_path).unwrap().len() > intact_len);

    let next = store
        .append(tool_event(&run.id, 4, "inv_root"))
        .await
        .unwrap();
    assert_eq!(next.seq, 4);
    assert!(std::fs::read_to_string(&events_path).unwrap().len() > intact_len as usize);
    let after = store.read(&run.id, &all_pages()).await.unwrap();
    assert_eq!(
        after.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [1, 2, 3, 4]
    );
    assert!(after.iter().all(|e| e.id.as_str() != "evt_torn"));

    // Every line on disk is a whole event again.
    let text = std::fs::read_to_string(&events_path).unwrap();
    assert!(text.ends_with('\n'));
    for line in text.lines() {
        serde_json::from_str::<AgentRunEvent>(line).unwrap();
    }
}

#[tokio::test]
async fn complete_but_unparsable_last_line_is_repaired() {
    let mut fx = Fixture::new();
    let (run, dir) = fx.run(1).await;
    append_tool_events(fx.store.as_ref(), &run.id, 1..=1).await;
    append_raw(&dir.join("events.jsonl"), b"{\"seq\":2,\"id\":\n");

    let store = fx.reopen();
    assert_eq!(store.last_seq(&run.id).await.unwrap(), 1);
    let next = store
        .append(tool_event(&run.id, 2, "inv_root"))
        .await
        .unwrap();
    assert_eq!(next.seq, 2);
    let seqs: Vec<u64> = store
        .read(&run.id, &all_pages())
        .await
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(seqs, [1, 2]);
}

#[tokio::test]
async fn a_corrupt_line_in_the_middle_is_an_error_not_skipped() {
    let mut fx = Fixture::new();
    let (run, dir) = fx.run(1).await;
    append_tool_events(fx.store.as_ref(), &run.id, 1..=1).await;
    let events_path = dir.join("events.jsonl");
    append_raw(&events_path, b"not json at all\n");
    let good = serde_json::to_string(&tool_event(&run.id, 3, "inv_root").with_seq(3)).unwrap();
    append_raw(&events_path, format!("{good}\n").as_bytes());

    let store = fx.reopen();
    match store.read(&run.id, &all_pages()).await {
        Err(err @ StorageError::Corrupt { .. }) => {
            assert_eq!(err.code(), "agent.storage_corrupt");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    match store.append(tool_event(&run.id, 4, "inv_root")).await {
        Err(StorageError::Corrupt { .. }) => {}
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[tokio::test]
async fn middle_page_reads_a_small_part_of_a_large_journal() {
    let mut fx = Fixture::new();
    let (run, dir) = fx.run(1).await;
    append_tool_events(fx.store.as_ref(), &run.id, 1..=10_000).await;
    let file_len = std::fs::metadata(dir.join("events.jsonl")).unwrap().len();
    // Appends never read the journal back.
    assert_eq!(fx.store.journal_bytes_read(), 0);

    let cases = [
        EventPage {
            after_seq: Some(5_000),
            limit: Some(50),
            ..EventPage::default()
        },
        EventPage {
            before_seq: Some(6_000),
            limit: Some(50),
            ..EventPage::default()
        },
        EventPage {
            after_seq: Some(9_900),
            before_seq: Some(9_950),
            limit: Some(100),
            ..EventPage::default()
        },
    ];
    for page in cases {
        let start = fx.store.journal_bytes_read();
        let events = fx.store.read(&run.id, &page).await.unwrap();
        assert_eq!(
            events.len(),
            if page.before_seq == Some(9_950) {
                100
            } else {
                50
            }
        );
        let read = fx.store.journal_bytes_read() - start;
        assert!(
            read * 20 < file_len,
            "a middle page read {read} bytes of a {file_len}-byte journal"
        );
    }

    // A fresh process scans the whole file once, then pages stay small.
    let store = fx.reopen();
    assert_eq!(store.last_seq(&run.id).await.unwrap(), 10_000);
    assert!(store.journal_bytes_read() >= file_len);
    let start = store.journal_bytes_read();
    let events = store
        .read(
            &run.id,
            &EventPage {
                after_seq: Some(4_321),
                limit: Some(10),
                ..EventPage::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(events.first().map(|e| e.seq), Some(4_322));
    assert!((store.journal_bytes_read() - start) * 20 < file_len);
}

#[tokio::test]
async fn idle_runs_are_closed_and_reopened_transparently() {
    let fx = Fixture::new();
    let mut runs = Vec::new();
    for n in 1..=140 {
        let (run, _) = fx.run(n).await;
        fx.store
            .append(tool_event(&run.id, 1, "inv_root"))
            .await
            .unwrap();
        runs.push(run);
    }
    assert!(fx.store.open_run_count() <= 128);
    for run in &runs {
        let next = fx
            .store
            .append(tool_event(&run.id, 2, "inv_root"))
            .await
            .unwrap();
        assert_eq!(next.seq, 2, "run {}", run.id);
    }
}

#[tokio::test]
async fn record_lookups_of_a_run_read_from_its_files_read_each_line_about_once() {
    use tt_ports::{AgentRunRepository, RunDocument};
    let mut fx = Fixture::new();
    let (run, dir) = fx.run(1).await;
    let document = |n: u32| RunDocument::ToolResult {
        call_file_key: format!("call_{n:04}"),
    };
    for n in 0..200 {
        let value = serde_json::json!({"n": n, "text": "x".repeat(200)});
        fx.store
            .write_document(&run.id, &document(n), &value)
            .await
            .unwrap();
    }
    // Another process (a new store) reads the run from its files.
    let store = fx.reopen();
    let file_len = std::fs::metadata(dir.join("records.jsonl")).unwrap().len();
    let start = store.journal_bytes_read();
    for n in (0..200).rev() {
        let value = store.read_document(&run.id, &document(n)).await.unwrap();
        assert_eq!(value.unwrap()["n"], n);
    }
    assert_eq!(
        store.read_document(&run.id, &document(999)).await.unwrap(),
        None
    );
    // The records file is indexed once; each lookup then reads its own line (not the file).
    let read = store.journal_bytes_read() - start;
    assert!(
        read < 3 * file_len,
        "201 lookups read {read} bytes of a {file_len}-byte records file"
    );
}
