//! An unknown run is an error everywhere: every call that takes a run id, on the runtime and on
//! a run's handle, answers a run that does not exist with a coded error (`agent.not_found`, or
//! the not-pending code of the request an answer names), never an empty list, `None` or `Ok`.

use std::future::Future;
use std::pin::Pin;

use futures_util::StreamExt;
use serde_json::json;
use tempfile::TempDir;
use tt_runtime::{
    ApprovalDecision, ForkPoint, ForkRunRequest, HostError, ListRunsRequest, ReadEventsRequest,
    ReadPromptAssemblyRequest, ResolveChatCommitRequest,
    ResolvePersistentStateMetadataUpdateRequest, ResolvePromptAssemblyRequest,
    ResolveToolApprovalRequest, SubmitGuidanceRequest,
};

use super::{committing_writer, runtime};

const UNKNOWN: &str = "run_00000000000000000000000000000404";

type Call<'a> = Pin<Box<dyn Future<Output = Result<(), HostError>> + 'a>>;

/// `Ok(())` when the call succeeded, whatever it answered.
fn call<'a, T: 'a>(future: impl Future<Output = Result<T, HostError>> + 'a) -> Call<'a> {
    Box::pin(async move { future.await.map(|_| ()) })
}

/// A call that answers at once.
fn now<'a, T: 'a>(answer: Result<T, HostError>) -> Call<'a> {
    Box::pin(std::future::ready(answer.map(|_| ())))
}

fn fork_request() -> ForkRunRequest {
    ForkRunRequest {
        at: ForkPoint::Seq { seq: 1 },
        changes: Default::default(),
    }
}

