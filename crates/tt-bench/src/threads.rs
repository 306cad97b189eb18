//! Two measuring aids of `tt-bench` for where a run's CPU goes (docs/benchmarks.md, "user CPU on a
//! quiet machine"): the tokio runtime the binary runs on, set by `TT_BENCH_TOKIO` (default: tokio's
//! multi-thread runtime with its defaults, as a host brings), and, with `TT_BENCH_THREADS=1`, each
//! thread's CPU and context switches over the timed region, printed to stderr.

use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::time::Duration;

/// Builds the runtime `TT_BENCH_TOKIO` names: unset or empty for tokio's defaults, `current` for
/// the current-thread runtime, or comma-separated `key=value` settings of the multi-thread one:
/// `workers`, `max_blocking`, `keep_alive_ms`, `event_interval`, `global_queue_interval`.
pub(crate) fn tokio_runtime() -> Result<tokio::runtime::Runtime> {
    let setting = std::env::var("TT_BENCH_TOKIO").unwrap_or_default();
    let setting = setting.trim();
    if setting == "current" {
        return Ok(tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?);
    }
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all();
    for pair in setting.split(',').filter(|pair| !pair.trim().is_empty()) {
        let (key, value) = pair
            .split_once('=')
            .with_context(|| format!("TT_BENCH_TOKIO: `{pair}` is not key=value"))?;
        let value: u64 = value
            .trim()
            .parse()
            .with_context(|| format!("TT_BENCH_TOKIO: `{pair}` is not a number"))?;
        let count = usize::try_from(value)?;
        // tokio panics on zero threads; say so instead.
        if count == 0 && matches!(key.trim(), "workers" | "max_blocking") {
            bail!("TT_BENCH_TOKIO: `{pair}` needs at least one thread");
        }
        match key.trim() {
            "workers" => builder.worker_threads(count),
            "max_blocking" => builder.max_blocking_threads(count),
            "keep_alive_ms" => builder.thread_keep_alive(Duration::from_millis(value)),
            "event_interval" => builder.event_interval(u32::try_from(value)?),
            "global_queue_interval" => builder.global_queue_interval(u32::try_from(value)?),
            other => bail!("TT_BENCH_TOKIO: unknown setting `{other}`"),
        };
    }
    Ok(builder.build()?)
}

/// One thread's counters: user and system ticks, nanoseconds on a CPU (`schedstat`, exact),
/// voluntary and involuntary context switches.
#[derive(Debug, Clone, Default)]
pub(crate) struct ThreadCounters {
    name: String,
    user_ticks: u64,
    system_ticks: u64,
    run_ns: u64,
    voluntary: u64,
    involuntary: u64,
}

/// Every thread of this process by id, when `TT_BENCH_THREADS=1`; else empty.
pub(crate) fn snapshot() -> BTreeMap<u64, ThreadCounters> {
    if std::env::var("TT_BENCH_THREADS").as_deref() != Ok("1") {
        return BTreeMap::new();
    }
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return BTreeMap::new();
    };
    tasks
        .flatten()
        .filter_map(|task| {
            let tid = task.file_name().to_str()?.parse::<u64>().ok()?;
            Some((tid, read_thread(&task.path())?))
        })
        .collect()
}

fn read_thread(dir: &std::path::Path) -> Option<ThreadCounters> {
    let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
    let status = std::fs::read_to_string(dir.join("status")).ok()?;
    let schedstat = std::fs::read_to_string(dir.join("schedstat")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|value| value.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    let name = stat
        .split_once('(')
        .and_then(|(_, rest)| rest.rsplit_once(')'))
        .map(|(name, _)| name.to_owned())
        .unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let number = |index: usize| fields.get(index).and_then(|v| v.parse::<u64>().ok());
    Some(ThreadCounters {
        name,
        user_ticks: number(11).unwrap_or(0),
        system_ticks: number(12).unwrap_or(0),
        run_ns: schedstat
            .split_whitespace()
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
        voluntary: field("voluntary_ctxt_switches:"),
        involuntary: field("nonvoluntary_ctxt_switches:"),
    })
}

/// Prints each thread's difference between two snapshots to stderr, one JSON line each
/// (threads that started in between count from zero; threads that ended are missing).
pub(crate) fn report(
    before: &BTreeMap<u64, ThreadCounters>,
    after: &BTreeMap<u64, ThreadCounters>,
    turns: u64,
) {
    for (tid, now) in after {
        let was = before.get(tid).cloned().unwrap_or_default();
        let line = serde_json::json!({
            "tid": tid,
            "name": now.name,
            "userTicks": now.user_ticks - was.user_ticks,
            "systemTicks": now.system_ticks - was.system_ticks,
            "runUsPerTurn": (now.run_ns - was.run_ns) as f64 / 1e3 / turns.max(1) as f64,
            "voluntary": now.voluntary - was.voluntary,
            "involuntary": now.involuntary - was.involuntary,
        });
        eprintln!("thread {line}");
    }
}
