//! `tt-bench fanout`: one whole delegation run (a root delegating N children of K = 5 turns each)
//! on the real runtime and userdata storage, timed from `start_run` to `wait_for_run`, then
//! verified from the journal and the files on disk.

use anyhow::{Context, Result, anyhow, bail, ensure};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use tt_domain::event::RunEventType;
use tt_domain::ids::ROOT_INVOCATION_ID;
use tt_runtime::{
    AgentRunEvent, AgentRunStatus, AgentRuntime, AgentRuntimeBuilder, CommitBridgeChoice,
    ReadEventsRequest, RunEventPayload, UserDataStore, event_payload,
};

use crate::procstat;
use tt_bench::model::{CHILD_TURNS, ChildTag, FanoutModel, ROOT_TURNS, note_content};
use tt_bench::workload::{profiles, start_request};

/// Largest page `read_events` serves.
const EVENT_PAGE: usize = 500;
/// Tool calls the root makes besides its delegations: `agent_await`, `workspace_finish`.
const ROOT_EXTRA_CALLS: u64 = 2;

/// What one fan-out run measured; printed as one JSON line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FanoutReport {
    pub n_children: u32,
    pub model_turns: u64,
    pub tool_calls: u64,
    pub wall_s: f64,
    /// User plus system CPU seconds over the timed region (all threads), from the process's
    /// CPU clock: exact.
    pub cpu_s: f64,
    /// User CPU seconds alone over the timed region (all threads), in clock ticks (10 ms):
    /// Linux samples the split between user and system time.
    pub user_s: f64,
    /// Peak resident memory when the run ended (before the benchmark reads the journal back
    /// to verify it).
    pub peak_rss_mib: f64,
    /// Of that, file-backed pages (the executable's code) resident when the run ended:
    /// `peak_rss_mib` less this is about the memory the run allocated.
    pub rss_file_mib: f64,
    /// The process's peak over everything it did, verification included (it loads the whole
    /// journal): what the process really needed.
    pub process_peak_rss_mib: f64,
    /// Regular files under the run directory when the run ended.
    pub run_files: u64,
    /// `fsync`/`fdatasync` calls the store made over the timed region.
    pub fsyncs: u64,
    /// The run's id (not printed), for benchmarks that read the run afterwards.
    pub run_id: String,
}

impl FanoutReport {
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "nChildren": self.n_children,
            "modelTurns": self.model_turns,
            "toolCalls": self.tool_calls,
            "wallS": self.wall_s,
            "cpuS": self.cpu_s,
            "userS": self.user_s,
            "peakRssMib": self.peak_rss_mib,
            "rssFileMib": self.rss_file_mib,
            "processPeakRssMib": self.process_peak_rss_mib,
            "runFiles": self.run_files,
            "fsyncs": self.fsyncs,
        })
    }
}

/// Model turns of a verified run: 3 for the root, K per child.
pub(crate) fn expected_model_turns(children: u32) -> u64 {
    u64::from(ROOT_TURNS) + u64::from(children) * u64::from(CHILD_TURNS)
}

/// Tool calls of a verified run: one delegation per child, the root's await and finish, and
/// one call per child turn (K - 1 writes and `task_return`).
pub(crate) fn expected_tool_calls(children: u32) -> u64 {
    u64::from(children) * (1 + u64::from(CHILD_TURNS)) + ROOT_EXTRA_CALLS
}

