//! The host API as an embedder uses it, over a real userdata store in a temp dir: the build
//! error, the `StartRunRequest` builder, the `Stream` subscription, pending commits, the commit
//! handler, a custom bridge beside the host commit calls, `shutdown()`, and a restart over a
//! run whose process went away.

// Test helpers outside #[test] functions may unwrap: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;
use serde_json::json;
use tempfile::TempDir;
use tt_ports::{ChatCommitReceipt, CommitAnswer, HostBridgeError, HostCommitBridge};
use tt_runtime::{
    AgentRunEvent, AgentRunStatus, AgentRuntime, AgentRuntimeBuilder, COMMIT_BRIDGE_NOT_HOST_API,
    ChatCommitRequest, CommitBridgeChoice, FnProvider, ListRunsRequest, ModelProvider, ModelReply,
    PromptMessage, PromptRole, RUNTIME_SHUT_DOWN, ReadEventsRequest, ResolveChatCommitRequest,
    ScriptedProvider, StartRunRequest,
};
use tt_testkit::store_tests::copy_live_data_dir;

// ANCHOR: closure_model
/// write -> commit -> finish for the default writer.
fn committing_writer() -> Arc<dyn ModelProvider> {
    Arc::new(FnProvider::new(|request| {
        Ok(match request.round {
            1 => ModelReply::tool_call(
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "Night fell.\n"}),
            ),
            2 => ModelReply::tool_call("workspace_commit", json!({})),
            _ => ModelReply::tool_call("workspace_finish", json!({})),
        })
    }))
}
// ANCHOR_END: closure_model

// ANCHOR: hanging_model
/// A model whose first call never answers (until the run is cancelled).
fn hanging_model() -> Arc<dyn ModelProvider> {
    Arc::new(FnProvider::new(|_| {
        Ok(ModelReply::text("never").after(Duration::from_secs(86_400)))
    }))
}
// ANCHOR_END: hanging_model

/// The builder every test of the host API starts from: the userdata store in `dir` and the
/// default model `provider`.
fn builder(dir: &Path, provider: Arc<dyn ModelProvider>) -> AgentRuntimeBuilder {
    AgentRuntimeBuilder::new().data_dir(dir).provider(provider)
}

/// [`builder`] with commits published to the data dir's transcript at once (no host answer to
/// wait for).
fn transcript_builder(dir: &Path, provider: Arc<dyn ModelProvider>) -> AgentRuntimeBuilder {
    builder(dir, provider).commit_bridge(CommitBridgeChoice::Transcript)
}

fn runtime(dir: &Path, provider: Arc<dyn ModelProvider>) -> AgentRuntime {
    builder(dir, provider).build().unwrap()
}

/// Commits are published to the data dir's transcript at once (no host answer to wait for).
fn transcript_runtime(dir: &Path, provider: Arc<dyn ModelProvider>) -> AgentRuntime {
    transcript_builder(dir, provider).build().unwrap()
}

/// [`builder`] whose commit handler publishes every commit as message "1".
fn handled_runtime(dir: &Path, provider: Arc<dyn ModelProvider>) -> AgentRuntime {
    builder(dir, provider)
        .commit_handler(|_| async { Ok("1".to_owned()) })
        .build()
        .unwrap()
}

/// A foreground writer profile `id` whose one artifact is `output/main.md` (visible and
/// writable: `output/`): it may write, commit and finish, and call `host_tools`
/// (`host/<name>`), for at most `max_rounds` rounds. Tests add or change fields of it.
fn writer_profile(
    id: &str,
    display_name: &str,
    host_tools: &[&str],
    max_rounds: u32,
) -> serde_json::Value {
    let mut allow = vec![
        "workspace.write_file".to_owned(),
        "workspace.commit".to_owned(),
        "workspace.finish".to_owned(),
    ];
    allow.extend(host_tools.iter().map(|name| format!("host/{name}")));
    json!({
        "schemaVersion": 2,
        "kind": "tauritavern.agentProfile",
        "id": id,
        "displayName": display_name,
        "preset": {"mode": "currentPromptSnapshot"},
        "model": {"mode": "currentPromptSnapshot"},
        "run": {"presentation": "foreground"},
        "tools": {"allow": allow, "maxRounds": max_rounds},
        "skills": {"visible": ["*"]},
        "workspace": {"visibleRoots": ["output"], "writableRoots": ["output"]},
        "plan": {"mode": "none"},
        "output": {"artifacts": [{"id": "main", "path": "output/main.md", "kind": "markdown", "target": "messageBody"}]}
    })
}

/// The librarian: [`writer_profile`] that also sees `scratch/`, for at most 8 rounds.
fn librarian_profile(host_tools: &[&str]) -> serde_json::Value {
    let mut profile = writer_profile("librarian", "Librarian", host_tools, 8);
    profile["workspace"]["visibleRoots"] = json!(["output", "scratch"]);
    profile
}

/// Starts `request` and waits for the run's end.
async fn run_to_end(runtime: &AgentRuntime, request: StartRunRequest) -> tt_runtime::AgentRun {
    let run = runtime.start_run(request).await.unwrap();
    runtime.wait_for_run(run.id.as_str()).await.unwrap()
}

