//! `tt-agent`: run the bundled demo, start real runs, and inspect stored runs and their journals.

#[macro_use]
mod output;

mod approve;
mod control_cmd;
mod damage;
mod demo;
mod fork_cmd;
mod inspect_cmd;
mod live;
mod logging;
mod mcp_cmd;
mod otel_export;
mod render;
mod run_cmd;
mod serve;
mod storage;

/// jemalloc, configured in .cargo/config.toml: a run allocates in many small pieces on
/// several threads, which glibc's allocator serves at a sixth more CPU (docs/benchmarks.md,
/// "The allocator").
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use storage::Storage;

#[derive(Debug, Parser)]
#[command(name = "tt-agent", version, about = "tt-agent-runtime command line")]
struct Cli {
    /// Where runs, profiles and transcripts are stored.
    #[arg(long, global = true, default_value = ".tt-agent")]
    data_dir: PathBuf,
    /// Keep runs in this store instead of the data dir: `postgres://user@host:port/db` or
    /// `file://<dir>` (default: the `TT_STORE_URL` environment variable, else the embedded store
    /// under --data-dir). PostgreSQL also keeps skills, transcripts, MCP servers, connections
    /// and preset templates: nothing is kept under --data-dir.
    #[arg(long, global = true)]
    store: Option<String>,
    /// How diagnostic logs are written; `RUST_LOG` chooses what (e.g. `tt=debug`; default:
    /// warnings and errors only).
    #[arg(long, global = true, value_enum, default_value = "text")]
    log_format: logging::LogFormat,
    /// Write diagnostic logs to this file (appended) instead of stderr.
    #[arg(long, global = true)]
    log_file: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the bundled scenario end to end on the scripted model and show it live.
    Demo {
        /// Wait this many milliseconds before each model answer, to watch the run unfold (or
        /// follow it from another terminal with `events --follow`).
        #[arg(long, default_value_t = 0)]
        pace_ms: u64,
    },
    /// Run an agent against a real model endpoint and show it live.
    ///
    /// The API key is read from OPENAI_API_KEY / ANTHROPIC_API_KEY (or --api-key-env); an
    /// OpenAI-compatible local server needs none.
    Run {
        /// The agent profile to run (default: the built-in default-writer).
        #[arg(long)]
        profile: Option<String>,
        /// Install every agent profile (*.json) in this directory before the run.
        #[arg(long)]
        profiles: Option<PathBuf>,
        #[command(flatten)]
        model: run_cmd::ModelArgs,
        #[command(flatten)]
        generation: run_cmd::GenerationArgs,
        /// The conversation the run belongs to (runs of one conversation share persist/).
        #[arg(long, default_value = "cli-conversation")]
        chat: String,
        /// What to ask the agent.
        request: String,
    },
    /// Resume an interrupted, failed or cancelled run (docs/resume.md) against a model
    /// endpoint and show it live: its agents continue from their stored model responses and
    /// tool results, a failed or cancelled run's from where its end stopped them.
    ///
    /// The model options are those of `run`; the run's agents and profiles are its own.
    Resume {
        /// The run (`tt-agent runs` lists runs and their status).
        run_id: String,
        #[command(flatten)]
        model: run_cmd::ModelArgs,
        /// Continue on the demo's scripted model (a run of `tt-agent demo`; recognised without
        /// this flag when no model is given).
        #[arg(long)]
        demo: bool,
    },
    /// Branch a run (docs/branching.md): a new run of the same chat that replays the source
    /// up to the fork point (no model call, no tool run again) and continues from there, shown
    /// live. The source is left as it is.
    Fork(fork_cmd::ForkOptions),
    /// Serve the run inspector: the host API as JSON over HTTP and a live web page, on
    /// 127.0.0.1. Prints the page's URL (with its secret token).
    ///
    /// Without --connection, runs play the bundled writers' room on the scripted model.
    Serve {
        /// The port on 127.0.0.1 (0: any free port).
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// `openai:<baseUrl>` or `anthropic:<baseUrl>`: the model endpoint every run uses.
        #[arg(long)]
        connection: Option<String>,
        /// The model id (with --connection).
        #[arg(long)]
        model: Option<String>,
        /// The environment variable holding the API key (with --connection).
        #[arg(long)]
        api_key_env: Option<String>,
        /// Stream responses (live model output in the journal and on the page).
        #[arg(long)]
        stream: bool,
        /// Install every agent profile (*.json) in this directory first.
        #[arg(long)]
        profiles: Option<PathBuf>,
        /// Scripted model only: wait this many milliseconds before each answer, to watch the
        /// tree unfold.
        #[arg(long, default_value_t = 400)]
        pace_ms: u64,
        /// Commits wait until the page publishes or rejects them (default: recorded in a
        /// transcript at once).
        #[arg(long)]
        host_commits: bool,
    },
    /// List stored runs, newest first: the newest `--limit` only, so its cost does not grow
    /// with the data dir. A listed run whose record was rebuilt or keeps a refused end is named
    /// after the list, with a warning and exit status 3 (docs/storage.md, "Damage").
    Runs {
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// Also read every stored run's record and name those that cannot be read or rebuilt
        /// (left out of every list); this reads the whole data dir.
        #[arg(long)]
        unreadable: bool,
    },
    /// Print a run's journal (JSON lines).
    Events(inspect_cmd::EventsOptions),
    /// Send a line of user guidance to a run; its foreground agent reads it before its next
    /// model request. Only the process running the run can deliver it: from another process
    /// this answers `agent.guidance_run_not_owned` (type the line into that process's terminal
    /// instead), and for a run that has ended `agent.guidance_mailbox_closed`.
    Guide { run_id: String, text: String },
    /// Print a run as OpenTelemetry traces (OTLP/JSON, one `invoke_agent` span per agent with
    /// its `chat` and `execute_tool` spans), built from its journal; load it into any OTLP
    /// viewer or collector (docs/observability.md).
    ExportOtel { run_id: String },
    /// Print the agent tree of a stored run, then each agent's usage, own and rolled up over
    /// the tasks it delegated. A damaged run (see `check`) is printed as stored, then named on
    /// stderr, and the command exits with status 3.
    Graph { run_id: String },
    /// Print a run's token usage and cost: per agent, own and with the tasks it delegated,
    /// and in total (`--json`: the whole `RunUsage`, with `costUsd: null` when no call had a
    /// price: unpriced is never free). Summed from the journal, so exact for stored runs.
    Usage {
        run_id: String,
        /// Print the whole answer as JSON (`RunUsage`).
        #[arg(long)]
        json: bool,
    },
    /// Check a stored run for damage, read-only (docs/storage.md, "Damage"): seq gaps over its
    /// whole journal, an empty journal, a journal that stops short of the end the run record
    /// shows, records that stop short of it, an end the journal refused. Prints each finding
    /// with its code; exits 0 when there is none, 3 when there is.
    Check {
        run_id: String,
        /// Print the whole answer as JSON (`RunDamage`).
        #[arg(long)]
        json: bool,
    },
    /// Give up an interrupted, failed or cancelled run so that it is never resumed; its status
    /// stays (docs/resume.md).
    Abandon { run_id: String },
    /// Cancel a run, or with `--task` one delegated task and the tasks it delegated in turn.
    ///
    /// In-process only for now: a run that another live process executes is refused with
    /// `agent.run_locked` (stop it from that process, e.g. with Ctrl-C); a run that ended is
    /// left as it is.
    Cancel {
        run_id: String,
        /// The task to cancel (a `taskId` from the journal or `graph`); omit to cancel the run.
        #[arg(long)]
        task: Option<String>,
    },
    /// Print one stored record of a run as JSON: a reference from an event (`argumentsRef`,
    /// `modelResponsePath`, `resultRef`, …) or `run.json`, `manifest.json`,
    /// `tasks/<taskId>.json`, `invocations/<invocationId>.json`, `checkpoints/<checkpointId>`,
    /// `blobs/<sha256>`.
    Show { run_id: String, reference: String },
    /// Print one agent's conversation as JSON: what it started from (system prompt, brief),
    /// then per round its answer (text, tool calls, tokens, cost), its tool results, injected
    /// results, guidance and reminders, and the result it returned, rebuilt from the journal
    /// and the stored records (docs/host-api.md, "An agent's conversation"). The agent is an
    /// `invocationId` from the journal or `graph` (`inv_root` for the root).
    Conversation {
        run_id: String,
        invocation_id: String,
    },
    /// MCP servers whose tools profiles can offer their agents (docs/tools.md): `add`, `list`,
    /// `tools`, `call`, `remove`. They are kept under the data dir.
    Mcp {
        #[command(subcommand)]
        command: mcp_cmd::McpCommand,
    },
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match run(Cli::parse()).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) if error.downcast_ref::<damage::Damaged>().is_some() => {
            // What was printed came from a damaged run: say so, with a status of its own.
            eprintln!("{error}");
            std::process::ExitCode::from(damage::DAMAGE_EXIT_CODE)
        }
        Err(error) => {
            // The reason and its causes on one line each; never a backtrace (RUST_BACKTRACE is
            // for the runtime's own panics, not for a run that failed as runs may).
            eprintln!("{}", failure_text(&error));
            std::process::ExitCode::FAILURE
        }
    }
}

