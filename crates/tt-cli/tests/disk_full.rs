//! `tt-agent demo` on a tiny tmpfs (mounted in a user and mount namespace with `unshare`, when
//! the machine allows it; otherwise the test says why and passes): whatever write runs out of
//! space, the process ends within a bounded time, exits non-zero and prints the OS error with
//! `agent.storage_io`, never hangs.

use std::process::{Command, Stdio};
use std::time::Duration;

/// Whether this machine lets an unprivileged test mount a tmpfs of its own.
fn can_mount_tmpfs() -> Result<(), String> {
    let output = Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "sh", "-c"])
        .arg("d=$(mktemp -d) && mount -t tmpfs -o size=16k tmpfs \"$d\" && umount \"$d\"; rmdir \"$d\"")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|err| format!("cannot run unshare: {err}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "unshare/mount refused: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

#[test]
fn the_demo_on_a_full_disk_fails_with_storage_io_and_never_hangs() {
    if let Err(reason) = can_mount_tmpfs() {
        println!("skipped: {reason}");
        return;
    }
    let mount = tempfile::tempdir().unwrap();
    // From "no room for the first record" to "full in the middle of the delegation".
    for size in ["32k", "96k", "160k", "256k"] {
        let script = format!(
            "mount -t tmpfs -o size={size} tmpfs '{dir}' && exec '{bin}' --data-dir '{dir}/data' demo",
            dir = mount.path().display(),
            bin = env!("CARGO_BIN_EXE_tt-agent"),
        );
        let child = Command::new("unshare")
            .args(["--user", "--map-root-user", "--mount", "sh", "-c", &script])
            .env_remove("RUST_BACKTRACE")
            .env_remove("RUST_LIB_BACKTRACE")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (code, text) = crate::finish_within(
            child,
            Duration::from_secs(60),
            &format!("tt-agent hung on a {size} tmpfs"),
        );
        assert_eq!(code, Some(1), "{size}: {text}");
        assert!(
            text.contains("agent.storage_io") && text.contains("No space left on device"),
            "{size}: {text}"
        );
    }
}
