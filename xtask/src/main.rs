//! `cargo xtask`: project automation for tt-agent-runtime.
//! `ci` runs every check CI runs, `tidy` checks architecture and hygiene rules, `errors` writes
//! `docs/errors.md` from the error-code table, `bench` runs the benchmarks (`fanout`,
//! `journal`) in release, `soak` runs stress tests (`crash`) in release.

mod bench;
mod bench_history;
mod ci;
mod error_codes;
mod file_graph;
mod fn_length;
mod glob_exports;
mod layering;
mod long_functions;
mod manifest;
mod module_cycles;
mod module_graph;
mod process;
mod sibling_cycles;
mod soak;
mod sources;
mod stats;
mod tidy;
mod violation;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  ci      run every check and test CI runs (fmt, clippy, tidy, tests, demo smoke run,
          the desktop-shell example)
  tidy    check crate layering, manifests, module headers, printing in library crates,
          file-level import cycles, file length, and error codes (every code literal
          listed in tt-domain's table, every entry used, docs/errors.md current)
  errors  write docs/errors.md from the error-code table (crates/tt-domain/src/error_codes/)
  bench   run a benchmark in release: `bench fanout [--n N] [--store URL]`,
          `bench journal [--events N]`, `bench prefix`, `bench mcp`,
          `bench channel [--n N]`, `bench history [--sizes …] [--samples S]`
  soak    stress in release: `soak crash [--resume] [--trials N] [--store URL]` (SIGKILL a
          fan-out run, reopen, check; with --resume, resume it after each kill until it
          completes; with --store postgres://…, the runs are kept on that server);
          `soak fork [--trials N]` (branch a finished and a killed fan-out at N
          pseudo-random seqs each, check every branch and that the sources stay unchanged)
  help    print this text
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = workspace_root();
    match args.as_slice() {
        [command] if command == "ci" => finish(ci::run(&root)),
        [command] if command == "tidy" => finish(tidy::run(&root)),
        [command] if command == "errors" => finish(error_codes::write_doc(&root)),
        [command, rest @ ..] if command == "bench" => finish(bench::run(&root, rest)),
        [command, rest @ ..] if command == "soak" => finish(soak::run(&root, rest)),
        [command] if matches!(command.as_str(), "help" | "-h" | "--help") => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        [] => usage_error("no command given"),
        [command] => usage_error(&format!("unknown command `{command}`")),
        [command, extra, ..] => {
            usage_error(&format!("unexpected argument `{extra}` after `{command}`"))
        }
    }
}

fn usage_error(message: &str) -> ExitCode {
    eprintln!("xtask: {message}\n");
    eprint!("{USAGE}");
    ExitCode::from(2)
}

fn finish(result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("xtask: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root: xtask lives one level below it.
fn workspace_root() -> PathBuf {
    let xtask_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    xtask_dir.parent().unwrap_or(xtask_dir).to_path_buf()
}