/// The run's journal as a host reads it (its first 500 events).
async fn journal(runtime: &AgentRuntime, run_id: &str) -> Vec<AgentRunEvent> {
    runtime
        .read_events(ReadEventsRequest {
            run_id: run_id.to_owned(),
            limit: Some(500),
            ..ReadEventsRequest::default()
        })
        .await
        .unwrap()
        .events
}

/// The first event of `event_type` in `events`.
fn first_of<'a>(events: &'a [AgentRunEvent], event_type: &str) -> &'a AgentRunEvent {
    events
        .iter()
        .find(|event| event.event_type == event_type)
        .unwrap_or_else(|| panic!("no `{event_type}` in the journal"))
}

/// Runs host command `name`; its answer (a refusal fails the test).
async fn command(
    runtime: &AgentRuntime,
    name: &str,
    request: serde_json::Value,
) -> serde_json::Value {
    match runtime.execute_command(name, request).await {
        Ok(answer) => answer,
        Err(error) => panic!("{name}: {error}"),
    }
}

/// Runs host command `name`, which must refuse `request`: the refusal's code (its message
/// must say something).
async fn refused(runtime: &AgentRuntime, name: &str, request: serde_json::Value) -> String {
    match runtime.execute_command(name, request).await {
        Ok(answer) => panic!("{name} answered {answer}"),
        Err(error) => {
            assert!(!error.message.is_empty(), "{name}");
            error.code
        }
    }
}

/// Starts a run by host command `start_agent_run` with `request`: the run's id.
async fn start_by_command(runtime: &AgentRuntime, request: serde_json::Value) -> String {
    let run = command(runtime, "start_agent_run", request).await;
    run["id"].as_str().unwrap().to_owned()
}

/// The first event of `event_type` in the run's journal as host command
/// `read_agent_run_events` reads it (its first 500 events).
async fn journaled(runtime: &AgentRuntime, run_id: &str, event_type: &str) -> serde_json::Value {
    let page = command(
        runtime,
        "read_agent_run_events",
        json!({"runId": run_id, "limit": 500}),
    )
    .await;
    page["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|event| event["type"] == event_type)
        .unwrap()
        .clone()
}

fn request() -> StartRunRequest {
    StartRunRequest::new("embed-chat", "Write a scene.")
}

/// Starts [`request`]: the run's id.
async fn start(runtime: &AgentRuntime) -> String {
    runtime.start_run(request()).await.unwrap().id.to_string()
}

/// A runtime over `dir` and the id of its run, whose model call has started and never
/// answers.
async fn waiting_on_the_model(dir: &Path) -> (AgentRuntime, String) {
    let runtime = runtime(dir, hanging_model());
    let run_id = start(&runtime).await;
    wait_for_event(&runtime, &run_id, "model_call_attempt_started").await;
    (runtime, run_id)
}

/// A runtime over `dir` (the committing writer, commits answered by the host) whose run asked
/// for its commit: the runtime, the run's id and its `chat_commit_requested` event.
async fn asking_to_commit(dir: &Path) -> (AgentRuntime, String, AgentRunEvent) {
    let runtime = runtime(dir, committing_writer());
    let run_id = start(&runtime).await;
    let requested = wait_for_event(&runtime, &run_id, "chat_commit_requested").await;
    (runtime, run_id, requested)
}

/// Answers the commit `requested` (its `chat_commit_requested` event): published as message
/// `message_id`.
fn publish_as(
    runtime: &AgentRuntime,
    requested: &AgentRunEvent,
    message_id: &str,
) -> tt_runtime::HostResult<()> {
    runtime.resolve_chat_commit(ResolveChatCommitRequest {
        run_id: requested.run_id.to_string(),
        commit_id: requested.payload["commitId"].as_str().unwrap().to_owned(),
        message_id: Some(message_id.to_owned()),
        error: None,
    })
}

/// Asserts that the run's commit was published as message `message_id`.
async fn assert_published_as(runtime: &AgentRuntime, run_id: &str, message_id: &str) {
    let completed = wait_for_event(runtime, run_id, "chat_commit_completed").await;
    assert_eq!(completed.payload["messageId"], message_id);
}

/// Follows a run until an event of `event_type` arrives.
async fn wait_for_event(runtime: &AgentRuntime, run_id: &str, event_type: &str) -> AgentRunEvent {
    // The inherent `next` (a `HostResult<Option<_>>`) wins over `StreamExt::next`.
    let mut events = runtime.subscribe(run_id, 0, None);
    while let Some(event) = events.next().await.unwrap() {
        if event.event_type == event_type {
            return event;
        }
    }
    panic!("the run ended without `{event_type}`");
}

#[test]
fn a_runtime_can_be_shared_and_its_streams_moved_across_tasks() {
    fn shared<T: Send + Sync>() {}
    fn moved<T: Send + Unpin>() {}
    shared::<AgentRuntime>();
    moved::<tt_runtime::EventSubscription>();
}

#[tokio::test]
async fn build_errors_carry_a_code() {
    let dir = TempDir::new().unwrap();
    let missing = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .build()
        .unwrap_err();
    assert_eq!(missing.code, "agent.runtime_provider_missing");

    let handler_without_host_bridge = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(committing_writer())
        .commit_bridge(CommitBridgeChoice::Transcript)
        .commit_handler(|_| async { Ok("1".to_owned()) })
        .build()
        .unwrap_err();
    assert_eq!(
        handler_without_host_bridge.code,
        "agent.commit_handler_requires_host_bridge"
    );

    // A data dir that is a file cannot be opened: the storage code, and the path, are named.
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    let unopenable = AgentRuntimeBuilder::new()
        .data_dir(&file)
        .provider(committing_writer())
        .build()
        .unwrap_err();
    assert!(unopenable.code.starts_with("agent."), "{unopenable:?}");
    assert!(
        unopenable.message.contains("not-a-dir"),
        "{}",
        unopenable.message
    );
}

#[tokio::test]
async fn the_start_run_request_builder_starts_the_run_it_describes() {
    let dir = TempDir::new().unwrap();
    let script = ScriptedProvider::from_json_str(
        r#"{"schemaVersion": 1, "agents": {"quiet-writer": [
            {"toolCalls": [{"id": "w", "name": "workspace_write_file",
                            "arguments": {"path": "output/main.md", "content": "Hush."}}]},
            {"toolCalls": [{"id": "c", "name": "workspace_commit", "arguments": {}}]},
            {"toolCalls": [{"id": "f", "name": "workspace_finish", "arguments": {}}]}]}}"#,
    )
    .unwrap();
    let runtime = handled_runtime(dir.path(), Arc::new(script));
    let profile: tt_runtime::AgentProfileDefinition =
        serde_json::from_value(writer_profile("quiet-writer", "Quiet writer", &[], 4)).unwrap();
    runtime.save_profile(profile).await.unwrap();
    let run = runtime
        .start_run(
            StartRunRequest::new("builder-chat", "Say nothing.")
                .profile("quiet-writer")
                .history([PromptMessage {
                    role: PromptRole::User,
                    content: "Hello".to_owned(),
                }]),
        )
        .await
        .unwrap();
    assert_eq!(run.stable_chat_id, "builder-chat");
    assert_eq!(
        run.profile_id.as_ref().map(|id| id.as_str()),
        Some("quiet-writer")
    );
    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);
    let snapshot = runtime
        .read_record(run.id.as_str(), "input/prompt_snapshot.json")
        .await
        .unwrap();
    assert!(snapshot.to_string().contains("Hello"), "{snapshot}");
}

