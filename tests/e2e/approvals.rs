//! Human approval of tool calls on the userdata adapter (docs/host-api.md, "Approving tool
//! calls"): each decision, a denial the model reads, edited arguments checked before they run,
//! a sibling that finishes while another agent waits, cancel, a deadline and the profile's
//! timeout during a wait, and a process killed while waiting, resumed and asked again.

use serde_json::{Value, json};
use std::sync::Arc;
use tt_domain::approval::{ApprovalPolicy, ApprovalRule};
use tt_domain::model::{AgentModelRequest, ModelContentPart};
use tt_ports::ModelError;
use tt_runtime::{
    AgentRunEvent, AgentRunStatus, AgentRuntime, AgentRuntimeBuilder, CommitBridgeChoice,
    InvocationStatus, TaskStatus,
};
use tt_testkit::fakes::{FakeModel, responses};

use crate::delegation::{WRITERS_ROOM, all_events, helper_profile};
use crate::support::start_request;

fn runtime(dir: &std::path::Path, model: Arc<FakeModel>) -> AgentRuntime {
    AgentRuntimeBuilder::new()
        .data_dir(dir)
        .provider(model)
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap()
}

fn call(id: &str, name: &str, args: Value) -> tt_domain::model::AgentModelResponse {
    responses::tool_calls(vec![(id, name, args)])
}

/// The results the agent has read so far, by call id: (is error, text).
fn results(request: &AgentModelRequest) -> Vec<(String, bool, String)> {
    request
        .messages
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|part| match part {
            ModelContentPart::ToolResult { result } => Some((
                result.call_id.clone(),
                result.is_error,
                result.content.clone(),
            )),
            _ => None,
        })
        .collect()
}

fn done(request: &AgentModelRequest, id: &str) -> bool {
    results(request).iter().any(|(call, _, _)| call == id)
}

/// A lead that writes `output/main.md` (call `m`), publishes it and finishes; `first` is its
/// first call when given.
fn writing_lead(first: Option<(&'static str, Value)>) -> Arc<FakeModel> {
    FakeModel::new(move |request: &AgentModelRequest| {
        Ok(match &first {
            Some((id, args)) if !done(request, id) => {
                call(id, "workspace_write_file", args.clone())
            }
            _ if done(request, "c") => call("f", "workspace_finish", json!({})),
            _ if done(request, "m") => call("c", "workspace_commit", json!({})),
            _ => call(
                "m",
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "Done."}),
            ),
        })
    })
}

fn policy(tool: &str, rule: ApprovalRule) -> ApprovalPolicy {
    [(tool.to_owned(), rule)].into_iter().collect()
}

/// The writers' room lead as `lead`, with `policy`.
async fn install_lead(runtime: &AgentRuntime, policy: ApprovalPolicy, timeout_ms: Option<u64>) {
    let mut lead: tt_runtime::AgentProfileDefinition =
        serde_json::from_str(WRITERS_ROOM[0]).unwrap();
    lead.id = tt_domain::ids::ProfileId::parse("lead").unwrap();
    lead.tools.approval = policy;
    lead.tools.approval_timeout_ms = timeout_ms;
    runtime.save_profile(lead).await.unwrap();
}

async fn start(runtime: &AgentRuntime) -> String {
    let mut request = start_request();
    request.profile_id = Some("lead".into());
    runtime.start_run(request).await.unwrap().id.to_string()
}

/// Follows the run until an event of `event_type` arrives.
async fn wait_for(runtime: &AgentRuntime, run_id: &str, event_type: &str) -> AgentRunEvent {
    let mut events = runtime.subscribe(run_id, 0, None);
    while let Some(event) = events.next().await.unwrap() {
        if event.event_type == event_type {
            return event;
        }
    }
    panic!("the run ended without `{event_type}`");
}

fn of_type<'e>(events: &'e [AgentRunEvent], event_type: &str) -> Vec<&'e AgentRunEvent> {
    events
        .iter()
        .filter(|e| e.event_type == event_type)
        .collect()
}

