//! Two processes on one data dir: `tt-agent demo` writes a run while other `tt-agent` processes
//! list it with its current status, follow its journal to the end, and try to send it guidance
//! (which only the process running it can deliver).

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn agent(dir: &Path) -> Command {
    let mut command = crate::agent_in(dir);
    command.stdin(Stdio::null());
    command
}

fn output(command: &mut Command) -> String {
    let out = command.stderr(Stdio::inherit()).output().unwrap();
    assert!(out.status.success(), "{command:?} failed");
    String::from_utf8(out.stdout).unwrap()
}

/// Waits (bounded) until `probe` returns something.
fn wait_for<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `tt-agent demo` on `dir` in the background, `pace_ms` between its model's answers, and
/// the id of its run once the run exists.
fn paced_demo(dir: &std::path::Path, pace_ms: &str) -> (std::process::Child, String) {
    let demo = agent(dir)
        .args(["demo", "--pace-ms", pace_ms])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    (demo, first_run_id(dir))
}

/// Waits until a run exists in `dir`; its id.
fn first_run_id(dir: &std::path::Path) -> String {
    wait_for("the run to be created", || {
        let entry = std::fs::read_dir(dir.join("index/runs"))
            .ok()?
            .next()?
            .ok()?;
        let name = entry.file_name().to_string_lossy().into_owned();
        name.strip_suffix(".json").map(str::to_owned)
    })
}

#[test]
fn another_process_lists_and_follows_a_live_run() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    let (mut demo, run_id) = paced_demo(&dir, "120");

    let mut follower = agent(&dir)
        .args(["events", &run_id, "--follow"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();

    // Listed from this other process with the status it has now, not the last one stored.
    let live_status = wait_for("a working status in `runs`", || {
        let listing = output(agent(&dir).args(["runs"]));
        let line = listing
            .lines()
            .find(|line| line.starts_with(&run_id))?
            .to_owned();
        ["calling_model", "dispatching_tool", "awaiting_host_commit"]
            .into_iter()
            .find(|status| line.contains(status))
    });
    assert!(!live_status.is_empty());

    // Guidance from another process is refused with a code that says why.
    let guide = |dir: &Path| {
        agent(dir)
            .args(["guide", &run_id, "Shorter, please."])
            .stderr(Stdio::piped())
            .output()
            .unwrap()
    };
    let refused = guide(&dir);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert!(stderr.contains("agent.guidance_run_not_owned"), "{stderr}");

    assert!(demo.wait().unwrap().success(), "the demo failed");
    let ended = guide(&dir);
    assert!(!ended.status.success());
    let stderr = String::from_utf8_lossy(&ended.stderr).into_owned();
    assert!(stderr.contains("agent.guidance_mailbox_closed"), "{stderr}");
    let mut followed = String::new();
    follower
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut followed)
        .unwrap();
    assert!(follower.wait().unwrap().success(), "events --follow failed");

    // The follower saw every event, in order, and stopped after the last one.
    let journal = output(agent(&dir).args(["events", &run_id, "--limit", "500"]));
    let seqs = |text: &str| -> Vec<u64> {
        text.lines()
            .map(|line| {
                serde_json::from_str::<serde_json::Value>(line).unwrap()["seq"]
                    .as_u64()
                    .unwrap()
            })
            .collect()
    };
    let expected: Vec<u64> = (1..=seqs(&journal).len() as u64).collect();
    assert_eq!(seqs(&journal), expected);
    assert_eq!(seqs(&followed), expected);
    assert_eq!(followed, journal);
    assert!(
        journal
            .lines()
            .last()
            .unwrap()
            .contains("\"run_completed\"")
    );
    // The demo's own scripted guidance was applied; the refused ones left no trace.
    let count = |event: &str| {
        journal
            .lines()
            .filter(|line| line.contains(&format!("\"type\":\"{event}\"")))
            .count()
    };
    assert_eq!(count("user_guidance_submitted"), 1);
    assert_eq!(count("user_guidance_applied"), 1);
    assert_eq!(count("user_guidance_discarded"), 0);
}

#[test]
fn a_line_typed_during_a_live_run_is_sent_as_guidance() {
    use std::io::{BufRead, BufReader, Write};
    let temp = tempfile::tempdir().unwrap();
    let mut demo = crate::agent_in(temp.path().join("data"))
        .args(["demo", "--pace-ms", "120"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = demo.stdin.take().unwrap();
    let mut lines = BufReader::new(demo.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let started = line.starts_with("run ") && line.contains(" started");
        seen.push(line);
        if started {
            break;
        }
    }
    writeln!(stdin, "Make it rain harder.").unwrap();
    drop(stdin);
    seen.extend(lines.map(Result::unwrap));
    assert!(demo.wait().unwrap().success(), "the demo failed");
    let output = seen.join("\n");
    assert!(output.contains("(guidance queued"), "{output}");
    assert!(
        output.contains("guidance from the user: “Make it rain harder.”"),
        "{output}"
    );
}

/// `tt-agent cancel` from another process: a run a live process executes stays with it
/// (`agent.run_locked`, for the run and for one task), and the run goes on untouched; once it
/// has ended, cancelling a task is `agent.run_not_running` and cancelling the run reports it.
#[test]
fn cancel_from_another_process_is_refused_while_the_owner_runs() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    let (mut demo, run_id) = paced_demo(&dir, "400");
    let refused = |args: &[&str]| {
        let out = agent(&dir).args(args).output().unwrap();
        assert!(!out.status.success(), "{args:?} succeeded");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let task = refused(&["cancel", &run_id, "--task", "task_whatever"]);
    assert!(task.contains("agent.run_locked"), "{task}");
    let whole = refused(&["cancel", &run_id]);
    assert!(whole.contains("agent.run_locked"), "{whole}");

    assert!(demo.wait().unwrap().success(), "the demo failed");
    let listing = output(agent(&dir).args(["runs"]));
    assert!(
        listing
            .lines()
            .any(|line| line.starts_with(&run_id) && line.contains("completed")),
        "{listing}"
    );
    let ended = refused(&["cancel", &run_id, "--task", "task_whatever"]);
    assert!(ended.contains("agent.run_not_running"), "{ended}");
    let reported = output(agent(&dir).args(["cancel", &run_id]));
    assert!(reported.contains("completed"), "{reported}");
}
