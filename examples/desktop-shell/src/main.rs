//! `desktop-shell`: what a desktop shell does with `tt-runtime`, in a terminal.
//!
//! It builds a runtime on a fresh data dir, installs two profiles of its own, starts a run and
//! draws its live agent tree from the event stream while publishing the run's commits into a
//! stand-in chat window, branches the finished run once (a second take of its reply, shown as a
//! swipe), cancels a second run, shuts down, then lets a child process of itself hold a run and
//! kills it, and starts again over the interrupted run, as a shell does after a crash, resuming
//! it and stopping it. Runs are driven through their `RunHandle`. Every step checks its
//! outcome; the exit status is 0 only when all of them held.
//!
//! `docs/host-api.md` walks through this file; its Rust snippets are excerpts of it (between
//! `ANCHOR: name` and `ANCHOR_END: name` comments), checked by `tests/doc_excerpts.rs`.
//!
//! Usage: `desktop-shell [--data-dir DIR] [--model SPEC]`. With `--model` (a connection spec,
//! docs/providers.md) only the first run is made, on that model, and reported.

mod chat;
mod tree;

use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::Arc;

// ANCHOR: imports
use anyhow::{Context, anyhow, ensure};
use tokio::io::{AsyncBufReadExt, BufReader};
use tt_runtime::{
    AgentProfileDefinition, AgentRun, AgentRunStatus, AgentRuntime, AgentRuntimeBuilder,
    CommitBridgeChoice, ConnectionSpec, ForkChanges, ForkPoint, ForkRunRequest, HostError,
    InvocationId, ListRunsRequest, ModelProvider, PromptMessage, PromptRole, RunEventPayload,
    ScriptedProvider, ScriptedScenarios, StartRunRequest, build_provider,
};
// ANCHOR_END: imports

use crate::chat::ChatWindow;
use crate::tree::AgentTree;

/// The story the scripted model plays for the writer and the critic.
const STORY_SCRIPT: &str = include_str!("../assets/script.json");
/// The story with a quieter ending, for a branch whose note carries `SECOND_TAKE_MARKER`.
const SECOND_TAKE_SCRIPT: &str = include_str!("../assets/second-take.json");
const SECOND_TAKE_MARKER: &str = "[second take]";
/// A model call that does not answer for a day: what a run waits on until it is cancelled.
const HOLD_SCRIPT: &str = include_str!("../assets/hold.json");
/// A run whose user request contains this marker plays `HOLD_SCRIPT`.
const HOLD_MARKER: &str = "[hold]";
/// The child process's flag: hold a run on this data dir until killed.
const HOLD_FLAG: &str = "--hold-run";
const CHAT_ID: &str = "harbour-chat";
/// How long the scripted tour may take before it counts as hung.
const TOUR_LIMIT: std::time::Duration = std::time::Duration::from_secs(300);

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.as_slice() {
        [flag, data_dir] if flag == HOLD_FLAG => hold_a_run(Path::new(data_dir)).await,
        // On the scripted model the whole tour takes seconds: a step that waits for ever (an
        // answer the shell never gives) fails the tour instead of hanging it.
        _ if !args.iter().any(|arg| arg == "--model") => {
            tokio::time::timeout(TOUR_LIMIT, tour(&args))
                .await
                .unwrap_or_else(|_| {
                    Err(anyhow!(
                        "the tour did not finish within {} s: a step waits for an answer",
                        TOUR_LIMIT.as_secs()
                    ))
                })
        }
        _ => tour(&args).await,
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("desktop-shell: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Every step of the example, in order.
async fn tour(args: &[String]) -> anyhow::Result<()> {
    let mut data_dir_arg = None;
    let mut model_arg = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--data-dir" => data_dir_arg = rest.next().map(PathBuf::from),
            "--model" => model_arg = rest.next().cloned(),
            other => return Err(anyhow!("unknown argument `{other}`")),
        }
    }
    // A temp dir unless one is given; it is removed when the tour ends.
    let temp = tempfile::tempdir().context("creating a temp data dir")?;
    let data_dir = data_dir_arg.unwrap_or_else(|| temp.path().join("tt-agent"));
    println!("data dir: {}", data_dir.display());

    if let Some(spec) = model_arg {
        let runtime = build_runtime(&data_dir, remote_model(&spec)?)?;
        install_profiles(&runtime).await?;
        let run = write_a_reply(&runtime, &mut ChatWindow::default()).await?;
        println!("run {} ended {:?}", run.id, run.status);
        runtime.shutdown().await?;
        return Ok(());
    }

    // 1. Build, install profiles, run, watch, publish.
    let runtime = build_runtime(&data_dir, scripted_model()?)?;
    install_profiles(&runtime).await?;
    let mut chat = ChatWindow::default();
    let run = write_a_reply(&runtime, &mut chat).await?;
    ensure!(
        run.status == AgentRunStatus::Completed,
        "the first run ended {:?}",
        run.status
    );
    ensure!(
        chat.messages().len() == 1 && chat.messages()[0].contains("lamps along the quay"),
        "the chat window holds {:?}",
        chat.messages()
    );
    ensure!(
        chat.state_of("1").is_some(),
        "the run's persistent state was not bound to its message"
    );
    println!("chat window: {:?}", chat.messages());

    // 1b. Branch the finished run once: another take of the same reply.
    let branch = branch_the_reply(&runtime, &run, &mut chat).await?;
    ensure!(
        branch.status == AgentRunStatus::Completed,
        "the branch ended {:?}",
        branch.status
    );
    let takes = chat.takes("1");
    ensure!(
        chat.messages().len() == 1
            && takes.len() == 2
            && takes[0].contains("lamps along the quay")
            && takes[1].contains("a single lamp"),
        "the reply's takes are {takes:?}"
    );
    println!("takes of the reply: {takes:?}");

    // 2. Cancel a second run.
    let cancelled = cancel_a_run(&runtime).await?;
    ensure!(
        cancelled.status == AgentRunStatus::Cancelled,
        "the cancelled run ended {:?}",
        cancelled.status
    );

    // 3. Quit cleanly.
    let settled = quit(&runtime).await?;
    ensure!(settled.is_empty(), "shutdown found live runs: {settled:?}");
    let refused = runtime
        .list_runs(ListRunsRequest::default())
        .await
        .err()
        .map(|error| error.code);
    ensure!(
        refused.as_deref() == Some(tt_runtime::RUNTIME_SHUT_DOWN.as_str()),
        "a call after shutdown gave {refused:?}"
    );
    drop(runtime);

    // 4. Crash mid-run, then start again over the interrupted run.
    let crashed_run = crash_mid_run(&data_dir).await?;
    let interrupted = start_again(&data_dir).await?;
    ensure!(
        interrupted.iter().any(|run| run.id.as_str() == crashed_run),
        "the restart did not report run {crashed_run} as interrupted: {interrupted:?}"
    );
    println!("desktop-shell: every step held");
    Ok(())
}

