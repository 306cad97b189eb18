//! Contract cases for `RunJournal`: gapless seqs from 1, paging (`afterSeq`, `beforeSeq`,
//! limits and clamping) over a 10,000-event journal, the invocation filter with related ids, and
//! concurrent appends, appends of several events at once, and records written with their events
//! as one unit.

use serde_json::json;
use std::collections::BTreeSet;
use std::sync::Arc;
use tt_domain::event::{AgentRunEvent, EventScope, RecordedEvent, RunEventType};
use tt_domain::ids::{InvocationId, RunId};
use tt_domain::run::AgentRun;
use tt_domain::task::AgentTaskRecord;
use tt_ports::{EventPage, RunDocument, RunJournal, RunWrite, SerializedDocument};

use super::{
    StorageUnderTest, assert_already_exists, assert_not_found, at_once, create_sample_run,
    invocation, scoped_event, task, tool_event,
};

/// Appends events 1 to `count` of run `id` one by one (tool calls of the root agent), each
/// asserted to take the seq of its number.
async fn append_numbered(s: &StorageUnderTest, id: &RunId, count: u64) -> Vec<RecordedEvent> {
    let mut appended = Vec::new();
    for n in 1..=count {
        let stored = s
            .journal
            .append(tool_event(id, n, "inv_root"))
            .await
            .unwrap();
        assert_eq!(stored.seq, n);
        appended.push(stored);
    }
    appended
}

fn page(after: Option<u64>, before: Option<u64>, limit: Option<usize>) -> EventPage {
    EventPage {
        after_seq: after,
        before_seq: before,
        limit,
        invocation_id: None,
    }
}

fn filtered(invocation: &str, after: Option<u64>, before: Option<u64>, limit: usize) -> EventPage {
    EventPage {
        after_seq: after,
        before_seq: before,
        limit: Some(limit),
        invocation_id: Some(invocation.to_owned()),
    }
}

async fn seqs(journal: &dyn RunJournal, run_id: &RunId, page: &EventPage) -> Vec<u64> {
    journal
        .read(run_id, page)
        .await
        .unwrap()
        .into_iter()
        .map(|event| event.seq)
        .collect()
}

pub async fn seqs_start_at_one_and_are_gapless(s: StorageUnderTest) {
    let run = create_sample_run(&s, 1).await;
    assert_eq!(s.journal.last_seq(&run.id).await.unwrap(), 0);
    assert!(
        s.journal
            .read(&run.id, &EventPage::default())
            .await
            .unwrap()
            .is_empty()
    );
    let appended: Vec<_> = append_numbered(&s, &run.id, 5)
        .await
        .iter()
        .map(|stored| stored.to_event().unwrap())
        .collect();
    assert_eq!(s.journal.last_seq(&run.id).await.unwrap(), 5);
    let read = s
        .journal
        .read(&run.id, &EventPage::default())
        .await
        .unwrap();
    assert_eq!(read, appended);
    let first = &read[0];
    assert_eq!(first.event_type, "tool_call_started");
    assert_eq!(first.payload["n"], json!(1));
    assert_eq!(
        first.payload["eventScope"]["invocationId"],
        json!("inv_root")
    );
    assert_eq!(first.run_id, run.id);
}

pub async fn append_to_missing_run_is_not_found(s: StorageUnderTest) {
    let missing = RunId::from_raw("run_missing");
    assert_not_found(s.journal.append(tool_event(&missing, 1, "inv_root")).await);
    assert_not_found(s.journal.read(&missing, &EventPage::default()).await);
    assert_not_found(s.journal.last_seq(&missing).await);
}