/// Runs the workload once with `children` children in a fresh data dir (`data_dir`, or a
/// temporary one removed afterwards) and verifies it.
pub(crate) async fn run(
    children: u32,
    data_dir: Option<PathBuf>,
    reuse_data_dir: bool,
    store: Option<&str>,
    signals: &tt_runtime::StopSignals,
) -> Result<FanoutReport> {
    ensure!(children >= 1, "--children must be at least 1");
    let (_temp, data_dir) = prepare_data_dir(data_dir, reuse_data_dir)?;

    let store_choice = match store {
        Some(url) => tt_runtime::open_store_url(url)
            .await
            .map_err(|err| anyhow!("opening the store: {err}"))?,
        None => tt_runtime::StoreChoice::Embedded,
    };
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(&data_dir)
        .store(store_choice)
        .provider(Arc::new(FanoutModel::new(children)))
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()?;
    install_profiles(&runtime, children).await?;
    let ticks = procstat::clock_ticks_per_second();

    let (_, user_before) = procstat::cpu_user_seconds(ticks)?;
    let cpu_before = procstat::process_cpu_seconds();
    let fsyncs_before = UserDataStore::fsync_count();
    let threads_before = crate::threads::snapshot();
    let started = Instant::now();
    if signals.is_requested() {
        bail!("stopped by a signal before the run started");
    }
    let run = signals
        .shielded(runtime.start_run(start_request(children)))
        .await
        .map_err(|err| anyhow!("start_run failed: {err}"))?;
    let finished = wait_unless_stopped(&runtime, run.id.as_str(), signals).await?;
    let wall_s = started.elapsed().as_secs_f64();
    let cpu_after = procstat::process_cpu_seconds();
    let (_, user_after) = procstat::cpu_user_seconds(ticks)?;
    let (cpu_s, user_s) = (cpu_after - cpu_before, user_after - user_before);
    let threads_after = crate::threads::snapshot();
    let fsyncs = UserDataStore::fsync_count() - fsyncs_before;
    // Peak memory of the run itself, before verification loads the whole journal.
    let peak_rss_mib = procstat::peak_rss_mib()?;
    let rss_file_mib = procstat::rss_file_mib()?;

    let events = read_all_events(&runtime, run.id.as_str()).await?;
    if finished.status != AgentRunStatus::Completed {
        bail!(
            "the run ended `{}`, not `completed`; last events:\n{}",
            finished.status.as_str(),
            describe_tail(&events)
        );
    }
    let counts = verify_journal(&events, children)?;
    crate::threads::report(&threads_before, &threads_after, counts.model_turns);
    // A store other than the file store has no run directory to count files and syncs in.
    let (run_files, fsyncs) = if store.is_some() {
        verify_notes_in_store(&runtime, finished.id.as_str(), children).await?;
        (0, 0)
    } else {
        let run_dir = data_dir
            .join("chats")
            .join(finished.workspace_id.as_str())
            .join("runs")
            .join(finished.id.as_str());
        verify_notes(&run_dir, children)?;
        (count_files(&run_dir)?, fsyncs)
    };
    Ok(FanoutReport {
        process_peak_rss_mib: procstat::peak_rss_mib()?,
        n_children: children,
        model_turns: counts.model_turns,
        tool_calls: counts.tool_calls,
        wall_s,
        cpu_s,
        user_s,
        peak_rss_mib,
        rss_file_mib,
        run_files,
        fsyncs,
        run_id: finished.id.to_string(),
    })
}

/// `data_dir` (fresh unless reused), or a temporary one kept alive by the guard returned.
fn prepare_data_dir(
    data_dir: Option<PathBuf>,
    reuse_data_dir: bool,
) -> Result<(Option<tempfile::TempDir>, PathBuf)> {
    match data_dir {
        Some(dir) => {
            if !reuse_data_dir {
                ensure_fresh_dir(&dir)?;
            }
            Ok((None, dir))
        }
        None => temporary_dir("tt-bench-fanout-").map(|(temp, dir)| (Some(temp), dir)),
    }
}

/// A new temporary directory named with `prefix`, removed when the returned guard drops, and
/// its path.
pub(crate) fn temporary_dir(prefix: &str) -> Result<(tempfile::TempDir, PathBuf)> {
    let temp = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .context("creating a temporary dir")?;
    let dir = temp.path().to_path_buf();
    Ok((temp, dir))
}

/// Waits for the run's end; a stop signal cancels it and waits for its terminal status first.
async fn wait_unless_stopped(
    runtime: &tt_runtime::AgentRuntime,
    run_id: &str,
    signals: &tt_runtime::StopSignals,
) -> Result<tt_runtime::AgentRun> {
    let requested = signals.requested();
    tokio::select! {
        finished = runtime.wait_for_run(run_id) => finished,
        () = requested.cancelled() => {
            runtime
                .cancel_run(run_id)
                .await
                .map_err(|err| anyhow!("cancel_run failed: {err}"))?;
            let cancelled = runtime
                .wait_for_run(run_id)
                .await
                .map_err(|err| anyhow!("wait_for_run failed: {err}"))?;
            bail!("stopped by a signal; the run ended `{}`", cancelled.status.as_str());
        }
    }
    .map_err(|err| anyhow!("wait_for_run failed: {err}"))
}

fn ensure_fresh_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut entries =
        std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))?;
    ensure!(
        entries.next().is_none(),
        "--data-dir {} is not empty; the benchmark needs a fresh data dir",
        dir.display()
    );
    Ok(())
}

