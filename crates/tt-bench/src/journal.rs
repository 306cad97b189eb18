//! `tt-bench journal`: the cost of `RunJournal::append` and of 100-event page reads on the
//! userdata store as one run's journal grows to a million events, next to the floor of a raw
//! `write` of the same bytes to a plain file.

use anyhow::{Context, Result, anyhow, ensure};
use serde_json::{Value, json};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use tt_domain::event::{AgentRunEvent, EventLevel, NewRunEvent, RunEventType};
use tt_domain::ids::{EventId, RunId};
use tt_domain::run::{AgentRun, ConversationKind, Presentation};
use tt_domain::time::Timestamp;
use tt_domain::workspace::{ManifestRoot, RunManifest, WorkspaceRoot};
use tt_ports::{AgentRunRepository, EventPage, RunJournal};
use tt_runtime::UserDataStore;

/// Appends timed per window.
pub(crate) const WINDOW: u64 = 1_000;
/// Events per page read.
pub(crate) const PAGE_LIMIT: usize = 100;
/// Reads timed per page position.
pub(crate) const PAGE_REPEATS: u32 = 200;
/// Marks (events already in the file) at which an append window starts, besides `--events`.
const GROWTH_MARKS: [u64; 3] = [1_000, 100_000, 1_000_000];
/// 2026-01-01T00:00:00Z; event timestamps advance one millisecond per event.
const BASE_MILLIS: i64 = 1_767_225_600_000;
const RUN_TOKEN: &str = "5be1c0de5be1c0de5be1c0de5be1c0de";
/// The invocation every bench event is scoped to.
const SCOPE_INVOCATION: &str = "inv_root";

/// Append cost with `mark` events already in the file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AppendWindow {
    pub mark: u64,
    pub journal_us: f64,
    pub raw_us: f64,
}

/// Cost of one page position.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PageRead {
    pub label: String,
    pub us: f64,
    pub bytes_read: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct JournalReport {
    pub total_events: u64,
    pub file_bytes: u64,
    pub fill_s: f64,
    pub mean_append_us: f64,
    pub mean_raw_us: f64,
    pub windows: Vec<AppendWindow>,
    pub pages: Vec<PageRead>,
}

/// The marks at which append windows start: the growth marks up to `events`, and `events`.
pub(crate) fn window_marks(events: u64) -> Vec<u64> {
    let mut marks: Vec<u64> = GROWTH_MARKS
        .into_iter()
        .filter(|mark| *mark <= events)
        .collect();
    if marks.last() != Some(&events) {
        marks.push(events);
    }
    marks
}

/// A realistic journal event (about 300 bytes as a line, like the runtime's own tool and model
/// events), varied by `seq` across four event types.
pub(crate) fn bench_event(run_id: &RunId, seq: u64) -> NewRunEvent {
    let round = seq % 5 + 1;
    let call = format!("call_w{round}");
    let scope = json!({ "invocationId": SCOPE_INVOCATION });
    let (event_type, payload): (RunEventType, Value) = match seq % 4 {
        0 => (
            RunEventType::ToolCallCompleted,
            json!({
                "round": round, "callId": call, "name": "workspace.write_file", "isError": false,
                "eventScope": scope,
            }),
        ),
        1 => (
            RunEventType::ModelCompleted,
            json!({
                "round": round, "toolCallCount": 1, "finishReason": "tool_calls", "elapsedMs": seq % 7,
                "eventScope": scope,
            }),
        ),
        2 => (
            RunEventType::WorkspaceFileWritten,
            json!({
                "path": format!("scratch/child-{:04}/{round}.md", seq % 10_000), "bytes": 1024,
                "eventScope": scope,
            }),
        ),
        _ => (
            RunEventType::ToolCallRequested,
            json!({ "round": round, "callId": call, "name": "workspace.write_file", "eventScope": scope }),
        ),
    };
    NewRunEvent {
        id: EventId::from_raw(format!(
            "evt_{:016x}{seq:016x}",
            seq.wrapping_mul(0x9e37_79b9_7f4a_7c15)
        )),
        run_id: run_id.clone(),
        timestamp: Timestamp::from_unix_millis(BASE_MILLIS + i64::try_from(seq).unwrap_or(0)),
        level: EventLevel::Info,
        event_type,
        payload: payload.into(),
    }
}

