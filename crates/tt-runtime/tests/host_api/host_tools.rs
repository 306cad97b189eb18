//! Host tools as an embedder registers them (docs/tools.md, "Host tools"): a call answered by
//! the handler and journaled like any other, a handler's error and panic as recoverable tool
//! errors, approval, cancellation, and resume after the process died mid-call (an answered
//! call is never made again; one in flight is made again only when declared idempotent,
//! otherwise the agent is told it may have run).

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tempfile::TempDir;
use tt_domain::model::AgentModelRequest;
use tt_runtime::{
    AgentRunEvent, AgentRunStatus, AgentRuntime, ApprovalDecision, FnProvider, HostTool,
    HostToolError, HostToolReply, ModelProvider, ModelReply, ResolveToolApprovalRequest,
    StartRunRequest,
};

use super::{
    builder, copy_live_data_dir, journal, librarian_profile, transcript_builder, wait_for_event,
};

/// The librarian with `extra` host tools (`host/<name>`), and `approval` rules.
fn profile(extra: &[&str], approval: Value) -> tt_runtime::AgentProfileDefinition {
    let mut profile = librarian_profile(extra);
    profile["tools"]["approval"] = approval;
    serde_json::from_value(profile).unwrap()
}

/// Calls `first` (round 1) and `second` (round 2, when given), then writes, commits and
/// finishes; every request it gets is kept in `seen`.
fn caller(
    first: Vec<(&'static str, Value)>,
    second: Option<(&'static str, Value)>,
    seen: Arc<Mutex<Vec<AgentModelRequest>>>,
) -> Arc<dyn ModelProvider> {
    Arc::new(FnProvider::new(move |request| {
        seen.lock().unwrap().push(request.clone());
        let mut round = request.round;
        if round == 1 {
            let mut calls = first.iter();
            let (name, args) = calls.next().unwrap();
            let mut reply = ModelReply::tool_call(*name, args.clone());
            for (name, args) in calls {
                reply = reply.with_tool_call(*name, args.clone());
            }
            return Ok(reply);
        }
        if let Some((name, args)) = &second {
            if round == 2 {
                return Ok(ModelReply::tool_call(*name, args.clone()));
            }
            round -= 1;
        }
        Ok(match round {
            2 => ModelReply::tool_call(
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "Found it.\n"}),
            ),
            3 => ModelReply::tool_call("workspace_commit", json!({})),
            _ => ModelReply::tool_call("workspace_finish", json!({})),
        })
    }))
}

async fn runtime(
    dir: &Path,
    provider: Arc<dyn ModelProvider>,
    tools: Vec<HostTool>,
) -> AgentRuntime {
    let mut builder = transcript_builder(dir, provider);
    for tool in tools {
        builder = builder.host_tool(tool);
    }
    builder.build().unwrap()
}

fn start() -> StartRunRequest {
    StartRunRequest::new("library-chat", "Find the lighthouse note.").profile("librarian")
}

fn of_type<'a>(events: &'a [AgentRunEvent], kind: &str) -> Vec<&'a AgentRunEvent> {
    events
        .iter()
        .filter(|event| event.event_type == kind)
        .collect()
}

/// Saves `profile` and starts the librarian's run.
async fn start_librarian(
    runtime: &AgentRuntime,
    profile: tt_runtime::AgentProfileDefinition,
) -> tt_runtime::AgentRun {
    runtime.save_profile(profile).await.unwrap();
    runtime.start_run(start()).await.unwrap()
}

/// A person approves the call waiting as `approval_id`.
async fn approve(runtime: &AgentRuntime, run_id: &str, approval_id: &str) {
    runtime
        .resolve_tool_approval(
            run_id,
            approval_id,
            ResolveToolApprovalRequest::new(ApprovalDecision::Approve),
        )
        .await
        .unwrap();
}

/// A model that answers every call with empty text.
fn silent() -> Arc<dyn ModelProvider> {
    Arc::new(FnProvider::new(|_| Ok(ModelReply::text(""))))
}

fn schema() -> Value {
    json!({"type": "object", "properties": {"query": {"type": "string"}}})
}

/// A tool that answers `answer` and counts its calls.
fn counting(name: &str, calls: Arc<AtomicUsize>, answer: &'static str) -> HostTool {
    HostTool::new(
        name,
        "Searches the chat for a phrase.",
        schema(),
        move |_call| {
            calls.fetch_add(1, Ordering::SeqCst);
            async move { Ok(HostToolReply::text(answer)) }
        },
    )
}