#[tokio::test]
async fn the_subscription_is_a_stream_that_ends_after_the_terminal_event() {
    let dir = TempDir::new().unwrap();
    let runtime = handled_runtime(dir.path(), committing_writer());
    let run = runtime.start_run(request()).await.unwrap();
    let events: Vec<AgentRunEvent> = runtime
        .subscribe(run.id.as_str(), 0, None)
        .map(|event| event.unwrap())
        .collect()
        .await;
    let seqs: Vec<u64> = events.iter().map(|event| event.seq).collect();
    assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());
    assert_eq!(events.last().unwrap().event_type, "run_completed");
    // Resuming from a seq replays only what follows it.
    let tail: Vec<u64> = runtime
        .subscribe(run.id.as_str(), seqs[seqs.len() - 3], None)
        .map(|event| event.unwrap().seq)
        .collect()
        .await;
    assert_eq!(tail, seqs[seqs.len() - 2..].to_vec());
    // `StreamExt::next` called by its path, beside the inherent `next`.
    let mut again = runtime.subscribe(run.id.as_str(), 0, None);
    assert_eq!(StreamExt::next(&mut again).await.unwrap().unwrap().seq, 1);
    assert_eq!(again.next().await.unwrap().unwrap().seq, 2);
}

#[tokio::test]
async fn pending_commits_lists_typed_requests_until_they_are_resolved() {
    let dir = TempDir::new().unwrap();
    let (runtime, run_id, requested) = asking_to_commit(dir.path()).await;
    let pending = runtime.pending_commits(&run_id).await.unwrap();
    assert_eq!(pending.len(), 1);
    let commit: &ChatCommitRequest = &pending[0];
    assert_eq!(commit.commit_id.as_str(), requested.payload["commitId"]);
    assert_eq!(commit.path, "output/main.md");
    assert_eq!(commit.mode, "replace");
    assert_eq!(commit.content, "Night fell.\n");
    assert_eq!(commit.stable_chat_id, "embed-chat");
    let unknown = runtime.pending_commits("run_other").await.unwrap_err();
    assert_eq!(unknown.code, "agent.not_found");

    publish_as(&runtime, &requested, "17").unwrap();
    // Then the finish handshake: bind the promoted persistent state to message 17.
    let update = wait_for_event(
        &runtime,
        &run_id,
        "persistent_state_metadata_update_requested",
    )
    .await;
    assert_eq!(update.payload["messageId"], "17");
    runtime
        .resolve_agent_persistent_state_metadata_update(
            tt_runtime::ResolvePersistentStateMetadataUpdateRequest {
                run_id: run_id.clone(),
                update_id: update.payload["updateId"].as_str().unwrap().to_owned(),
                error: None,
            },
        )
        .unwrap();
    let run = runtime.wait_for_run(&run_id).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);
    assert!(runtime.pending_commits(&run_id).await.unwrap().is_empty());
    assert_published_as(&runtime, &run_id, "17").await;
}