async fn file(runtime: &AgentRuntime, run_id: &str, path: &str) -> Option<String> {
    runtime
        .read_workspace_file(run_id, path)
        .await
        .ok()
        .map(|file| file.text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_call_runs_once_and_a_second_answer_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let model = writing_lead(None);
    let runtime = runtime(dir.path(), model.clone());
    install_lead(
        &runtime,
        policy("workspace.write_file", ApprovalRule::Always),
        None,
    )
    .await;
    let run_id = start(&runtime).await;
    let requested = wait_for(&runtime, &run_id, "tool_approval_requested").await;
    let approval_id = requested.payload["approvalId"].as_str().unwrap().to_owned();
    assert_eq!(requested.payload["tool"], "workspace.write_file");
    assert_eq!(
        requested.payload["reason"],
        "tools.approval.workspace.write_file is always"
    );

    // Only this agent waits: the run says so, and the call has not started.
    let handle = runtime.run(&run_id);
    let pending = handle.pending().await.unwrap().approvals;
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].approval_id, approval_id);
    assert_eq!(pending[0].arguments["content"], "Done.");
    assert_eq!(runtime.pending_approvals(&run_id).await.unwrap(), pending);
    assert_eq!(
        runtime.get_run(&run_id).await.unwrap().status,
        AgentRunStatus::AwaitingApproval
    );
    let graph = runtime.timeline_projection(&run_id).await.unwrap();
    assert_eq!(
        graph.invocations[0].status,
        InvocationStatus::AwaitingApproval
    );
    assert_eq!(model.call_count(), 1);

    let receipt = handle.approve(&approval_id).await.unwrap();
    assert_eq!(receipt.decision, "approve");
    assert!(!receipt.already_resolved);
    let again = handle.deny(&approval_id, "changed my mind").await.unwrap();
    assert!(again.already_resolved);
    assert_eq!(again.decision, "approve");
    let ended = runtime.wait_for_run(&run_id).await.unwrap();
    assert_eq!(ended.status, AgentRunStatus::Completed);

    let events = all_events(&runtime, &run_id).await;
    let resolved = of_type(&events, "tool_approval_resolved");
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0].payload["decidedBy"], "host");
    assert_eq!(resolved[0].payload["decision"], "approve");
    assert_eq!(of_type(&events, "tool_call_started").len(), 3);
    assert_eq!(
        file(&runtime, &run_id, "output/main.md").await.unwrap(),
        "Done."
    );
    let unknown = handle.approve("apr_0000000000000000").await.unwrap_err();
    assert_eq!(unknown.code, "agent.run_not_running");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_call_does_not_run_and_the_model_reads_the_persons_message() {
    let dir = tempfile::tempdir().unwrap();
    let model = writing_lead(Some((
        "n",
        json!({"path": "scratch/notes.md", "content": "secret"}),
    )));
    let runtime = runtime(dir.path(), model.clone());
    let outside_output = ApprovalRule::Outside(vec!["output".into()]);
    install_lead(&runtime, policy("writes", outside_output), None).await;
    let run_id = start(&runtime).await;
    let requested = wait_for(&runtime, &run_id, "tool_approval_requested").await;
    let approval_id = requested.payload["approvalId"].as_str().unwrap();
    runtime
        .resolve_tool_approval(
            &run_id,
            approval_id,
            tt_runtime::ResolveToolApprovalRequest::new(tt_runtime::ApprovalDecision::Deny {
                message: Some("Keep notes out of this.".into()),
            })
            .decided_by("alice"),
        )
        .await
        .unwrap();
    let ended = runtime.wait_for_run(&run_id).await.unwrap();
    assert_eq!(ended.status, AgentRunStatus::Completed);

    let second = &model.requests()[1];
    let denied = results(second);
    assert_eq!(
        denied,
        vec![(
            "n".to_owned(),
            true,
            "The user declined this call: Keep notes out of this.".to_owned()
        )]
    );
    assert_eq!(file(&runtime, &run_id, "scratch/notes.md").await, None);
    let events = all_events(&runtime, &run_id).await;
    let failed = of_type(&events, "tool_call_failed");
    assert_eq!(failed[0].payload["errorCode"], "agent.tool_call_denied");
    assert_eq!(
        of_type(&events, "tool_approval_resolved")[0].payload["decidedBy"],
        "alice"
    );
    // Writes inside `output/` and the commit of `output/main.md` did not ask.
    assert_eq!(of_type(&events, "tool_approval_requested").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edited_arguments_are_checked_before_they_run() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(dir.path(), writing_lead(None));
    install_lead(
        &runtime,
        policy("workspace.write_file", ApprovalRule::Always),
        None,
    )
    .await;
    let run_id = start(&runtime).await;
    let requested = wait_for(&runtime, &run_id, "tool_approval_requested").await;
    let approval_id = requested.payload["approvalId"].as_str().unwrap();
    let handle = runtime.run(&run_id);
    for (bad, why) in [
        (json!({"path": 3, "content": "x"}), "`path` must be string"),
        (json!({"path": "output/main.md"}), "lack `content`"),
        (
            json!({"path": "output/main.md", "content": "x", "color": "red"}),
            "no argument `color`",
        ),
        (json!("output/main.md"), "must be a JSON object"),
    ] {
        let refused = handle
            .approve_with_arguments(approval_id, bad)
            .await
            .unwrap_err();
        assert_eq!(refused.code, "agent.approval_invalid");
        assert!(refused.message.contains(why), "{}", refused.message);
    }
    // Still waiting, still answerable.
    assert_eq!(handle.pending().await.unwrap().approvals.len(), 1);
    let edited = json!({"path": "output/main.md", "content": "Edited by a person."});
    let receipt = handle
        .approve_with_arguments(approval_id, edited.clone())
        .await
        .unwrap();
    assert_eq!(receipt.decision, "approve_with_arguments");
    runtime.wait_for_run(&run_id).await.unwrap();
    assert_eq!(
        file(&runtime, &run_id, "output/main.md").await.unwrap(),
        "Edited by a person."
    );
    let events = all_events(&runtime, &run_id).await;
    assert_eq!(
        of_type(&events, "tool_approval_resolved")[0].payload["arguments"],
        edited
    );
}

/// A lead that delegates to `careful` (which asks before it writes) and `helper` (which does
/// not), waits for both, then writes, publishes and finishes.
fn delegating_lead(careful_budget: Option<u64>) -> Arc<FakeModel> {
    FakeModel::new(move |request: &AgentModelRequest| {
        let mut careful = json!({"agentId": "careful", "task": {"objective": "Part a."}});
        if let Some(seconds) = careful_budget {
            careful["timeoutSeconds"] = json!(seconds);
        }
        Ok(match (request.agent_profile_id.as_str(), request.round) {
            ("lead", 1) => responses::tool_calls(vec![
                ("d1", "agent_delegate", careful),
                (
                    "d2",
                    "agent_delegate",
                    json!({"agentId": "helper", "task": {"objective": "Part b."}}),
                ),
                (
                    "a",
                    "agent_await",
                    json!({"mode": "allCompleted", "timeoutMs": 300000}),
                ),
            ]),
            ("lead", _) if done(request, "c") => call("f", "workspace_finish", json!({})),
            ("lead", _) if done(request, "m") => call("c", "workspace_commit", json!({})),
            ("lead", _) if done(request, "a") => call(
                "m",
                "workspace_write_file",
                json!({"path": "output/main.md", "content": "Done."}),
            ),
            (_, _) if done(request, "n") => call(
                "r",
                "task_return",
                json!({"status": "completed", "summary": "Notes written."}),
            ),
            (_, _) => call(
                "n",
                "workspace_write_file",
                json!({"path": format!("scratch/{}.md", request.agent_profile_id), "content": "notes"}),
            ),
        })
    })
}

async fn install_room(runtime: &AgentRuntime) {
    install_lead(runtime, ApprovalPolicy::new(), None).await;
    runtime.save_profile(helper_profile()).await.unwrap();
    let mut careful = helper_profile();
    careful.id = tt_domain::ids::ProfileId::parse("careful").unwrap();
    careful.tools.approval = policy("workspace.write_file", ApprovalRule::Always);
    runtime.save_profile(careful).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sibling_finishes_while_another_agent_waits() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(dir.path(), delegating_lead(None));
    install_room(&runtime).await;
    let run_id = start(&runtime).await;
    let requested = wait_for(&runtime, &run_id, "tool_approval_requested").await;
    // The free helper completes its task while `careful` waits: `careful` cannot move until the
    // call is answered, so the helper's completion (before or after the request was journaled,
    // the two race) is proof enough that one agent's wait holds up no other.
    wait_for(&runtime, &run_id, "agent_task_completed").await;
    assert_eq!(
        runtime
            .run(&run_id)
            .pending()
            .await
            .unwrap()
            .approvals
            .len(),
        1
    );
    // The run is not the one waiting: its foreground agent is awaiting its tasks.
    assert_ne!(
        runtime.get_run(&run_id).await.unwrap().status,
        AgentRunStatus::AwaitingApproval
    );
    runtime
        .run(&run_id)
        .approve(requested.payload["approvalId"].as_str().unwrap())
        .await
        .unwrap();
    let ended = runtime.wait_for_run(&run_id).await.unwrap();
    assert_eq!(ended.status, AgentRunStatus::Completed);
    assert_eq!(
        file(&runtime, &run_id, "scratch/careful.md").await.unwrap(),
        "notes"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_ends_a_waiting_agent_and_its_call_never_runs() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(dir.path(), delegating_lead(Some(1)));
    install_room(&runtime).await;
    let run_id = start(&runtime).await;
    let requested = wait_for(&runtime, &run_id, "tool_approval_requested").await;
    let cancelled = wait_for(&runtime, &run_id, "tool_approval_cancelled").await;
    assert_eq!(
        cancelled.payload["approvalId"],
        requested.payload["approvalId"]
    );
    assert_eq!(cancelled.payload["reason"], "agent_stopped");
    let ended = runtime.wait_for_run(&run_id).await.unwrap();
    assert_eq!(ended.status, AgentRunStatus::Completed);
    assert_eq!(file(&runtime, &run_id, "scratch/careful.md").await, None);
    let graph = runtime.timeline_projection(&run_id).await.unwrap();
    let careful = graph
        .delegation_edges
        .iter()
        .find(|edge| edge.target_profile_id.as_str() == "careful")
        .unwrap();
    assert_eq!(careful.status, TaskStatus::Cancelled);
    // A late answer finds nothing to answer.
    let late = runtime
        .run(&run_id)
        .approve(requested.payload["approvalId"].as_str().unwrap())
        .await
        .unwrap_err();
    assert_eq!(late.code, "agent.run_not_running");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_run_ends_a_wait_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(dir.path(), writing_lead(None));
    install_lead(
        &runtime,
        policy("workspace.write_file", ApprovalRule::Always),
        None,
    )
    .await;
    let run_id = start(&runtime).await;
    wait_for(&runtime, &run_id, "tool_approval_requested").await;
    runtime.cancel_run(&run_id).await.unwrap();
    let ended = runtime.wait_for_run(&run_id).await.unwrap();
    assert_eq!(ended.status, AgentRunStatus::Cancelled);
    let events = all_events(&runtime, &run_id).await;
    let cancelled = of_type(&events, "tool_approval_cancelled");
    assert_eq!(cancelled.len(), 1);
    assert_eq!(cancelled[0].payload["reason"], "run_cancelled");
    assert!(of_type(&events, "tool_call_started").is_empty());
    assert!(runtime.pending_approvals(&run_id).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_call_is_denied_at_the_profiles_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let model = writing_lead(Some((
        "n",
        json!({"path": "scratch/notes.md", "content": "secret"}),
    )));
    let runtime = runtime(dir.path(), model.clone());
    // Ask only for writes outside `output/`: the notes wait, the reply does not.
    let rule = ApprovalRule::Outside(vec!["output".into()]);
    install_lead(&runtime, policy("workspace.write_file", rule), Some(50)).await;
    let run_id = start(&runtime).await;
    let ended = runtime.wait_for_run(&run_id).await.unwrap();
    assert_eq!(ended.status, AgentRunStatus::Completed);
    let events = all_events(&runtime, &run_id).await;
    let resolved = of_type(&events, "tool_approval_resolved");
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0].payload["decidedBy"], "timeout");
    assert_eq!(resolved[0].payload["decision"], "deny");
    let second = &model.requests()[1];
    assert_eq!(
        results(second)[0].2,
        "No one approved this call in time, so it did not run. Go on without it, or try another way."
    );
    assert_eq!(file(&runtime, &run_id, "scratch/notes.md").await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_killed_while_waiting_asks_again_after_resume_and_runs_the_call_once() {
    let dir = tempfile::tempdir().unwrap();
    let first = runtime(dir.path(), writing_lead(None));
    install_lead(
        &first,
        policy("workspace.write_file", ApprovalRule::Always),
        None,
    )
    .await;
    let run_id = start(&first).await;
    let asked = wait_for(&first, &run_id, "tool_approval_requested").await;
    // The process dies here: its files are all that is left.
    let after_crash = tempfile::tempdir().unwrap();
    tt_testkit::store_tests::copy_live_data_dir(dir.path(), after_crash.path());

    let model = writing_lead(None);
    let second = runtime(after_crash.path(), model.clone());
    second.resume_run(&run_id).await.unwrap();
    let resumed = wait_for(&second, &run_id, "run_resumed").await;
    let asked_again = {
        let mut events = second.subscribe(&run_id, resumed.seq, None);
        loop {
            let event = events.next().await.unwrap().unwrap();
            if event.event_type == "tool_approval_requested" {
                break event;
            }
            assert_ne!(
                event.event_type, "tool_call_started",
                "ran without an answer"
            );
        }
    };
    assert_eq!(
        asked_again.payload["approvalId"],
        asked.payload["approvalId"]
    );
    // The model's answer was stored: nothing is asked of the model again before the answer.
    assert_eq!(model.call_count(), 0);
    let approval_id = asked.payload["approvalId"].as_str().unwrap();
    second.run(&run_id).approve(approval_id).await.unwrap();
    let ended = second.wait_for_run(&run_id).await.unwrap();
    assert_eq!(ended.status, AgentRunStatus::Completed);
    let events = all_events(&second, &run_id).await;
    let writes: Vec<_> = of_type(&events, "tool_call_started")
        .into_iter()
        .filter(|e| e.payload["callId"] == "m")
        .collect();
    assert_eq!(writes.len(), 1, "the approved write ran once");
    assert_eq!(of_type(&events, "workspace_file_written").len(), 1);
    first.cancel_run(&run_id).await.unwrap();
    first.shutdown().await.unwrap();
}

/// Who may stop a misuse: bad policies are refused when the profile is saved.
#[tokio::test]
async fn a_profile_with_an_unusable_policy_is_refused_with_a_code() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(
        dir.path(),
        FakeModel::new(|_: &AgentModelRequest| {
            Err(ModelError::Unavailable {
                code: tt_runtime::error_codes::MODEL_SCRIPT_EXHAUSTED,
                message: "unused".into(),
            })
        }),
    );
    let mut lead: tt_runtime::AgentProfileDefinition =
        serde_json::from_str(WRITERS_ROOM[0]).unwrap();
    lead.tools.approval = policy(
        "agent.delegate",
        ApprovalRule::Outside(vec!["output".into()]),
    );
    let refused = runtime.save_profile(lead).await.unwrap_err();
    assert_eq!(refused.code, "agent.profile_approval_invalid");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_budget_running_out_ends_a_wait_cleanly() {
    // `careful` asks before it writes; `helper` keeps spending 1,000 tokens a call until the
    // run's token budget is gone.
    let model = FakeModel::new(|request: &AgentModelRequest| {
        let mut response = match (request.agent_profile_id.as_str(), request.round) {
            ("lead", 1) => responses::tool_calls(vec![
                (
                    "d1",
                    "agent_delegate",
                    json!({"agentId": "careful", "task": {"objective": "Part a."}}),
                ),
                (
                    "d2",
                    "agent_delegate",
                    json!({"agentId": "helper", "task": {"objective": "Part b."}}),
                ),
                (
                    "a",
                    "agent_await",
                    json!({"mode": "allCompleted", "timeoutMs": 300000}),
                ),
            ]),
            ("careful", _) => call(
                "n",
                "workspace_write_file",
                json!({"path": "scratch/careful.md", "content": "notes"}),
            ),
            (_, round) => call(
                &format!("h{round}"),
                "workspace_write_file",
                json!({"path": "scratch/helper.md", "content": "more\n", "mode": "append"}),
            ),
        };
        response.usage = Some(tt_domain::model::ModelUsage::new(900, 100));
        Ok(response)
    });
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(dir.path(), model);
    install_room(&runtime).await;
    let mut lead: tt_runtime::AgentProfileDefinition =
        serde_json::from_str(WRITERS_ROOM[0]).unwrap();
    lead.id = tt_domain::ids::ProfileId::parse("lead").unwrap();
    lead.limits.max_total_tokens = Some(8_000);
    runtime.save_profile(lead).await.unwrap();
    let run_id = start(&runtime).await;
    let ended = runtime.wait_for_run(&run_id).await.unwrap();
    assert!(
        matches!(
            ended.status,
            AgentRunStatus::Failed | AgentRunStatus::PartialSuccess
        ),
        "{:?}",
        ended.status
    );
    let events = all_events(&runtime, &run_id).await;
    let asked = of_type(&events, "tool_approval_requested");
    let cancelled = of_type(&events, "tool_approval_cancelled");
    assert_eq!(asked.len(), 1);
    assert_eq!(cancelled.len(), 1, "the wait ended with the run");
    assert_eq!(
        cancelled[0].payload["approvalId"],
        asked[0].payload["approvalId"]
    );
    assert_eq!(file(&runtime, &run_id, "scratch/careful.md").await, None);
    let failed = of_type(&events, "run_failed");
    assert_eq!(failed[0].payload["code"], "agent.run_budget_exhausted");
}
