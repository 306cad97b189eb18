//! `tt-bench`: benchmarks of tt-agent-runtime, run through `cargo xtask bench` (release build).
//! `fanout` times one delegation run and prints one JSON line; `inspect` times reading a big
//! fan-out's root conversation and agent graph; `journal` prints a table of append
//! and page-read costs as a run's journal grows; `prefix` prints how much of each request a
//! prompt cache can reuse and each profile's first request size. See `docs/benchmarks.md`.

mod fanout;
mod history;
mod inspect;
mod journal;
mod mcp;
mod prefix;
mod procstat;
mod threads;

use clap::{Parser, Subcommand};

/// jemalloc (the default `jemalloc` feature), as tt-cli: docs/benchmarks.md, "The allocator".
#[cfg(all(
    feature = "jemalloc",
    not(feature = "mimalloc"),
    not(target_env = "msvc")
))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
/// With the `mimalloc` feature (off by default: an A/B of the allocator, docs/benchmarks.md),
/// mimalloc is this binary's allocator instead.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Parser)]
#[command(
    name = "tt-bench",
    about = "Benchmarks of tt-agent-runtime (see docs/benchmarks.md)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// One run: the root delegates N children (5 model turns each), awaits them all, finishes.
    /// Prints {"nChildren","modelTurns","toolCalls","wallS","cpuS","userS","peakRssMib","rssFileMib","processPeakRssMib","runFiles","fsyncs"}.
    Fanout {
        /// Number of delegated children (N).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        children: u32,
        /// A fresh (missing or empty) data dir to keep; default: a temporary dir, removed after.
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Accept a --data-dir that already holds runs (crash tests start a new run beside an
        /// interrupted one); the figures are then not comparable.
        #[arg(long, requires = "data_dir")]
        reuse_data_dir: bool,
        /// Keep the run in this store (`postgres://…`) instead of the data dir; the database
        /// may hold other runs. `runFiles` and `fsyncs` are then 0 (the server's, not ours).
        #[arg(long)]
        store: Option<String>,
    },
    /// What the inspector reads of a fan-out of N children: the `fanout` run, then the root's
    /// conversation and the agent graph read from its files by a second runtime, cold and warm.
    /// Prints {"nChildren","setupS","conversationColdS","conversationWarmS","graphColdS","graphWarmS","conversationEntries"}.
    Inspect {
        /// Number of delegated children (N).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        children: u32,
        /// Warm reads of each after the cold one (their median is reported; 0: none).
        #[arg(long, default_value_t = inspect::WARM_READS)]
        warm: u32,
    },
    /// The cacheable prefix of each request and the first request of each profile, over the
    /// writers' room, a fan-out and a reader on a small window; one JSON line per workload.
    /// Fails when a first request is over 2,000 estimated tokens or a prefix share under 0.95.
    Prefix {
        /// Also send each profile's first request to this server (`openai:http://HOST:PORT/v1`,
        /// e.g. a llama.cpp `llama-server`) and report its prompt tokens beside the estimate.
        #[arg(long)]
        server: Option<String>,
    },
    /// What the runtime adds to each MCP tool call over stdio (server-everything's `echo`),
    /// beside the call itself; one JSON line per round, then the medians.
    Mcp {
        /// Calls per timing.
        #[arg(long, default_value_t = 400, value_parser = clap::value_parser!(u32).range(8..))]
        calls: u32,
        /// Rounds of the three timings, alternated.
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
        rounds: u32,
        /// server-everything's `dist/index.js` (default: where the MCP tests install it).
        #[arg(long)]
        server: Option<PathBuf>,
    },
    /// Fills a fresh data dir with N earlier finished runs (written in the store's layout from
    /// one real run). Prints {"runs","seedS"}.
    HistorySeed {
        /// Earlier runs to write.
        #[arg(long)]
        runs: u64,
        /// The fresh (missing or empty) data dir to fill.
        #[arg(long)]
        data_dir: PathBuf,
    },
    /// One sample in a seeded data dir: the runtime's start, one small run (one child), the
    /// first page of `tt-agent runs`. Prints {"startS","runS","runsS","listed"}.
    History {
        /// The seeded data dir (each sample adds its run to it).
        #[arg(long)]
        data_dir: PathBuf,
        /// How many runs the `runs` page lists (`tt-agent runs` shows 20).
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=500))]
        page: u32,
    },
    /// Append events to one run's journal, then time page reads; prints a table.
    Journal {
        /// Events in the file at the last measuring mark (one more window is appended after it).
        #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1_000..))]
        events: u64,
        /// A fresh directory to keep; default: a temporary dir, removed after.
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("tt-bench: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> anyhow::Result<()> {
    let runtime = threads::tokio_runtime()?;
    runtime.block_on(async {
        // Before anything is written: SIGINT/SIGTERM then cancel the benchmark (and remove its
        // temporary dir); a second one exits at once.
        let signals = tt_runtime::StopSignals::install()?;
        match command {
            Command::Fanout {
                children,
                data_dir,
                reuse_data_dir,
                store,
            } => {
                let report = fanout::run(
                    children,
                    data_dir,
                    reuse_data_dir,
                    store.as_deref(),
                    &signals,
                )
                .await?;
                println!("{}", report.to_json());
            }
            Command::Inspect { children, warm } => {
                let report = inspect::run(children, warm, &signals).await?;
                println!("{}", report.to_json());
            }
            Command::Mcp {
                calls,
                rounds,
                server,
            } => {
                let server = server.unwrap_or_else(mcp::default_server);
                let requested = signals.requested();
                let timings = tokio::select! {
                    timings = mcp::run(calls, rounds, &server) => timings?,
                    () = requested.cancelled() => anyhow::bail!("stopped by a signal"),
                };
                println!("{}", mcp::summary(&timings));
            }
            Command::Prefix { server } => {
                let server = server.as_deref().map(prefix::server).transpose()?;
                let reports = prefix::run(server).await?;
                for report in &reports {
                    println!("{report}");
                }
                let broken = prefix::check(&reports);
                anyhow::ensure!(broken.is_empty(), "{}", broken.join("; "));
            }
            Command::HistorySeed { runs, data_dir } => {
                let dir = history::fresh_dir(&data_dir)?;
                println!("{}", history::seed(&dir, runs, &signals).await?);
            }
            Command::History { data_dir, page } => {
                println!("{}", history::sample(&data_dir, page, &signals).await?);
            }
            Command::Journal { events, data_dir } => {
                let requested = signals.requested();
                let report = tokio::select! {
                    report = journal::run(events, data_dir) => report?,
                    () = requested.cancelled() => anyhow::bail!("stopped by a signal"),
                };
                print!("{}", journal::render(&report));
            }
        }
        Ok(())
    })
}