/// A cancel that lands during the finish handshake, after `persist/` was promoted (the
/// contract's order: promote, then ask the host), ends the run `cancelled`; its promoted state
/// stays on disk but is never offered as the conversation's next base.
#[tokio::test]
async fn a_run_cancelled_during_the_finish_handshake_leaves_the_chat_no_new_state() {
    let dir = TempDir::new().unwrap();
    let (runtime, run_id, requested) = asking_to_commit(dir.path()).await;
    publish_as(&runtime, &requested, "17").unwrap();
    wait_for_event(
        &runtime,
        &run_id,
        "persistent_state_metadata_update_requested",
    )
    .await;
    runtime.cancel_run(&run_id).await.unwrap();
    let run = runtime.wait_for_run(&run_id).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Cancelled);
    wait_for_event(&runtime, &run_id, "persistent_changes_committed").await;
    assert_eq!(
        runtime.latest_persist_state("embed-chat").await.unwrap(),
        None
    );
}

#[tokio::test]
async fn the_commit_handler_publishes_each_commit() {
    let dir = TempDir::new().unwrap();
    let published = Arc::new(std::sync::Mutex::new(Vec::<ChatCommitRequest>::new()));
    let seen = Arc::clone(&published);
    let runtime = builder(dir.path(), committing_writer())
        .commit_handler(move |commit| {
            let seen = Arc::clone(&seen);
            async move {
                let mut seen = seen.lock().unwrap();
                seen.push(commit);
                Ok(format!("{}", 40 + seen.len()))
            }
        })
        .build()
        .unwrap();
    let run = run_to_end(&runtime, request()).await;
    assert_eq!(run.status, AgentRunStatus::Completed);
    let published = published.lock().unwrap().clone();
    assert_eq!(published.len(), 1);
    assert_eq!(published[0].content, "Night fell.\n");
    assert_published_as(&runtime, run.id.as_str(), "41").await;
}

#[tokio::test]
async fn a_commit_handler_refusal_fails_the_run_with_its_reason() {
    let dir = TempDir::new().unwrap();
    let runtime = builder(dir.path(), committing_writer())
        .commit_handler(|_| async { Err("the chat window is closed".to_owned()) })
        .build()
        .unwrap();
    assert_commit_fails_the_run(&runtime, "the chat window is closed").await;
}

#[tokio::test]
async fn a_panicking_commit_handler_refuses_the_commit_instead_of_hanging_the_run() {
    let dir = TempDir::new().unwrap();
    let runtime = builder(dir.path(), committing_writer())
        .commit_handler(|commit: ChatCommitRequest| async move {
            assert!(
                commit.content.is_empty(),
                "the handler breaks on this commit"
            );
            Ok("1".to_owned())
        })
        .build()
        .unwrap();
    assert_commit_fails_the_run(&runtime, "panicked").await;
}

/// Runs [`request`] to its end and asserts that its commit failed, saying `why`, and failed the
/// run.
async fn assert_commit_fails_the_run(runtime: &AgentRuntime, why: &str) {
    let run = run_to_end(runtime, request()).await;
    assert_eq!(run.status, AgentRunStatus::Failed);
    let failed = wait_for_event(runtime, run.id.as_str(), "chat_commit_failed").await;
    assert!(
        failed.payload.to_string().contains(why),
        "{}",
        failed.payload
    );
}

/// A host's own bridge: publishes every commit as message "7".
struct SevenBridge;

#[async_trait]
impl HostCommitBridge for SevenBridge {
    async fn request_commit(
        &self,
        _request: ChatCommitRequest,
    ) -> Result<CommitAnswer, HostBridgeError> {
        Ok(Box::pin(std::future::ready(Ok(ChatCommitReceipt {
            message_id: "7".to_owned(),
        }))))
    }
}

#[tokio::test]
async fn host_commit_calls_on_a_custom_bridge_fail_with_a_code_and_the_bridge_still_publishes() {
    let dir = TempDir::new().unwrap();
    let runtime = builder(dir.path(), committing_writer())
        .commit_bridge(CommitBridgeChoice::Custom(Arc::new(SevenBridge)))
        .build()
        .unwrap();
    let run_id = start(&runtime).await;
    let requested = wait_for_event(&runtime, &run_id, "chat_commit_requested").await;
    let resolve = publish_as(&runtime, &requested, "99").unwrap_err();
    assert_eq!(resolve.code, COMMIT_BRIDGE_NOT_HOST_API);
    assert_eq!(
        runtime.pending_commits(&run_id).await.unwrap_err().code,
        COMMIT_BRIDGE_NOT_HOST_API
    );
    let run = runtime.wait_for_run(&run_id).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);
    assert_published_as(&runtime, &run_id, "7").await;
}

