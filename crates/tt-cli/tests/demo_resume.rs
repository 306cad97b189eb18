//! `tt-agent resume` of a killed `tt-agent demo`: it continues on the demo's own model without
//! any model option, and a resume that is not told which model to use says what to give. No
//! failure prints a backtrace, even with `RUST_BACKTRACE=1`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// The id of the one run under `data_dir`.
fn only_run(data_dir: &Path) -> String {
    let chats = std::fs::read_dir(data_dir.join("chats")).unwrap();
    let mut ids = Vec::new();
    for chat in chats {
        for run in std::fs::read_dir(chat.unwrap().path().join("runs")).unwrap() {
            ids.push(run.unwrap().file_name().to_string_lossy().into_owned());
        }
    }
    assert_eq!(ids.len(), 1, "{ids:?}");
    ids.remove(0)
}

/// A `tt-agent demo` killed once its agents are at work; returns its run id.
fn killed_demo(dir: &Path) -> String {
    let mut demo = crate::agent_in(dir)
        .args(["demo", "--pace-ms", "150"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once its agents are at work (the third printed event line).
    let stdout = demo.stdout.take().unwrap();
    let mut seen = 0;
    for line in BufReader::new(stdout).lines() {
        if line.unwrap().starts_with('[') {
            seen += 1;
            if seen == 30 {
                break;
            }
        }
    }
    demo.kill().unwrap();
    demo.wait().unwrap();
    only_run(dir)
}

/// `tt-agent resume <runId>`: its exit code and output.
fn resume(dir: &Path, run_id: &str) -> (Option<i32>, String) {
    crate::run_within(
        crate::agent_in(dir)
            .args(["resume", run_id])
            .env("RUST_BACKTRACE", "1"),
        Duration::from_secs(120),
        "resume",
    )
}

#[test]
fn a_killed_demo_resumes_on_the_demos_model_without_options() {
    let dir = tempfile::tempdir().unwrap();
    let run_id = killed_demo(dir.path());
    let (code, output) = resume(dir.path(), &run_id);
    assert_eq!(code, Some(0), "{output}");
    assert!(
        output.contains("the writers' room's scripted model"),
        "{output}"
    );
    assert!(output.contains("ended: completed"), "{output}");
}

#[test]
fn a_resume_without_a_model_says_what_to_give_and_prints_no_backtrace() {
    let dir = tempfile::tempdir().unwrap();
    let stderr = crate::refusal_of(
        crate::agent_in(dir.path()).args(["resume", "run_missing"]),
        "agent.not_found",
    );
    assert!(stderr.lines().count() <= 4, "{stderr}");
}

/// A killed demo, stored `interrupted`, then its `run.json` deleted (its copy in the run index
/// is still there): the run is listed (`interrupted`, named as rebuilt), its record reads,
/// `check` reports it (exit 3), and it resumes to its end; the resumed run is whole again. Before, `runs` printed nothing,
/// `check` said `agent.not_found`, and the resume's runtime deleted the run directory.
#[test]
fn a_killed_demo_whose_run_record_was_deleted_is_listed_checked_and_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let run_id = killed_demo(dir.path());
    let run_dir = std::fs::read_dir(dir.path().join("chats"))
        .unwrap()
        .map(|chat| chat.unwrap().path().join("runs").join(&run_id))
        .find(|candidate| candidate.is_dir())
        .unwrap();
    let agent = |args: &[&str]| {
        let out = crate::agent_in(dir.path()).args(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };

    // A read-write runtime (this `abandon` of another run) marks the killed run `interrupted`
    // and stores it so; then its record is deleted.
    let (code, _, stderr) = agent(&["abandon", "run_missing"]);
    assert_eq!(code, Some(1), "{stderr}");
    let record = std::fs::read_to_string(run_dir.join("run.json")).unwrap();
    assert!(record.contains("\"status\": \"interrupted\""), "{record}");
    std::fs::remove_file(run_dir.join("run.json")).unwrap();

    let (code, stdout, stderr) = agent(&["runs"]);
    assert_eq!(code, Some(3), "{stdout}{stderr}");
    assert!(
        stdout.contains(&run_id) && stdout.contains("interrupted"),
        "{stdout}"
    );
    assert!(
        stderr.contains("agent.run_record_rebuilt") && stderr.contains("run.json is missing"),
        "{stderr}"
    );
    let (code, stdout, stderr) = agent(&["show", &run_id, "run.json"]);
    assert_eq!(code, Some(3), "{stdout}{stderr}");
    assert!(stdout.contains("\"stableChatId\""), "{stdout}");
    let (code, stdout, stderr) = agent(&["check", &run_id]);
    assert_eq!(code, Some(3), "{stdout}{stderr}");
    assert!(stdout.contains("agent.run_record_rebuilt"), "{stdout}");
    assert!(
        !run_dir.join("run.json").exists(),
        "a reader wrote the record"
    );

    let (code, output) = resume(dir.path(), &run_id);
    assert_eq!(code, Some(0), "{output}");
    assert!(output.contains("ended: completed"), "{output}");
    let (code, stdout, stderr) = agent(&["check", &run_id]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("no damage found"), "{stdout}");
}
