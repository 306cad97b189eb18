//! The committer's own tests: batches numbered, files written and tokens read back, against
//! a throwaway server (`cluster::TestCluster`).

use super::*;
use crate::PostgresStore;
use crate::cluster::TestCluster;
use tt_ports::{AgentRunRepository, RunJournal};
use tt_testkit::contract::{manifest_for, sample_run};

fn event(run_id: &str) -> Pending {
    let (reply, _) = oneshot::channel();
    Pending {
        run_id: run_id.to_owned(),
        writes: vec![Write::Event {
            body: "{}".to_owned(),
            status: None,
        }],
        reply,
        chain: None,
    }
}

fn tokens_of(store: &PostgresStore) -> Tokens {
    Tokens {
        owner_id: store.ownership.owner_id.clone(),
        next: 0,
        acknowledged: Vec::new(),
    }
}

fn seqs(answers: &[StorageResult<Vec<Answer>>]) -> Vec<u64> {
    answers
        .iter()
        .flat_map(|answer| answer.as_ref().unwrap().iter().map(|a| a.number))
        .collect()
}

fn unit(run_id: &str, writes: Vec<Write>) -> Pending {
    let (reply, _) = oneshot::channel();
    Pending {
        run_id: run_id.to_owned(),
        writes,
        reply,
        chain: None,
    }
}

fn numbered(body: &str, status: Option<&str>) -> Write {
    Write::Event {
        body: body.to_owned(),
        status: status.map(str::to_owned),
    }
}

fn document(body: &str) -> Write {
    Write::Document {
        path: "output/note.md".to_owned(),
        body: body.to_owned(),
    }
}

/// One batch of several runs' units: each run's events numbered in queue order from its
/// head, a unit's events in one row, the last write of a document kept, the last stated
/// status stored, and a run this store does not hold left out alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_numbers_each_run_in_queue_order() {
    let cluster = tokio::task::block_in_place(|| TestCluster::start(false)).unwrap();
    let url = cluster.create_database("tt_unit_batch").await.unwrap();
    let store = PostgresStore::open(&url).await.unwrap();
    let (a, b) = (sample_run(1), sample_run(2));
    for run in [&a, &b] {
        store.create_run(run, &manifest_for(run)).await.unwrap();
    }
    let (a_id, b_id) = (a.id.as_str(), b.id.as_str());
    let batch = [
        unit(
            a_id,
            vec![
                numbered("{\"n\":1}", None),
                numbered("{\"n\":2}", Some("running")),
            ],
        ),
        unit(b_id, vec![document("first"), numbered("{\"n\":1}", None)]),
        unit(a_id, vec![numbered("{\"n\":3}", None)]),
        unit(b_id, vec![document("second")]),
        unit("run_nobody_holds", vec![numbered("{}", None)]),
    ];
    let mut tokens = tokens_of(&store);
    let mut client = None;
    let committed = commit_batch(
        &mut client,
        &url,
        &store.ownership,
        &batch,
        "t1",
        &mut tokens,
        false,
    );
    let Ok(answers) = committed.await else {
        panic!("the batch committed");
    };
    let numbers: Vec<Option<Vec<u64>>> = answers
        .iter()
        .map(|answer| {
            answer
                .as_ref()
                .ok()
                .map(|a| a.iter().map(|a| a.number).collect())
        })
        .collect();
    assert_eq!(
        numbers,
        [
            Some(vec![1, 2]),
            Some(vec![0, 1]),
            Some(vec![3]),
            Some(vec![0]),
            None
        ]
    );
    assert!(matches!(answers[4], Err(StorageError::NotFound { .. })));
    let (conn, _) = client.expect("the committer's connection");
    let rows = conn
        .query(
            "SELECT seq, span, body FROM events WHERE run_id = $1 ORDER BY seq",
            &[&a_id],
        )
        .await
        .unwrap();
    let rows: Vec<(i64, i32, String)> = rows
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2)))
        .collect();
    assert_eq!(
        rows,
        [
            (2, 2, "[{\"n\":1},{\"n\":2}]".to_owned()),
            (3, 1, "{\"n\":3}".to_owned())
        ]
    );
    let status: Option<String> = conn
        .query_one(
            "SELECT journal_status FROM runs WHERE run_id = $1",
            &[&a_id],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(status.as_deref(), Some("running"));
    let kept: String = conn
        .query_one(
            "SELECT body FROM run_documents WHERE run_id = $1 AND path = 'output/note.md'",
            &[&b_id],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(kept, "second");
    assert_eq!(store.last_seq(&b.id).await.unwrap(), 1);
}

fn file(path: &str, above: &[&str], content: &str, append: bool, guard: &'static str) -> Write {
    Write::File(FileWrite {
        path: path.to_owned(),
        above: serde_json::to_string(above).unwrap(),
        content: content.to_owned(),
        sha256: tt_domain::text::sha256_hex(content.as_bytes()),
        append,
        guard,
        expected: None,
    })
}

/// The outcome column and detail of each write's answer.
fn outcomes(answers: &[StorageResult<Vec<Answer>>]) -> Vec<(String, Option<String>)> {
    answers
        .iter()
        .map(|answer| {
            let detail = answer.as_ref().unwrap()[0].detail.as_deref().unwrap();
            let row: (
                String,
                Option<String>,
                Option<String>,
                Option<String>,
                Option<i64>,
            ) = serde_json::from_str(detail).unwrap();
            (row.0, row.1)
        })
        .collect()
}

/// Workspace writes in one batch, one after another in queue order: a path written twice
/// sees its first write (the append joins it), and each write's checks and outcome are
/// `tt_put_file`'s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_writes_files_as_if_one_after_another() {
    let cluster = tokio::task::block_in_place(|| TestCluster::start(false)).unwrap();
    let url = cluster.create_database("tt_unit_files").await.unwrap();
    let store = PostgresStore::open(&url).await.unwrap();
    let run = sample_run(1);
    store.create_run(&run, &manifest_for(&run)).await.unwrap();
    let id = run.id.as_str();
    let mut tokens = tokens_of(&store);
    let mut client = None;
    let before = [
        unit(id, vec![file("scratch/a.md", &[], "A", false, "none")]),
        unit(
            id,
            vec![file(
                "scratch/dir/b.md",
                &["scratch/dir"],
                "B",
                false,
                "none",
            )],
        ),
    ];
    let committed = commit_batch(
        &mut client,
        &url,
        &store.ownership,
        &before,
        "t1",
        &mut tokens,
        false,
    );
    let Ok(answers) = committed.await else {
        panic!("the first batch committed");
    };
    assert_eq!(
        outcomes(&answers),
        [("written".to_owned(), None), ("written".to_owned(), None)]
    );
    let batch = [
        unit(id, vec![file("scratch/n.md", &[], "one", false, "none")]),
        unit(id, vec![file("scratch/n.md", &[], "+two", true, "none")]),
        unit(
            id,
            vec![file(
                "scratch/a.md/c.md",
                &["scratch/a.md"],
                "C",
                false,
                "none",
            )],
        ),
        unit(id, vec![file("scratch/dir", &[], "D", false, "none")]),
        unit(
            id,
            vec![file("scratch/a.md", &[], "A2", false, "must_not_exist")],
        ),
        unit(id, vec![file("scratch/a.md", &[], "+more", true, "none")]),
    ];
    let committed = commit_batch(
        &mut client,
        &url,
        &store.ownership,
        &batch,
        "t2",
        &mut tokens,
        false,
    );
    let Ok(answers) = committed.await else {
        panic!("the second batch committed");
    };
    let written = |detail: Option<&str>| ("written".to_owned(), detail.map(str::to_owned));
    assert_eq!(
        outcomes(&answers),
        [
            written(None),
            written(None),
            (
                "not_a_directory".to_owned(),
                Some("scratch/a.md".to_owned())
            ),
            ("is_directory".to_owned(), None),
            ("refused".to_owned(), None),
            written(None),
        ]
    );
    let (conn, _) = client.expect("the committer's connection");
    let content = |path: &'static str| {
        let conn = &conn;
        async move {
            let row = conn
                .query_one(
                    "SELECT content, sha256 FROM tt_files WHERE run_id = $1 AND path = $2",
                    &[&id, &path],
                )
                .await
                .unwrap();
            let (content, sha): (String, String) = (row.get(0), row.get(1));
            assert_eq!(sha, tt_domain::text::sha256_hex(content.as_bytes()));
            content
        }
    };
    assert_eq!(content("scratch/n.md").await, "one+two");
    assert_eq!(content("scratch/a.md").await, "A+more");
}