#[tokio::test]
async fn shutdown_interrupts_live_runs_ends_streams_and_refuses_later_calls() {
    let dir = TempDir::new().unwrap();
    let runtime = runtime(dir.path(), hanging_model());
    let live = runtime.start_run(request()).await.unwrap();
    let live_id = live.id.to_string();
    wait_for_event(&runtime, &live_id, "model_call_attempt_started").await;
    let follower = runtime.subscribe(&live_id, 0, None);

    let stopped = runtime.shutdown().await.unwrap();
    assert_eq!(stopped.len(), 1);
    assert_eq!(stopped[0].id, live.id);
    assert_eq!(stopped[0].status, AgentRunStatus::Interrupted);
    // The stream opened before shutdown delivers the run's end, then ends: interrupted, as
    // when its process goes away, never cancelled.
    let events: Vec<AgentRunEvent> = follower.map(|event| event.unwrap()).collect().await;
    let last = events.last().unwrap();
    assert_eq!(last.event_type, "run_interrupted");
    assert_eq!(last.payload["reason"], "host_shutdown");
    assert_eq!(last.payload["previousStatus"], "calling_model");
    // `lastSeq`: the last event the run wrote before its stop, its model call's start.
    let last_seq = last.payload["lastSeq"].as_u64().unwrap();
    assert_eq!(
        events[last_seq as usize - 1].event_type,
        "model_call_attempt_started"
    );
    assert!(
        !events.iter().any(|event| matches!(
            event.event_type.as_str(),
            "run_cancel_requested" | "run_cancelled"
        )),
        "{events:?}"
    );

    assert!(runtime.is_shut_down());
    let refused = [
        runtime.start_run(request()).await.map(drop).unwrap_err(),
        runtime.wait_for_run(&live_id).await.map(drop).unwrap_err(),
        runtime.cancel_run(&live_id).await.map(drop).unwrap_err(),
        runtime
            .list_runs(ListRunsRequest::default())
            .await
            .map(drop)
            .unwrap_err(),
        runtime
            .pending_commits(&live_id)
            .await
            .map(drop)
            .unwrap_err(),
    ];
    for error in refused {
        assert_eq!(error.code, RUNTIME_SHUT_DOWN);
    }
    let mut late = runtime.subscribe(&live_id, 0, None);
    assert_eq!(late.next().await.unwrap_err().code, RUNTIME_SHUT_DOWN);
    assert!(late.next().await.unwrap().is_none());
    assert!(runtime.shutdown().await.unwrap().is_empty());

    // The run's lock was released: a new runtime on the same dir finds it interrupted and
    // resumes it where it stopped (its model call again).
    let reopened = runtime_at_same_dir(dir.path());
    let run = reopened.wait_for_run(&live_id).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Interrupted);
    reopened.resume_run(&live_id).await.unwrap();
    let mut resumed = reopened.subscribe(&live_id, last.seq, None);
    // What the stop ended is reopened (its agent interrupted), then the run resumes.
    let next = loop {
        let event = resumed.next().await.unwrap().unwrap();
        if event.event_type != "agent_invocation_interrupted" {
            break event;
        }
    };
    assert_eq!(next.event_type, "run_resumed");
    assert_eq!(next.payload["fromSeq"], last.seq);
    loop {
        let event = resumed.next().await.unwrap().unwrap();
        assert!(!event.event_type.as_str().starts_with("run_"), "{event:?}");
        if event.event_type == "model_request_created" {
            break;
        }
    }
    let stopped_again = reopened.shutdown().await.unwrap();
    assert_eq!(stopped_again[0].status, AgentRunStatus::Interrupted);
}

/// Ids as the runtime makes them, except that once armed the next id is held until the test
/// lets it go (so a run's creation can be caught half way while a shutdown begins).
#[derive(Default)]
struct GatedIds {
    next: std::sync::atomic::AtomicU64,
    #[allow(clippy::type_complexity)]
    armed: std::sync::Mutex<Option<(std::sync::mpsc::Sender<()>, std::sync::mpsc::Receiver<()>)>>,
}

impl tt_ports::IdGenerator for GatedIds {
    fn next_token(&self) -> String {
        let gate = self.armed.lock().unwrap().take();
        if let Some((reached, release)) = gate {
            reached.send(()).unwrap();
            release.recv().unwrap();
        }
        let n = self.next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        format!("{:032x}", 0xa000_0000_u64 + n)
    }
}

/// A run being created when `shutdown()` begins (after shutdown took its list of runs, before
/// the run's executor started) is stopped as shutdown stops any run: it ends `interrupted`
/// (`run_interrupted {reason: host_shutdown}`), never `cancelled`, and the next runtime
/// resumes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_caught_by_shutdown_before_its_executor_starts_ends_interrupted() {
    let dir = TempDir::new().unwrap();
    let ids = Arc::new(GatedIds::default());
    let runtime = Arc::new(
        builder(dir.path(), hanging_model())
            .ids(ids.clone())
            .build()
            .unwrap(),
    );
    let (reached_tx, reached) = std::sync::mpsc::channel();
    let (release, release_rx) = std::sync::mpsc::channel();
    *ids.armed.lock().unwrap() = Some((reached_tx, release_rx));
    let starting = tokio::spawn({
        let runtime = Arc::clone(&runtime);
        async move { runtime.start_run(request()).await }
    });
    // The run's creation is held at its first id; shutdown begins and finds nothing to stop.
    tokio::task::spawn_blocking(move || reached.recv().unwrap())
        .await
        .unwrap();
    assert!(runtime.shutdown().await.unwrap().is_empty());
    release.send(()).unwrap();
    let refused = starting.await.unwrap().unwrap_err();
    assert_eq!(refused.code, RUNTIME_SHUT_DOWN);

    let reopened = self::runtime(dir.path(), hanging_model());
    let runs = reopened
        .list_runs(ListRunsRequest::default())
        .await
        .unwrap();
    assert_eq!(runs.len(), 1);
    let run_id = runs[0].id.to_string();
    assert_eq!(runs[0].status, AgentRunStatus::Interrupted);
    let events = journal(&reopened, &run_id).await;
    let last = events.last().unwrap();
    assert_eq!(last.event_type, "run_interrupted");
    assert_eq!(last.payload["reason"], "host_shutdown");
    assert!(
        !events.iter().any(|event| matches!(
            event.event_type.as_str(),
            "run_cancel_requested" | "run_cancelled"
        )),
        "{events:?}"
    );
    let resumed = reopened.resume_run(&run_id).await.unwrap();
    assert!(!resumed.status.is_terminal());
    let stopped = reopened.shutdown().await.unwrap();
    assert_eq!(stopped[0].status, AgentRunStatus::Interrupted);
}