/// What `tt-agent` prints when a command fails: `Error: <reason>` and `Caused by:` lines.
fn failure_text(error: &anyhow::Error) -> String {
    let mut text = format!("Error: {error}");
    let causes: Vec<String> = error.chain().skip(1).map(ToString::to_string).collect();
    if !causes.is_empty() {
        text.push_str("\n\nCaused by:");
        for (index, cause) in causes.iter().enumerate() {
            text.push_str(&format!("\n    {index}: {cause}"));
        }
    }
    text
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    // Long: the command table, one arm per command, each handing its flags to its module as
    // that module's options; split, the table would be read in pieces.
    logging::init(cli.log_format, cli.log_file.as_deref())?;
    let storage = Storage::open(cli.data_dir.clone(), cli.store.clone()).await?;
    match cli.command {
        Command::Demo { pace_ms } => demo::run_demo(&storage, pace_ms, &install_signals()?).await,
        Command::Run {
            profile,
            profiles,
            model,
            generation,
            chat,
            request,
        } => {
            let options = run_cmd::RunOptions {
                profile,
                profiles_dir: profiles,
                model,
                generation: generation.settings()?,
                chat_id: chat,
                request,
            };
            run_cmd::run(&storage, options, &install_signals()?).await
        }
        Command::Resume {
            run_id,
            model,
            demo,
        } => run_cmd::resume(&storage, &run_id, &model, demo, &install_signals()?).await,
        Command::Fork(options) => fork_cmd::fork(&storage, options, &install_signals()?).await,
        Command::Serve {
            port,
            connection,
            model,
            api_key_env,
            stream,
            profiles,
            pace_ms,
            host_commits,
        } => {
            let options = serve::ServeOptions {
                port,
                connection,
                model,
                api_key_env,
                stream,
                profiles_dir: profiles,
                pace_ms,
                host_commits,
            };
            serve::serve(&storage, options, &install_signals()?).await
        }
        Command::Runs { limit, unreadable } => inspect_cmd::runs(&storage, limit, unreadable).await,
        Command::Events(options) => inspect_cmd::events(&storage, options).await,
        Command::Show { run_id, reference } => {
            inspect_cmd::show(&storage, &run_id, &reference).await
        }
        Command::Conversation {
            run_id,
            invocation_id,
        } => inspect_cmd::conversation(&storage, &run_id, &invocation_id).await,
        Command::Guide { run_id, text } => control_cmd::guide(&storage, &run_id, text).await,
        Command::Cancel { run_id, task } => control_cmd::cancel(&storage, &run_id, task).await,
        Command::Mcp { command } => {
            let runtime = storage.writer_runtime()?;
            let outcome = mcp_cmd::run(&runtime, command).await;
            runtime.shutdown().await?;
            outcome
        }
        Command::Abandon { run_id } => control_cmd::abandon(&storage, &run_id).await,
        Command::ExportOtel { run_id } => inspect_cmd::export_otel(&storage, &run_id).await,
        Command::Graph { run_id } => inspect_cmd::graph(&storage, &run_id).await,
        Command::Check { run_id, json } => {
            let runtime = storage.inspect_runtime()?;
            damage::check(&runtime, &run_id, json).await
        }
        Command::Usage { run_id, json } => inspect_cmd::usage(&storage, &run_id, json).await,
    }
}

/// SIGINT and SIGTERM handling for the commands that run agents, installed before anything is
/// written: the first signal cancels the run, a second exits at once.
fn install_signals() -> anyhow::Result<tt_runtime::StopSignals> {
    tt_runtime::StopSignals::install().context("cannot install the SIGINT/SIGTERM handlers")
}

#[cfg(all(test, feature = "jemalloc", not(target_env = "msvc")))]
mod allocator_tests {
    /// The options of `.cargo/config.toml` reach the jemalloc this binary links (a build run
    /// from outside the workspace would miss them, and with them the peak memory they keep).
    #[test]
    fn jemalloc_runs_with_the_workspaces_options() {
        let options = tikv_jemalloc_ctl::config::malloc_conf::read().unwrap();
        assert!(options.contains("narenas:1"), "{options}");
        assert!(options.contains("dirty_decay_ms:100"), "{options}");
        assert!(options.contains("tcache_max:4096"), "{options}");
        assert_eq!(tikv_jemalloc_ctl::opt::narenas::read().unwrap(), 1);
    }
}
