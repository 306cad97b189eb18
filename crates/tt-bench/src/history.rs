//! `tt-bench history-seed` and `tt-bench history`: what a data dir's history costs a new run.
//! `history-seed` fills a fresh data dir with N earlier finished runs, written directly in the
//! file store's layout from one real finished run (a template: its run record, manifest and
//! journal, its run index copy and summary), each renamed to its own run id, chat and creation
//! time (spread over the year before now, ten runs a chat). `history` then times, in one
//! process, what a user waits for: opening the data dir for writing (the runtime's start and
//! its recovery), one small run (one child, the fan-out's zero-latency model), and the first
//! page of `tt-agent runs` (a read-only runtime and `list_runs`, as the command does).
//! `cargo xtask bench history` alternates these over sizes and takes medians.

use anyhow::{Context, Result, anyhow, ensure};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use tt_domain::run::{AgentRun, ConversationKind, derive_workspace_id};
use tt_domain::time::Timestamp;
use tt_runtime::{AgentRuntimeBuilder, CommitBridgeChoice, ListRunsRequest};

use tt_bench::model::FanoutModel;
use tt_bench::workload::start_request;

/// Runs per seeded chat.
const RUNS_PER_CHAT: u64 = 10;
/// The seeded runs' creation times are spread over this many milliseconds before now.
const SPREAD_MS: i64 = 365 * 24 * 3600 * 1000;

/// The files of the template run the seed copies.
struct Template {
    run: AgentRun,
    manifest: String,
    events: String,
    summary: Option<String>,
}

/// Fills the fresh `data_dir` with `runs` earlier finished runs; prints how long it took.
pub(crate) async fn seed(
    data_dir: &Path,
    runs: u64,
    signals: &tt_runtime::StopSignals,
) -> Result<Value> {
    let started = Instant::now();
    let template_dir = tempfile::Builder::new()
        .prefix("tt-bench-history-template-")
        .tempdir()
        .context("creating the template's data dir")?;
    let report = crate::fanout::run(
        1,
        Some(template_dir.path().to_path_buf()),
        false,
        None,
        signals,
    )
    .await?;
    let template = read_template(template_dir.path(), &report.run_id)?;
    std::fs::create_dir_all(data_dir.join("index").join("runs"))?;
    std::fs::create_dir_all(data_dir.join("index").join("run-summaries"))?;
    let now = template.run.created_at.unix_millis();
    for index in 0..runs {
        write_copy(data_dir, &template, index, runs, now)?;
    }
    let written_s = started.elapsed().as_secs_f64();
    // Opened once for writing, as the data dir of an app that kept its runs: a store that
    // keeps indexes of its runs builds them now, once, not in the first sample.
    let opened = Instant::now();
    let runtime = runtime_in(data_dir)?;
    drop(runtime);
    Ok(json!({
        "runs": runs,
        "seedS": written_s,
        "firstOpenS": opened.elapsed().as_secs_f64(),
    }))
}

fn read_template(data_dir: &Path, run_id: &str) -> Result<Template> {
    let run_text = std::fs::read_to_string(
        data_dir
            .join("index")
            .join("runs")
            .join(format!("{run_id}.json")),
    )
    .context("reading the template's index copy")?;
    let run: AgentRun = serde_json::from_str(&run_text).context("the template's run record")?;
    let dir = data_dir
        .join("chats")
        .join(run.workspace_id.as_str())
        .join("runs")
        .join(run_id);
    let summary_path = data_dir
        .join("index")
        .join("run-summaries")
        .join(format!("{run_id}.json"));
    Ok(Template {
        manifest: std::fs::read_to_string(dir.join("manifest.json"))?,
        events: std::fs::read_to_string(dir.join("events.jsonl"))?,
        summary: std::fs::read_to_string(summary_path).ok(),
        run,
    })
}

/// One earlier run: the template under a new run id, chat and creation time.
fn write_copy(
    data_dir: &Path,
    template: &Template,
    index: u64,
    total: u64,
    now: i64,
) -> Result<()> {
    let run_id = format!("run_{index:032x}");
    let chat = format!("history-chat-{}", index / RUNS_PER_CHAT);
    let workspace = derive_workspace_id(ConversationKind::Character, &chat);
    // Oldest first, the newest a second before the template's run.
    let step = SPREAD_MS / i64::try_from(total.max(1))?;
    let created = now - 1_000 - step * i64::try_from(total - index)?;
    let mut run = template.run.clone();
    let old_id = run.id.as_str().to_owned();
    let old_workspace = run.workspace_id.as_str().to_owned();
    let old_chat = run.stable_chat_id.clone();
    run.id = tt_domain::ids::RunId::from_raw(&run_id);
    run.workspace_id = workspace.clone();
    run.stable_chat_id = chat.clone();
    run.created_at = Timestamp::from_unix_millis(created);
    run.updated_at = Timestamp::from_unix_millis(created + 20);
    let rename = |text: &str| {
        text.replace(&old_id, &run_id)
            .replace(&old_workspace, workspace.as_str())
            .replace(&old_chat, &chat)
    };
    let record = serde_json::to_string_pretty(&run)?;
    let dir = data_dir
        .join("chats")
        .join(workspace.as_str())
        .join("runs")
        .join(&run_id);
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("run.json"), &record)?;
    std::fs::write(dir.join("manifest.json"), rename(&template.manifest))?;
    std::fs::write(dir.join("events.jsonl"), rename(&template.events))?;
    let index_dir = data_dir.join("index");
    std::fs::write(
        index_dir.join("runs").join(format!("{run_id}.json")),
        &record,
    )?;
    if let Some(summary) = &template.summary {
        let mut summary: Value = serde_json::from_str(&rename(summary))?;
        if let Some(fields) = summary.as_object_mut() {
            for key in ["createdAt", "updatedAt", "endedAt"] {
                if fields.contains_key(key) {
                    fields.insert(key.to_owned(), serde_json::to_value(run.updated_at)?);
                }
            }
        }
        std::fs::write(
            index_dir
                .join("run-summaries")
                .join(format!("{run_id}.json")),
            serde_json::to_string_pretty(&summary)?,
        )?;
    }
    Ok(())
}