#[tokio::test]
async fn shutdown_ends_a_stream_that_follows_a_run_another_runtime_owns() {
    let dir = TempDir::new().unwrap();
    let (owner, run_id) = waiting_on_the_model(dir.path()).await;
    // A second runtime on the same data dir (as another app window would be): the run is
    // locked by its owner, so this one only follows it, by polling its journal.
    let viewer = runtime_at_same_dir(dir.path());
    let mut follower = viewer.subscribe(&run_id, 0, None);
    assert_eq!(follower.next().await.unwrap().unwrap().seq, 1);

    assert!(viewer.shutdown().await.unwrap().is_empty());
    // The follower delivers what the journal holds, then ends although the run goes on.
    let rest: Vec<u64> = follower.map(|event| event.unwrap().seq).collect().await;
    let journaled = journal(&owner, &run_id).await;
    assert_eq!(
        rest,
        journaled
            .iter()
            .skip(1)
            .map(|event| event.seq)
            .collect::<Vec<_>>()
    );
    assert!(
        !journaled
            .last()
            .unwrap()
            .event_type
            .as_str()
            .starts_with("run_")
    );

    let stopped = owner.shutdown().await.unwrap();
    assert_eq!(stopped[0].status, AgentRunStatus::Interrupted);
}

fn runtime_at_same_dir(dir: &Path) -> AgentRuntime {
    runtime(dir, committing_writer())
}

