//! `tt-agent resume`: a `tt-agent run` is killed with SIGKILL while its model server holds the
//! second answer back; `tt-agent resume <runId>` then finishes the run against the server
//! without asking again for the first answer, and prints the published text.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const SCENE: &str = "The lamp stayed lit until dawn.\n";

/// The turns the server was asked for (assistant messages so far), in order.
type Asked = Arc<Mutex<Vec<usize>>>;

/// An OpenAI-compatible server that writes, commits and finishes, by turn; with `hold` it
/// never answers the commit turn. Returns the turns it was asked for and its connection
/// (`openai:<base URL>`).
fn server(hold: bool) -> (Asked, String) {
    let asked = Asked::default();
    let seen = Arc::clone(&asked);
    let url = crate::model_server::start(move |body| {
        let turn = crate::model_server::assistant_turns(body);
        seen.lock().unwrap().push(turn);
        if hold && turn == 1 {
            return None;
        }
        Some(match turn {
            0 => (
                "workspace_write_file",
                serde_json::json!({"path": "output/main.md", "content": SCENE}),
            ),
            1 => ("workspace_commit", serde_json::json!({})),
            _ => ("workspace_finish", serde_json::json!({})),
        })
    });
    (asked, format!("openai:{url}"))
}

fn tt_agent(data_dir: &Path, args: &[&str]) -> Command {
    let mut command = crate::agent_in(data_dir);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// The one run of the data dir, from its index.
fn only_run(data_dir: &Path) -> Option<String> {
    let mut entries = std::fs::read_dir(data_dir.join("index").join("runs")).ok()?;
    let name = entries.next()?.ok()?.file_name();
    name.to_string_lossy()
        .strip_suffix(".json")
        .map(str::to_owned)
}

#[test]
fn a_killed_run_is_resumed_without_asking_the_model_again() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (first_asked, first) = server(true);
    let mut child = tt_agent(
        &data,
        &[
            "run",
            "--connection",
            &first,
            "--model",
            "m",
            "Write a line.",
        ],
    )
    .spawn()
    .unwrap();
    // Wait until the second answer is asked for (and held back), then kill -9.
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    while first_asked.lock().unwrap().len() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the run never got to its second turn"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "tt-agent run ended early"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let run_id = only_run(&data).unwrap();

    let (asked, second) = server(false);
    let (code, output) = resume_on(&data, &run_id, &second);
    assert_eq!(code, Some(0), "{output}");
    assert!(
        output.contains(&format!("run {run_id} resumed (")),
        "{output}"
    );
    assert!(output.contains("run resumed: "), "{output}");
    assert!(output.contains(SCENE.trim()), "{output}");
    // The write turn was answered before the kill and is not asked for again.
    assert_eq!(*asked.lock().unwrap(), vec![1, 2]);

    // A completed run is not resumable.
    let (code, output) = resume_on(&data, &run_id, &second);
    assert_ne!(code, Some(0), "{output}");
    assert!(output.contains("agent.run_not_resumable"), "{output}");
}

/// `tt-agent resume <run_id>` on `data` with the model at `connection`, to its end: its exit
/// code and output.
fn resume_on(data: &std::path::Path, run_id: &str, connection: &str) -> (Option<i32>, String) {
    let child = tt_agent(
        data,
        &["resume", run_id, "--connection", connection, "--model", "m"],
    )
    .spawn()
    .unwrap();
    crate::finish_within(child, Duration::from_secs(90), "tt-agent resume hung")
}

/// Sends SIGINT (Ctrl-C) to `child`, which cancels its run.
fn interrupt(child: &std::process::Child) {
    let status = Command::new("kill")
        .arg("-INT")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success(), "kill -INT failed");
}

/// Waits until `asked` holds `count` requests; `child` must still run.
fn wait_for_asked(asked: &Asked, count: usize, child: &mut std::process::Child) {
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    while asked.lock().unwrap().len() < count {
        assert!(
            std::time::Instant::now() < deadline,
            "the model was never asked"
        );
        assert!(child.try_wait().unwrap().is_none(), "tt-agent ended early");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_cancelled_run_and_a_cancelled_resume_are_resumed_again_until_it_completes() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (held, stuck) = server(true);
    let args = |command: &'static str, target: &str, connection: &str| -> Vec<String> {
        [command, target, "--connection", connection, "--model", "m"]
            .iter()
            .map(|arg| (*arg).to_owned())
            .collect()
    };
    // Ctrl-C while the server holds the second answer: the run ends cancelled and the
    // command says how to go on.
    let mut child = tt_agent(
        &data,
        &[
            "run",
            "--connection",
            &stuck,
            "--model",
            "m",
            "Write a line.",
        ],
    )
    .spawn()
    .unwrap();
    wait_for_asked(&held, 2, &mut child);
    interrupt(&child);
    let (code, output) = crate::finish_within(child, Duration::from_secs(90), "tt-agent run hung");
    assert_ne!(code, Some(0), "{output}");
    let run_id = only_run(&data).unwrap();
    assert!(output.contains("status cancelled"), "{output}");
    assert!(
        output.contains(&format!("`tt-agent resume {run_id}`")),
        "{output}"
    );

    // Ctrl-C during the resume too: still resumable.
    let resume = args("resume", &run_id, &stuck);
    let resume: Vec<&str> = resume.iter().map(String::as_str).collect();
    let mut child = tt_agent(&data, &resume).spawn().unwrap();
    wait_for_asked(&held, 3, &mut child);
    interrupt(&child);
    let (code, output) =
        crate::finish_within(child, Duration::from_secs(90), "tt-agent resume hung");
    assert_ne!(code, Some(0), "{output}");
    assert!(output.contains("status cancelled"), "{output}");

    let (asked, working) = server(false);
    let resume = args("resume", &run_id, &working);
    let resume: Vec<&str> = resume.iter().map(String::as_str).collect();
    let child = tt_agent(&data, &resume).spawn().unwrap();
    let (code, output) =
        crate::finish_within(child, Duration::from_secs(90), "tt-agent resume hung");
    assert_eq!(code, Some(0), "{output}");
    assert!(output.contains(SCENE.trim()), "{output}");
    // Only the turn each cancel cut off was asked again; the write's answer was kept.
    assert_eq!(*held.lock().unwrap(), vec![0, 1, 1]);
    assert_eq!(*asked.lock().unwrap(), vec![1, 2]);

    // A completed run cannot be given up.
    let child = tt_agent(&data, &["abandon", &run_id]).spawn().unwrap();
    let (code, output) =
        crate::finish_within(child, Duration::from_secs(90), "tt-agent abandon hung");
    assert_ne!(code, Some(0), "{output}");
    assert!(output.contains("agent.run_not_abandonable"), "{output}");
}
