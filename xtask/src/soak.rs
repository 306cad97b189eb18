//! `cargo xtask soak crash [--resume] [--trials N] [--store URL]`: the crash test of
//! `crates/tt-bench/tests/crash/` with many trials (SIGKILL of a fan-out run at spread
//! moments, then reopen and check), in release so each trial is quick. With `--resume`, the
//! resume soak of `tests/e2e/resume.rs` instead: SIGKILL at pseudo-random moments, resume in a
//! new process, repeat until the run completes, and check it against an uninterrupted run. With
//! `--store postgres://…`, the fan-out runs are kept on that server (`crash/postgres.rs`). CI
//! runs the same tests with a few trials.
//!
//! `cargo xtask soak fork [--trials N]`: the branching soak of `tests/e2e/fork_random.rs`, in
//! release: N branches at pseudo-random seqs of a finished fan-out and of a killed one, each
//! checked to complete like an uninterrupted run while its source stays byte for byte the same.

use anyhow::{Result, bail};
use std::path::Path;

/// Trials when `--trials` is not given.
const DEFAULT_TRIALS: u64 = 50;

/// What `soak` was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Soak {
    pub trials: u64,
    /// Resume each killed run until it completes (`--resume`).
    pub resume: bool,
    /// `--store URL`: the crash test on that PostgreSQL server instead of a data dir.
    pub store: Option<String>,
}

const USAGE: &str = "usage: cargo xtask soak crash [--resume] [--trials N] [--store postgres://…]";

/// Parses `crash [--resume] [--trials N]`.
pub(crate) fn parse_args(args: &[String]) -> Result<Soak> {
    let [kind, rest @ ..] = args else {
        bail!(USAGE);
    };
    if kind != "crash" {
        bail!(USAGE);
    }
    let mut soak = Soak {
        trials: DEFAULT_TRIALS,
        resume: false,
        store: None,
    };
    let mut rest = rest.iter();
    while let Some(flag) = rest.next() {
        match flag.as_str() {
            "--resume" => soak.resume = true,
            "--trials" => {
                let Some(n) = rest.next() else {
                    bail!(USAGE);
                };
                soak.trials = match n.parse::<u64>() {
                    Ok(trials) if trials > 0 => trials,
                    _ => bail!("--trials takes a positive whole number, not `{n}`"),
                };
            }
            "--store" => match rest.next() {
                Some(url) if !url.trim().is_empty() => soak.store = Some(url.clone()),
                _ => bail!(USAGE),
            },
            _ => bail!(USAGE),
        }
    }
    if soak.resume && soak.store.is_some() {
        bail!("--resume soaks the embedded store only; leave out --store");
    }
    Ok(soak)
}

/// Parses `fork [--trials N]` into the trials per source run.
pub(crate) fn parse_fork_args(args: &[String]) -> Result<u64> {
    const FORK_USAGE: &str = "usage: cargo xtask soak fork [--trials N]";
    match args {
        [kind] if kind == "fork" => Ok(DEFAULT_TRIALS),
        [kind, flag, n] if kind == "fork" && flag == "--trials" => match n.parse::<u64>() {
            Ok(trials) if trials > 0 => Ok(trials),
            _ => bail!("--trials takes a positive whole number, not `{n}`"),
        },
        _ => bail!(FORK_USAGE),
    }
}

fn run_fork(root: &Path, trials: u64) -> Result<()> {
    eprintln!("soak fork: {trials} branches at pseudo-random seqs of each source run");
    let mut command = crate::process::cargo(
        root,
        &[
            "test",
            "--release",
            "-p",
            "tt-e2e",
            "--test",
            "e2e",
            "--",
            "fork_random::",
            "--nocapture",
        ],
    );
    command.env("TT_FORK_TRIALS", trials.to_string());
    if !command.status()?.success() {
        bail!("the fork soak failed");
    }
    Ok(())
}