#[tokio::test]
async fn after_a_restart_an_interrupted_run_waits_and_streams_to_its_end() {
    let dir = TempDir::new().unwrap();
    let (crashed, run_id) = waiting_on_the_model(dir.path()).await;
    // The journal holds the call's start: the run is quiet, waiting on the model.
    let journaled = journal(&crashed, &run_id).await;
    assert!(
        journaled
            .iter()
            .any(|event| event.event_type == "model_call_attempt_started")
    );
    // The app "crashes": its data dir as it is now is what the next start finds, with no
    // process holding the run's lock (the copy was never locked).
    let after_crash = TempDir::new().unwrap();
    copy_live_data_dir(dir.path(), after_crash.path());

    let restarted = runtime(after_crash.path(), committing_writer());
    let runs = restarted
        .list_runs(ListRunsRequest::default())
        .await
        .unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, AgentRunStatus::Interrupted);
    let waited = restarted.wait_for_run(&run_id).await.unwrap();
    assert_eq!(waited.status, AgentRunStatus::Interrupted);
    let replayed: Vec<AgentRunEvent> = restarted
        .subscribe(&run_id, 0, None)
        .map(|event| event.unwrap())
        .collect()
        .await;
    assert_eq!(replayed[..journaled.len()], journaled[..]);
    let last = replayed.last().unwrap();
    assert_eq!(last.event_type, "run_interrupted");
    assert_eq!(last.payload["reason"], "owner_exited");
    // Nothing is running it here: a cancel returns it unchanged.
    assert_eq!(
        restarted.cancel_run(&run_id).await.unwrap().status,
        AgentRunStatus::Interrupted
    );
    assert!(restarted.shutdown().await.unwrap().is_empty());
    assert_eq!(crashed.shutdown().await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_run_started_on_a_named_connection_talks_to_it_instead_of_the_default_model() {
    let dir = TempDir::new().unwrap();
    let runtime = transcript_builder(dir.path(), hanging_model())
        .connection("house-model", committing_writer())
        .build()
        .unwrap();
    let names: Vec<_> = runtime
        .list_connections()
        .await
        .unwrap()
        .into_iter()
        .map(|connection| connection.name)
        .collect();
    assert_eq!(names, ["house-model"]);

    let run = runtime
        .start_run(request().connection("house-model"))
        .await
        .unwrap();
    assert_eq!(run.connection_ref.as_deref(), Some("house-model"));
    let ended = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(ended.status, AgentRunStatus::Completed);
    let binding = wait_for_event(&runtime, run.id.as_str(), "agent_model_binding_resolved").await;
    assert_eq!(binding.payload["mode"], "currentPromptSnapshot");
    assert_eq!(binding.payload["connectionRef"], "house-model");

    let unknown = runtime
        .start_run(request().connection("nobody-configured-this"))
        .await
        .unwrap_err();
    assert_eq!(unknown.code, "agent.model_connection_not_found");
    let runs = runtime.list_runs(ListRunsRequest::default()).await.unwrap();
    assert_eq!(runs.len(), 1, "a refused start leaves no run behind");
}

#[tokio::test]
async fn the_workspace_file_list_shows_every_file_the_run_wrote() {
    let dir = TempDir::new().unwrap();
    let runtime = transcript_runtime(dir.path(), committing_writer());
    let run = run_to_end(&runtime, request()).await;
    let files = runtime.list_workspace_files(run.id.as_str()).await.unwrap();
    assert!(files.contains(&"output/main.md".to_owned()), "{files:?}");
    let mut sorted = files.clone();
    sorted.sort();
    assert_eq!(files, sorted);
    let missing = runtime
        .list_workspace_files("run_missing")
        .await
        .unwrap_err();
    assert_eq!(missing.code, "agent.not_found");
}

#[tokio::test]
async fn run_updates_follow_a_run_from_its_start_to_its_end_and_stop_at_shutdown() {
    let dir = TempDir::new().unwrap();
    let runtime = transcript_runtime(dir.path(), committing_writer());
    let mut updates = runtime.run_updates().unwrap();
    let run = runtime.start_run(request()).await.unwrap();
    let mut statuses = Vec::new();
    while let Some(update) = updates.next().await {
        let tt_runtime::RunUpdate::Changed(changed) = update else {
            continue;
        };
        assert_eq!(changed.id, run.id);
        statuses.push(changed.status);
        if changed.status.is_terminal() {
            break;
        }
    }
    assert_eq!(statuses.last(), Some(&AgentRunStatus::Completed));
    assert!(statuses.len() >= 3, "start, work and end: {statuses:?}");
    runtime.shutdown().await.unwrap();
    assert_eq!(updates.next().await, None);
    assert_eq!(runtime.run_updates().unwrap_err().code, RUNTIME_SHUT_DOWN);
}

/// The next update of `run_id` (others are skipped); a hang guard (not a timing): a minute
/// without one fails.
async fn next_update_of(
    updates: &mut tt_runtime::RunUpdates,
    run_id: &str,
) -> tt_runtime::AgentRun {
    loop {
        let next = tokio::time::timeout(Duration::from_secs(60), updates.next()).await;
        match next
            .expect("no update within a minute")
            .expect("the updates ended")
        {
            tt_runtime::RunUpdate::Changed(run) if run.id.as_str() == run_id => return *run,
            _ => {}
        }
    }
}

/// Round 1 writes a file, round 2 waits a day (until the run is cancelled); each model call
/// waits for a permit of the returned gate.
fn gated_held_writer() -> (Arc<dyn ModelProvider>, Arc<tokio::sync::Semaphore>) {
    let held = Arc::new(FnProvider::new(|request| {
        Ok(match request.round {
            1 => ModelReply::tool_call(
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "Night fell.\n"}),
            ),
            _ => ModelReply::text("later").after(Duration::from_secs(86_400)),
        })
    }));
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let model = tt_testkit::fakes::ShapedModel::around(held).gated(Arc::clone(&gate));
    (Arc::new(model), gate)
}

/// `other` (a runtime with its own store on the same data dir or database, as another process
/// or host would be) starts a run of [`gated_held_writer`]: it shows in `viewer`'s run updates
/// without any `list_runs`, as soon as it exists, again while it works (its first model call
/// answered: its usage has moved), and at its end.
async fn another_writers_run_shows_in_run_updates(
    viewer: &AgentRuntime,
    other: &AgentRuntime,
    gate: &tokio::sync::Semaphore,
) {
    let mut updates = viewer.run_updates().unwrap();
    let run_id = start(other).await;
    let first = next_update_of(&mut updates, &run_id).await;
    assert_eq!(first.stable_chat_id, "embed-chat");
    assert_eq!(viewer.usage(&run_id).await.unwrap().model_calls, 0);
    // Rounds 1 and 2 may go: round 1 is answered, round 2 waits.
    gate.add_permits(2);
    loop {
        let live = next_update_of(&mut updates, &run_id).await;
        assert!(!live.status.is_terminal(), "{live:?}");
        if viewer.usage(&run_id).await.unwrap().model_calls >= 1 {
            break;
        }
    }
    other.cancel_run(&run_id).await.unwrap();
    loop {
        let run = next_update_of(&mut updates, &run_id).await;
        if run.status.is_terminal() {
            assert_eq!(run.status, AgentRunStatus::Cancelled);
            break;
        }
    }
    other.shutdown().await.unwrap();
    viewer.shutdown().await.unwrap();
}

/// A run another runtime with its own store starts on the same data dir (another process, as
/// `tt-agent run` in a terminal would be) shows in this runtime's run updates at once, while
/// it works and at its end, by the file store's watch.
#[tokio::test]
async fn run_updates_show_runs_another_runtime_writes_on_the_same_data_dir() {
    let dir = TempDir::new().unwrap();
    let viewer = transcript_runtime(dir.path(), committing_writer());
    let (model, gate) = gated_held_writer();
    let other = transcript_runtime(dir.path(), model);
    another_writers_run_shows_in_run_updates(&viewer, &other, &gate).await;
}