#[tokio::test]
async fn a_host_tool_answers_the_agent_and_is_journaled_like_any_call() {
    let dir = TempDir::new().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let provider = caller(
        vec![("chat_search", json!({"query": "lighthouse"}))],
        None,
        Arc::clone(&seen),
    );
    // ANCHOR: host_tool
    let search = HostTool::new(
        "chat.search",
        "Finds messages of this chat that mention a phrase.",
        json!({"type": "object", "properties": {"query": {"type": "string"}},
               "required": ["query"]}),
        |call| async move {
            let query = call.arguments["query"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            if query.is_empty() {
                return Err(HostToolError::new(
                    "empty_query",
                    "Give a phrase to search for.",
                ));
            }
            Ok(HostToolReply::json(
                json!({"hits": [format!("the {query} keeper")]}),
            ))
        },
    )
    .reads_only();
    // ANCHOR_END: host_tool
    let runtime = runtime(dir.path(), provider, vec![search]).await;
    assert_eq!(runtime.list_host_tools()[0].id, "host/chat.search");
    let run = start_librarian(&runtime, profile(&["chat.search"], json!({}))).await;
    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);

    let journal = journal(&runtime, run.id.as_str()).await;
    let requested = of_type(&journal, "tool_call_requested");
    assert_eq!(requested[0].payload["name"], "host/chat.search");
    let completed = of_type(&journal, "tool_call_completed");
    assert_eq!(completed[0].payload["name"], "host/chat.search");
    // The model was offered it under its own name, and read the handler's answer.
    let requests = seen.lock().unwrap();
    let offered: Vec<&str> = requests[0]
        .tools
        .iter()
        .map(|spec| spec.model_name.as_str())
        .collect();
    assert!(offered.contains(&"chat_search"), "{offered:?}");
    let second = serde_json::to_string(&requests[1].messages).unwrap();
    assert!(second.contains("the lighthouse keeper"), "{second}");
}

#[tokio::test]
async fn a_handlers_error_or_panic_goes_back_to_the_agent_and_the_run_goes_on() {
    let dir = TempDir::new().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let provider = caller(
        vec![
            ("chat_open", json!({"query": "x"})),
            ("chat_crash", json!({"query": "y"})),
        ],
        None,
        Arc::clone(&seen),
    );
    let open = HostTool::new("chat.open", "Opens a chat.", schema(), |_call| async {
        Err(HostToolError::new("chat_not_found", "No chat is named x."))
    });
    let crash = HostTool::new("chat.crash", "Crashes.", schema(), |_call| async {
        #[allow(clippy::panic)]
        if true {
            panic!("the handler broke");
        }
        Ok(HostToolReply::text("unreachable"))
    });
    let runtime = runtime(dir.path(), provider, vec![open, crash]).await;
    let run = start_librarian(&runtime, profile(&["chat.open", "chat.crash"], json!({}))).await;
    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);
    let journal = journal(&runtime, run.id.as_str()).await;
    let failed = of_type(&journal, "tool_call_failed");
    assert_eq!(failed.len(), 2, "{failed:?}");
    assert_eq!(failed[0].payload["errorCode"], "tool.host_failed");
    assert_eq!(failed[0].payload["errorReason"], "chat_not_found");
    assert_eq!(failed[0].payload["message"], "No chat is named x.");
    assert_eq!(failed[1].payload["errorCode"], "tool.host_panicked");
    assert!(
        failed
            .iter()
            .all(|event| event.payload.get("fatal").is_none())
    );
    let second = serde_json::to_string(&seen.lock().unwrap()[1].messages).unwrap();
    assert!(second.contains("No chat is named x."), "{second}");
}

