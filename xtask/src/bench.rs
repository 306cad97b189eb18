//! `cargo xtask bench fanout [--n N]`, `cargo xtask bench inspect [--n N]`,
//! `cargo xtask bench journal [--events N]` and `cargo xtask bench prefix`: build
//! `tt-bench` in release once, run it in fresh processes and summarize (see docs/benchmarks.md).
//! `cargo xtask bench channel [--n N]` runs the Tauri plugin's channel benchmark instead
//! (`crates/tauri-plugin-tt-agent/benches/channel.rs`, `cargo bench`: it links WebKitGTK, which
//! tt-bench does not).
//! Only results go to stdout (CSV for fanout); progress and cargo output go to stderr.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, anyhow, bail, ensure};
use serde_json::Value;

use crate::process::{cargo, cargo_stdout};

/// The fan-out sizes measured by default.
pub(crate) const DEFAULT_CHILDREN: [u32; 4] = [1, 16, 64, 256];
/// The fan-out sizes `bench inspect` reads by default.
pub(crate) const DEFAULT_INSPECT_CHILDREN: [u32; 3] = [64, 256, 1024];
/// Fresh processes per fan-out size; the median is reported.
pub(crate) const RUNS_PER_SIZE: usize = 3;
/// Journal events by default.
pub(crate) const DEFAULT_JOURNAL_EVENTS: u64 = 1_000_000;
pub(crate) const FRAMEWORK: &str = "tt-agent-runtime";
/// The required columns, then `cpu_s` (median CPU seconds of the process over the timed run).
pub(crate) const CSV_HEADER: &str = "framework,version,n_children,model_turns,tool_calls,wall_s,us_per_turn,peak_rss_mib,cpu_s,files_per_turn,fsyncs_per_turn";

pub(crate) const USAGE: &str = "\
usage: cargo xtask bench fanout [--n N] [--store URL]
                                               N in 1, 16, 64, 256 by default; CSV on stdout;
                                               --store postgres://… keeps the runs there
       cargo xtask bench inspect [--n N]       the root's conversation and the agent graph of
                                               a fan-out, read from its files; N in 64, 256,
                                               1024 by default; a table on stdout
       cargo xtask bench journal [--events N]  default 1000000 events; a table on stdout
       cargo xtask bench prefix [--server C]   cacheable prefix and first request sizes; tables;
                                               fails over 2,000 tokens or under a 0.95 share;
                                               --server openai:http://…/v1 also counts each
                                               first request's tokens on that server
       cargo xtask bench mcp                   the runtime's overhead per MCP call over stdio
                                               (needs the MCP test servers: their install.sh)
       cargo xtask bench history [--sizes 0,1000,10000,100000] [--samples 7] [--binary B]
                                               a small run and the first page of `runs` in
                                               data dirs of that many earlier runs; CSV
       cargo xtask bench channel [--n N]       a fan-out's events through the Tauri plugin's
                                               channel: order, latency, events/s (N = 256);
                                               a JSON line on stdout
";

/// What `cargo xtask bench ...` was asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BenchCommand {
    Fanout {
        children: Vec<u32>,
        /// `--store URL`: the runs go to this store instead of a temporary data dir.
        store: Option<String>,
    },
    Inspect {
        children: Vec<u32>,
    },
    Journal {
        events: u64,
    },
    Prefix {
        /// `--server CONNECTION`: each first request is also counted on this server.
        server: Option<String>,
    },
    Mcp,
    Channel {
        children: u32,
    },
    History(crate::bench_history::HistoryArgs),
}

/// The channel benchmark's fan-out size by default.
pub(crate) const DEFAULT_CHANNEL_CHILDREN: u32 = 256;

