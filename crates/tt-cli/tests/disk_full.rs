//! `tt-agent demo` on a tiny tmpfs (mounted in a user and mount namespace with `unshare`, when
//! the machine allows it; otherwise the test says why and passes): whatever write runs out of
//! space, the process ends within a bounded time, exits non-zero and prints the OS error with
//! `agent.storage_io`, never hangs; and the run it stopped, opened again with room, resumes to
//! its end.

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
        // What the full disk kept is copied out (the tmpfs goes with the namespace), to be
        // opened again with room.
        let copy = tempfile::tempdir().unwrap();
        let script = format!(
            "mount -t tmpfs -o size={size} tmpfs '{dir}' && {{ '{bin}' --data-dir '{dir}/data' demo; code=$?; \
             cp -a '{dir}/data' '{copy}/data'; exit $code; }}",
            dir = mount.path().display(),
            copy = copy.path().display(),
            bin = env!("CARGO_BIN_EXE_tt-agent"),
        );
        let (code, text) = crate::run_within(
            Command::new("unshare")
                .args(["--user", "--map-root-user", "--mount", "sh", "-c", &script])
                .env_remove("RUST_BACKTRACE")
                .env_remove("RUST_LIB_BACKTRACE"),
            Duration::from_secs(60),
            &format!("tt-agent hung on a {size} tmpfs"),
        );
        assert_eq!(code, Some(1), "{size}: {text}");
        assert!(
            text.contains("agent.storage_io") && text.contains("No space left on device"),
            "{size}: {text}"
        );
        resumes_with_room(&copy.path().join("data"), size);
    }
}

/// The run a full disk stopped, opened again with room: `tt-agent resume` completes it (a run
/// the disk let nobody create is not there to resume).
fn resumes_with_room(data: &std::path::Path, size: &str) {
    let runs: Vec<String> = std::fs::read_dir(data.join("chats"))
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|chat| {
            std::fs::read_dir(chat.path().join("runs"))
                .into_iter()
                .flatten()
        })
        .flatten()
        .map(|run| run.file_name().to_string_lossy().into_owned())
        .collect();
    for run_id in runs {
        let (code, text) = crate::run_within(
            crate::agent_in(data).args(["resume", &run_id]),
            Duration::from_secs(120),
            &format!("the resume after a {size} tmpfs hung"),
        );
        assert_eq!(code, Some(0), "{size}: {text}");
        assert!(text.contains("ended: completed"), "{size}: {text}");
    }
}