/// `append_all` numbers its events one after the other, after the ones appended before and
/// interleaved with concurrent appends of one at a time, and reads back like single appends.
pub async fn append_all_numbers_in_order(s: StorageUnderTest) {
    let run = create_sample_run(&s, 1).await;
    assert!(s.journal.append_all(Vec::new()).await.unwrap().is_empty());
    s.journal
        .append(tool_event(&run.id, 1, "inv_root"))
        .await
        .unwrap();
    let batch = s
        .journal
        .append_all(
            (2..=4)
                .map(|n| tool_event(&run.id, n, "inv_root"))
                .collect(),
        )
        .await
        .unwrap();
    assert_eq!(
        batch.iter().map(|event| event.seq).collect::<Vec<_>>(),
        vec![2, 3, 4]
    );
    assert_eq!(batch[2].to_event().unwrap().payload["n"], json!(4));
    let journal = Arc::clone(&s.journal);
    let writers = at_once(8, |t| {
        let journal = Arc::clone(&journal);
        let run_id = run.id.clone();
        async move {
            let base = 5 + t * 3;
            if t % 2 == 0 {
                journal
                    .append_all(
                        (base..base + 3)
                            .map(|n| tool_event(&run_id, n, "inv_a"))
                            .collect(),
                    )
                    .await
                    .unwrap()
            } else {
                let mut one_by_one = Vec::new();
                for n in base..base + 3 {
                    one_by_one.push(
                        journal
                            .append(tool_event(&run_id, n, "inv_b"))
                            .await
                            .unwrap(),
                    );
                }
                one_by_one
            }
        }
    })
    .await;
    for stored in writers {
        assert!(
            stored.windows(2).all(|pair| pair[0].seq < pair[1].seq),
            "one writer's seqs must increase"
        );
    }
    let read = s
        .journal
        .read(&run.id, &page(None, None, Some(500)))
        .await
        .unwrap();
    assert_eq!(
        read.iter().map(|event| event.seq).collect::<Vec<_>>(),
        (1..=28).collect::<Vec<_>>()
    );
    assert_eq!(&read[1..4], &read_back(&batch)[..]);
    assert_eq!(s.journal.last_seq(&run.id).await.unwrap(), 28);
    let missing = RunId::from_raw("run_missing");
    assert_not_found(
        s.journal
            .append_all(vec![tool_event(&missing, 1, "inv_root")])
            .await,
    );
}

pub async fn pages_over_ten_thousand_events(s: StorageUnderTest) {
    let run = create_sample_run(&s, 1).await;
    append_numbered(&s, &run.id, 10_000).await;
    let j = s.journal.as_ref();
    let id = &run.id;
    let range = |from: u64, to: u64| (from..=to).collect::<Vec<u64>>();

    assert_eq!(j.last_seq(id).await.unwrap(), 10_000);
    // (afterSeq, beforeSeq, limit) and the seqs that page holds (`(1, 0)`: none).
    let cases = [
        // Neither bound: the first page of the default size.
        (None, None, None, (1, 100)),
        // afterSeq: the first `limit` above it.
        (Some(5_000), None, Some(10), (5_001, 5_010)),
        (Some(9_995), None, Some(10), (9_996, 10_000)),
        (Some(10_000), None, Some(10), (1, 0)),
        // beforeSeq: the last `limit` below it, ascending.
        (None, Some(5_000), Some(10), (4_990, 4_999)),
        (None, Some(3), Some(10), (1, 2)),
        (None, Some(1), Some(10), (1, 0)),
        (None, Some(10_001), Some(500), (9_501, 10_000)),
        (None, Some(50_000), Some(3), (9_998, 10_000)),
        // beforeSeq wins over afterSeq.
        (Some(10), Some(20), Some(5), (15, 19)),
        // Limits are clamped to 1..=500.
        (None, None, Some(0), (1, 1)),
        (Some(7_000), None, Some(10_000), (7_001, 7_500)),
    ];
    for (after, before, limit, (from, to)) in cases {
        assert_eq!(
            seqs(j, id, &page(after, before, limit)).await,
            range(from, to),
            "after {after:?}, before {before:?}, limit {limit:?}"
        );
    }
    // Pages chain without gaps or repeats.
    let mut after = 0;
    let mut seen = 0u64;
    loop {
        let got = seqs(j, id, &page(Some(after), None, Some(500))).await;
        let Some(&last) = got.last() else { break };
        assert_eq!(got, range(after + 1, last));
        seen += got.len() as u64;
        after = last;
    }
    assert_eq!(seen, 10_000);
}