pub(crate) fn parse_args(args: &[String]) -> Result<BenchCommand> {
    let (name, rest) = args
        .split_first()
        .ok_or_else(|| anyhow!("bench needs a benchmark name\n{USAGE}"))?;
    match (name.as_str(), rest) {
        ("fanout", flags) => parse_fanout(flags, args),
        ("inspect", []) => Ok(BenchCommand::Inspect {
            children: DEFAULT_INSPECT_CHILDREN.to_vec(),
        }),
        ("inspect", [flag, value]) if flag == "--n" => {
            let n: u32 =
                value.parse().ok().filter(|n| *n >= 1).ok_or_else(|| {
                    anyhow!("--n needs a whole number of at least 1, got `{value}`")
                })?;
            Ok(BenchCommand::Inspect { children: vec![n] })
        }
        ("prefix", []) => Ok(BenchCommand::Prefix { server: None }),
        ("prefix", [flag, value]) if flag == "--server" && !value.trim().is_empty() => {
            Ok(BenchCommand::Prefix {
                server: Some(value.clone()),
            })
        }
        ("mcp", []) => Ok(BenchCommand::Mcp),
        ("history", flags) => Ok(BenchCommand::History(crate::bench_history::parse(flags)?)),
        ("channel", []) => Ok(BenchCommand::Channel {
            children: DEFAULT_CHANNEL_CHILDREN,
        }),
        ("channel", [flag, value]) if flag == "--n" => {
            let children: u32 =
                value.parse().ok().filter(|n| *n >= 1).ok_or_else(|| {
                    anyhow!("--n needs a whole number of at least 1, got `{value}`")
                })?;
            Ok(BenchCommand::Channel { children })
        }
        ("journal", []) => Ok(BenchCommand::Journal {
            events: DEFAULT_JOURNAL_EVENTS,
        }),
        ("journal", [flag, value]) if flag == "--events" => {
            let events: u64 = value
                .parse()
                .map_err(|_| anyhow!("--events needs a whole number, got `{value}`"))?;
            Ok(BenchCommand::Journal { events })
        }
        _ => bail!("unknown bench arguments `{}`\n{USAGE}", args.join(" ")),
    }
}

/// `fanout [--n N] [--store URL]`, flags in any order, each at most once.
fn parse_fanout(flags: &[String], args: &[String]) -> Result<BenchCommand> {
    let mut children = None;
    let mut store = None;
    let mut rest = flags.iter();
    while let Some(flag) = rest.next() {
        let value = rest.next();
        match (flag.as_str(), value) {
            ("--n", Some(value)) if children.is_none() => {
                let n: u32 = value.parse().ok().filter(|n| *n >= 1).ok_or_else(|| {
                    anyhow!("--n needs a whole number of at least 1, got `{value}`")
                })?;
                children = Some(vec![n]);
            }
            ("--store", Some(value)) if store.is_none() && !value.trim().is_empty() => {
                store = Some(value.clone());
            }
            _ => bail!("unknown bench arguments `{}`\n{USAGE}", args.join(" ")),
        }
    }
    Ok(BenchCommand::Fanout {
        children: children.unwrap_or_else(|| DEFAULT_CHILDREN.to_vec()),
        store,
    })
}

pub(crate) fn run(root: &Path, args: &[String]) -> Result<()> {
    let command = parse_args(args)?;
    if let BenchCommand::Channel { children } = command {
        return channel(root, children);
    }
    // `bench history --binary B` measures a tt-bench built elsewhere: nothing to build.
    if let BenchCommand::History(args) = &command
        && let Some(binary) = &args.binary
    {
        return crate::bench_history::run(binary, args);
    }
    let metadata = Metadata::read(root)?;
    build_release(root)?;
    let binary = metadata.target_dir.join("release").join("tt-bench");
    match command {
        BenchCommand::Fanout { children, store } => {
            fanout(&binary, &metadata.version, &children, store.as_deref())
        }
        BenchCommand::Inspect { children } => inspect(&binary, &children),
        BenchCommand::Journal { events } => journal(&binary, events),
        BenchCommand::Prefix { server } => prefix(&binary, server.as_deref()),
        BenchCommand::Mcp => mcp(&binary),
        BenchCommand::Channel { children } => channel(root, children),
        BenchCommand::History(args) => crate::bench_history::run(&binary, &args),
    }
}