// ANCHOR: model
/// The offline model: the story script, the hold script for runs that ask for it, and a
/// second take of the story for a branch whose note asks for it.
fn scripted_model() -> anyhow::Result<Arc<dyn ModelProvider>> {
    let story = ScriptedProvider::from_json_str(STORY_SCRIPT)?;
    let hold = ScriptedProvider::from_json_str(HOLD_SCRIPT)?;
    Ok(Arc::new(
        ScriptedScenarios::new(story)
            .scenario(HOLD_MARKER, hold)
            .scenario(
                SECOND_TAKE_MARKER,
                ScriptedProvider::from_json_str(SECOND_TAKE_SCRIPT)?,
            ),
    ))
}
// ANCHOR_END: model

// ANCHOR: remote_model
/// A real model behind an OpenAI- or Anthropic-compatible server (docs/providers.md).
fn remote_model(spec: &str) -> anyhow::Result<Arc<dyn ModelProvider>> {
    // The key is read from OPENAI_API_KEY / ANTHROPIC_API_KEY (`with_api_key_env` renames it).
    let spec = ConnectionSpec::parse(spec)?.with_stream(true); // live model_delta events
    build_provider(&spec)
}
// ANCHOR_END: remote_model

// ANCHOR: build
fn build_runtime(
    data_dir: &Path,
    model: Arc<dyn ModelProvider>,
) -> Result<AgentRuntime, HostError> {
    AgentRuntimeBuilder::new()
        .data_dir(data_dir) // default: ./.tt-agent
        .provider(model) // any ModelProvider
        .commit_bridge(CommitBridgeChoice::HostApi) // the default; commits wait for the shell
        .build() // also marks runs a dead process left unfinished `interrupted`
}
// ANCHOR_END: build

// ANCHOR: profiles
async fn install_profiles(runtime: &AgentRuntime) -> anyhow::Result<()> {
    for text in [
        include_str!("../assets/shell-writer.json"),
        include_str!("../assets/shell-critic.json"),
    ] {
        let profile: AgentProfileDefinition = serde_json::from_str(text)?;
        runtime.save_profile(profile).await?; // validated; stored as profiles/<id>.json
    }
    Ok(())
}
// ANCHOR_END: profiles