/// The JSON line the journal stores for `bench_event(run_id, seq)`.
pub(crate) fn bench_line(run_id: &RunId, seq: u64) -> Result<Vec<u8>> {
    let mut line = serde_json::to_vec(&bench_event(run_id, seq).with_seq(seq))
        .context("serializing a bench event")?;
    line.push(b'\n');
    Ok(line)
}

/// Appends `events` + one window of events and reads pages; `data_dir` (or a temporary dir) must
/// be fresh.
pub(crate) async fn run(events: u64, data_dir: Option<PathBuf>) -> Result<JournalReport> {
    ensure!(events >= WINDOW, "--events must be at least {WINDOW}");
    let (_temp, dir) = match data_dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            (None, dir)
        }
        None => {
            let (temp, dir) = crate::fanout::temporary_dir("tt-bench-journal-")?;
            (Some(temp), dir)
        }
    };
    let store = UserDataStore::open(dir.join("data"))
        .map_err(|err| anyhow!("opening the userdata store: {err}"))?;
    let run = create_run(&store).await?;
    let total = events + WINDOW;
    let marks = window_marks(events);

    let fill_started = Instant::now();
    let journal_ns = append_all(&store, &run.id, total).await?;
    let fill_s = fill_started.elapsed().as_secs_f64();
    let last = store
        .last_seq(&run.id)
        .await
        .map_err(|err| anyhow!("last_seq: {err}"))?;
    ensure!(
        last == total,
        "the journal's last seq is {last}, expected {total}"
    );
    let events_path = store
        .run_directory(&run.id)
        .await
        .map_err(|err| anyhow!("run directory: {err}"))?
        .join("events.jsonl");
    let file_bytes = std::fs::metadata(&events_path)
        .with_context(|| format!("reading {}", events_path.display()))?
        .len();

    let raw_ns = raw_writes(&dir.join("raw-floor.jsonl"), &run.id, total)?;
    let windows = marks
        .iter()
        .map(|&mark| AppendWindow {
            mark,
            journal_us: window_mean_us(&journal_ns, mark),
            raw_us: window_mean_us(&raw_ns, mark),
        })
        .collect();

    let positions = [
        ("after seq 10".to_owned(), after(10)),
        (
            format!("middle (after seq {})", total / 2),
            after(total / 2),
        ),
        (
            "last page".to_owned(),
            EventPage {
                before_seq: Some(total + 1),
                limit: Some(PAGE_LIMIT),
                ..EventPage::default()
            },
        ),
    ];
    let expected_first = [11, total / 2 + 1, total + 1 - PAGE_LIMIT as u64];
    let mut pages = Vec::new();
    for ((label, page), first) in positions.into_iter().zip(expected_first) {
        pages.push(time_page(&store, &run.id, label, &page, first).await?);
    }
    Ok(JournalReport {
        total_events: total,
        file_bytes,
        fill_s,
        mean_append_us: mean_us(&journal_ns),
        mean_raw_us: mean_us(&raw_ns),
        windows,
        pages,
    })
}

fn after(seq: u64) -> EventPage {
    EventPage {
        after_seq: Some(seq),
        limit: Some(PAGE_LIMIT),
        ..EventPage::default()
    }
}

async fn create_run(store: &Arc<UserDataStore>) -> Result<AgentRun> {
    let now = Timestamp::from_unix_millis(BASE_MILLIS);
    let run = AgentRun {
        chat_ref: json!({ "kind": "character", "characterId": "bench", "fileName": "bench" }),
        generation_type: json!("normal"),
        presentation: Presentation::Background,
        ..AgentRun::new(
            RunId::generate(RUN_TOKEN),
            ConversationKind::Character,
            "tt-bench-journal",
            now,
        )
    };
    let manifest = RunManifest {
        schema_version: 1,
        run_id: run.id.clone(),
        workspace_id: run.workspace_id.clone(),
        stable_chat_id: run.stable_chat_id.clone(),
        roots: WorkspaceRoot::ALL
            .into_iter()
            .map(|root| ManifestRoot::new(root, true, true))
            .collect(),
        created_at: now,
    };
    store
        .create_run(&run, &manifest)
        .await
        .map_err(|err| anyhow!("create_run: {err}"))?;
    Ok(run)
}