#[tokio::test]
async fn guidance_waiting_when_the_process_died_reaches_the_agent_after_resume() {
    let guidance = |text: &str| tt_runtime::SubmitGuidanceRequest {
        text: text.to_owned(),
        client_guidance_id: None,
    };
    let dir = TempDir::new().unwrap();
    let crashed = transcript_runtime(dir.path(), hanging_model());
    let run_id = start(&crashed).await;
    wait_for_event(&crashed, &run_id, "model_call_attempt_started").await;
    // Submitted while the writer waits on its first answer: read before its next request.
    let receipt = crashed
        .submit_guidance(&run_id, guidance("Make it rain."))
        .await
        .unwrap();
    assert_eq!(receipt.guidance_id, "guidance_000001");
    let after_crash = TempDir::new().unwrap();
    copy_live_data_dir(dir.path(), after_crash.path());

    // After the restart the writer writes, then waits on its second answer.
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&asked);
    let provider = Arc::new(FnProvider::new(move |request| {
        seen.lock().unwrap().push(request.clone());
        Ok(match request.round {
            1 => ModelReply::tool_call(
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "Rain fell.\n"}),
            ),
            _ => ModelReply::text("never").after(Duration::from_secs(86_400)),
        })
    }));
    let restarted = transcript_runtime(after_crash.path(), provider);
    restarted.resume_run(&run_id).await.unwrap();
    let applied = tokio::time::timeout(
        Duration::from_secs(60),
        wait_for_event(&restarted, &run_id, "user_guidance_applied"),
    )
    .await
    .expect("the waiting guidance was read after the resume");
    assert_eq!(applied.payload["guidanceIds"], json!(["guidance_000001"]));
    let first = asked.lock().unwrap()[0].clone();
    assert_eq!(first.round, 1);
    let last_message = serde_json::to_string(first.messages.last().unwrap()).unwrap();
    assert!(last_message.contains("Make it rain."), "{last_message}");
    // New notes are numbered after the run's earlier ones.
    let mut events = restarted.subscribe(&run_id, 0, None);
    while let Some(event) = events.next().await.unwrap() {
        if event.event_type == "model_call_attempt_started" && event.payload["round"] == 2 {
            break;
        }
    }
    let second = restarted
        .submit_guidance(&run_id, guidance("Make it stop."))
        .await
        .unwrap();
    assert_eq!(second.guidance_id, "guidance_000002");
    restarted.cancel_run(&run_id).await.unwrap();
    restarted.wait_for_run(&run_id).await.unwrap();
    crashed.shutdown().await.unwrap();
}

#[path = "host_api/context_resume.rs"]
mod context_resume;

/// An embedder reads what a `FnProvider` closure receives and what typed payloads say of an
/// agent with tt-runtime's own names, without reaching into the crates below it.
#[test]
fn the_types_an_embedder_meets_are_exported() {
    use tt_runtime::{
        AgentModelMessage, ExitPolicy, InvocationKind, InvocationStatus, ModelContentPart,
        ModelRole,
    };
    let message = AgentModelMessage::text(ModelRole::User, "hi");
    assert!(matches!(message.parts[0], ModelContentPart::Text { .. }));
    assert_eq!(InvocationStatus::Running.as_str(), "running");
    assert_eq!(InvocationKind::Root.as_str(), "root");
    assert_ne!(ExitPolicy::TaskReturnRequired, ExitPolicy::RunFinishAllowed);
}

#[path = "host_api/run_handle.rs"]
mod run_handle;

#[path = "host_api/host_tools.rs"]
mod host_tools;

#[path = "host_api/windows.rs"]
mod windows;

/// `wait_for_run` on a run another runtime executes waits for its end (by following its
/// journal) instead of returning its current, unfinished status.
#[tokio::test]
async fn waiting_for_a_run_another_runtime_owns_returns_its_end() {
    let dir = TempDir::new().unwrap();
    let (owner, run_id) = waiting_on_the_model(dir.path()).await;
    let viewer = runtime_at_same_dir(dir.path());
    let waiting = viewer.wait_for_run(&run_id);
    let stop = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        owner.cancel_run(&run_id).await.unwrap();
    };
    let (ended, ()) = tokio::join!(waiting, stop);
    assert_eq!(ended.unwrap().status, AgentRunStatus::Cancelled);
    owner.shutdown().await.unwrap();
}

#[path = "host_api/commands.rs"]
mod commands;

#[path = "host_api/spend_limit.rs"]
mod spend_limit;

#[path = "host_api/wire.rs"]
mod wire;

#[path = "host_api/unknown_run.rs"]
mod unknown_run;

#[path = "host_api/profiles.rs"]
mod profiles;

#[path = "host_api/postgres.rs"]
mod postgres;

#[path = "host_api/otel_live.rs"]
mod otel_live;

#[path = "host_api/store_registry.rs"]
mod store_registry;

#[path = "host_api/provider_recipe.rs"]
mod provider_recipe;

#[path = "host_api/stored_settings.rs"]
mod stored_settings;