// ANCHOR: run
/// Starts a run, draws its agent tree as it changes, and publishes its commits, all through
/// the run's handle.
async fn write_a_reply(runtime: &AgentRuntime, chat: &mut ChatWindow) -> anyhow::Result<AgentRun> {
    let request = StartRunRequest::new(CHAT_ID, "Write the next scene.")
        .profile("shell-writer")
        .history([PromptMessage {
            role: PromptRole::User,
            content: "Set it at the harbour.".to_owned(),
        }]);
    let run = runtime.start(request).await?;
    let mut tree = AgentTree::default();
    let mut events = run.events();
    // From the run's first event; ends after its terminal one.
    while let Some(item) = events.next().await? {
        if tree.is_affected_by(&item.event) {
            let projection = runtime.timeline_projection(run.run_id()).await?;
            if let Some(drawing) = tree.redraw(&projection) {
                println!("{drawing}");
            }
        }
        match item.payload {
            Some(RunEventPayload::ChatCommitRequested(_)) => {
                // Everything waiting, whether or not this stream saw it asked.
                for commit in run.pending().await?.commits {
                    let message_id = chat.publish(&commit);
                    run.publish_commit(commit.commit_id.as_str(), message_id)?;
                }
            }
            // A call the profile asks a person about (`tools.approval`): show it, then answer
            // with what the user chose (here: approve). `deny(id, message)` would tell the
            // agent why not.
            Some(RunEventPayload::ToolApprovalRequested(_)) => {
                for call in run.pending().await?.approvals {
                    println!("the user approves {} {}", call.tool, call.arguments);
                    run.approve(&call.approval_id).await?;
                }
            }
            // At finish: bind the state the run left in `persist/` to its last message.
            Some(RunEventPayload::PersistentStateMetadataUpdateRequested(update)) => {
                chat.bind_state(&update.message_id, &update.state_id);
                run.answer_metadata_update(&update.update_id, None)?;
            }
            _ => {}
        }
    }
    Ok(run.wait().await?)
}
// ANCHOR_END: run

// ANCHOR: fork
/// Branches a finished run just before the writer's fourth model round, with a note for it:
/// the branch replays the draft and the critic's review from the store (no model call) and
/// writes another take, which the chat window keeps as a swipe of the reply.
async fn branch_the_reply(
    runtime: &AgentRuntime,
    source: &AgentRun,
    chat: &mut ChatWindow,
) -> anyhow::Result<AgentRun> {
    let request = ForkRunRequest {
        at: ForkPoint::AgentRound {
            invocation_id: InvocationId::root(),
            round: 4,
        },
        changes: ForkChanges {
            guidance: Some(format!("Make the ending quieter. {SECOND_TAKE_MARKER}")),
            ..ForkChanges::default()
        },
    };
    let branch = runtime.fork(source.id.as_str(), request).await?;
    chat.add_take(source.id.as_str(), branch.run_id());
    let mut events = branch.events();
    while let Some(item) = events.next().await? {
        match item.payload {
            Some(RunEventPayload::ChatCommitRequested(_)) => {
                for commit in branch.pending().await?.commits {
                    let message_id = chat.publish(&commit);
                    branch.publish_commit(commit.commit_id.as_str(), message_id)?;
                }
            }
            // The branch's agents keep their profiles' approval rules.
            Some(RunEventPayload::ToolApprovalRequested(_)) => {
                for call in branch.pending().await?.approvals {
                    branch.approve(&call.approval_id).await?;
                }
            }
            Some(RunEventPayload::PersistentStateMetadataUpdateRequested(update)) => {
                chat.bind_state(&update.message_id, &update.state_id);
                branch.answer_metadata_update(&update.update_id, None)?;
            }
            _ => {}
        }
    }
    Ok(branch.wait().await?)
}
// ANCHOR_END: fork

// ANCHOR: cancel
async fn cancel_a_run(runtime: &AgentRuntime) -> anyhow::Result<AgentRun> {
    let request = StartRunRequest::new(CHAT_ID, format!("Take your time. {HOLD_MARKER}"))
        .profile("shell-writer");
    let run = runtime.start_run(request).await?;
    wait_for_model_call(runtime, run.id.as_str()).await?;
    let asked = runtime.cancel_run(run.id.as_str()).await?;
    println!("cancel_run returned {:?}", asked.status); // Cancelling
    let ended = runtime.wait_for_run(run.id.as_str()).await?;
    println!("wait_for_run returned {:?}", ended.status); // Cancelled
    Ok(ended)
}
// ANCHOR_END: cancel