/// The runtime over `data_dir` that seeds and samples it: the one-child fan-out model, commits
/// to the transcript.
fn runtime_in(data_dir: &Path) -> Result<tt_runtime::AgentRuntime> {
    Ok(AgentRuntimeBuilder::new()
        .data_dir(data_dir)
        .provider(Arc::new(FanoutModel::new(1)))
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()?)
}

/// One sample in `data_dir`: the start, one small run, the first page of `runs` (`page` runs).
pub(crate) async fn sample(
    data_dir: &Path,
    page: u32,
    signals: &tt_runtime::StopSignals,
) -> Result<Value> {
    // The process's CPU clock, exact: a sample's run takes about 10 ms, one tick of
    // `/proc/self/stat`, which read 0 or 10 ms.
    let cpu_started = crate::procstat::process_cpu_seconds();
    let started = Instant::now();
    let runtime = runtime_in(data_dir)?;
    let start_s = started.elapsed().as_secs_f64();
    let start_cpu_s = crate::procstat::process_cpu_seconds() - cpu_started;
    crate::fanout::install_profiles(&runtime, 1).await?;
    let cpu_before_run = crate::procstat::process_cpu_seconds();
    let run_started = Instant::now();
    let run = signals
        .shielded(runtime.start_run(start_request(1)))
        .await
        .map_err(|err| anyhow!("start_run failed: {err}"))?;
    let finished = runtime
        .wait_for_run(run.id.as_str())
        .await
        .map_err(|err| anyhow!("wait_for_run failed: {err}"))?;
    let run_s = run_started.elapsed().as_secs_f64();
    // CPU as well as wall time: a run's wall time on a shared disk is mostly its fsyncs.
    let run_cpu_s = crate::procstat::process_cpu_seconds() - cpu_before_run;
    ensure!(
        finished.status == tt_runtime::AgentRunStatus::Completed,
        "the run ended `{}`",
        finished.status.as_str()
    );
    runtime
        .shutdown()
        .await
        .map_err(|err| anyhow!("shutdown failed: {err}"))?;
    drop(runtime);

    let listed = Instant::now();
    let listing = runs_first_page(data_dir, page).await?;
    let runs_s = listed.elapsed().as_secs_f64();
    ensure!(
        listing.first() == Some(&finished.id.to_string()),
        "the first run `runs` lists is {:?}, not the run just made",
        listing.first()
    );
    Ok(json!({
        "startS": start_s,
        "runS": run_s,
        "startCpuS": start_cpu_s,
        "runCpuS": run_cpu_s,
        "runsS": runs_s,
        "listed": listing.len(),
    }))
}

/// What `tt-agent runs` reads: a read-only runtime and the newest page (and, with
/// `TT_BENCH_HISTORY_UNREADABLE` set, the unreadable runs, as `runs --unreadable` does).
async fn runs_first_page(data_dir: &Path, page: u32) -> Result<Vec<String>> {
    // Like the command's runtime: a model is required, and never called.
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(data_dir)
        .provider(Arc::new(FanoutModel::new(1)))
        .commit_bridge(CommitBridgeChoice::Transcript)
        .read_only()
        .build()?;
    let runs = runtime
        .list_runs(ListRunsRequest {
            offset: 0,
            limit: usize::try_from(page)?,
        })
        .await
        .map_err(|err| anyhow!("list_runs failed: {err}"))?;
    if std::env::var_os("TT_BENCH_HISTORY_UNREADABLE").is_some() {
        // What `tt-agent runs` did before it read only its page (and does with --unreadable).
        let unreadable = runtime
            .unreadable_runs()
            .await
            .map_err(|err| anyhow!("unreadable_runs failed: {err}"))?;
        ensure!(unreadable.is_empty(), "unreadable runs: {unreadable:?}");
    }
    Ok(runs.into_iter().map(|run| run.id.to_string()).collect())
}

/// A fresh data dir for the seed: missing or empty.
pub(crate) fn fresh_dir(dir: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    ensure!(
        std::fs::read_dir(dir)?.next().is_none(),
        "{} is not empty",
        dir.display()
    );
    Ok(dir.to_path_buf())
}