/// Every page, with and without the invocation filter, of a journal appended in units of one
/// to five events (a store may keep a unit's events together, as PostgreSQL keeps them in one
/// row) holds what the whole journal holds in that range: no bound falls between two events
/// of a unit unnoticed.
pub async fn pages_across_units_agree_with_the_whole(s: StorageUnderTest) {
    let run = create_sample_run(&s, 1).await;
    let mut n = 0;
    for size in (1..=5u64).cycle().take(15) {
        let unit = (n + 1..=n + size)
            .map(|k| tool_event(&run.id, k, if k % 2 == 0 { "inv_a" } else { "inv_b" }))
            .collect();
        s.journal.append_all(unit).await.unwrap();
        n += size;
    }
    let j = s.journal.as_ref();
    let id = &run.id;
    let whole = seqs(j, id, &page(None, None, Some(500))).await;
    assert_eq!(whole, (1..=n).collect::<Vec<_>>());
    let of_a: Vec<u64> = whole.iter().copied().filter(|seq| seq % 2 == 0).collect();
    for limit in [1, 2, 3, 7] {
        for bound in 0..=n + 1 {
            let above = |all: &[u64]| -> Vec<u64> {
                all.iter()
                    .copied()
                    .filter(|seq| *seq > bound)
                    .take(limit)
                    .collect()
            };
            let below = |all: &[u64]| -> Vec<u64> {
                let under: Vec<u64> = all.iter().copied().filter(|seq| *seq < bound).collect();
                under[under.len().saturating_sub(limit)..].to_vec()
            };
            let what = format!("bound {bound}, limit {limit}");
            let after = page(Some(bound), None, Some(limit));
            assert_eq!(seqs(j, id, &after).await, above(&whole), "after {what}");
            let after = filtered("inv_a", Some(bound), None, limit);
            assert_eq!(
                seqs(j, id, &after).await,
                above(&of_a),
                "after, inv_a, {what}"
            );
            let before = page(None, Some(bound), Some(limit));
            assert_eq!(seqs(j, id, &before).await, below(&whole), "before {what}");
            let before = filtered("inv_a", None, Some(bound), limit);
            assert_eq!(
                seqs(j, id, &before).await,
                below(&of_a),
                "before, inv_a, {what}"
            );
        }
    }
}

pub async fn invocation_filter_includes_related_ids(s: StorageUnderTest) {
    let run = create_sample_run(&s, 1).await;
    // n % 3 == 0: a tool event of inv_a; n % 3 == 1: a tool event of inv_b;
    // n % 3 == 2: a task event of inv_root that names inv_a as the child (related).
    for n in 1..=300u64 {
        let event = match n % 3 {
            0 => tool_event(&run.id, n, "inv_a"),
            1 => tool_event(&run.id, n, "inv_b"),
            _ => scoped_event(
                &run.id,
                n,
                RunEventType::AgentTaskCompleted,
                json!({"taskId": "task_1", "parentInvocationId": "inv_root", "childInvocationId": "inv_a"}),
                Some(
                    EventScope::agent(&InvocationId::root())
                        .related([&InvocationId::from_raw("inv_a")]),
                ),
            ),
        };
        s.journal.append(event).await.unwrap();
    }
    let j = s.journal.as_ref();
    let id = &run.id;

    let b_first: Vec<u64> = (0..10).map(|k| 1 + 3 * k).collect();
    assert_eq!(
        seqs(j, id, &filtered("inv_b", None, None, 10)).await,
        b_first
    );
    assert_eq!(
        seqs(j, id, &filtered("inv_b", None, Some(100), 5)).await,
        vec![85, 88, 91, 94, 97]
    );
    assert_eq!(
        seqs(j, id, &filtered("inv_a", Some(290), None, 100)).await,
        vec![291, 293, 294, 296, 297, 299, 300]
    );
    assert_eq!(
        seqs(j, id, &filtered("inv_a", Some(10), Some(20), 3)).await,
        vec![15, 17, 18]
    );
    let a_all = seqs(j, id, &filtered("inv_a", None, None, 500)).await;
    assert_eq!(a_all.len(), 200);
    assert!(a_all.iter().all(|seq| seq % 3 != 1));
    let root_all = seqs(j, id, &filtered("inv_root", None, None, 500)).await;
    assert_eq!(root_all.len(), 100);
    assert!(root_all.iter().all(|seq| seq % 3 == 2));
    assert!(
        seqs(j, id, &filtered("inv_none", None, None, 500))
            .await
            .is_empty()
    );
    assert!(
        seqs(j, id, &filtered("inv_none", None, Some(300), 500))
            .await
            .is_empty()
    );
}