/// A batch tried again under its token after its connection was lost is read back when
/// its first try had committed, and written when it had not: never twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_tried_again_is_written_once() {
    let cluster = tokio::task::block_in_place(|| TestCluster::start(false)).unwrap();
    let url = cluster.create_database("tt_unit_tokens").await.unwrap();
    let store = PostgresStore::open(&url).await.unwrap();
    let run = sample_run(1);
    store.create_run(&run, &manifest_for(&run)).await.unwrap();
    let batch = [event(run.id.as_str())];
    let mut tokens = tokens_of(&store);
    let (ownership, mut client) = (&store.ownership, None);
    let first = commit_batch(
        &mut client,
        &url,
        ownership,
        &batch,
        "t1",
        &mut tokens,
        false,
    );
    let Ok(first) = first.await else {
        panic!("the first try committed");
    };
    assert_eq!(seqs(&first), [1]);
    // As if its answer had been lost: the same token again, on a new connection.
    let mut fresh = None;
    let again = commit_batch(&mut fresh, &url, ownership, &batch, "t1", &mut tokens, true);
    let Ok(again) = again.await else {
        panic!("read back");
    };
    assert_eq!(seqs(&again), [1]);
    assert_eq!(store.last_seq(&run.id).await.unwrap(), 1);
    // A try that had not committed is written on its retry.
    let mut fresh = None;
    let lost = commit_batch(&mut fresh, &url, ownership, &batch, "t2", &mut tokens, true);
    let Ok(lost) = lost.await else {
        panic!("written");
    };
    assert_eq!(seqs(&lost), [2]);
    assert_eq!(store.last_seq(&run.id).await.unwrap(), 2);
}