pub(crate) fn run(root: &Path, args: &[String]) -> Result<()> {
    if args.first().is_some_and(|kind| kind == "fork") {
        return run_fork(root, parse_fork_args(args)?);
    }
    let soak = parse_args(args)?;
    let mut command = if soak.resume {
        eprintln!(
            "soak crash --resume: {} trials of SIGKILL, resume, repeat until the run completes",
            soak.trials
        );
        let mut command = crate::process::cargo(
            root,
            &[
                "test",
                "--release",
                "-p",
                "tt-e2e",
                "--test",
                "e2e",
                "--",
                "resume::killed_at_random_moments",
                "--nocapture",
            ],
        );
        command.env("TT_RESUME_SOAK_TRIALS", soak.trials.to_string());
        command
    } else if let Some(url) = &soak.store {
        eprintln!(
            "soak crash --store: {} trials of SIGKILL during a fan-out run on PostgreSQL",
            soak.trials
        );
        let mut command = crate::process::cargo(
            root,
            &[
                "test",
                "--release",
                "-p",
                "tt-bench",
                "--test",
                "crash",
                "--",
                "postgres::a_killed_fan_out_run_on_postgres",
                "--nocapture",
            ],
        );
        command.env("TT_CRASH_TRIALS", soak.trials.to_string());
        command.env("TT_CRASH_STORE_URL", url);
        command
    } else {
        eprintln!(
            "soak crash: {} trials of SIGKILL during a fan-out run",
            soak.trials
        );
        let mut command = crate::process::cargo(
            root,
            &[
                "test",
                "--release",
                "-p",
                "tt-bench",
                "--test",
                "crash",
                "--",
                "a_killed_fan_out_run_is_interrupted",
                "--nocapture",
            ],
        );
        command.env("TT_CRASH_TRIALS", soak.trials.to_string());
        command
    };
    let status = command.status()?;
    if !status.success() {
        bail!("the crash soak failed ({status})");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fork_trials_are_parsed() {
        assert_eq!(parse_fork_args(&args(&["fork"])).unwrap(), DEFAULT_TRIALS);
        assert_eq!(
            parse_fork_args(&args(&["fork", "--trials", "9"])).unwrap(),
            9
        );
        for bad in [
            &["fork", "--trials"][..],
            &["fork", "--trials", "0"][..],
            &["fork", "--resume"][..],
        ] {
            assert!(parse_fork_args(&args(bad)).is_err(), "{bad:?}");
        }
    }

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn trials_are_parsed() {
        let soak = |trials, resume| Soak {
            trials,
            resume,
            store: None,
        };
        assert_eq!(
            parse_args(&args(&["crash"])).unwrap(),
            soak(DEFAULT_TRIALS, false)
        );
        assert_eq!(
            parse_args(&args(&["crash", "--trials", "7"])).unwrap(),
            soak(7, false)
        );
        assert_eq!(
            parse_args(&args(&["crash", "--resume", "--trials", "3"])).unwrap(),
            soak(3, true)
        );
        assert_eq!(
            parse_args(&args(&["crash", "--trials", "3", "--resume"])).unwrap(),
            soak(3, true)
        );
        assert_eq!(
            parse_args(&args(&[
                "crash",
                "--store",
                "postgres://h/db",
                "--trials",
                "100"
            ]))
            .unwrap(),
            Soak {
                trials: 100,
                resume: false,
                store: Some("postgres://h/db".to_owned()),
            }
        );
        for bad in [
            &["crash", "--store"][..],
            &["crash", "--resume", "--store", "postgres://h/db"][..],
            &[][..],
            &["other"][..],
            &["crash", "--trials"][..],
            &["crash", "--trials", "0"][..],
            &["crash", "--trials", "x"][..],
            &["crash", "--again"][..],
        ] {
            assert!(parse_args(&args(bad)).is_err(), "{bad:?}");
        }
    }
}