/// Follows a run until its first model call has started (and is journaled).
async fn wait_for_model_call(runtime: &AgentRuntime, run_id: &str) -> anyhow::Result<()> {
    let mut events = runtime.subscribe(run_id, 0, None);
    while let Some(event) = events.next().await? {
        if event.event_type == "model_call_attempt_started" {
            return Ok(());
        }
    }
    Err(anyhow!("run {run_id} ended before calling its model"))
}

// ANCHOR: quit
/// What the shell does when its window closes.
async fn quit(runtime: &AgentRuntime) -> anyhow::Result<Vec<AgentRun>> {
    // Stops what is still running (each run ends `interrupted`, resumable at the next start),
    // flushes the store, ends every stream.
    let stopped = runtime.shutdown().await?;
    for run in &stopped {
        println!("interrupted at exit: {} ({:?})", run.id, run.status);
    }
    Ok(stopped)
}
// ANCHOR_END: quit

/// The child process: holds a run on `data_dir`, says so on stdout, and waits to be killed.
async fn hold_a_run(data_dir: &Path) -> anyhow::Result<()> {
    let runtime = build_runtime(data_dir, scripted_model()?)?;
    let request =
        StartRunRequest::new(CHAT_ID, format!("Hold on. {HOLD_MARKER}")).profile("shell-writer");
    let run = runtime.start_run(request).await?;
    wait_for_model_call(&runtime, run.id.as_str()).await?;
    println!("holding {}", run.id);
    std::future::pending::<()>().await;
    Ok(())
}

/// Runs a child process of this example that holds a run, and kills it (SIGKILL) once the
/// run is waiting on its model: the app "crashes" mid-run. Returns the run id.
async fn crash_mid_run(data_dir: &Path) -> anyhow::Result<String> {
    let mut child = tokio::process::Command::new(std::env::current_exe()?)
        .arg(HOLD_FLAG)
        .arg(data_dir)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("starting the child process")?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| anyhow!("the child has no stdout"))?;
    let line = BufReader::new(stdout)
        .lines()
        .next_line()
        .await?
        .ok_or_else(|| anyhow!("the child exited before holding its run"))?;
    let run_id = line
        .strip_prefix("holding ")
        .ok_or_else(|| anyhow!("unexpected child output `{line}`"))?
        .to_owned();
    child.kill().await?;
    println!("killed the process running {run_id}");
    Ok(run_id)
}

// ANCHOR: restart
/// What the shell does when it starts: build (which marks runs a dead process left unfinished
/// `interrupted`), then show those runs with how far they got.
async fn start_again(data_dir: &Path) -> anyhow::Result<Vec<AgentRun>> {
    let runtime = build_runtime(data_dir, scripted_model()?)?;
    let runs = runtime.list_runs(ListRunsRequest::default()).await?;
    let interrupted: Vec<AgentRun> = runs
        .into_iter()
        .filter(|run| run.status == AgentRunStatus::Interrupted)
        .collect();
    for run in &interrupted {
        // Returns at once: nothing runs it any more.
        let settled = runtime.wait_for_run(run.id.as_str()).await?;
        // Replays the journal, ends after `run_interrupted`.
        let mut events = runtime.subscribe(run.id.as_str(), 0, None);
        let mut last = None;
        while let Some(event) = events.next().await? {
            last = Some(event);
        }
        let last = last.ok_or_else(|| anyhow!("run {} has no events", run.id))?;
        ensure!(
            last.event_type == "run_interrupted",
            "run {} ended its stream with {}",
            run.id,
            last.event_type
        );
        println!(
            "interrupted: run {} of chat {} ({:?}, was {}); resume_run continues it",
            run.id, run.stable_chat_id, settled.status, last.payload["previousStatus"]
        );
        // Continue it where it stopped; this one waits on its model again, so stop it.
        let resumed = runtime.resume(run.id.as_str()).await?;
        let mut events = resumed.events();
        while let Some(item) = events.next().await? {
            if matches!(item.payload, Some(RunEventPayload::RunResumed(_))) {
                break;
            }
        }
        resumed.cancel().await?;
        let ended = resumed.wait().await?;
        println!(
            "resumed {} and stopped it: {:?}",
            resumed.run_id(),
            ended.status
        );
        ensure!(
            ended.status == AgentRunStatus::Cancelled,
            "the resumed run ended {:?}",
            ended.status
        );
    }
    runtime.shutdown().await?;
    Ok(interrupted)
}
// ANCHOR_END: restart