/// Appends seqs 1..=total through the port; returns each append's duration in nanoseconds
/// (index i = i events already in the file).
async fn append_all(store: &Arc<UserDataStore>, run_id: &RunId, total: u64) -> Result<Vec<u64>> {
    let mut durations = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    for seq in 1..=total {
        let event = bench_event(run_id, seq);
        let started = Instant::now();
        let stored = store
            .append(event)
            .await
            .map_err(|err| anyhow!("append of event {seq}: {err}"))?;
        durations.push(nanos(started));
        ensure!(
            stored.seq == seq,
            "append returned seq {}, expected {seq}",
            stored.seq
        );
    }
    Ok(durations)
}

/// The floor: one `write` per line of the same bytes to a plain append-only file.
fn raw_writes(path: &Path, run_id: &RunId, total: u64) -> Result<Vec<u64>> {
    let mut file = OpenOptions::new()
        .create_new(true)
        .append(true)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    let mut durations = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    for seq in 1..=total {
        let line = bench_line(run_id, seq)?;
        let started = Instant::now();
        file.write_all(&line)
            .with_context(|| format!("writing {}", path.display()))?;
        durations.push(nanos(started));
    }
    Ok(durations)
}

async fn time_page(
    store: &Arc<UserDataStore>,
    run_id: &RunId,
    label: String,
    page: &EventPage,
    expected_first: u64,
) -> Result<PageRead> {
    // One untimed read first, so every position is measured warm (the first position would
    // otherwise also pay for faulting in the reader path).
    check_page(
        &read_page(store, run_id, page, &label).await?,
        &label,
        expected_first,
    )?;
    let mut total_ns: u64 = 0;
    let bytes_before = store.journal_bytes_read();
    for _ in 0..PAGE_REPEATS {
        let started = Instant::now();
        let events = read_page(store, run_id, page, &label).await?;
        total_ns += nanos(started);
        check_page(&events, &label, expected_first)?;
    }
    Ok(PageRead {
        label,
        us: total_ns as f64 / f64::from(PAGE_REPEATS) / 1_000.0,
        bytes_read: store.journal_bytes_read().saturating_sub(bytes_before)
            / u64::from(PAGE_REPEATS),
    })
}

async fn read_page(
    store: &Arc<UserDataStore>,
    run_id: &RunId,
    page: &EventPage,
    label: &str,
) -> Result<Vec<AgentRunEvent>> {
    store
        .read(run_id, page)
        .await
        .map_err(|err| anyhow!("page read ({label}): {err}"))
}

/// A page must hold exactly the [`PAGE_LIMIT`] consecutive seqs from `expected_first`.
fn check_page(events: &[AgentRunEvent], label: &str, expected_first: u64) -> Result<()> {
    let seqs: Vec<u64> = events.iter().map(|event| event.seq).collect();
    let expected: Vec<u64> = (expected_first..expected_first + PAGE_LIMIT as u64).collect();
    ensure!(
        seqs == expected,
        "page read ({label}) returned seqs {:?}..{:?} ({} events), expected {expected_first}..{}",
        seqs.first(),
        seqs.last(),
        seqs.len(),
        expected_first + PAGE_LIMIT as u64 - 1
    );
    Ok(())
}