/// The plugin's channel benchmark through `cargo bench` (release profile): its summary on
/// stderr, its JSON line on stdout; it fails when an event is missing, twice or out of order.
fn channel(root: &Path, children: u32) -> Result<()> {
    let n = children.to_string();
    let args = [
        "bench",
        "-p",
        "tauri-plugin-tt-agent",
        "--bench",
        "channel",
        "--",
        "--n",
        n.as_str(),
    ];
    eprintln!("$ cargo {}", args.join(" "));
    let status = cargo(root, &args)
        .stdin(Stdio::null())
        .status()
        .context("could not start cargo bench")?;
    ensure!(status.success(), "the channel benchmark failed ({status})");
    Ok(())
}

/// What the bench needs from `cargo metadata`.
struct Metadata {
    target_dir: PathBuf,
    version: String,
}

impl Metadata {
    fn read(root: &Path) -> Result<Self> {
        let text = cargo_stdout(root, &["metadata", "--format-version", "1", "--no-deps"])?;
        let metadata: Value =
            serde_json::from_str(&text).context("cargo metadata printed invalid JSON")?;
        let target_dir = metadata
            .get("target_directory")
            .and_then(Value::as_str)
            .ok_or_else(|| anyhow!("cargo metadata has no target_directory"))?;
        Ok(Self {
            target_dir: PathBuf::from(target_dir),
            version: package_version(&metadata, "tt-bench")?,
        })
    }
}

/// The version of a workspace package (tt-bench inherits the workspace version).
pub(crate) fn package_version(metadata: &Value, package: &str) -> Result<String> {
    metadata
        .get("packages")
        .and_then(Value::as_array)
        .and_then(|packages| {
            packages
                .iter()
                .find(|p| p.get("name").and_then(Value::as_str) == Some(package))
        })
        .and_then(|p| p.get("version"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("cargo metadata has no version for `{package}`"))
}

fn build_release(root: &Path) -> Result<()> {
    let args = ["build", "--release", "-p", "tt-bench"];
    eprintln!("$ cargo {}", args.join(" "));
    let status = cargo(root, &args)
        .stdout(Stdio::from(std::io::stderr()))
        .status()
        .context("could not start cargo build")?;
    ensure!(status.success(), "building tt-bench failed ({status})");
    Ok(())
}

/// One `tt-bench fanout` process's JSON line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FanoutSample {
    pub n_children: u64,
    pub model_turns: u64,
    pub tool_calls: u64,
    pub wall_s: f64,
    pub cpu_s: f64,
    pub peak_rss_mib: f64,
    pub run_files: u64,
    pub fsyncs: u64,
}

/// Parses the last non-empty stdout line of `tt-bench fanout`.
pub(crate) fn parse_sample(stdout: &str) -> Result<FanoutSample> {
    let line = stdout
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .ok_or_else(|| anyhow!("tt-bench fanout printed nothing"))?;
    let value: Value = serde_json::from_str(line)
        .with_context(|| format!("tt-bench fanout printed `{line}`, not a JSON line"))?;
    let int = |key: &str| {
        value
            .get(key)
            .and_then(Value::as_u64)
            .ok_or_else(|| anyhow!("`{key}` is missing or not a whole number in `{line}`"))
    };
    let float = |key: &str| {
        value
            .get(key)
            .and_then(Value::as_f64)
            .ok_or_else(|| anyhow!("`{key}` is missing or not a number in `{line}`"))
    };
    Ok(FanoutSample {
        n_children: int("nChildren")?,
        model_turns: int("modelTurns")?,
        tool_calls: int("toolCalls")?,
        wall_s: float("wallS")?,
        cpu_s: float("cpuS")?,
        peak_rss_mib: float("peakRssMib")?,
        run_files: int("runFiles")?,
        fsyncs: int("fsyncs")?,
    })
}

pub(crate) use crate::stats::median;