pub(crate) async fn install_profiles(runtime: &AgentRuntime, children: u32) -> Result<()> {
    for profile in profiles(children)? {
        let id = profile.id.clone();
        runtime
            .save_profile(profile)
            .await
            .map_err(|err| anyhow!("the profile `{id}` was refused: {err}"))?;
    }
    Ok(())
}

async fn read_all_events(runtime: &AgentRuntime, run_id: &str) -> Result<Vec<AgentRunEvent>> {
    let mut events: Vec<AgentRunEvent> = Vec::new();
    loop {
        let after_seq = events.last().map_or(0, |event| event.seq);
        let page = runtime
            .read_events(ReadEventsRequest {
                run_id: run_id.to_owned(),
                after_seq: Some(after_seq),
                limit: Some(EVENT_PAGE),
                ..ReadEventsRequest::default()
            })
            .await
            .map_err(|err| anyhow!("read_events after seq {after_seq} failed: {err}"))?;
        if page.events.is_empty() {
            return Ok(events);
        }
        events.extend(page.events);
    }
}

/// The last few events, one line each, for a failure message.
fn describe_tail(events: &[AgentRunEvent]) -> String {
    let skip = events.len().saturating_sub(8);
    events
        .iter()
        .skip(skip)
        .map(|event| format!("  #{} {} {}", event.seq, event.event_type, event.payload))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Counts taken from a verified journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct JournalCounts {
    pub model_turns: u64,
    pub tool_calls: u64,
}

/// Checks the journal of a fan-out run: gapless seqs from 1, `run_completed`, no failed tool
/// call, 3 + N·K model turns, N `task_return_completed` from N distinct children, the root's
/// `agent_await_completed` with `taskCount == N` and `timedOut == false`, and the expected
/// number of completed tool calls.
pub(crate) fn verify_journal(events: &[AgentRunEvent], children: u32) -> Result<JournalCounts> {
    for (index, event) in events.iter().enumerate() {
        let expected = index as u64 + 1;
        ensure!(
            event.seq == expected,
            "journal seqs are not gapless and increasing: event #{index} has seq {} (expected {expected})",
            event.seq
        );
    }
    // The number of `kind` events, which must be `expected`.
    let counted = |kind: RunEventType, expected: u64| -> Result<u64> {
        let found = events.iter().filter(|e| e.event_type == kind).count() as u64;
        ensure!(
            found == expected,
            "expected {expected} `{}` events, the journal has {found}",
            kind.as_str()
        );
        Ok(found)
    };
    counted(RunEventType::RunCompleted, 1)?;
    let failed_calls: Vec<&AgentRunEvent> = events
        .iter()
        .filter(|e| e.event_type == RunEventType::ToolCallFailed)
        .collect();
    if let Some(first) = failed_calls.first() {
        bail!(
            "{} tool calls failed; the first: {}",
            failed_calls.len(),
            first.payload
        );
    }

    // 3 + N·K model turns.
    let model_turns = counted(RunEventType::ModelCompleted, expected_model_turns(children))?;

    // The payloads this check reads, decoded by type.
    let payloads: Vec<RunEventPayload> = events
        .iter()
        .filter(|e| {
            matches!(
                e.event_type,
                RunEventType::TaskReturnCompleted | RunEventType::AgentAwaitCompleted
            )
        })
        .filter_map(AgentRunEvent::typed_payload)
        .collect::<Result<_, _>>()
        .context("an event payload does not decode")?;
    let returns: Vec<&event_payload::TaskReturnCompleted> = payloads
        .iter()
        .filter_map(|payload| match payload {
            RunEventPayload::TaskReturnCompleted(returned) => Some(returned),
            _ => None,
        })
        .collect();
    let returning: BTreeSet<&str> = returns
        .iter()
        .map(|returned| returned.child_invocation_id.as_str())
        .collect();
    ensure!(
        returns.len() as u64 == u64::from(children) && returning.len() == returns.len(),
        "expected {children} `task_return_completed` events from {children} distinct children, found {} events from {} children",
        returns.len(),
        returning.len()
    );

    let root_awaits: Vec<&event_payload::AgentAwaitCompleted> = payloads
        .iter()
        .filter_map(|payload| match payload {
            RunEventPayload::AgentAwaitCompleted(done)
                if done.parent_invocation_id.as_str() == ROOT_INVOCATION_ID =>
            {
                Some(done)
            }
            _ => None,
        })
        .collect();
    let [await_done] = root_awaits.as_slice() else {
        bail!(
            "expected one `agent_await_completed` of the root, found {}",
            root_awaits.len()
        );
    };
    ensure!(
        await_done.task_count == u64::from(children) && !await_done.timed_out,
        "the root's await reported taskCount {} and timedOut {}; expected {children} and false",
        await_done.task_count,
        await_done.timed_out
    );

    let tool_calls = counted(
        RunEventType::ToolCallCompleted,
        expected_tool_calls(children),
    )?;
    Ok(JournalCounts {
        model_turns,
        tool_calls,
    })
}

/// Checks that `scratch/` of the run holds exactly the N·(K−1) notes, byte for byte.
pub(crate) fn verify_notes(run_dir: &Path, children: u32) -> Result<()> {
    ensure!(
        run_dir.join("run.json").is_file(),
        "no run directory at {}",
        run_dir.display()
    );
    let scratch = run_dir.join("scratch");
    for index in 1..=children {
        let tag = ChildTag(index);
        for round in 1..CHILD_TURNS {
            let path = scratch.join(tag.name()).join(format!("{round}.md"));
            let bytes =
                std::fs::read(&path).with_context(|| format!("missing note {}", path.display()))?;
            ensure!(
                bytes == note_content(tag, round).as_bytes(),
                "{} does not hold the expected {} bytes (it has {})",
                path.display(),
                note_content(tag, round).len(),
                bytes.len()
            );
        }
    }
    let found = count_files(&scratch)?;
    let expected = u64::from(children) * u64::from(CHILD_TURNS - 1);
    ensure!(
        found == expected,
        "scratch/ holds {found} files; expected exactly {expected}"
    );
    Ok(())
}

/// [`verify_notes`] for a run kept in another store: each note read back through the runtime.
async fn verify_notes_in_store(runtime: &AgentRuntime, run_id: &str, children: u32) -> Result<()> {
    for index in 1..=children {
        let tag = ChildTag(index);
        for round in 1..CHILD_TURNS {
            let path = format!("scratch/{}/{round}.md", tag.name());
            let file = runtime
                .read_workspace_file(run_id, &path)
                .await
                .map_err(|err| anyhow!("missing note {path}: {err}"))?;
            ensure!(
                file.text == note_content(tag, round),
                "{path} does not hold the expected {} bytes (it has {})",
                note_content(tag, round).len(),
                file.text.len()
            );
        }
    }
    Ok(())
}

/// Files under `dir`, recursively (directories are not counted).
fn count_files(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let entry = entry.with_context(|| format!("listing {}", dir.display()))?;
        let kind = entry
            .file_type()
            .with_context(|| format!("reading {}", entry.path().display()))?;
        if kind.is_dir() {
            total += count_files(&entry.path())?;
        } else {
            total += 1;
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tt_domain::event::EventLevel;
    use tt_domain::ids::{EventId, RunId};
    use tt_domain::time::Timestamp;

    fn event(seq: u64, event_type: &str, payload: Value) -> AgentRunEvent {
        AgentRunEvent {
            seq,
            id: EventId::from_raw(format!("evt_{seq}")),
            run_id: RunId::from_raw("run_x"),
            timestamp: Timestamp::from_unix_millis(0),
            level: EventLevel::Info,
            event_type: RunEventType::from_name(event_type),
            payload,
        }
    }

    /// A minimal journal that passes verification for `children`.
    fn good_journal(children: u32) -> Vec<(String, Value)> {
        let mut items = Vec::new();
        for _ in 0..expected_model_turns(children) {
            items.push(("model_completed".to_owned(), json!({})));
        }
        for _ in 0..expected_tool_calls(children) {
            items.push(("tool_call_completed".to_owned(), json!({})));
        }
        for child in 0..children {
            items.push((
                "task_return_completed".to_owned(),
                json!({
                    "taskId": format!("task_{child}"), "parentInvocationId": "inv_root",
                    "childInvocationId": format!("inv_{child}"), "status": "completed",
                    "resultRef": "r", "summaryRef": "s",
                }),
            ));
        }
        items.push((
            "agent_await_completed".to_owned(),
            json!({
                "parentInvocationId": "inv_root", "mode": "allCompleted", "timedOut": false,
                "taskCount": children, "deliveredTaskIds": [],
            }),
        ));
        items.push(("run_completed".to_owned(), json!({})));
        items
    }

    fn numbered(items: Vec<(String, Value)>) -> Vec<AgentRunEvent> {
        items
            .into_iter()
            .enumerate()
            .map(|(i, (t, p))| event(i as u64 + 1, &t, p))
            .collect()
    }

    #[test]
    fn expected_totals_follow_the_workload() {
        assert_eq!(expected_model_turns(1), 8);
        assert_eq!(expected_model_turns(256), 3 + 256 * 5);
        assert_eq!(expected_tool_calls(16), 16 + 2 + 16 * 5);
    }

    #[test]
    fn a_complete_journal_passes() {
        let counts = verify_journal(&numbered(good_journal(3)), 3).unwrap();
        assert_eq!(
            counts,
            JournalCounts {
                model_turns: 18,
                tool_calls: 20
            }
        );
    }

    /// The error `verify_journal` gives `events` of two children.
    fn refusal(events: &[AgentRunEvent]) -> String {
        verify_journal(events, 2).unwrap_err().to_string()
    }

    /// A good journal of two children with `payload[key] = value` on every `event_type`.
    fn with_field(event_type: &str, key: &str, value: Value) -> Vec<AgentRunEvent> {
        let mut items = good_journal(2);
        for (t, p) in &mut items {
            if t == event_type {
                p[key] = value.clone();
            }
        }
        numbered(items)
    }

    #[test]
    fn gaps_and_missing_work_are_caught() {
        let mut gap = numbered(good_journal(2));
        gap[4].seq = 99;
        assert!(refusal(&gap).contains("gapless"));

        let mut items = good_journal(2);
        let at = items
            .iter()
            .position(|(t, _)| t == "model_completed")
            .unwrap();
        items.remove(at);
        assert!(refusal(&numbered(items)).contains("`model_completed` events"));

        let same = with_field(
            "task_return_completed",
            "childInvocationId",
            json!("inv_same"),
        );
        assert!(refusal(&same).contains("distinct"));

        let timed_out = with_field("agent_await_completed", "timedOut", json!(true));
        assert!(refusal(&timed_out).contains("timedOut"));

        let mut items = good_journal(2);
        items.insert(
            0,
            ("tool_call_failed".to_owned(), json!({"errorCode": "x"})),
        );
        assert!(refusal(&numbered(items)).contains("failed"));

        let mut items = good_journal(2);
        items.retain(|(t, _)| t != "run_completed");
        assert!(verify_journal(&numbered(items), 2).is_err());
    }

    #[test]
    fn notes_on_disk_are_checked_byte_for_byte_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let run_dir = dir.path();
        std::fs::write(run_dir.join("run.json"), "{}").unwrap();
        for index in 1..=2 {
            let tag = ChildTag(index);
            std::fs::create_dir_all(run_dir.join("scratch").join(tag.name())).unwrap();
            for round in 1..CHILD_TURNS {
                std::fs::write(run_dir.join(tag.note_path(round)), note_content(tag, round))
                    .unwrap();
            }
        }
        verify_notes(run_dir, 2).unwrap();
        assert!(verify_notes(run_dir, 3).is_err());

        std::fs::write(run_dir.join("scratch/extra.md"), "x").unwrap();
        assert!(
            verify_notes(run_dir, 2)
                .unwrap_err()
                .to_string()
                .contains("exactly")
        );
        std::fs::remove_file(run_dir.join("scratch/extra.md")).unwrap();

        std::fs::write(run_dir.join(ChildTag(2).note_path(4)), "short").unwrap();
        assert!(verify_notes(run_dir, 2).is_err());
    }

    #[test]
    fn embedded_profiles_parse_and_scale_with_n() {
        let [root, child] = profiles(64).unwrap();
        assert_eq!(root.id.as_str(), tt_bench::model::ROOT_PROFILE);
        assert_eq!(child.id.as_str(), tt_bench::model::CHILD_PROFILE);
        assert_eq!(root.delegation.max_invocations_per_run, 64);
        assert_eq!(root.delegation.max_concurrent_invocations, 64);
        assert!(u64::from(root.tools.max_calls_per_run) >= 64 + ROOT_EXTRA_CALLS);
        assert!(child.tools.max_rounds >= CHILD_TURNS);
        tt_domain::profile::validate_profile(&root).unwrap();
        tt_domain::profile::validate_profile(&child).unwrap();
    }
}