pub async fn concurrent_appends_are_gapless(s: StorageUnderTest) {
    const TASKS: u64 = 50;
    const PER_TASK: u64 = 20;
    let run = create_sample_run(&s, 1).await;
    let journal = Arc::clone(&s.journal);
    let writers = at_once(TASKS, |t| {
        let journal = Arc::clone(&journal);
        let run_id = run.id.clone();
        async move {
            let mut seqs = Vec::new();
            for k in 0..PER_TASK {
                let n = t * PER_TASK + k + 1;
                let stored = journal
                    .append(tool_event(&run_id, n, &format!("inv_{t}")))
                    .await
                    .unwrap();
                seqs.push((stored.seq, stored.id.to_string()));
            }
            seqs
        }
    })
    .await;
    let mut all = Vec::new();
    for seqs in writers {
        assert!(
            seqs.windows(2).all(|pair| pair[0].0 < pair[1].0),
            "one writer's seqs must increase"
        );
        all.extend(seqs);
    }
    all.sort();
    let total = TASKS * PER_TASK;
    assert_eq!(
        all.iter().map(|(seq, _)| *seq).collect::<Vec<_>>(),
        (1..=total).collect::<Vec<_>>()
    );
    assert_eq!(journal.last_seq(&run.id).await.unwrap(), total);

    let mut stored = Vec::new();
    for after in [0, 500] {
        stored.extend(
            journal
                .read(&run.id, &page(Some(after), None, Some(500)))
                .await
                .unwrap()
                .into_iter()
                .map(|event| (event.seq, event.id.to_string())),
        );
    }
    assert_eq!(stored, all);
    let ids: BTreeSet<&String> = stored.iter().map(|(_, id)| id).collect();
    assert_eq!(ids.len() as u64, total);
}

fn args_write(key: &str, n: u64) -> RunWrite {
    RunWrite::Document {
        document: RunDocument::ToolArgs {
            call_file_key: key.to_owned(),
        },
        body: SerializedDocument::new(&json!({"callId": key, "n": n, "text": "héllo"})).unwrap(),
    }
}

/// `commit` writes records and events of one run as one unit: each record reads back as its
/// own port method wrote it, the events get the next seqs in order (also among concurrent
/// units and appends), and a unit that fails (a task id that is taken) wrote nothing after the
/// write that failed, leaves the journal gapless and does not fail the units beside it.
pub async fn commit_writes_records_with_their_events(s: StorageUnderTest) {
    let run = create_sample_run(&s, 1).await;
    assert!(
        s.journal
            .commit(&run.id, Vec::new())
            .await
            .unwrap()
            .is_empty()
    );
    let task_a = a_unit_writes_its_records_and_events(&s, &run).await;
    let after_failure = a_failed_unit_stops_at_its_failure(&s, &run, &task_a).await;
    units_side_by_side_stay_gapless(&s, &run, &task_a, after_failure).await;

    let missing = RunId::from_raw("run_missing");
    assert_not_found(
        s.journal
            .commit(
                &missing,
                vec![RunWrite::Event(tool_event(&missing, 1, "inv_root"))],
            )
            .await,
    );
}

/// [`commit_writes_records_with_their_events`]: one unit after a single append; returns the
/// task it wrote.
async fn a_unit_writes_its_records_and_events(
    s: &StorageUnderTest,
    run: &AgentRun,
) -> AgentTaskRecord {
    let id = &run.id;
    s.journal
        .append(tool_event(id, 1, "inv_root"))
        .await
        .unwrap();
    let inv_a = invocation(run, "inv_a", 3);
    let task_a = task(run, "task_a", 3);
    let stored = s
        .journal
        .commit(
            id,
            vec![
                args_write("call_one", 1),
                RunWrite::Event(tool_event(id, 2, "inv_root")),
                RunWrite::Invocation(inv_a.clone()),
                RunWrite::Event(tool_event(id, 3, "inv_root")),
                RunWrite::Task(task_a.clone()),
                RunWrite::Event(tool_event(id, 4, "inv_a")),
                RunWrite::Event(tool_event(id, 5, "inv_a")),
            ],
        )
        .await
        .unwrap();
    assert_eq!(
        stored.iter().map(|event| event.seq).collect::<Vec<_>>(),
        vec![2, 3, 4, 5]
    );
    assert_eq!(stored[3].to_event().unwrap().payload["n"], json!(5));
    let document = s
        .runs
        .read_document(
            id,
            &RunDocument::ToolArgs {
                call_file_key: "call_one".to_owned(),
            },
        )
        .await
        .unwrap();
    assert_eq!(
        document,
        Some(json!({"callId": "call_one", "n": 1, "text": "héllo"}))
    );
    assert_eq!(
        s.invocations.load_invocation(id, &inv_a.id).await.unwrap(),
        inv_a
    );
    assert_eq!(
        s.invocations.load_task(id, &task_a.id).await.unwrap(),
        task_a
    );
    let read = s
        .journal
        .read(id, &page(Some(1), None, None))
        .await
        .unwrap();
    assert_eq!(read, read_back(&stored));

    task_a
}