/// One CSV row from the samples of one N: medians of wall time, peak RSS and CPU; the turn and
/// call counts must agree across samples.
pub(crate) fn summarize(version: &str, samples: &[FanoutSample]) -> Result<String> {
    let first = samples
        .first()
        .ok_or_else(|| anyhow!("no fan-out samples to summarize"))?;
    for sample in samples {
        ensure!(
            (sample.n_children, sample.model_turns, sample.tool_calls)
                == (first.n_children, first.model_turns, first.tool_calls),
            "fan-out runs disagree: {sample:?} vs {first:?}"
        );
    }
    ensure!(
        first.model_turns > 0,
        "a fan-out run reported no model turns"
    );
    let pick = |field: fn(&FanoutSample) -> f64| {
        median(&samples.iter().map(field).collect::<Vec<_>>())
            .ok_or_else(|| anyhow!("fan-out samples hold a value that is not a number"))
    };
    let wall_s = pick(|s| s.wall_s)?;
    let rss = pick(|s| s.peak_rss_mib)?;
    let cpu_s = pick(|s| s.cpu_s)?;
    let files = pick(|s| s.run_files as f64)?;
    let fsyncs = pick(|s| s.fsyncs as f64)?;
    let turns = first.model_turns as f64;
    let us_per_turn = wall_s * 1e6 / turns;
    let files_per_turn = files / turns;
    let fsyncs_per_turn = fsyncs / turns;
    Ok(format!(
        "{FRAMEWORK},{version},{},{},{},{wall_s:.4},{us_per_turn:.1},{rss:.1},{cpu_s:.3},{files_per_turn:.3},{fsyncs_per_turn:.3}",
        first.n_children, first.model_turns, first.tool_calls
    ))
}

/// Runs the fan-out `RUNS_PER_SIZE` times per size, each in a fresh data dir of one sitting
/// directory removed after the last run. Removing a run's dir before the next run would charge
/// the next one for it: on ext4 a file created soon after thousands were deleted pays for a
/// scan of the recently freed inodes, about half of a run's CPU (docs/benchmarks.md).
fn fanout(binary: &Path, version: &str, children: &[u32], store: Option<&str>) -> Result<()> {
    let sitting = std::env::temp_dir().join(format!("tt-bench-fanout-{}", std::process::id()));
    let measured = fanout_sitting(binary, version, children, store, &sitting);
    let removed = match std::fs::remove_dir_all(&sitting) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    };
    measured?;
    removed.with_context(|| format!("removing {}", sitting.display()))
}

fn fanout_sitting(
    binary: &Path,
    version: &str,
    children: &[u32],
    store: Option<&str>,
    sitting: &Path,
) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{CSV_HEADER}")?;
    out.flush()?;
    for &n in children {
        let mut samples = Vec::with_capacity(RUNS_PER_SIZE);
        for attempt in 1..=RUNS_PER_SIZE {
            let data_dir = sitting.join(format!("n{n}-run{attempt}"));
            let sample = fanout_once(binary, n, store, &data_dir)
                .with_context(|| format!("fanout N={n}, run {attempt}/{RUNS_PER_SIZE}"))?;
            eprintln!(
                "bench fanout: N={n} run {attempt}/{RUNS_PER_SIZE}: wall {:.4} s, cpu {:.3} s, peak rss {:.1} MiB",
                sample.wall_s, sample.cpu_s, sample.peak_rss_mib
            );
            samples.push(sample);
        }
        writeln!(out, "{}", summarize(version, &samples)?)?;
        out.flush()?;
    }
    Ok(())
}

/// One `tt-bench fanout` process over the fresh `data_dir` (it creates it).
fn fanout_once(
    binary: &Path,
    n: u32,
    store: Option<&str>,
    data_dir: &Path,
) -> Result<FanoutSample> {
    let mut command = Command::new(binary);
    command.args(["fanout", "--children", &n.to_string(), "--data-dir"]);
    command.arg(data_dir);
    if let Some(url) = store {
        command.args(["--store", url]);
    }
    let output = command
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("could not start {}", binary.display()))?;
    ensure!(
        output.status.success(),
        "tt-bench fanout --children {n} failed ({})",
        output.status
    );
    let stdout = String::from_utf8(output.stdout).context("tt-bench printed non-UTF-8 output")?;
    let sample = parse_sample(&stdout)?;
    ensure!(
        sample.n_children == u64::from(n),
        "asked for {n} children, tt-bench reported {}",
        sample.n_children
    );
    Ok(sample)
}

