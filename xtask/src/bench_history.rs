//! `cargo xtask bench history [--sizes A,B,…] [--samples S] [--binary PATH]`: what a data dir's history costs a
//! new run. Seeds one data dir per size with that many earlier finished runs (`tt-bench
//! history-seed`), then takes S samples per size, alternated across sizes (one fresh `tt-bench
//! history` process each: the runtime's start, one small run, the first page of `runs`) once
//! the seeds are written back to disk, and prints the medians with each size's ratio to the
//! empty data dir. The data dirs are removed at the end (docs/benchmarks.md, "History").

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, anyhow, ensure};
use serde_json::Value;

use crate::stats::median;

/// Earlier runs in the data dirs measured by default.
pub(crate) const DEFAULT_SIZES: [u64; 4] = [0, 1_000, 10_000, 100_000];
/// Samples per size by default.
pub(crate) const DEFAULT_SAMPLES: usize = 7;

/// What `bench history` measures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HistoryArgs {
    pub sizes: Vec<u64>,
    pub samples: usize,
    /// `--binary PATH`: a `tt-bench` built elsewhere (another commit's, for a before/after)
    /// instead of this tree's release build.
    pub binary: Option<std::path::PathBuf>,
}

/// `[--sizes A,B,…] [--samples S]`, each at most once.
pub(crate) fn parse(flags: &[String]) -> Result<HistoryArgs> {
    let mut sizes = None;
    let mut samples = None;
    let mut binary = None;
    let mut rest = flags.iter();
    while let Some(flag) = rest.next() {
        let value = rest.next().ok_or_else(|| anyhow!("{flag} needs a value"))?;
        match flag.as_str() {
            "--sizes" if sizes.is_none() => {
                let parsed: Result<Vec<u64>, _> =
                    value.split(',').map(|size| size.trim().parse()).collect();
                sizes = Some(parsed.map_err(|_| {
                    anyhow!("--sizes needs whole numbers separated by commas, got `{value}`")
                })?);
            }
            "--samples" if samples.is_none() => {
                samples = Some(value.parse().ok().filter(|n| *n >= 1).ok_or_else(|| {
                    anyhow!("--samples needs a whole number of at least 1, got `{value}`")
                })?);
            }
            "--binary" if binary.is_none() => binary = Some(std::path::PathBuf::from(value)),
            _ => anyhow::bail!("unknown bench history argument `{flag}`"),
        }
    }
    Ok(HistoryArgs {
        sizes: sizes.unwrap_or_else(|| DEFAULT_SIZES.to_vec()),
        samples: samples.unwrap_or(DEFAULT_SAMPLES),
        binary,
    })
}

/// The page `tt-agent runs` lists by default.
const RUNS_PAGE: u64 = 20;

/// One `tt-bench history` sample.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Sample {
    start_s: f64,
    run_s: f64,
    runs_s: f64,
    /// CPU seconds of the start and of the run (NaN from a tt-bench that does not report it).
    start_cpu_s: f64,
    run_cpu_s: f64,
}

/// Seeds, samples alternated, prints a table (CSV) on stdout.
pub(crate) fn run(binary: &Path, args: &HistoryArgs) -> Result<()> {
    let temp = std::env::temp_dir().join(format!("tt-bench-history-{}", std::process::id()));
    let measured = measure(binary, args, &temp);
    // The data dirs are large (100,000 runs are about 2 GB): never leave them behind.
    let removed = std::fs::remove_dir_all(&temp);
    measured?;
    removed.with_context(|| format!("removing {}", temp.display()))
}

