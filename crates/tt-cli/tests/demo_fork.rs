//! `tt-agent fork` of a finished `tt-agent demo`: the branch continues on the demo's own model
//! without any model option, shows live, ends completed and is listed as a branch; a bad fork
//! point is a coded error without a backtrace.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

fn runs(data_dir: &Path) -> Vec<String> {
    let mut ids = Vec::new();
    for chat in std::fs::read_dir(data_dir.join("chats")).unwrap() {
        for run in std::fs::read_dir(chat.unwrap().path().join("runs")).unwrap() {
            ids.push(run.unwrap().file_name().to_string_lossy().into_owned());
        }
    }
    ids
}

#[test]
fn a_finished_demo_branches_at_the_writers_last_round_on_the_demos_model() {
    let dir = tempfile::tempdir().unwrap();
    let demo = crate::agent_in(dir.path())
        .arg("demo")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(demo.status.success());
    let source = runs(dir.path()).remove(0);

    let mut fork = crate::agent_in(dir.path());
    fork.args([
        "fork",
        &source,
        "--at",
        "root:8",
        "--guidance",
        "Keep the horn.",
    ])
    .env("RUST_BACKTRACE", "1");
    let (code, output) = crate::run_within(&mut fork, Duration::from_secs(120), "fork");
    assert_eq!(code, Some(0), "{output}");
    assert!(output.contains("branched run run_"), "{output}");
    assert!(output.contains(&format!("of run {source}")), "{output}");
    assert!(output.contains("ended: completed"), "{output}");
    assert_eq!(runs(dir.path()).len(), 2);
    let listed = crate::agent_in(dir.path()).arg("runs").output().unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains(&format!("branch of {source} after seq")),
        "{listed}"
    );

    crate::refusal_of(
        crate::agent_in(dir.path())
            .args(["fork", &source, "--at", "999999"])
            .stdin(Stdio::null()),
        "agent.fork_point_invalid",
    );
}
