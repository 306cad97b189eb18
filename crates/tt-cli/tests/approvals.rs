//! `tt-agent run` asking on the terminal before each write of a profile with `tools.approval`:
//! `n <message>` denies the first write (the model's next request carries the message), `e`
//! opens `$EDITOR` on the second's arguments and the edited text is what gets published. And a
//! process killed (SIGKILL) while a write waits: `tt-agent resume` asks again, and the write
//! runs once, after the answer.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// An OpenAI-compatible server: notes, the reply, commit, finish, by the number of assistant
/// turns; every request body is kept.
fn server(seen: Arc<Mutex<Vec<serde_json::Value>>>) -> String {
    crate::model_server::start(move |body| {
        seen.lock().unwrap().push(body.clone());
        Some(match crate::model_server::assistant_turns(body) {
            0 => (
                "workspace_write_file",
                serde_json::json!({"path": "scratch/notes.md", "content": "private"}),
            ),
            1 => (
                "workspace_write_file",
                serde_json::json!({"path": "output/main.md", "content": "First line.\n"}),
            ),
            2 => ("workspace_commit", serde_json::json!({})),
            _ => ("workspace_finish", serde_json::json!({})),
        })
    })
}

/// Installs `careful-writer` in `dir`'s `profiles/` (returned): the writers' room's writer,
/// asking before every `workspace.write_file`.
fn install_careful_writer(dir: &std::path::Path) -> std::path::PathBuf {
    let profiles = dir.join("profiles");
    std::fs::create_dir_all(&profiles).unwrap();
    let mut profile: serde_json::Value =
        serde_json::from_str(include_str!("../scenarios/writers-room/writer.json")).unwrap();
    profile["id"] = "careful-writer".into();
    profile["tools"]["approval"] = serde_json::json!({"workspace.write_file": "always"});
    std::fs::write(profiles.join("careful-writer.json"), profile.to_string()).unwrap();
    profiles
}

#[test]
fn the_terminal_denies_one_write_and_edits_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let profiles = install_careful_writer(dir.path());
    // The "editor" changes the text it is given, as a person would.
    let editor = dir.path().join("editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nsed -i 's/First line/Edited line/' \"$1\"\n",
    )
    .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let url = format!("openai:{}", server(Arc::clone(&seen)));
    let mut child = crate::agent_in(dir.path().join("data"))
        .args(["run", "--connection", &url, "--model", "m", "--profiles"])
        .arg(&profiles)
        .args(["--profile", "careful-writer", "Write a line."])
        .env("EDITOR", format!("sh {}", editor.display()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let lines = crate::stdout_lines(&mut child);
    let mut printed = Vec::new();
    let mut answers = vec!["e", "n Keep no notes."];
    loop {
        let Ok(line) = lines.recv_timeout(Duration::from_secs(60)) else {
            panic!("tt-agent run stalled:\n{}", printed.join("\n"));
        };
        if line.starts_with("⏸ approve") {
            let answer = answers.pop().expect("asked more often than expected");
            writeln!(stdin, "{answer}").unwrap();
        }
        let ended = line.starts_with("run ") && line.contains(" ended: ");
        printed.push(line);
        if ended {
            break;
        }
    }
    drop(stdin);
    let status = child.wait().unwrap();
    let mut errors = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut errors)
        .unwrap();
    let output = printed.join("\n");
    assert!(status.success(), "{output}\n{errors}");
    assert!(answers.is_empty(), "{output}");
    assert!(output.contains("ended: completed"), "{output}");
    assert!(
        output.contains("[agent.tool_call_denied] The user declined this call: Keep no notes."),
        "{output}"
    );
    assert!(output.contains("Edited line."), "{output}");
    // The model's second request carried the person's message as the call's result.
    let second = seen.lock().unwrap()[1].to_string();
    assert!(second.contains("Keep no notes."), "{second}");
}

/// `tt-agent` with its stdin and stdout piped, its stdout lines sent to a channel.
fn spawn_agent(
    args: &[&str],
) -> (
    std::process::Child,
    std::process::ChildStdin,
    std::sync::mpsc::Receiver<String>,
) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tt-agent"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let lines = crate::stdout_lines(&mut child);
    (child, stdin, lines)
}

/// Reads lines until one satisfies `stop`; returns every line read.
fn read_until(
    lines: &std::sync::mpsc::Receiver<String>,
    stop: impl Fn(&str) -> bool,
) -> Vec<String> {
    let mut read = Vec::new();
    loop {
        let Ok(line) = lines.recv_timeout(Duration::from_secs(60)) else {
            panic!("tt-agent stalled:\n{}", read.join("\n"));
        };
        let done = stop(&line);
        read.push(line);
        if done {
            return read;
        }
    }
}

#[test]
fn a_process_killed_while_a_write_waits_asks_again_after_resume() {
    let dir = tempfile::tempdir().unwrap();
    let profiles = install_careful_writer(dir.path());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let url = format!("openai:{}", server(Arc::clone(&seen)));
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let (mut first, _stdin, lines) = spawn_agent(&[
        "--data-dir",
        data,
        "run",
        "--connection",
        &url,
        "--model",
        "m",
        "--profiles",
        profiles.to_str().unwrap(),
        "--profile",
        "careful-writer",
        "Write a line.",
    ]);
    let printed = read_until(&lines, |line| line.starts_with("⏸ approve"));
    let run_id = printed
        .iter()
        .find_map(|line| line.strip_prefix("run ")?.split_whitespace().next())
        .unwrap()
        .to_owned();
    first.kill().unwrap(); // SIGKILL: nothing runs at exit
    first.wait().unwrap();

    let (mut second, mut stdin, lines) = spawn_agent(&[
        "--data-dir",
        data,
        "resume",
        &run_id,
        "--connection",
        &url,
        "--model",
        "m",
    ]);
    // Asked again, for the same call, before anything ran; then the reply's write asks too.
    let mut printed = read_until(&lines, |line| line.starts_with("⏸ approve"));
    assert!(
        printed.last().unwrap().contains("scratch/notes.md"),
        "{printed:?}"
    );
    assert!(
        !printed
            .iter()
            .any(|line| line.contains("▸ workspace.write_file")),
        "{printed:?}"
    );
    writeln!(stdin, "y").unwrap();
    printed.extend(read_until(&lines, |line| line.starts_with("⏸ approve")));
    writeln!(stdin, "y").unwrap();
    printed.extend(read_until(&lines, |line| line.contains(" ended: ")));
    drop(stdin);
    assert!(second.wait().unwrap().success(), "{printed:?}");
    let output = printed.join("\n");
    assert!(output.contains("ended: completed"), "{output}");
    // The notes were written once, by the resumed process, after the answer.
    let writes = printed
        .iter()
        .filter(|line| line.contains("wrote scratch/notes.md"))
        .count();
    assert_eq!(writes, 1, "{output}");
    // Four model calls in all: the dead process's first answer was not asked for again.
    assert_eq!(
        seen.lock().unwrap().len(),
        4,
        "write, write, commit, finish"
    );
}