/// `tt-bench inspect` once per N (a fresh process each): a table of its JSON lines, with the
/// time per child so growth in N reads at a glance.
fn inspect(binary: &Path, children: &[u32]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "n_children,conversation_cold_s,conversation_warm_s,graph_cold_s,graph_warm_s,conversation_cold_us_per_child,setup_s"
    )?;
    out.flush()?;
    for &n in children {
        let output = Command::new(binary)
            .args(["inspect", "--children", &n.to_string()])
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .with_context(|| format!("could not start {}", binary.display()))?;
        ensure!(
            output.status.success(),
            "tt-bench inspect --children {n} failed ({})",
            output.status
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        let line = stdout
            .lines()
            .rev()
            .find(|line| !line.trim().is_empty())
            .ok_or_else(|| anyhow!("tt-bench inspect printed nothing"))?;
        let value: Value = serde_json::from_str(line)
            .with_context(|| format!("tt-bench inspect printed `{line}`, not a JSON line"))?;
        let float = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_f64)
                .ok_or_else(|| anyhow!("`{key}` is missing or not a number in `{line}`"))
        };
        let cold = float("conversationColdS")?;
        writeln!(
            out,
            "{n},{cold:.4},{:.4},{:.4},{:.4},{:.1},{:.2}",
            float("conversationWarmS")?,
            float("graphColdS")?,
            float("graphWarmS")?,
            cold * 1e6 / f64::from(n),
            float("setupS")?,
        )?;
        out.flush()?;
    }
    Ok(())
}

fn journal(binary: &Path, events: u64) -> Result<()> {
    let status = Command::new(binary)
        .args(["journal", "--events", &events.to_string()])
        .stdin(Stdio::null())
        .status()
        .with_context(|| format!("could not start {}", binary.display()))?;
    ensure!(status.success(), "tt-bench journal failed ({status})");
    Ok(())
}

/// `tt-bench mcp`: its rounds on stderr, the medians as a JSON line on stdout.
fn mcp(binary: &Path) -> Result<()> {
    let status = Command::new(binary)
        .arg("mcp")
        .stdin(Stdio::null())
        .status()
        .with_context(|| format!("could not start {}", binary.display()))?;
    ensure!(status.success(), "tt-bench mcp failed ({status})");
    Ok(())
}

fn prefix(binary: &Path, server: Option<&str>) -> Result<()> {
    let mut command = Command::new(binary);
    command.arg("prefix");
    if let Some(server) = server {
        command.args(["--server", server]);
    }
    let output = command
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("could not start {}", binary.display()))?;
    // The tables are printed even when a bound is broken (tt-bench then exits nonzero after
    // its reports and says which bound on stderr).
    let reports: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
        .context("tt-bench prefix printed a line that is not JSON")?;
    print!("{}", render_prefix(&reports));
    ensure!(
        output.status.success(),
        "tt-bench prefix failed ({}): a first request over 2,000 estimated tokens or a prefix share under 0.95 (see above)",
        output.status
    );
    Ok(())
}

