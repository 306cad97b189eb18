//! Running `cargo` subcommands from xtask: the same cargo that launched us, in the workspace
//! root, with inherited stdio, turning a non-zero exit into an error that names the command.

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// The cargo binary that runs xtask (`$CARGO`), or `cargo` from `PATH`.
pub(crate) fn cargo_bin() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"))
}

/// A `cargo <args>` command rooted at `root`.
pub(crate) fn cargo(root: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(cargo_bin());
    command.args(args).current_dir(root);
    command
}

/// Runs `cargo <args>` in `root`, echoing the command line first; fails on a non-zero exit.
pub(crate) fn run_cargo(root: &Path, args: &[&str]) -> Result<()> {
    let line = format!("cargo {}", args.join(" "));
    println!("$ {line}");
    let status = cargo(root, args)
        .status()
        .with_context(|| format!("could not start `{line}`"))?;
    if !status.success() {
        bail!("`{line}` failed ({status})");
    }
    Ok(())
}

/// Runs `cargo <args>` quietly and returns whether it succeeded (false if it could not start).
pub(crate) fn cargo_succeeds(root: &Path, args: &[&str]) -> bool {
    cargo(root, args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Runs `cargo <args>` and returns its stdout; fails on a non-zero exit (stderr is inherited).
pub(crate) fn cargo_stdout(root: &Path, args: &[&str]) -> Result<String> {
    let line = format!("cargo {}", args.join(" "));
    let output = cargo(root, args)
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("could not start `{line}`"))?;
    if !output.status.success() {
        bail!("`{line}` failed ({})", output.status);
    }
    String::from_utf8(output.stdout).with_context(|| format!("`{line}` printed non-UTF-8 output"))
}
