//! tauri-shell end to end, in a real WebKitGTK webview under Xvfb, driven over WebDriver
//! (`tauri-driver` from crates.io in front of Debian's `WebKitWebDriver`): start a run, see the
//! agent tree grow, approve a call, publish the commit, see the published text, branch the
//! reply, raise the spend limit a run stopped at; start a long run, quit, start the app again
//! and resume that run from the runs list. The screenshots are kept under `target/tauri-shell-e2e/`.
//!
//! Needs `Xvfb`, `WebKitWebDriver` (package `webkit2gtk-driver`) and `tauri-driver` on `PATH`;
//! `.ci/run` installs them. A missing tool fails the test, naming it.

// Test helpers outside #[test] functions may unwrap: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod webdriver;

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use webdriver::Session;

/// A child process in a process group of its own, the group ended when dropped (`tauri-driver`
/// starts `WebKitWebDriver`, which starts the app).
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let group = format!("-{}", self.0.id());
        let _ = Command::new("kill").args(["-TERM", "--", &group]).status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `program`, its output (and its children's) in `target/tauri-shell-e2e/<program>.log`.
fn spawn(program: &str, args: &[&str], envs: &[(&str, &str)]) -> Guard {
    let log = std::fs::File::create(artifacts().join(format!("{program}.log"))).unwrap();
    let mut command = Command::new(program);
    command
        .args(args)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    for (key, value) in envs {
        command.env(key, value);
    }
    match command.spawn() {
        Ok(child) => Guard(child),
        Err(err) => panic!("cannot start `{program}` ({err}): .ci/run installs it"),
    }
}

/// Xvfb on a display no one uses.
fn start_xvfb() -> (Guard, String) {
    let number = (90..190)
        .find(|n| !Path::new(&format!("/tmp/.X11-unix/X{n}")).exists())
        .unwrap_or(99);
    let display = format!(":{number}");
    let xvfb = spawn(
        "Xvfb",
        &[&display, "-screen", "0", "1280x900x24", "-nolisten", "tcp"],
        &[],
    );
    (xvfb, display)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .unwrap()
}

fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/tauri-shell-e2e");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_run_is_driven_from_the_webview_and_resumed_after_a_restart() {
    let data_dir = tempfile::tempdir().unwrap();
    let data_dir_text = data_dir.path().to_str().unwrap().to_owned();
    let (_xvfb, display) = start_xvfb();
    let port = free_port();
    let native_port = free_port();
    let _driver = spawn(
        "tauri-driver",
        &[
            "--port",
            &port.to_string(),
            "--native-port",
            &native_port.to_string(),
        ],
        &[
            ("DISPLAY", display.as_str()),
            ("TAURI_SHELL_DATA_DIR", data_dir_text.as_str()),
            // No GPU under Xvfb: WebKit draws in software.
            ("WEBKIT_DISABLE_COMPOSITING_MODE", "1"),
            ("LIBGL_ALWAYS_SOFTWARE", "1"),
        ],
    );
    let application = env!("CARGO_BIN_EXE_tauri-shell");
    let driver = format!("http://127.0.0.1:{port}");

    // First session: a whole run, its branch, and a long run left when the app quits.
    let app = Session::start(&driver, application);
    app.wait_for_text("#status", "ready");
    app.click("[data-testid=start]");
    // The writer asks before it publishes (`tools.approval`), after the critic's note.
    app.wait_for_element("[data-testid=approve]");
    let tree = app.text("#tree");
    assert!(tree.contains("shell-writer"), "{tree}");
    assert!(tree.contains("shell-critic"), "the tree grew: {tree}");
    app.click("[data-testid=approve]");
    app.wait_for_element("[data-testid=publish]");
    app.click("[data-testid=publish]");
    app.wait_for_text("[data-testid=chat]", "lamps along the quay");
    app.wait_for_attribute("#status", "data-status", "completed");
    app.screenshot(&artifacts().join("published.png"));

    app.click("[data-testid=branch]");
    app.wait_for_element("[data-testid=approve]");
    app.click("[data-testid=approve]");
    app.wait_for_element("[data-testid=publish]");
    app.click("[data-testid=publish]");
    app.wait_for_count("[data-testid=message]", 2);
    app.wait_for_attribute("#status", "data-status", "completed");

    // Under a spend limit: the run stops to ask, goes on once the limit is raised.
    app.click("[data-testid=start-budgeted]");
    app.wait_for_element("[data-testid=raise]");
    let asked = app.text("#requests");
    assert!(asked.contains("Spent $"), "{asked}");
    app.screenshot(&artifacts().join("spend-limit.png"));
    app.click("[data-testid=raise]");
    app.wait_for_element("[data-testid=approve]");
    app.click("[data-testid=approve]");
    app.wait_for_element("[data-testid=publish]");
    app.click("[data-testid=publish]");
    app.wait_for_count("[data-testid=message]", 3);
    app.wait_for_attribute("#status", "data-status", "completed");

    app.click("[data-testid=start-long]");
    app.wait_for_text("#events", "model_request_created");
    app.screenshot(&artifacts().join("long-run.png"));
    app.quit();

    // Second session on the same data dir: the long run is listed, resumable, and resumes.
    let app = Session::start(&driver, application);
    app.wait_for_text("#status", "ready");
    app.wait_for_element("[data-testid=resume]");
    // WebDriver ends the first app without `RunEvent::Exit` (a kill): the long run was marked
    // interrupted at this start; a clean exit would have ended it interrupted too.
    let runs = app.text("#runs");
    assert!(runs.contains("interrupted"), "{runs}");
    app.click("[data-testid=resume]");
    app.wait_for_text("#events", "run_resumed");
    app.screenshot(&artifacts().join("resumed.png"));
    app.quit();
}