#[tokio::test]
async fn a_host_tool_that_asks_first_runs_only_once_a_person_approves() {
    let dir = TempDir::new().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let provider = caller(
        vec![("chat_post", json!({"query": "hello"}))],
        None,
        Arc::clone(&seen),
    );
    let calls = Arc::new(AtomicUsize::new(0));
    let post = counting("chat.post", Arc::clone(&calls), "posted").ask_first();
    let runtime = runtime(dir.path(), provider, vec![post]).await;
    let run = start_librarian(&runtime, profile(&["chat.post"], json!({}))).await;
    let run_id = run.id.to_string();
    let asked = wait_for_event(&runtime, &run_id, "tool_approval_requested").await;
    assert_eq!(asked.payload["tool"], "host/chat.post");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    let pending = runtime.pending_approvals(&run_id).await.unwrap();
    assert_eq!(pending.len(), 1);
    approve(&runtime, &run_id, &pending[0].approval_id).await;
    let run = runtime.wait_for_run(&run_id).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    // A profile's own rule wins over the tool's default: `never` runs it at once.
    let dir = TempDir::new().unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let provider = caller(
        vec![("chat_post", json!({}))],
        None,
        Arc::new(Mutex::new(Vec::new())),
    );
    let post = counting("chat.post", Arc::clone(&calls), "posted").ask_first();
    let runtime = self::runtime(dir.path(), provider, vec![post]).await;
    let run = start_librarian(
        &runtime,
        profile(&["chat.post"], json!({"host/chat.post": "never"})),
    )
    .await;
    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

/// Sets its flag when dropped: the handler's future was dropped (its task aborted).
struct Dropped(Arc<AtomicBool>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn cancelling_the_run_stops_a_host_tool_in_flight() {
    let dir = TempDir::new().unwrap();
    let provider = caller(
        vec![("chat_wait", json!({}))],
        None,
        Arc::new(Mutex::new(Vec::new())),
    );
    let stopped = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stopped);
    let wait = HostTool::new("chat.wait", "Waits.", schema(), move |_call| {
        let guard = Dropped(Arc::clone(&flag));
        async move {
            let _guard = guard;
            tokio::time::sleep(Duration::from_secs(86_400)).await;
            Ok(HostToolReply::text("late"))
        }
    });
    let runtime = runtime(dir.path(), provider, vec![wait]).await;
    let run = start_librarian(&runtime, profile(&["chat.wait"], json!({}))).await;
    let run_id = run.id.to_string();
    wait_for_event(&runtime, &run_id, "tool_call_started").await;
    runtime.cancel_run(&run_id).await.unwrap();
    let run = runtime.wait_for_run(&run_id).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Cancelled);
    // The abort is delivered to the handler's task once the runtime lets it run.
    for _ in 0..100 {
        if stopped.load(Ordering::SeqCst) {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(stopped.load(Ordering::SeqCst));
}

/// A tool whose calls never answer in the first process; `started` counts its calls.
fn hanging(name: &str, started: Arc<AtomicUsize>) -> HostTool {
    HostTool::new(name, "Changes the chat.", schema(), move |_call| {
        started.fetch_add(1, Ordering::SeqCst);
        async move {
            tokio::time::sleep(Duration::from_secs(86_400)).await;
            Ok(HostToolReply::text("late"))
        }
    })
}

/// Runs `read` (answered) then `second` (in flight when the process dies), then resumes in a
/// second process whose `read` and `second` tools count their calls. Returns the resumed
/// run's status, the two counts of the second process, and the requests its model got.
async fn crash_during(
    second: HostTool,
    second_name: &'static str,
    second_again: HostTool,
) -> (AgentRunStatus, usize, Vec<AgentModelRequest>) {
    let dir = TempDir::new().unwrap();
    let first_calls = Arc::new(AtomicUsize::new(0));
    let model_name: &'static str = Box::leak(second_name.replace('.', "_").into_boxed_str());
    let crashed = runtime(
        dir.path(),
        caller(
            vec![("chat_read", json!({}))],
            Some((model_name, json!({}))),
            Arc::new(Mutex::new(Vec::new())),
        ),
        vec![
            counting("chat.read", Arc::clone(&first_calls), "read"),
            second,
        ],
    )
    .await;
    let run = start_librarian(&crashed, profile(&["chat.read", second_name], json!({}))).await;
    let run_id = run.id.to_string();
    // The second call has started: its start is journaled and its handler runs.
    let mut started = 0;
    while started < 2 {
        started = of_type(&journal(&crashed, &run_id).await, "tool_call_started").len();
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(first_calls.load(Ordering::SeqCst), 1);
    let after_crash = TempDir::new().unwrap();
    copy_live_data_dir(dir.path(), after_crash.path());

    let read_again = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let restarted = runtime(
        after_crash.path(),
        caller(
            vec![("chat_read", json!({}))],
            Some((model_name, json!({}))),
            Arc::clone(&seen),
        ),
        vec![
            counting("chat.read", Arc::clone(&read_again), "read"),
            second_again,
        ],
    )
    .await;
    restarted.resume_run(&run_id).await.unwrap();
    let run = restarted.wait_for_run(&run_id).await.unwrap();
    // The answered call was not made again.
    assert_eq!(read_again.load(Ordering::SeqCst), 0);
    restarted.shutdown().await.unwrap();
    crashed.shutdown().await.unwrap();
    let requests = seen.lock().unwrap().clone();
    (run.status, requests.len(), requests)
}

#[tokio::test]
async fn resume_never_makes_an_answered_call_again_nor_one_in_flight_unless_idempotent() {
    // Not idempotent: the call in flight is answered `tool.outcome_unknown`, not made again.
    let again = Arc::new(AtomicUsize::new(0));
    let (status, _, requests) = crash_during(
        hanging("chat.post", Arc::new(AtomicUsize::new(0))),
        "chat.post",
        counting("chat.post", Arc::clone(&again), "posted"),
    )
    .await;
    assert_eq!(status, AgentRunStatus::Completed);
    assert_eq!(again.load(Ordering::SeqCst), 0);
    let first_live = serde_json::to_string(&requests[0].messages).unwrap();
    assert!(first_live.contains("tool.outcome_unknown"), "{first_live}");
    assert!(
        first_live.contains("may or may not have taken effect"),
        "{first_live}"
    );

    // Idempotent: made again once, and its answer reaches the agent.
    let again = Arc::new(AtomicUsize::new(0));
    let (status, _, requests) = crash_during(
        hanging("chat.mark", Arc::new(AtomicUsize::new(0))).idempotent(),
        "chat.mark",
        counting("chat.mark", Arc::clone(&again), "marked").idempotent(),
    )
    .await;
    assert_eq!(status, AgentRunStatus::Completed);
    assert_eq!(again.load(Ordering::SeqCst), 1);
    let first_live = serde_json::to_string(&requests[0].messages).unwrap();
    assert!(first_live.contains("marked"), "{first_live}");
    assert!(!first_live.contains("tool.outcome_unknown"));
}

#[tokio::test]
async fn a_bad_host_tool_is_refused_at_build_with_a_code() {
    let dir = TempDir::new().unwrap();
    let noop = |name: &str, schema: Value| {
        HostTool::new(name, "x", schema, |_call| async {
            Ok(HostToolReply::text(""))
        })
    };
    for (tool, why) in [
        (noop("Chat.Search", schema()), "bad name"),
        (
            noop("chat.search", json!({"type": "string"})),
            "not an object schema",
        ),
    ] {
        let err = builder(dir.path(), silent())
            .host_tool(tool)
            .build()
            .unwrap_err();
        assert_eq!(err.code, "tool.id_invalid", "{why}");
    }
    let twice = builder(dir.path(), silent())
        .host_tool(noop("chat.search", schema()))
        .host_tool(noop("chat.search", schema()))
        .build()
        .unwrap_err();
    assert_eq!(twice.code, "tool.id_invalid");
    // A profile that lists a host tool no one registered cannot start its agent.
    let runtime = runtime(dir.path(), silent(), vec![]).await;
    runtime
        .save_profile(profile(&["chat.missing"], json!({})))
        .await
        .unwrap();
    let run = runtime.start_run(start()).await;
    let failed = match run {
        Err(err) => err.code,
        Ok(run) => {
            let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
            assert_eq!(run.status, AgentRunStatus::Failed);
            let journal = journal(&runtime, run.id.as_str()).await;
            of_type(&journal, "run_failed")[0].payload["code"]
                .as_str()
                .unwrap()
                .to_owned()
        }
    };
    assert_eq!(failed, "agent.tool_unavailable");
}

#[tokio::test]
async fn a_long_result_is_kept_in_a_run_file_and_the_agent_reads_its_head_and_path() {
    let dir = TempDir::new().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let provider = caller(vec![("chat_dump", json!({}))], None, Arc::clone(&seen));
    let text: String = (0..2_000).map(|n| format!("line {n:05}\n")).collect();
    let full = text.clone();
    let dump = HostTool::new("chat.dump", "The whole chat.", schema(), move |_call| {
        let text = full.clone();
        async move { Ok(HostToolReply::text(text)) }
    })
    .reads_only()
    .max_inline_result_bytes(1_000);
    let runtime = runtime(dir.path(), provider, vec![dump]).await;
    let run = start_librarian(&runtime, profile(&["chat.dump"], json!({}))).await;
    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);
    let journal = journal(&runtime, run.id.as_str()).await;
    let written = of_type(&journal, "workspace_file_written");
    let path = written[0].payload["path"].as_str().unwrap().to_owned();
    assert!(
        path.starts_with("scratch/tool-results/chat-dump-"),
        "{path}"
    );
    let stored = runtime
        .read_workspace_file(run.id.as_str(), &path)
        .await
        .unwrap();
    assert_eq!(stored.text, text);
    // The agent read the head, cut at a line, and where the rest is.
    let second = serde_json::to_string(&seen.lock().unwrap()[1].messages).unwrap();
    assert!(second.contains("line 00000"), "{second}");
    assert!(!second.contains("line 01999"), "{second}");
    assert!(
        second.contains(&format!(
            "[The result goes on: {} bytes in all, kept in `{path}`. Read the rest from there.]",
            text.len()
        )),
        "{second}"
    );
    tt_runtime_leak_free(&second);
}

/// A profile's `limits.maxInlineToolResultBytes` caps every outside tool's own limit: a
/// result within the tool's 16 KiB but over the profile's 1,000 bytes goes to a run file; the
/// same result under a profile without the limit is read inline.
#[tokio::test]
async fn the_profile_caps_the_inline_limit_of_outside_tools() {
    let text: String = (0..300).map(|n| format!("line {n:05}\n")).collect();
    for (profile_limit, kept_in_a_file) in [(Some(1_000), true), (None, false)] {
        let dir = TempDir::new().unwrap();
        let provider = caller(
            vec![("chat_dump", json!({}))],
            None,
            Arc::new(Mutex::new(Vec::new())),
        );
        let full = text.clone();
        let dump = HostTool::new("chat.dump", "The whole chat.", schema(), move |_call| {
            let text = full.clone();
            async move { Ok(HostToolReply::text(text)) }
        })
        .reads_only();
        let runtime = runtime(dir.path(), provider, vec![dump]).await;
        let mut librarian = profile(&["chat.dump"], json!({}));
        librarian.limits.max_inline_tool_result_bytes = profile_limit;
        let run = start_librarian(&runtime, librarian).await;
        let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
        assert_eq!(run.status, AgentRunStatus::Completed);
        let journal = journal(&runtime, run.id.as_str()).await;
        let kept = of_type(&journal, "workspace_file_written")
            .iter()
            .any(|event| {
                event.payload["path"]
                    .as_str()
                    .unwrap()
                    .contains("tool-results/")
            });
        assert_eq!(kept, kept_in_a_file, "{profile_limit:?}");
    }
}

/// No runtime ids or physical paths in what the agent read of the tool (the file's logical
/// path is the agent's own).
fn tt_runtime_leak_free(text: &str) {
    assert!(!text.contains("run_"), "{text}");
    assert!(!text.contains("/tmp"), "{text}");
}

#[tokio::test]
async fn a_call_that_asks_first_and_was_in_flight_is_asked_again_saying_it_may_have_run() {
    let dir = TempDir::new().unwrap();
    let model = || {
        caller(
            vec![("chat_read", json!({}))],
            Some(("chat_post", json!({}))),
            Arc::new(Mutex::new(Vec::new())),
        )
    };
    let crashed = runtime(
        dir.path(),
        model(),
        vec![
            counting("chat.read", Arc::new(AtomicUsize::new(0)), "read"),
            hanging("chat.post", Arc::new(AtomicUsize::new(0))).ask_first(),
        ],
    )
    .await;
    let run = start_librarian(&crashed, profile(&["chat.read", "chat.post"], json!({}))).await;
    let run_id = run.id.to_string();
    wait_for_event(&crashed, &run_id, "tool_approval_requested").await;
    let pending = crashed.pending_approvals(&run_id).await.unwrap();
    approve(&crashed, &run_id, &pending[0].approval_id).await;
    let mut started = 0;
    while started < 2 {
        started = of_type(&journal(&crashed, &run_id).await, "tool_call_started").len();
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let after_crash = TempDir::new().unwrap();
    copy_live_data_dir(dir.path(), after_crash.path());

    let posted = Arc::new(AtomicUsize::new(0));
    let restarted = runtime(
        after_crash.path(),
        model(),
        vec![
            counting("chat.read", Arc::new(AtomicUsize::new(0)), "read"),
            counting("chat.post", Arc::clone(&posted), "posted").ask_first(),
        ],
    )
    .await;
    restarted.resume_run(&run_id).await.unwrap();
    // The person is asked again, and told the call may already have run.
    let mut asked = Vec::new();
    for _ in 0..2_000 {
        asked = restarted.pending_approvals(&run_id).await.unwrap();
        if !asked.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(asked.len(), 1, "the resumed call was not asked again");
    assert!(
        asked[0].reason.contains("may already have run"),
        "{}",
        asked[0].reason
    );
    assert_eq!(posted.load(Ordering::SeqCst), 0);
    approve(&restarted, &run_id, &asked[0].approval_id).await;
    let run = restarted.wait_for_run(&run_id).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);
    assert_eq!(posted.load(Ordering::SeqCst), 1);
    restarted.shutdown().await.unwrap();
    crashed.shutdown().await.unwrap();
}
