//! `cargo xtask soak crash [--resume] [--trials N]`: the crash test of
//! `crates/tt-bench/tests/crash.rs` with many trials (SIGKILL of a fan-out run at spread
//! moments, then reopen and check), in release so each trial is quick. With `--resume`, the
//! resume soak of `tests/e2e/resume.rs` instead: SIGKILL at pseudo-random moments, resume in a
//! new process, repeat until the run completes, and check it against an uninterrupted run. CI
//! runs the same tests with a few trials.

use anyhow::{Result, bail};
use std::path::Path;

/// Trials when `--trials` is not given.
const DEFAULT_TRIALS: u64 = 50;

/// What `soak` was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Soak {
    pub trials: u64,
    /// Resume each killed run until it completes (`--resume`).
    pub resume: bool,
}

const USAGE: &str = "usage: cargo xtask soak crash [--resume] [--trials N]";

/// Parses `crash [--resume] [--trials N]`.
pub fn parse_args(args: &[String]) -> Result<Soak> {
    let [kind, rest @ ..] = args else {
        bail!(USAGE);
    };
    if kind != "crash" {
        bail!(USAGE);
    }
    let mut soak = Soak {
        trials: DEFAULT_TRIALS,
        resume: false,
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
            _ => bail!(USAGE),
        }
    }
    Ok(soak)
}

pub fn run(root: &Path, args: &[String]) -> Result<()> {
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
                "a_killed_fan_out_run",
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

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn trials_are_parsed() {
        let soak = |trials, resume| Soak { trials, resume };
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
        for bad in [
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
