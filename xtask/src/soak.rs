//! `cargo xtask soak crash [--trials N]`: the crash test of `crates/tt-bench/tests/crash.rs`
//! with many trials (SIGKILL of a fan-out run at spread moments, then reopen and check), in
//! release so each trial is quick. CI runs the same test with a few trials.

use anyhow::{Result, bail};
use std::path::Path;

/// Trials when `--trials` is not given.
const DEFAULT_TRIALS: u64 = 50;

/// Parses `crash [--trials N]`; returns the trial count.
pub fn parse_args(args: &[String]) -> Result<u64> {
    match args {
        [kind] if kind == "crash" => Ok(DEFAULT_TRIALS),
        [kind, flag, n] if kind == "crash" && flag == "--trials" => match n.parse::<u64>() {
            Ok(trials) if trials > 0 => Ok(trials),
            _ => bail!("--trials takes a positive whole number, not `{n}`"),
        },
        _ => bail!("usage: cargo xtask soak crash [--trials N]"),
    }
}

pub fn run(root: &Path, args: &[String]) -> Result<()> {
    let trials = parse_args(args)?;
    eprintln!("soak crash: {trials} trials of SIGKILL during a fan-out run");
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
    command.env("TT_CRASH_TRIALS", trials.to_string());
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
        assert_eq!(parse_args(&args(&["crash"])).unwrap(), DEFAULT_TRIALS);
        assert_eq!(parse_args(&args(&["crash", "--trials", "7"])).unwrap(), 7);
        for bad in [
            &[][..],
            &["other"][..],
            &["crash", "--trials"][..],
            &["crash", "--trials", "0"][..],
            &["crash", "--trials", "x"][..],
        ] {
            assert!(parse_args(&args(bad)).is_err(), "{bad:?}");
        }
    }
}
