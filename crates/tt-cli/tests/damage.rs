//! Damaged stored runs (docs/storage.md, "Damage"): `check`, `graph`, `show`, `events` and
//! `runs` print what they can, name the damage and its code on stderr and exit with 3; a
//! whole run is checked clean; nothing a reader does changes a file.

use std::path::Path;
use std::process::Output;

use crate::events::{DemoRun, demo_run};

fn agent(data_dir: &Path, args: &[&str]) -> Output {
    crate::agent_in(data_dir).args(args).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `tt-agent args`, which must find damage: exit code 3.
fn damaged(data_dir: &Path, args: &[&str]) -> Output {
    let out = agent(data_dir, args);
    assert_eq!(out.status.code(), Some(3), "{args:?}: {}", stderr(&out));
    out
}

/// Cuts the file at `path` to its first half.
fn cut_in_half(path: &Path) {
    let bytes = std::fs::read(path).unwrap();
    std::fs::write(path, &bytes[..bytes.len() / 2]).unwrap();
}

/// Every file of the run directory with its bytes, to show that readers change nothing.
fn snapshot(run_dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(run_dir)
        .unwrap()
        .flatten()
        .filter(|entry| entry.file_type().unwrap().is_file())
        .map(|entry| {
            (
                entry.file_name().to_string_lossy().into_owned(),
                std::fs::read(entry.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

#[test]
fn a_whole_demo_run_is_checked_clean() {
    let DemoRun { dir, run, .. } = demo_run();
    let check = agent(dir.path(), &["check", &run]);
    assert!(check.status.success(), "{}", stderr(&check));
    assert!(
        stdout(&check).contains("no damage found"),
        "{}",
        stdout(&check)
    );
    let json = agent(dir.path(), &["check", &run, "--json"]);
    let damage: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(damage["findings"], serde_json::json!([]));
    assert_eq!(damage["status"], "completed");
    for args in [
        vec!["graph", &run],
        vec!["runs"],
        vec!["show", &run, "run.json"],
        vec!["events", &run, "--after", "300"],
    ] {
        let out = agent(dir.path(), &args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert!(out.stderr.is_empty(), "{args:?}: {}", stderr(&out));
    }
}

/// `records.jsonl` cut in half: the graph shows the root as it was stored (`running`), then
/// names the damage and exits with 3; so do `check` and `show` of the root's record.
#[test]
fn a_completed_run_with_its_records_cut_in_half_is_reported_as_damaged() {
    let DemoRun { dir, run_dir, run } = demo_run();
    cut_in_half(&run_dir.join("records.jsonl"));
    let before = snapshot(&run_dir);

    let graph = damaged(dir.path(), &["graph", &run]);
    assert!(
        stdout(&graph).contains("(root, running)"),
        "{}",
        stdout(&graph)
    );
    assert!(
        stderr(&graph).contains("agent.records_inconsistent")
            && stderr(&graph)
                .contains("the run record says completed but agent inv_root (running)"),
        "{}",
        stderr(&graph)
    );
    let check = damaged(dir.path(), &["check", &run]);
    assert!(stdout(&check).contains("agent.records_inconsistent"));
    let show = damaged(dir.path(), &["show", &run, "invocations/inv_root.json"]);
    assert!(stdout(&show).contains("\"running\""));
    assert!(stderr(&show).contains("agent.records_inconsistent"));
    // A document of the run is not run-level data: printed without a check.
    assert_eq!(
        snapshot(&run_dir),
        before,
        "a reader changed the run's files"
    );
}

/// A run record that does not parse: `runs` lists the run from its index copy, names it with
/// its code on stderr and exits with 3; the file is left as it is.
#[test]
fn a_run_record_that_does_not_parse_is_named_by_runs() {
    let DemoRun { dir, run_dir, run } = demo_run();
    cut_in_half(&run_dir.join("run.json"));
    let before = snapshot(&run_dir);

    let runs = damaged(dir.path(), &["runs"]);
    // Listed from the record's copy in the run index, and named as rebuilt.
    assert!(stdout(&runs).contains(&run), "{}", stdout(&runs));
    assert!(
        stderr(&runs).contains(&format!(
            "{run}: agent.run_record_rebuilt: the run record was rebuilt: run.json cannot be \
             read (agent.storage_corrupt: "
        )),
        "{}",
        stderr(&runs)
    );
    assert_eq!(
        snapshot(&run_dir),
        before,
        "a reader changed the run's files"
    );
}

/// The journal of a completed run emptied, then cut short of its end: `graph`, `check` and
/// `events` name it and exit with 3.
#[test]
fn an_empty_or_short_journal_of_a_completed_run_is_reported_as_damaged() {
    let DemoRun { dir, run_dir, run } = demo_run();
    let journal = run_dir.join("events.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();

    std::fs::write(&journal, "").unwrap();
    for args in [
        vec!["graph", &run],
        vec!["check", &run],
        vec!["events", &run],
    ] {
        let out = damaged(dir.path(), &args);
        let said = format!("{}{}", stdout(&out), stderr(&out));
        assert!(said.contains("agent.journal_empty"), "{args:?}: {said}");
    }

    let lines: Vec<&str> = text.lines().collect();
    let short = lines[..lines.len() - 5].join("\n") + "\n";
    std::fs::write(&journal, &short).unwrap();
    for args in [
        vec!["graph", &run],
        vec!["check", &run],
        vec!["events", &run, "--after", "300"],
    ] {
        let out = damaged(dir.path(), &args);
        let said = format!("{}{}", stdout(&out), stderr(&out));
        assert!(
            said.contains("agent.journal_end_missing"),
            "{args:?}: {said}"
        );
    }
    assert_eq!(std::fs::read_to_string(&journal).unwrap(), short);
}

/// A journal longer than one page of `check` (500 events) with seq 501 cut out, at the seam
/// between two pages: found.
#[test]
fn a_seq_gap_between_two_pages_is_found() {
    let DemoRun { dir, run_dir, run } = demo_run();
    let journal = run_dir.join("events.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    let mut events: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    // Lengthen the journal past two pages: more `status_changed` before the run's end.
    let end = events.pop().unwrap();
    let filler = events
        .iter()
        .find(|event| event["type"] == "status_changed")
        .unwrap()
        .clone();
    while events.len() < 700 {
        events.push(filler.clone());
    }
    events.push(end);
    let mut lines = Vec::new();
    for (index, event) in events.iter_mut().enumerate() {
        event["seq"] = serde_json::json!(index + 1);
        if index + 1 != 501 {
            lines.push(serde_json::to_string(event).unwrap());
        }
    }
    std::fs::write(&journal, lines.join("\n") + "\n").unwrap();
    let check = damaged(dir.path(), &["check", &run]);
    assert!(
        stdout(&check).contains("agent.journal_damaged: the journal is missing seq 501 (1 of 701"),
        "{}",
        stdout(&check)
    );
    let graph = damaged(dir.path(), &["graph", &run]);
    assert!(
        stderr(&graph).contains("missing seq 501"),
        "{}",
        stderr(&graph)
    );
}

/// Damage in each file a run keeps: a line that does not parse in the journal, the records or
/// the blobs, a blob whose text does not match its sha256, a run record, index copy, manifest
/// or input snapshot cut in half. `check` names the file and exits with 3 every time (before,
/// a bad blob line was "no damage found" and a bad run record exit 1); the files stay as they
/// were.
#[test]
fn damage_in_each_stored_file_is_named_by_check_with_exit_3() {
    let DemoRun { dir, run_dir, run } = demo_run();
    let index = dir.path().join("index/runs").join(format!("{run}.json"));
    let garbage_line = |bytes: &[u8]| {
        let first = bytes.iter().position(|byte| *byte == b'\n').unwrap() + 1;
        [&bytes[..first], b"{\"not\": a line\n", &bytes[first..]].concat()
    };
    let first_half = |bytes: &[u8]| bytes[..bytes.len() / 2].to_vec();
    let wrong_blob = |bytes: &[u8]| {
        let text = String::from_utf8(bytes.to_vec()).unwrap();
        let mut lines: Vec<serde_json::Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert!(lines.len() >= 2, "{text}");
        lines[0]["text"] = serde_json::json!("not what was checkpointed");
        let joined: Vec<String> = lines.iter().map(ToString::to_string).collect();
        (joined.join("\n") + "\n").into_bytes()
    };
    type Damage<'a> = &'a dyn Fn(&[u8]) -> Vec<u8>;
    let cases: [(std::path::PathBuf, &str, Damage); 8] = [
        (run_dir.join("events.jsonl"), "events.jsonl", &garbage_line),
        (
            run_dir.join("records.jsonl"),
            "records.jsonl",
            &garbage_line,
        ),
        (run_dir.join("blobs.jsonl"), "blobs.jsonl", &garbage_line),
        (
            run_dir.join("blobs.jsonl"),
            "blobs.jsonl: 1 of",
            &wrong_blob,
        ),
        (
            run_dir.join("run.json"),
            "run.json cannot be read",
            &first_half,
        ),
        (
            index.clone(),
            &format!("index/runs/{run}.json"),
            &first_half,
        ),
        (run_dir.join("manifest.json"), "manifest.json", &first_half),
        (
            run_dir.join("input/prompt_snapshot.json"),
            "input/prompt_snapshot.json",
            &first_half,
        ),
    ];
    for (path, named, damage) in cases {
        let original = std::fs::read(&path).unwrap();
        std::fs::write(&path, damage(&original)).unwrap();
        let before = snapshot(&run_dir);
        let check = agent(dir.path(), &["check", &run]);
        assert_eq!(check.status.code(), Some(3), "{named}: {}", stderr(&check));
        assert!(
            stdout(&check).contains("agent.storage_corrupt") && stdout(&check).contains(named),
            "{named}: {}",
            stdout(&check)
        );
        assert_eq!(snapshot(&run_dir), before, "{named}: check changed a file");
        std::fs::write(&path, original).unwrap();
    }
    let check = agent(dir.path(), &["check", &run]);
    assert_eq!(check.status.code(), Some(0), "{}", stdout(&check));
}