#[tokio::test]
async fn every_call_that_takes_a_run_id_refuses_an_unknown_run_with_a_code() {
    let dir = TempDir::new().unwrap();
    let runtime = runtime(dir.path(), committing_writer());
    let handle = runtime.run(UNKNOWN);
    let approve = || ResolveToolApprovalRequest::new(ApprovalDecision::Approve);
    let first_event = |mut events: tt_runtime::EventSubscription| {
        Box::pin(async move { events.next().await.map(|_| ()) }) as Call<'_>
    };
    let first_typed = |mut events: tt_runtime::RunEvents| {
        Box::pin(async move { events.next().await.map(|_| ()) }) as Call<'_>
    };
    let first_streamed = |events: tt_runtime::RunEvents| {
        Box::pin(async move {
            let mut events = events;
            match StreamExt::next(&mut events).await {
                Some(item) => item.map(|_| ()),
                None => Ok(()),
            }
        }) as Call<'_>
    };
    let calls: Vec<(&str, Call<'_>)> = vec![
        ("get_run", call(runtime.get_run(UNKNOWN))),
        ("wait_for_run", call(runtime.wait_for_run(UNKNOWN))),
        ("cancel_run", call(runtime.cancel_run(UNKNOWN))),
        ("abandon_run", call(runtime.abandon_run(UNKNOWN))),
        ("resume_run", call(runtime.resume_run(UNKNOWN))),
        ("resume", call(runtime.resume(UNKNOWN))),
        ("fork_run", call(runtime.fork_run(UNKNOWN, fork_request()))),
        ("fork", call(runtime.fork(UNKNOWN, fork_request()))),
        (
            "submit_guidance",
            call(runtime.submit_guidance(
                UNKNOWN,
                SubmitGuidanceRequest {
                    text: "Hello.".to_owned(),
                    client_guidance_id: None,
                },
            )),
        ),
        ("cancel_task", call(runtime.cancel_task(UNKNOWN, "task_1"))),
        (
            "read_events",
            call(runtime.read_events(ReadEventsRequest {
                run_id: UNKNOWN.to_owned(),
                ..ReadEventsRequest::default()
            })),
        ),
        ("check_run", call(runtime.check_run(UNKNOWN))),
        (
            "unrecorded_failure",
            call(runtime.unrecorded_failure(UNKNOWN)),
        ),
        ("usage", call(runtime.usage(UNKNOWN))),
        (
            "timeline_projection",
            call(runtime.timeline_projection(UNKNOWN)),
        ),
        (
            "subscribe",
            first_event(runtime.subscribe(UNKNOWN, 0, None)),
        ),
        ("pending_commits", call(runtime.pending_commits(UNKNOWN))),
        ("pending_requests", call(runtime.pending_requests(UNKNOWN))),
        (
            "pending_approvals",
            call(runtime.pending_approvals(UNKNOWN)),
        ),
        (
            "resolve_tool_approval",
            call(runtime.resolve_tool_approval(UNKNOWN, "approval_1", approve())),
        ),
        (
            "read_record",
            call(runtime.read_record(UNKNOWN, "run.json")),
        ),
        (
            "agent_conversation",
            call(runtime.agent_conversation(UNKNOWN, "inv_root")),
        ),
        (
            "read_workspace_file",
            call(runtime.read_workspace_file(UNKNOWN, "output/main.md")),
        ),
        (
            "list_workspace_files",
            call(runtime.list_workspace_files(UNKNOWN)),
        ),
        ("export_otel", call(runtime.export_otel(UNKNOWN))),
        ("run_result", call(runtime.run_result(UNKNOWN))),
        (
            "resolve_chat_commit",
            now(runtime.resolve_chat_commit(ResolveChatCommitRequest {
                run_id: UNKNOWN.to_owned(),
                commit_id: "commit_1".to_owned(),
                message_id: Some("1".to_owned()),
                error: None,
            })),
        ),
        (
            "resolve_agent_persistent_state_metadata_update",
            now(runtime.resolve_agent_persistent_state_metadata_update(
                ResolvePersistentStateMetadataUpdateRequest {
                    run_id: UNKNOWN.to_owned(),
                    update_id: "update_1".to_owned(),
                    error: None,
                },
            )),
        ),
        (
            "read_prompt_assembly_request",
            now(
                runtime.read_prompt_assembly_request(ReadPromptAssemblyRequest {
                    run_id: UNKNOWN.to_owned(),
                    assembly_id: "assembly_1".to_owned(),
                }),
            ),
        ),
        (
            "resolve_prompt_assembly",
            now(runtime.resolve_prompt_assembly(prompt_answer())),
        ),
        // The handle's calls.
        ("handle.get", call(handle.get())),
        ("handle.wait", call(handle.wait())),
        ("handle.result", call(handle.result())),
        ("handle.cancel", call(handle.cancel())),
        ("handle.abandon", call(handle.abandon())),
        ("handle.resume", call(handle.resume())),
        ("handle.fork", call(handle.fork(fork_request()))),
        ("handle.cancel_task", call(handle.cancel_task("task_1"))),
        (
            "handle.submit_guidance",
            call(handle.submit_guidance("Hello.")),
        ),
        ("handle.events", first_typed(handle.events())),
        (
            "handle.events_after",
            first_streamed(handle.events_after(3)),
        ),
        ("handle.pending", call(handle.pending())),
        ("handle.pending_approvals", call(handle.pending_approvals())),
        ("handle.approve", call(handle.approve("approval_1"))),
        (
            "handle.approve_with_arguments",
            call(handle.approve_with_arguments("approval_1", json!({}))),
        ),
        ("handle.deny", call(handle.deny("approval_1", "No."))),
        (
            "handle.publish_commit",
            now(handle.publish_commit("commit_1", "1")),
        ),
        (
            "handle.refuse_commit",
            now(handle.refuse_commit("commit_1", "No.")),
        ),
        (
            "handle.answer_metadata_update",
            now(handle.answer_metadata_update("update_1", None)),
        ),
        (
            "handle.resolve_prompt_assembly",
            now(handle.resolve_prompt_assembly(prompt_answer())),
        ),
        ("handle.usage", call(handle.usage())),
        ("handle.timeline", call(handle.timeline())),
        ("handle.conversation", call(handle.conversation("inv_root"))),
        ("handle.check", call(handle.check())),
        ("handle.read_file", call(handle.read_file("output/main.md"))),
        ("handle.list_files", call(handle.list_files())),
        (
            "handle.read_events",
            call(handle.read_events(ReadEventsRequest::default())),
        ),
        ("handle.read_record", call(handle.read_record("run.json"))),
    ];
    let mut wrong = Vec::new();
    for (name, answer) in calls {
        // The answers to a host request name the request, which an unknown run never made:
        // they refuse it as not pending, at once, without reading the store.
        let expected = match name {
            "resolve_chat_commit" | "handle.publish_commit" | "handle.refuse_commit" => {
                "agent.chat_commit_not_pending"
            }
            "resolve_agent_persistent_state_metadata_update" | "handle.answer_metadata_update" => {
                "agent.persistent_state_metadata_update_not_pending"
            }
            "read_prompt_assembly_request"
            | "resolve_prompt_assembly"
            | "handle.resolve_prompt_assembly" => "agent.prompt_assembly_not_pending",
            _ => "agent.not_found",
        };
        match answer.await {
            Err(error) if error.code == expected => {}
            other => wrong.push(format!("{name}: {other:?}")),
        }
    }
    assert!(wrong.is_empty(), "not refused with their code: {wrong:#?}");
    // Nothing was created by asking.
    let runs = runtime.list_runs(ListRunsRequest::default()).await.unwrap();
    assert!(runs.is_empty(), "{runs:?}");
}

fn prompt_answer() -> ResolvePromptAssemblyRequest {
    ResolvePromptAssemblyRequest {
        run_id: UNKNOWN.to_owned(),
        assembly_id: "assembly_1".to_owned(),
        prompt_snapshot: Some(json!({"messages": []})),
        frozen_run_input_snapshot: None,
        generation_intent: None,
        assembly: None,
        settings: None,
        error: None,
    }
}