/// The prefix reports as two markdown tables: the shares per workload, then the first request
/// of each profile (estimated tokens: messages, tools; with a server, its count beside them).
pub(crate) fn render_prefix(reports: &[Value]) -> String {
    use std::fmt::Write as _;
    let mut out = String::from(
        "| workload | agents | requests after an agent's first | prefix share | reusable input share | append-only requests |\n| --- | --- | --- | --- | --- | --- |\n",
    );
    for report in reports {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.4} | {:.4} | {} |",
            report["workload"].as_str().unwrap_or("?"),
            report["agents"],
            report["laterRequests"],
            report["prefixShare"].as_f64().unwrap_or(f64::NAN),
            report["reusableInputShare"].as_f64().unwrap_or(f64::NAN),
            report["wholePrefixRequests"],
        );
    }
    let counted = reports.iter().any(|report| {
        report["firstRequests"].as_object().is_some_and(|first| {
            first
                .values()
                .any(|figures| figures.get("serverPromptTokens").is_some())
        })
    });
    out.push_str(if counted {
        "\n| profile | first request (est. tokens) | system and user messages | tool specs (count) | server prompt tokens |\n| --- | --- | --- | --- | --- |\n"
    } else {
        "\n| profile | first request (est. tokens) | system and user messages | tool specs (count) |\n| --- | --- | --- | --- |\n"
    });
    let mut seen = std::collections::BTreeSet::new();
    for report in reports {
        let Some(first) = report["firstRequests"].as_object() else {
            continue;
        };
        for (profile, figures) in first {
            if !seen.insert(profile.clone()) {
                continue;
            }
            let sum = |key: &str| -> u64 {
                figures[key]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|part| part.get(1).and_then(Value::as_u64))
                    .sum()
            };
            let _ = write!(
                out,
                "| {profile} | {} | {} | {} ({}) |",
                figures["estimatedTokens"],
                sum("messages"),
                sum("tools"),
                figures["tools"].as_array().map_or(0, Vec::len),
            );
            if counted {
                let server = figures
                    .get("serverPromptTokens")
                    .map_or_else(|| "?".to_owned(), Value::to_string);
                let _ = write!(out, " {server} |");
            }
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    fn sample(wall_s: f64, cpu_s: f64, rss: f64) -> FanoutSample {
        FanoutSample {
            n_children: 16,
            model_turns: 83,
            tool_calls: 98,
            wall_s,
            cpu_s,
            peak_rss_mib: rss,
            run_files: 83,
            fsyncs: 40,
        }
    }

    #[test]
    fn prefix_reports_render_as_two_tables() {
        let report = json!({
            "workload": "writers-room", "agents": 5, "laterRequests": 16,
            "prefixShare": 1.0, "reusableInputShare": 0.9347, "wholePrefixRequests": 16,
            "firstRequests": {"writer": {
                "estimatedTokens": 4261,
                "messages": [["system message", 642], ["user message", 22]],
                "tools": [["agent_list", 300], ["agent_delegate", 900]],
            }},
        });
        let text = render_prefix(&[report]);
        assert!(
            text.contains("| writers-room | 5 | 16 | 1.0000 | 0.9347 | 16 |"),
            "{text}"
        );
        assert!(
            text.contains("| writer | 4261 | 664 | 1200 (2) |\n"),
            "{text}"
        );
        assert!(!text.contains("server prompt tokens"), "{text}");
    }

    #[test]
    fn prefix_reports_show_the_server_count_when_there_is_one() {
        let report = json!({
            "workload": "default-writer", "agents": 1, "laterRequests": 2,
            "prefixShare": 1.0, "reusableInputShare": 0.95, "wholePrefixRequests": 2,
            "firstRequests": {
                "default-writer": {
                    "estimatedTokens": 1700, "serverPromptTokens": 2010,
                    "messages": [["system message", 400]], "tools": [["agent_list", 1300]],
                },
                "critic": {
                    "estimatedTokens": 900, "serverError": "refused",
                    "messages": [["system message", 300]], "tools": [["agent_list", 600]],
                },
            },
        });
        let text = render_prefix(&[report]);
        assert!(text.contains("| server prompt tokens |"), "{text}");
        assert!(
            text.contains("| default-writer | 1700 | 400 | 1300 (1) | 2010 |\n"),
            "{text}"
        );
        assert!(
            text.contains("| critic | 900 | 300 | 600 (1) | ? |\n"),
            "{text}"
        );
    }

    #[test]
    fn arguments_select_the_benchmark() {
        assert_eq!(parse_args(&args(&["mcp"])).unwrap(), BenchCommand::Mcp);
        assert!(parse_args(&args(&["mcp", "--n", "1"])).is_err());
        assert_eq!(
            parse_args(&args(&["inspect"])).unwrap(),
            BenchCommand::Inspect {
                children: vec![64, 256, 1024]
            }
        );
        assert_eq!(
            parse_args(&args(&["inspect", "--n", "8"])).unwrap(),
            BenchCommand::Inspect { children: vec![8] }
        );
        assert!(parse_args(&args(&["inspect", "--n", "0"])).is_err());
        assert_eq!(
            parse_args(&args(&["channel"])).unwrap(),
            BenchCommand::Channel { children: 256 }
        );
        assert_eq!(
            parse_args(&args(&["channel", "--n", "16"])).unwrap(),
            BenchCommand::Channel { children: 16 }
        );
        assert!(parse_args(&args(&["channel", "--n", "0"])).is_err());
        assert!(parse_args(&args(&["channel", "--store", "x"])).is_err());
        assert_eq!(
            parse_args(&args(&["fanout"])).unwrap(),
            BenchCommand::Fanout {
                children: vec![1, 16, 64, 256],
                store: None
            }
        );
        assert_eq!(
            parse_args(&args(&["fanout", "--n", "16"])).unwrap(),
            BenchCommand::Fanout {
                children: vec![16],
                store: None
            }
        );
        assert_eq!(
            parse_args(&args(&["fanout", "--store", "postgres://h/db", "--n", "4"])).unwrap(),
            BenchCommand::Fanout {
                children: vec![4],
                store: Some("postgres://h/db".to_owned())
            }
        );
        assert_eq!(
            parse_args(&args(&["journal"])).unwrap(),
            BenchCommand::Journal { events: 1_000_000 }
        );
        assert_eq!(
            parse_args(&args(&["journal", "--events", "5000"])).unwrap(),
            BenchCommand::Journal { events: 5000 }
        );
        assert_eq!(
            parse_args(&args(&["prefix"])).unwrap(),
            BenchCommand::Prefix { server: None }
        );
        assert_eq!(
            parse_args(&args(&[
                "prefix",
                "--server",
                "openai:http://127.0.0.1:18080/v1"
            ]))
            .unwrap(),
            BenchCommand::Prefix {
                server: Some("openai:http://127.0.0.1:18080/v1".to_owned())
            }
        );
        for bad in [
            &[][..],
            &["fanout", "--n"][..],
            &["fanout", "--n", "0"][..],
            &["fanout", "--n", "x"][..],
            &["fanout", "--store"][..],
            &["fanout", "--n", "2", "--n", "3"][..],
            &["journal", "--n", "3"][..],
            &["prefix", "--n", "3"][..],
            &["prefix", "--server"][..],
            &["prefix", "--server", " "][..],
            &["other"][..],
        ] {
            assert!(parse_args(&args(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[0.5]), Some(0.5));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, f64::NAN, 2.0]), None);
    }

    #[test]
    fn samples_are_parsed_from_the_last_json_line() {
        let stdout = "\n{\"nChildren\":16,\"modelTurns\":83,\"toolCalls\":98,\"wallS\":0.05,\"cpuS\":0.06,\"peakRssMib\":14.5,\"runFiles\":83,\"fsyncs\":40}\n\n";
        assert_eq!(parse_sample(stdout).unwrap(), sample(0.05, 0.06, 14.5));
        assert!(parse_sample("").is_err());
        assert!(parse_sample("not json").is_err());
        assert!(parse_sample("{\"nChildren\":16}").is_err());
    }

    #[test]
    fn a_csv_row_takes_the_medians() {
        let samples = [
            sample(0.0900, 0.20, 15.0),
            sample(0.0830, 0.10, 14.0),
            sample(0.1200, 0.30, 16.0),
        ];
        assert_eq!(
            summarize("0.0.0", &samples).unwrap(),
            "tt-agent-runtime,0.0.0,16,83,98,0.0900,1084.3,15.0,0.200,1.000,0.482"
        );
        assert_eq!(CSV_HEADER.split(',').count(), 11);
    }

    #[test]
    fn disagreeing_or_empty_samples_are_errors() {
        assert!(summarize("0.0.0", &[]).is_err());
        let mut other = sample(0.1, 0.1, 1.0);
        other.model_turns = 82;
        assert!(summarize("0.0.0", &[sample(0.1, 0.1, 1.0), other]).is_err());
    }

    #[test]
    fn the_version_comes_from_the_package() {
        let metadata = json!({ "packages": [
            { "name": "tt-domain", "version": "0.0.0" },
            { "name": "tt-bench", "version": "0.0.0" },
        ]});
        assert_eq!(package_version(&metadata, "tt-bench").unwrap(), "0.0.0");
        assert!(package_version(&metadata, "missing").is_err());
    }
}
