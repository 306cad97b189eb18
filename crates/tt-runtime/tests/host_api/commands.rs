//! The host command table (docs/host-api.md, "The host command table"): every command runs by
//! name with JSON and answers bad input with a code; a whole run driven through commands alone,
//! its host tool answered by the host; host-answered tools that time out, are cancelled, or
//! get an answer to nothing.

use std::sync::Arc;

use serde_json::{Value, json};
use tempfile::TempDir;
use tt_runtime::{
    AgentRuntime, FnProvider, HOST_COMMANDS, ModelProvider, ModelReply, host_commands,
};

use super::{command, journaled, librarian_profile, refused, start_by_command, transcript_runtime};

fn librarian(host_tools: &[&str]) -> Value {
    librarian_profile(host_tools)
}

/// Searches the chat in round 1, writes what it read in round 2, commits and finishes.
fn searcher() -> Arc<dyn ModelProvider> {
    Arc::new(FnProvider::new(|request| {
        Ok(match request.round {
            1 => ModelReply::tool_call("chat_search", json!({"query": "lighthouse"})),
            2 => {
                let read = serde_json::to_string(&request.messages).unwrap_or_default();
                let found = if read.contains("keeper") {
                    "keeper"
                } else {
                    "nothing"
                };
                ModelReply::tool_call(
                    "workspace_write_file",
                    json!({"path": "output/main.md", "content": format!("Found: {found}.\n")}),
                )
            }
            3 => ModelReply::tool_call("workspace_commit", json!({})),
            _ => ModelReply::tool_call("workspace_finish", json!({})),
        })
    }))
}

/// A runtime on the searching model, with a new data dir the test keeps.
fn runtime() -> (TempDir, AgentRuntime) {
    let dir = TempDir::new().unwrap();
    let runtime = transcript_runtime(dir.path(), searcher());
    (dir, runtime)
}

/// The code `answer_agent_host_tool_call` refuses an answer `text` to `call` with (`None`:
/// an answer with neither a result nor an error).
async fn answer_refused(
    runtime: &AgentRuntime,
    run_id: &str,
    call: &tt_runtime::PendingHostToolCall,
    text: Option<&str>,
) -> String {
    let mut answer = json!({"runId": run_id, "callKey": call.call_key});
    if let Some(text) = text {
        answer["text"] = json!(text);
    }
    refused(runtime, "answer_agent_host_tool_call", answer).await
}

/// Waits for the run through `wait_agent_run`; it must end `status`.
async fn waits_until(runtime: &AgentRuntime, run_id: &str, status: &str) {
    let ended = command(runtime, "wait_agent_run", json!({"runId": run_id})).await;
    assert_eq!(ended["status"], status);
}

/// The run's `output/main.md`, read through `read_agent_workspace_file`.
async fn main_md(runtime: &AgentRuntime, run_id: &str) -> Value {
    let request = json!({"runId": run_id, "path": "output/main.md"});
    command(runtime, "read_agent_workspace_file", request).await["text"].take()
}

fn chat_search(timeout_ms: u64) -> Value {
    json!({
        "name": "chat.search",
        "description": "Finds messages of this chat that mention a phrase.",
        "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}},
        "readsOnly": true,
        "answerTimeoutMs": timeout_ms,
    })
}

/// Declares `chat.search` (answered by the host within `timeout_ms`), starts a librarian run
/// through commands and returns its id with the call that waits for the host.
async fn start_with_a_waiting_call(
    runtime: &AgentRuntime,
    timeout_ms: u64,
) -> (String, tt_runtime::PendingHostToolCall) {
    command(runtime, "register_agent_host_tool", chat_search(timeout_ms)).await;
    command(runtime, "save_agent_profile", librarian(&["chat.search"])).await;
    let mut waiting = runtime.host_tool_call_feed().unwrap();
    let run_id = start_by_command(
        runtime,
        json!({"stableChatId": "library-chat", "userInput": "Find it.", "profileId": "librarian"}),
    )
    .await;
    let call = waiting.recv().await.unwrap();
    assert_eq!(call.run_id, run_id);
    (run_id, call)
}

#[test]
fn the_table_lists_each_command_once_in_snake_case() {
    let mut names = HOST_COMMANDS.to_vec();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), HOST_COMMANDS.len());
    for name in HOST_COMMANDS {
        assert!(
            name.chars().all(|c| c.is_ascii_lowercase() || c == '_') && name.contains("_agent"),
            "{name}"
        );
    }
    for seed_name in [
        "start_agent_run",
        "cancel_agent_run",
        "read_agent_run_events",
        "read_agent_workspace_file",
        "approve_agent_tool_call",
        "list_agent_runs",
        "resolve_agent_chat_commit",
        "resolve_agent_prompt_assembly",
        "read_agent_prompt_assembly_request",
        "resolve_agent_persistent_state_metadata_update",
    ] {
        assert!(HOST_COMMANDS.contains(&seed_name), "{seed_name}");
    }
}

