//! `--store` / `TT_STORE_URL`: the same commands on a PostgreSQL store (a throwaway cluster the
//! test starts), with nothing of the run under the data dir; other URLs are refused with a code.

use tt_adapter_storage_postgres::cluster::TestCluster;

/// A throwaway cluster (kept for as long as the test holds it), the URL of a new database
/// `name` on it, and a data dir.
pub(crate) fn new_database(name: &str) -> (TestCluster, String, tempfile::TempDir) {
    let cluster = TestCluster::start(false).unwrap();
    let url = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(cluster.create_database(name))
        .unwrap();
    (cluster, url, tempfile::tempdir().unwrap())
}

#[test]
fn a_store_url_of_another_kind_is_refused_with_a_code() {
    let dir = tempfile::tempdir().unwrap();
    let text = crate::refusal_of(
        crate::agent_in(dir.path()).args(["--store", "mysql://tt:secret@127.0.0.1/tt", "runs"]),
        "agent.store_url_unsupported",
    );
    assert!(!text.contains("secret"), "the password leaked: {text}");
}

#[test]
fn the_demo_runs_on_postgres_and_every_command_reads_it_there() {
    let (_cluster, url, dir) = crate::store::new_database("tt_cli_store");
    let agent = |args: &[&str]| {
        crate::agent_in(dir.path())
            .env("TT_STORE_URL", &url)
            .args(args)
            .output()
            .unwrap()
    };
    let demo = agent(&["demo", "--pace-ms", "0"]);
    assert!(
        demo.status.success(),
        "{}{}",
        String::from_utf8_lossy(&demo.stdout),
        String::from_utf8_lossy(&demo.stderr)
    );
    // PostgreSQL keeps everything the demo stores: its run, the skill and the advisors'
    // preset template its agents read, and what it published (its transcript, read back to
    // print the committed message). The data dir is not even opened.
    let printed = String::from_utf8_lossy(&demo.stdout);
    assert!(printed.contains("── committed message 1 ("), "{printed}");
    let left_in_data_dir = || -> Vec<std::ffi::OsString> {
        std::fs::read_dir(dir.path())
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .map(|e| e.file_name())
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(left_in_data_dir(), Vec::<std::ffi::OsString>::new());

    let runs = agent(&["runs"]);
    assert!(runs.status.success());
    let listing = String::from_utf8_lossy(&runs.stdout).into_owned();
    let line = listing.lines().next().unwrap_or_default().to_owned();
    assert!(line.contains("completed"), "{listing}");
    let run_id = line.split_whitespace().next().unwrap().to_owned();

    // `--store` on the command line names the same store as the environment did.
    let events = crate::agent_in(dir.path())
        .args(["--store", &url, "events", &run_id, "--limit", "500"])
        .output()
        .unwrap();
    assert!(events.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&events.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines[0]["seq"], 1);
    assert!(
        lines.iter().any(|event| event["type"] == "run_completed"),
        "no run_completed among {} events",
        lines.len()
    );
    // `show` reads the records the events name from the same store.
    let args_ref = lines
        .iter()
        .find_map(|event| event["payload"]["argumentsRef"].as_str())
        .unwrap()
        .to_owned();
    // A checkpoint reads back from PostgreSQL too, by the id its event names.
    let checkpoint = lines
        .iter()
        .find(|event| event["type"] == "checkpoint_created")
        .and_then(|event| event["payload"]["checkpointId"].as_str())
        .map(|id| format!("checkpoints/{id}"))
        .unwrap();
    for reference in [
        "run.json",
        args_ref.as_str(),
        "invocations/inv_root.json",
        checkpoint.as_str(),
    ] {
        let shown = agent(&["show", &run_id, reference]);
        assert!(
            shown.status.success(),
            "show {reference}: {}",
            String::from_utf8_lossy(&shown.stderr)
        );
        let record: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
        assert!(record.is_object(), "{reference}: {record}");
    }
    // An agent's conversation is rebuilt from the same store: the style advisor's brief (a
    // prompt the host assembled, stored there) and the result it returned.
    let advisor = lines
        .iter()
        .find(|event| {
            event["type"] == "agent_invocation_created"
                && event["payload"]["profileId"] == "style-advisor"
        })
        .and_then(|event| event["payload"]["invocationId"].as_str())
        .unwrap()
        .to_owned();
    let shown = agent(&["conversation", &run_id, &advisor]);
    assert!(
        shown.status.success(),
        "conversation: {}",
        String::from_utf8_lossy(&shown.stderr)
    );
    let conversation: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    let entries = conversation["entries"].as_array().unwrap();
    assert!(
        entries.iter().any(|entry| entry["kind"] == "brief"
            && entry["text"].as_str().unwrap().contains("Style pass")),
        "{conversation}"
    );
    let last = entries.last().unwrap();
    assert_eq!(last["kind"], "result", "{conversation}");
    assert!(
        last["result"]["summary"].as_str().unwrap().contains("horn"),
        "{last}"
    );

    // `check` reads the same store: whole, then with a seq cut out of the journal and its end
    // lost (docs/storage.md, "Damage"), each named with its code and exit 3.
    let check = agent(&["check", &run_id]);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let last_seq = lines.last().unwrap()["seq"].as_u64().unwrap();
    // A row holds one unit's events, keyed by its last seq (docs/storage.md, Layout): the rows
    // holding seq 5 and the last.
    let sql = format!(
        "DELETE FROM events WHERE run_id = '{run_id}'
         AND (seq = {last_seq} OR 5 BETWEEN seq - span + 1 AND seq)"
    );
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(TestCluster::run_sql(&url, &sql))
        .unwrap();
    let check = agent(&["check", &run_id]);
    assert_eq!(check.status.code(), Some(3));
    let found = String::from_utf8_lossy(&check.stdout).into_owned();
    assert!(
        found.contains("agent.journal_damaged") && found.contains("agent.journal_end_missing"),
        "{found}"
    );
    // Nor did any of the commands that read the run put anything under the data dir.
    assert_eq!(left_in_data_dir(), Vec::<std::ffi::OsString>::new());
}

/// A `tt-agent demo` on PostgreSQL killed with SIGKILL is marked `interrupted` by the next
/// process at once, long before its 15 s lease runs out (the killed host's session, and its
/// owner lock with it, ended), and `tt-agent resume` in that process completes it: the
/// multi-host takeover with real processes.
#[test]
fn a_demo_killed_on_postgres_is_resumed_by_another_process() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let (_cluster, url, dir) = crate::store::new_database("tt_cli_kill");
    let agent = |args: &[&str]| {
        let mut command = crate::agent_in(dir.path());
        command
            .env("TT_STORE_URL", &url)
            .env_remove("TT_STORE_LEASE_MS")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    };
    let mut demo = agent(&["demo", "--pace-ms", "100"]).spawn().unwrap();
    let stdout = demo.stdout.take().unwrap();
    let mut run_id = None;
    let mut seen = 0;
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if let Some(rest) = line.strip_prefix("run ") {
            run_id = rest.split_whitespace().next().map(str::to_owned);
        }
        if line.starts_with('[') {
            seen += 1;
            if seen == 30 {
                break;
            }
        }
    }
    demo.kill().unwrap();
    demo.wait().unwrap();
    let run_id = run_id.expect("the demo printed its run id");
    let resumed = agent(&["resume", &run_id]).spawn().unwrap();
    let (code, output) =
        crate::finish_within(resumed, std::time::Duration::from_secs(120), "resume");
    assert_eq!(code, Some(0), "{output}");
    assert!(output.contains("run interrupted"), "{output}");
    assert!(output.contains("ended: completed"), "{output}");
}