/// [`commit_writes_records_with_their_events`]: a unit whose task id is taken; returns the
/// last seq after it.
async fn a_failed_unit_stops_at_its_failure(
    s: &StorageUnderTest,
    run: &AgentRun,
    task_a: &AgentTaskRecord,
) -> u64 {
    let id = &run.id;
    // A task id that is taken: the unit fails and nothing after the task is written.
    let failed = s
        .journal
        .commit(
            id,
            vec![
                RunWrite::Event(tool_event(id, 6, "inv_root")),
                RunWrite::Task(task_a.clone()),
                RunWrite::Event(tool_event(id, 7, "inv_root")),
            ],
        )
        .await;
    assert_already_exists(failed);
    let after_failure = s.journal.last_seq(id).await.unwrap();
    assert!(after_failure == 5 || after_failure == 6, "{after_failure}");
    let tail = s
        .journal
        .read(id, &page(Some(5), None, None))
        .await
        .unwrap();
    assert!(tail.iter().all(|event| event.payload["n"] != json!(7)));
    after_failure
}

/// [`commit_writes_records_with_their_events`]: units side by side, one of them failing, and
/// single appends between them, after the last seq `after_failure`.
async fn units_side_by_side_stay_gapless(
    s: &StorageUnderTest,
    run: &AgentRun,
    task_a: &AgentTaskRecord,
    after_failure: u64,
) {
    let id = &run.id;
    // Units side by side, one of them failing, and single appends between them.
    let mut handles = Vec::new();
    for t in 0..8u64 {
        let journal = Arc::clone(&s.journal);
        let run = run.clone();
        let taken = task_a.clone();
        handles.push(tokio::spawn(async move {
            let base = 100 + t * 10;
            let id = &run.id;
            match t {
                3 => journal
                    .commit(
                        id,
                        vec![
                            RunWrite::Task(taken),
                            RunWrite::Event(tool_event(id, base, "inv_b")),
                        ],
                    )
                    .await
                    .map(|_| Vec::new()),
                t if t % 2 == 0 => {
                    journal
                        .commit(
                            id,
                            vec![
                                args_write(&format!("call_{t}"), t),
                                RunWrite::Task(task(&run, &format!("task_{t}"), 4)),
                                RunWrite::Event(tool_event(id, base, "inv_a")),
                                RunWrite::Event(tool_event(id, base + 1, "inv_a")),
                            ],
                        )
                        .await
                }
                _ => journal
                    .append(tool_event(id, base, "inv_b"))
                    .await
                    .map(|event| vec![event]),
            }
        }));
    }
    let mut new_events = 0;
    for (t, handle) in handles.into_iter().enumerate() {
        match (t, handle.await.unwrap()) {
            (3, outcome) => assert_already_exists(outcome),
            (_, outcome) => {
                let stored = outcome.unwrap();
                assert!(stored.windows(2).all(|pair| pair[1].seq == pair[0].seq + 1));
                new_events += stored.len();
            }
        }
    }
    let last = s.journal.last_seq(id).await.unwrap();
    assert_eq!(last, after_failure + u64::try_from(new_events).unwrap());
    let all = s
        .journal
        .read(id, &page(None, None, Some(500)))
        .await
        .unwrap();
    assert_eq!(
        all.iter().map(|event| event.seq).collect::<Vec<_>>(),
        (1..=last).collect::<Vec<_>>()
    );
    for t in [0u64, 2, 4, 6] {
        let task_id = tt_domain::ids::TaskId::from_raw(format!("task_{t}"));
        s.invocations.load_task(id, &task_id).await.unwrap();
    }
}

/// Appended events as a read gives them back.
fn read_back(events: &[RecordedEvent]) -> Vec<AgentRunEvent> {
    events
        .iter()
        .map(|event| event.to_event().unwrap())
        .collect()
}
