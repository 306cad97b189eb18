//! `tt-agent events` says when it stopped at its limit and how to read on.

/// A demo run on a new data dir: the data dir, the run's directory and its id.
pub(crate) struct DemoRun {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) run_dir: std::path::PathBuf,
    pub(crate) run: String,
}

/// Runs the demo on a new data dir.
pub(crate) fn demo_run() -> DemoRun {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path();
    let demo = crate::agent_in(data_dir)
        .args(["demo", "--pace-ms", "0"])
        .output()
        .unwrap();
    assert!(demo.status.success());
    let chats = std::fs::read_dir(data_dir.join("chats")).unwrap();
    let chat = chats.flatten().next().unwrap().path();
    let run_dir = std::fs::read_dir(chat.join("runs"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let run = run_dir.file_name().unwrap().to_string_lossy().into_owned();
    DemoRun { dir, run_dir, run }
}

#[test]
fn a_full_page_of_events_says_how_to_read_the_rest() {
    let DemoRun { dir, run, .. } = demo_run();
    let events = |args: &[&str]| {
        crate::agent_in(dir.path())
            .args(["events", &run])
            .args(args)
            .output()
            .unwrap()
    };
    let first = events(&[]);
    assert!(first.status.success());
    assert_eq!(String::from_utf8_lossy(&first.stdout).lines().count(), 100);
    let note = String::from_utf8_lossy(&first.stderr);
    assert!(
        note.contains(&format!("more follow: tt-agent events {run} --after 100")),
        "{note}"
    );
    // The last page says nothing more.
    let all = events(&["--limit", "500", "--after", "100"]);
    let rest = String::from_utf8_lossy(&all.stdout).lines().count();
    assert!(rest > 0 && rest < 500, "{rest}");
    assert!(
        all.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&all.stderr)
    );
}

/// `tt-agent events <run> | head -1`: the reader goes away; the command ends quietly, as a
/// process killed by SIGPIPE would, instead of panicking.
#[test]
fn a_reader_that_goes_away_ends_the_command_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let DemoRun { dir, run, .. } = demo_run();
    let mut child = crate::agent_in(dir.path())
        .args(["events", &run, "--limit", "500"])
        .env("RUST_BACKTRACE", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read one line, then close the pipe.
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.contains("run_created"), "{first}");
    let out = child.wait_with_output().unwrap();
    let errors = String::from_utf8_lossy(&out.stderr);
    assert!(!errors.contains("panicked"), "{errors}");
    assert_eq!(out.status.code(), Some(141), "{errors}");
}

/// A journal with a line cut out of it (a seq gap): `events` prints what it holds, names the
/// missing seq, and fails, instead of printing an incomplete journal as if it were whole.
#[test]
fn a_journal_with_a_gap_is_reported_as_damaged() {
    let DemoRun { dir, run_dir, run } = demo_run();
    let journal = run_dir.join("events.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    let kept: Vec<&str> = text
        .lines()
        .filter(|line| !line.contains("\"seq\":50,"))
        .collect();
    assert_eq!(kept.len() + 1, text.lines().count(), "seq 50 was cut out");
    std::fs::write(&journal, kept.join("\n") + "\n").unwrap();
    let out = crate::agent_in(dir.path())
        .args(["events", &run, "--limit", "60"])
        .output()
        .unwrap();
    let errors = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{errors}");
    assert!(errors.contains("agent.journal_damaged"), "{errors}");
    assert!(errors.contains("missing seq 50 "), "{errors}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 60);
}
