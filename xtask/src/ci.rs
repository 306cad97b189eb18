//! `cargo xtask ci`: every check CI runs, in order, failing fast on the first failed step.
//! Steps: fmt, clippy, tidy, tests (nextest if installed, then doctests), demo smoke run, and
//! the embedding example (`examples/desktop-shell`, which exits non-zero when a step fails).

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};

use crate::process::{cargo_succeeds, run_cargo};
use crate::tidy;

const STEP_COUNT: usize = 6;

pub(crate) fn run(root: &Path) -> Result<()> {
    let started = Instant::now();
    step(1, "fmt", "cargo fmt --all -- --check", || {
        run_cargo(root, &["fmt", "--all", "--", "--check"])
    })?;
    step(
        2,
        "clippy",
        "cargo clippy --workspace --all-targets --locked -- -D warnings",
        || {
            run_cargo(
                root,
                &[
                    "clippy",
                    "--workspace",
                    "--all-targets",
                    "--locked",
                    "--",
                    "-D",
                    "warnings",
                ],
            )
        },
    )?;
    step(3, "tidy", "architecture and hygiene checks", || {
        tidy::run(root)
    })?;
    step(4, "tests", "workspace tests, then doctests", || tests(root))?;
    step(
        5,
        "demo",
        "cargo run -p tt-cli -- demo on a fresh data dir",
        || demo_smoke_run(root),
    )?;
    step(
        6,
        "example",
        "cargo run -p desktop-shell (build, run, commit, cancel, shutdown, crash and restart)",
        || run_cargo(root, &["run", "--locked", "-p", "desktop-shell"]),
    )?;
    println!(
        "ci: all {STEP_COUNT} steps passed in {}",
        seconds(started.elapsed())
    );
    Ok(())
}

/// Runs one step between a header line and a timing line; a failure names the step.
fn step(number: usize, name: &str, what: &str, body: impl FnOnce() -> Result<()>) -> Result<()> {
    println!("==> ci [{number}/{STEP_COUNT}] {name}: {what}");
    let started = Instant::now();
    let outcome = body();
    let elapsed = seconds(started.elapsed());
    match outcome {
        Ok(()) => {
            println!("<== ci [{number}/{STEP_COUNT}] {name}: ok in {elapsed}");
            Ok(())
        }
        Err(error) => {
            println!("<== ci [{number}/{STEP_COUNT}] {name}: FAILED after {elapsed}");
            Err(error.context(format!(
                "ci step {number}/{STEP_COUNT} `{name}` failed after {elapsed}"
            )))
        }
    }
}

/// The real-model tests CI leaves out to stay within its time: they measure rather than guard
/// (a long run's compactions, each built-in profile's first request, fork mode's cache share)
/// and take about five minutes together on two quiet cores. The window tests, the settings test
/// and the too-small window still run whenever `TT_LLAMA_PREFIX` is set; these run with
/// `cargo nextest run -p tt-e2e real_llama` (docs/providers.md).
const REAL_MODEL_MEASUREMENTS: &str = "test(/real_llama_a_run_reading_a_file_larger_than_the_window_completes|real_llama_first_request_of_each_profile|real_llama_fork_mode_reads_most_of_the_first_request/)";

fn tests(root: &Path) -> Result<()> {
    if cargo_succeeds(root, &["nextest", "--version"]) {
        let filter = format!("not {REAL_MODEL_MEASUREMENTS}");
        run_cargo(
            root,
            &[
                "nextest",
                "run",
                "--workspace",
                "--locked",
                "--no-fail-fast",
                "-E",
                &filter,
            ],
        )?;
    } else {
        println!("cargo-nextest is not installed; using cargo test");
        run_cargo(root, &["test", "--workspace", "--locked"])?;
    }
    // nextest does not run doctests, so they always get their own pass.
    run_cargo(root, &["test", "--workspace", "--doc", "--locked"])
}

fn demo_smoke_run(root: &Path) -> Result<()> {
    let data_dir = fresh_temp_dir()?;
    let data_dir_arg = data_dir
        .to_str()
        .ok_or_else(|| anyhow!("temp dir {} is not valid UTF-8", data_dir.display()))
        .map(str::to_owned);
    let outcome = data_dir_arg.and_then(|dir| {
        run_cargo(
            root,
            &[
                "run",
                "--locked",
                "-p",
                "tt-cli",
                "--",
                "--data-dir",
                &dir,
                "demo",
            ],
        )
    });
    if let Err(error) = fs::remove_dir_all(&data_dir) {
        println!(
            "warning: could not remove demo data dir {}: {error}",
            data_dir.display()
        );
    }
    outcome
}

/// Creates a new, empty directory under the system temp dir that no one else is using.
fn fresh_temp_dir() -> Result<PathBuf> {
    let base = std::env::temp_dir();
    let pid = std::process::id();
    for attempt in 0..1000_u32 {
        let candidate = base.join(format!("tt-xtask-demo-{pid}-{attempt}"));
        match fs::create_dir(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(error) if error.kind() == ErrorKind::AlreadyExists => {}
            Err(error) => {
                return Err(error)
                    .with_context(|| format!("could not create {}", candidate.display()));
            }
        }
    }
    bail!(
        "could not create a fresh demo data dir under {}",
        base.display()
    )
}

fn seconds(duration: Duration) -> String {
    format!("{:.1}s", duration.as_secs_f64())
}