fn nanos(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// Mean µs of the [`WINDOW`] durations starting at index `mark`.
pub(crate) fn window_mean_us(durations_ns: &[u64], mark: u64) -> f64 {
    let start = usize::try_from(mark).unwrap_or(usize::MAX);
    let end = start.saturating_add(usize::try_from(WINDOW).unwrap_or(0));
    durations_ns.get(start..end).map_or(f64::NAN, mean_us)
}

fn mean_us(durations_ns: &[u64]) -> f64 {
    if durations_ns.is_empty() {
        return f64::NAN;
    }
    durations_ns.iter().sum::<u64>() as f64 / durations_ns.len() as f64 / 1_000.0
}

/// The report as a small text table.
pub(crate) fn render(report: &JournalReport) -> String {
    let mut out = String::new();
    let avg_line = report.file_bytes as f64 / report.total_events as f64;
    out.push_str(&format!(
        "journal: {} events appended through RunJournal::append in {:.1} s; events.jsonl {:.1} MiB, {:.0} bytes per line\n\n",
        group(report.total_events),
        report.fill_s,
        report.file_bytes as f64 / (1024.0 * 1024.0),
        avg_line
    ));
    out.push_str(&format!(
        "append, mean of {WINDOW} appends    µs/append   raw write µs (floor)\n"
    ));
    for window in &report.windows {
        out.push_str(&format!(
            "  {:>9} events in file     {:>9.2}   {:>9.2}\n",
            group(window.mark),
            window.journal_us,
            window.raw_us
        ));
    }
    out.push_str(&format!(
        "  all {:>9} appends        {:>9.2}   {:>9.2}\n\n",
        group(report.total_events),
        report.mean_append_us,
        report.mean_raw_us
    ));
    out.push_str(&format!(
        "page read ({PAGE_LIMIT} events), mean of {PAGE_REPEATS}   µs/page   journal bytes read/page\n"
    ));
    for page in &report.pages {
        out.push_str(&format!(
            "  {:<32} {:>9.1}   {:>9}\n",
            page.label,
            page.us,
            group(page.bytes_read)
        ));
    }
    out
}

/// `1234567` as `1,234,567`.
pub(crate) fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (index, c) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_events_are_about_300_bytes_and_valid_events() {
        let run_id = RunId::generate(RUN_TOKEN);
        for seq in [1, 2, 3, 4, 999_999, 1_000_000, 1_001_000] {
            let line = bench_line(&run_id, seq).unwrap();
            assert!(
                (270..=330).contains(&line.len()),
                "seq {seq}: {} bytes",
                line.len()
            );
            let back: tt_domain::event::AgentRunEvent =
                serde_json::from_slice(line.strip_suffix(b"\n").unwrap()).unwrap();
            assert_eq!(back.seq, seq);
            assert_eq!(back.scope_invocation_id(), Some(SCOPE_INVOCATION));
        }
        assert_ne!(
            bench_event(&run_id, 5).id,
            bench_event(&run_id, 6).id,
            "event ids are distinct"
        );
    }

    #[test]
    fn windows_start_at_the_growth_marks_and_the_end() {
        assert_eq!(window_marks(1_000_000), vec![1_000, 100_000, 1_000_000]);
        assert_eq!(window_marks(10_000), vec![1_000, 10_000]);
        assert_eq!(window_marks(1_000), vec![1_000]);
        assert_eq!(
            window_marks(2_000_000),
            vec![1_000, 100_000, 1_000_000, 2_000_000]
        );
    }

    #[test]
    fn window_means_cover_exactly_one_window() {
        let mut durations = vec![1_000_u64; 3_000];
        durations[1_000..2_000].fill(3_000);
        assert_eq!(window_mean_us(&durations, 0), 1.0);
        assert_eq!(window_mean_us(&durations, 1_000), 3.0);
        assert_eq!(window_mean_us(&durations, 500), 2.0);
        assert!(window_mean_us(&durations, 2_500).is_nan());
        assert!(mean_us(&[]).is_nan());
    }

    #[test]
    fn pages_must_hold_exactly_the_expected_seqs() {
        let run_id = RunId::generate(RUN_TOKEN);
        let page = |seqs: std::ops::Range<u64>| -> Vec<AgentRunEvent> {
            seqs.map(|seq| {
                bench_event(&run_id, seq)
                    .with_seq(seq)
                    .into_event()
                    .unwrap()
            })
            .collect()
        };
        check_page(&page(11..111), "after 10", 11).unwrap();
        assert!(check_page(&page(11..110), "short", 11).is_err());
        assert!(check_page(&page(12..112), "shifted", 11).is_err());
        let mut gap = page(11..111);
        gap[50].seq = 500;
        assert!(check_page(&gap, "gap", 11).is_err());
    }

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1_000), "1,000");
        assert_eq!(group(1_001_000), "1,001,000");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_small_journal_run_verifies_its_pages() {
        let dir = tempfile::tempdir().unwrap();
        let report = run(1_000, Some(dir.path().join("bench"))).await.unwrap();
        assert_eq!(report.total_events, 2_000);
        assert_eq!(report.windows.len(), 1);
        assert_eq!(report.pages.len(), 3);
        assert!(report.pages.iter().all(|page| page.bytes_read > 0));
        let table = render(&report);
        assert!(table.contains("2,000 events appended"));
        assert!(table.contains("last page"));
    }
}