fn measure(binary: &Path, args: &HistoryArgs, temp: &Path) -> Result<()> {
    let mut dirs = Vec::new();
    for &size in &args.sizes {
        let dir = temp.join(format!("runs-{size}"));
        let seeded = tt_bench(
            binary,
            &["history-seed", "--runs", &size.to_string(), "--data-dir"],
            &dir,
        )?;
        eprintln!("bench history: seeded {size} runs: {seeded}");
        dirs.push((size, dir));
    }
    settle_writeback()?;
    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); dirs.len()];
    for round in 1..=args.samples {
        // `runs` lists a page of the same length at every size: as many runs as the first
        // (smallest) data dir holds after this round's run, up to the command's 20. Against a
        // page of 20, the empty data dir's page of 1 to 7 runs would read fewer records.
        let held = args.sizes.first().copied().unwrap_or(0) + round as u64;
        let page = held.min(RUNS_PAGE).to_string();
        for ((size, dir), taken) in dirs.iter().zip(samples.iter_mut()) {
            let value = tt_bench(binary, &["history", "--page", &page, "--data-dir"], dir)
                .with_context(|| format!("history with {size} earlier runs, sample {round}"))?;
            let float = |key: &str| {
                value
                    .get(key)
                    .and_then(Value::as_f64)
                    .ok_or_else(|| anyhow!("`{key}` is missing in {value}"))
            };
            let sample = Sample {
                start_s: float("startS")?,
                run_s: float("runS")?,
                runs_s: float("runsS")?,
                start_cpu_s: float("startCpuS").unwrap_or(f64::NAN),
                run_cpu_s: float("runCpuS").unwrap_or(f64::NAN),
            };
            eprintln!(
                "bench history: {size} runs, sample {round}/{}: start {:.1} ms, run {:.1} ms (cpu {:.0} ms), runs {:.1} ms",
                args.samples,
                sample.start_s * 1e3,
                sample.run_s * 1e3,
                (sample.start_cpu_s + sample.run_cpu_s) * 1e3,
                sample.runs_s * 1e3
            );
            taken.push(sample);
        }
    }
    print_table(
        &dirs.iter().map(|(size, _)| *size).collect::<Vec<_>>(),
        &samples,
    )
}

/// Waits until the kernel has written back what the seeds wrote (`sync`): 100,000 seeded runs
/// are gigabytes still in the page cache, and a sample that waits on `fdatasync` behind their
/// writeback measures the disk's queue, not the store (a sitting right after a seed of 100,000
/// runs read 1.2 to 1.8 times the empty dir without this).
fn settle_writeback() -> Result<()> {
    let started = std::time::Instant::now();
    let status = Command::new("sync").status().context("running `sync`")?;
    ensure!(status.success(), "`sync` failed: {status}");
    eprintln!(
        "bench history: seeds written back in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn print_table(sizes: &[u64], samples: &[Vec<Sample>]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "earlier_runs,start_ms,run_ms,start_plus_run_ms,runs_first_page_ms,per_run_vs_empty,runs_vs_empty,start_plus_run_cpu_ms,cpu_vs_empty"
    )?;
    let mut base: Option<(f64, f64, f64)> = None;
    for (size, taken) in sizes.iter().zip(samples) {
        let pick = |field: fn(&Sample) -> f64| {
            median(&taken.iter().map(field).collect::<Vec<_>>())
                .map(|seconds| seconds * 1e3)
                .ok_or_else(|| anyhow!("no samples"))
        };
        let start = pick(|s| s.start_s)?;
        let run = pick(|s| s.run_s)?;
        let total = pick(|s| s.start_s + s.run_s)?;
        let runs = pick(|s| s.runs_s)?;
        // NaN (printed as such) when the tt-bench measured does not report CPU.
        let cpu = pick(|s| s.start_cpu_s + s.run_cpu_s).unwrap_or(f64::NAN);
        let (base_total, base_runs, base_cpu) = *base.get_or_insert((total, runs, cpu));
        writeln!(
            out,
            "{size},{start:.2},{run:.2},{total:.2},{runs:.2},{:.2},{:.2},{cpu:.1},{:.2}",
            total / base_total,
            runs / base_runs,
            cpu / base_cpu
        )?;
    }
    out.flush()?;
    Ok(())
}

/// Runs `tt-bench ARGS DIR` and parses its last stdout line.
fn tt_bench(binary: &Path, args: &[&str], dir: &Path) -> Result<Value> {
    let output = Command::new(binary)
        .args(args)
        .arg(dir)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("could not start {}", binary.display()))?;
    ensure!(
        output.status.success(),
        "tt-bench {} failed ({})",
        args.join(" "),
        output.status
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .ok_or_else(|| anyhow!("tt-bench {} printed nothing", args.join(" ")))?;
    serde_json::from_str(line).with_context(|| format!("tt-bench printed `{line}`"))
}