/// Every command, given an empty request, a request of the wrong shape, or a run that does
/// not exist, answers (a command without input) or refuses with a code; none panics.
#[tokio::test]
async fn every_command_answers_bad_input_with_a_code() {
    let (_dir, runtime) = runtime();
    for name in HOST_COMMANDS {
        if let Err(error) = runtime.execute_command(name, json!({})).await {
            assert!(error.code.contains('.'), "{name}: {error}");
        }
        let code = refused(&runtime, name, json!([1, 2])).await;
        assert_eq!(code, "host.request_invalid", "{name}");
        let missing = json!({"runId": "run_missing", "taskId": "task_missing",
            "invocationId": "inv_missing", "path": "output/x.md", "reference": "blobs/x",
            "approvalId": "ap_missing", "commitId": "c", "updateId": "u", "assemblyId": "a",
            "callKey": "k", "text": "x"});
        if let Err(error) = runtime.execute_command(name, missing).await {
            assert!(error.code.contains('.'), "{name}: {error}");
        }
    }
    assert_eq!(
        refused(&runtime, "start_the_run", json!({})).await,
        "host.command_unknown"
    );
    assert_eq!(
        refused(
            &runtime,
            "read_agent_run",
            json!({"runId": "r", "extra": 1})
        )
        .await,
        "host.request_invalid"
    );
    assert_eq!(
        refused(&runtime, "read_agent_run", json!({"runId": "run_missing"})).await,
        "agent.not_found"
    );
    // Commands without input take `{}` and `null` alike.
    assert_eq!(
        command(&runtime, "list_agent_host_tools", Value::Null).await,
        json!([])
    );
    runtime.shutdown().await.unwrap();
}

/// A host that speaks only JSON (another language, a webview) drives a whole run: it
/// declares its tool, saves the profile, starts the run, answers the tool's call when it
/// waits, and reads the end and the journal, all through `execute_command`.
#[tokio::test]
async fn a_run_driven_through_commands_alone_with_a_host_answered_tool() {
    let (_dir, runtime) = runtime();
    let tool = command(&runtime, "register_agent_host_tool", chat_search(60_000)).await;
    assert_eq!(tool["id"], "host/chat.search");
    assert_eq!(tool["facts"]["sideEffect"], "reads_only");
    command(&runtime, "save_agent_profile", librarian(&["chat.search"])).await;
    let mut waiting = runtime.host_tool_call_feed().unwrap();
    let run_id = start_by_command(
        &runtime,
        json!({"stableChatId": "library-chat", "userInput": "Find the lighthouse note.",
               "profileId": "librarian"}),
    )
    .await;

    let call = waiting.recv().await.unwrap();
    assert_eq!(call.run_id, run_id);
    assert_eq!(call.tool, "chat.search");
    assert_eq!(call.arguments["query"], "lighthouse");
    let listed = command(
        &runtime,
        "list_agent_host_tool_calls",
        json!({"runId": run_id}),
    )
    .await;
    assert_eq!(listed[0]["callKey"], call.call_key.as_str());
    let pending = command(
        &runtime,
        "list_agent_pending_requests",
        json!({"runId": run_id}),
    )
    .await;
    assert_eq!(
        pending["hostToolCalls"][0]["callKey"],
        call.call_key.as_str()
    );
    command(
        &runtime,
        "answer_agent_host_tool_call",
        json!({"runId": run_id, "callKey": call.call_key, "structured": {"hits": ["the keeper"]}}),
    )
    .await;
    // Answered once: a second answer finds nothing waiting.
    let again = refused(
        &runtime,
        "answer_agent_host_tool_call",
        json!({"runId": run_id, "callKey": call.call_key, "text": "twice"}),
    )
    .await;
    assert_eq!(again, "host.tool_call_not_pending");

    waits_until(&runtime, &run_id, "completed").await;
    let outcome = command(&runtime, "read_agent_run_result", json!({"runId": run_id})).await;
    assert_eq!(outcome["run"]["status"], "completed");
    assert_eq!(main_md(&runtime, &run_id).await, "Found: keeper.\n");
    let completed = &journaled(&runtime, &run_id, "tool_call_completed").await;
    assert_eq!(completed["payload"]["name"], "host/chat.search");
    // The typed function is the same command.
    let listed = host_commands::list_agent_runs(&runtime, tt_runtime::ListRunsRequest::default())
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    runtime.shutdown().await.unwrap();
}

/// A call nobody answers in time reaches the agent as `tool.host_no_answer` (it may have
/// run), and the run goes on; an answer after that finds nothing waiting.
#[tokio::test]
async fn a_host_answered_call_without_an_answer_times_out_and_the_run_goes_on() {
    let (_dir, runtime) = runtime();
    let (run_id, call) = start_with_a_waiting_call(&runtime, 20).await;
    waits_until(&runtime, &run_id, "completed").await;
    let failed = &journaled(&runtime, &run_id, "tool_call_failed").await;
    assert_eq!(
        failed["payload"]["errorCode"], "tool.host_no_answer",
        "{failed}"
    );
    assert_eq!(main_md(&runtime, &run_id).await, "Found: nothing.\n");
    let late = answer_refused(&runtime, &run_id, &call, Some("late")).await;
    assert_eq!(late, "host.tool_call_not_pending");
    runtime.shutdown().await.unwrap();
}

/// Cancelling the run ends the wait: the call is no longer listed, and an answer to it finds
/// nothing waiting. An answer with neither a result nor an error is refused.
#[tokio::test]
async fn cancelling_a_run_withdraws_its_waiting_host_calls() {
    let (_dir, runtime) = runtime();
    let (run_id, call) = start_with_a_waiting_call(&runtime, 600_000).await;
    let empty = answer_refused(&runtime, &run_id, &call, None).await;
    assert_eq!(empty, "host.request_invalid");
    command(&runtime, "cancel_agent_run", json!({"runId": run_id})).await;
    waits_until(&runtime, &run_id, "cancelled").await;
    let listed = command(
        &runtime,
        "list_agent_host_tool_calls",
        json!({"runId": run_id}),
    )
    .await;
    assert_eq!(listed, json!([]));
    let code = answer_refused(&runtime, &run_id, &call, Some("too late")).await;
    assert_eq!(code, "host.tool_call_not_pending");
    runtime.shutdown().await.unwrap();
}
