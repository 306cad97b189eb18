//! Invocation-scoped prompt assembly (`preset.mode = "ref"`) and per-invocation model bindings.

use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tt_domain::invocation::{InvocationKind, InvocationStatus};
use tt_domain::model::ModelRole;
use tt_domain::profile::{ModelMode, PresetMode, PresetRef};
use tt_domain::run::AgentRunStatus;
use tt_domain::task::TaskStatus;
use tt_ports::{HostBridgeError, RunDocument};
use tt_testkit::fakes::{FakeCommitBridge, FakeConnections, FakePromptBroker, default_assembly};

use crate::support::*;

/// Makes `profile`'s prompt the host's preset `name` (`preset.mode = "ref"`).
fn use_preset(profile: &mut tt_domain::profile::AgentProfileDefinition, name: &str) {
    profile.preset.mode = PresetMode::Ref;
    profile.preset.preset_ref = Some(PresetRef {
        api_id: "openai".into(),
        name: name.into(),
    });
}

fn ref_reviewer(id: &str) -> tt_domain::profile::AgentProfileDefinition {
    let mut profile = reviewer(id);
    use_preset(&mut profile, "reviewers");
    profile
}

/// A harness on [`happy_turns`] whose prompts `broker` assembles.
fn narrating(broker: Arc<FakePromptBroker>) -> Harness {
    harness_full(
        by_turn(happy_turns()),
        FakeCommitBridge::approving(),
        broker,
        Arc::new(tt_ports::NoConnections),
    )
}

fn writer_turns() -> Vec<(&'static str, Vec<tt_domain::model::AgentModelResponse>)> {
    vec![
        (
            "writer",
            delegate_wait_publish("critic", "Check the draft.", json!({}), "Final."),
        ),
        ("critic", vec![task_return("r", "Assembled and reviewed.")]),
    ]
}

fn setup(broker: Arc<FakePromptBroker>) -> Harness {
    let h = harness_full(
        by_agent(writer_turns()),
        FakeCommitBridge::approving(),
        broker,
        Arc::new(tt_ports::NoConnections),
    );
    h.put_profile(delegator("writer"));
    h.put_profile(ref_reviewer("critic"));
    h
}

/// The reviewer `critic` on connection `connection`, model `model`.
fn critic_on(connection: &str, model: &str) -> tt_domain::profile::AgentProfileDefinition {
    let mut critic = reviewer("critic");
    critic.model.mode = ModelMode::ConnectionRef;
    critic.model.connection_ref = Some(connection.into());
    critic.model.model_id = Some(model.into());
    critic
}

#[tokio::test]
async fn child_ref_profile_prompt_assembly_round_trips_through_the_broker() {
    let h = setup(FakePromptBroker::answering());
    let run = h.run_completed(request(Some("writer"))).await;
    let task = &h.store.tasks(&run.id)[0];
    assert_eq!(task.status, TaskStatus::Completed);

    // The broker got the whole request; the journal only the light event.
    let requests = h.broker.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(sent.kind, "tauritavern.agentPromptAssemblyRequest");
    assert_eq!(sent.scope.invocation_kind, "subagent");
    assert_eq!(sent.scope.exit_policy, "taskReturnRequired");
    assert_eq!(sent.scope.task_id.as_deref(), Some(task.id.as_str()));
    assert_eq!(
        sent.preset_ref,
        json!({"apiId": "openai", "name": "reviewers"})
    );
    assert!(sent.agent_task_prompt.starts_with("# Delegated Task"));
    assert!(sent.agent_system_prompt.contains("task_return"));
    assert_eq!(
        sent.frozen_run_input_snapshot["messages"][1]["content"],
        "Write a short scene."
    );
    assert_eq!(
        sent.required_agent_prompt_components,
        ["agentSystemPrompt", "agentTask"]
    );
    let requested = h.first_event(&run.id, "prompt_assembly_requested");
    assert_eq!(requested.payload["assemblyId"], sent.assembly_id.as_str());
    assert!(
        requested.payload.get("frozenRunInputSnapshot").is_none(),
        "the event stays light"
    );
    let completed = h.first_event(&run.id, "prompt_assembly_completed");
    assert_eq!(
        completed.payload["invocationId"],
        task.child_invocation_id.as_str()
    );

    // The documents are kept, and the assembled prompt is what the critic's model saw.
    let child = &task.child_invocation_id;
    let snapshot = h.document(
        &run.id,
        RunDocument::InvocationPromptSnapshot(child.clone()),
    );
    assert_eq!(snapshot, default_assembly(sent).prompt_snapshot);
    let assembly = h.document(
        &run.id,
        RunDocument::InvocationPromptAssembly(child.clone()),
    );
    assert_eq!(assembly["assemblyId"], sent.assembly_id.as_str());
    assert_eq!(
        assembly["frozenRunInputSnapshot"],
        sent.frozen_run_input_snapshot
    );
    let critic = last_request_of(&h, "critic");
    assert_eq!(critic.messages[0].role, ModelRole::System);
    assert!(
        critic
            .messages
            .iter()
            .any(|m| m.text_content() == "Write a short scene."),
        "the frozen conversation is included"
    );
    assert!(
        critic
            .messages
            .iter()
            .any(|m| m.text_content().starts_with("# Delegated Task"))
    );

    // Reference order: assembly, then binding, then context.
    let types = h.event_types(&run.id);
    let after = |t: &str| types.iter().rposition(|x| x == t).unwrap();
    assert!(after("prompt_assembly_completed") < after("agent_model_binding_resolved"));
    assert!(after("agent_model_binding_resolved") < after("context_assembled"));
}

#[tokio::test]
async fn a_host_error_fails_only_that_task() {
    let h = setup(FakePromptBroker::with(|_| {
        Err(HostBridgeError::Rejected("preset missing".into()))
    }));
    let run = h.run_completed(request(Some("writer"))).await;
    h.failed_task(&run.id, "agent.prompt_assembly_failed");
    let failed = h.first_event(&run.id, "prompt_assembly_failed");
    assert!(
        failed.payload["message"]
            .as_str()
            .unwrap()
            .contains("preset missing")
    );
    assert!(requests_of(&h, "critic").is_empty());
}

#[tokio::test]
async fn a_context_policy_mismatch_fails_the_task() {
    let h = setup(FakePromptBroker::with(|request| {
        let mut answer = default_assembly(request);
        answer.prompt_snapshot["contextPolicy"] =
            json!({"initialChatHistoryMessages": 3, "includeActivatedWorldInfo": true});
        Ok(answer)
    }));
    let run = h.run_to_end(request(Some("writer"))).await;
    let task = h.failed_task(&run.id, "agent.context_policy_mismatch");
    assert!(
        h.event_types(&run.id)
            .contains(&"prompt_assembly_failed".to_owned())
    );
    assert!(!h.has_document(
        &run.id,
        RunDocument::InvocationPromptSnapshot(task.child_invocation_id.clone())
    ));
}

#[tokio::test]
async fn an_assembly_without_the_task_prompt_is_refused() {
    let h = setup(FakePromptBroker::with(|request| {
        Ok(tt_ports::PromptAssemblyAnswer {
            prompt_snapshot: json!({"messages": [{"role": "system", "content": request.agent_system_prompt}], "contextPolicy": request.agent_context_policy}),
            assembly: json!(null),
            frozen_run_input_snapshot: None,
            generation_intent: None,
            settings: None,
        })
    }));
    let run = h.run_to_end(request(Some("writer"))).await;
    h.failed_task(&run.id, "agent.task_prompt_required");
}

#[tokio::test]
async fn run_cancel_aborts_a_pending_assembly() {
    let model = by_agent(vec![(
        "writer",
        vec![
            turn(vec![delegate("d1", "critic", "Check.")]),
            await_turn("a", "allCompleted"),
        ],
    )]);
    let broker = FakePromptBroker::hanging();
    let h = harness_full(
        model,
        FakeCommitBridge::approving(),
        broker,
        Arc::new(tt_ports::NoConnections),
    );
    h.put_profile(delegator("writer"));
    h.put_profile(ref_reviewer("critic"));
    let run = h.service.start_run(request(Some("writer"))).await.unwrap();
    tokio::time::timeout(Duration::from_secs(60), h.broker.wait_for_pending(1))
        .await
        .unwrap();
    let run = h.cancel_to_end(&run.id).await;
    assert_eq!(h.broker.pending_count(), 0, "the request was withdrawn");
    assert_eq!(h.store.tasks(&run.id)[0].status, TaskStatus::Cancelled);
    assert!(
        !h.event_types(&run.id)
            .contains(&"prompt_assembly_failed".to_owned())
    );
}

/// A writer on the run's connection delegates to a critic on the named `connection-b`; the
/// finished run, the critic's invocation and both connections.
async fn writer_and_critic_on_two_connections() -> (
    Harness,
    tt_domain::run::AgentRun,
    tt_domain::invocation::AgentInvocation,
    Arc<tt_testkit::fakes::FakeModel>,
    Arc<tt_testkit::fakes::FakeModel>,
) {
    let connection_a = by_agent(writer_turns());
    let connection_b = by_agent(writer_turns());
    let connections = FakeConnections::new().with("connection-b", connection_b.clone());
    let h = harness_full(
        connection_a.clone(),
        FakeCommitBridge::approving(),
        FakePromptBroker::answering(),
        Arc::new(connections),
    );
    h.put_profile(delegator("writer"));
    h.put_profile(critic_on("connection-b", "model-b"));
    let run = h.run_completed(request(Some("writer"))).await;
    let child = h.invocation_of_kind(&run.id, InvocationKind::Subagent);
    (h, run, child, connection_a, connection_b)
}

#[tokio::test]
async fn each_invocation_runs_on_its_own_connection() {
    let (h, run, child, connection_a, connection_b) = writer_and_critic_on_two_connections().await;
    assert_eq!(child.status, InvocationStatus::Completed);
    let a = connection_a.requests();
    let b = connection_b.requests();
    assert!(a.iter().all(|r| r.agent_profile_id.as_str() == "writer"
        && r.session.session_id == format!("{}:inv_root", run.id)));
    assert!(a.iter().all(|r| r.model_id.is_none()));
    assert_eq!(b.len(), 1);
    assert!(b.iter().all(|r| r.agent_profile_id.as_str() == "critic"
        && r.session.session_id == format!("{}:{}", run.id, child.id)));
    assert_eq!(b[0].model_id.as_deref(), Some("model-b"));
    let bindings: Vec<_> = events_of(&h, &run.id, "agent_model_binding_resolved");
    assert_eq!(bindings.len(), 2);
    assert_eq!(bindings[1].payload["mode"], "connectionRef");
    assert_eq!(bindings[1].payload["connectionRef"], "connection-b");
    assert_eq!(bindings[1].payload["modelId"], "model-b");
}

#[tokio::test]
async fn each_session_is_closed_on_the_connection_that_opened_it() {
    let (_h, run, child, connection_a, connection_b) = writer_and_critic_on_two_connections().await;
    // Sessions are closed by a background task once the run has ended: let it run.
    for _ in 0..100 {
        if !connection_a.closed_sessions().is_empty() && !connection_b.closed_sessions().is_empty()
        {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(
        connection_a.closed_sessions(),
        [format!("{}:inv_root", run.id)]
    );
    assert_eq!(
        connection_b.closed_sessions(),
        [format!("{}:{}", run.id, child.id)]
    );
}

#[tokio::test]
async fn an_unknown_connection_fails_the_task_that_needs_it() {
    let h = harness(by_agent(writer_turns()));
    h.put_profile(delegator("writer"));
    h.put_profile(critic_on("nowhere", "m"));
    let run = h.run_completed(request(Some("writer"))).await;
    h.failed_task(&run.id, "agent.model_connection_not_found");
}

/// A root profile with `preset.mode = "ref"`: the run records its generation intent, then (in
/// the background) asks the host for the root prompt with the profile's settings, and the first
/// model request is the assembled prompt.
#[tokio::test]
async fn root_ref_profile_prompt_is_host_assembled_with_generation_intent() {
    let h = narrating(FakePromptBroker::with(|request| {
        let mut answer = default_assembly(request);
        answer.generation_intent = Some(json!({"source": "host", "mode": "normal"}));
        Ok(answer)
    }));
    h.put_profile(custom_profile("narrator", |p| {
        use_preset(p, "narration");
        p.instructions.agent_system_prompt = Some("You narrate in the present tense.".into());
    }));
    let run = h.run_completed(request(Some("narrator"))).await;

    let requests = h.broker.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(sent.scope.invocation_kind, "root");
    assert_eq!(sent.scope.invocation_id, "inv_root");
    assert_eq!(sent.scope.task_id, None);
    assert_eq!(sent.scope.exit_policy, "runFinishAllowed");
    assert_eq!(sent.agent_task_prompt, "");
    assert_eq!(sent.required_agent_prompt_components, ["agentSystemPrompt"]);
    assert_eq!(sent.settings["model"]["mode"], "currentPromptSnapshot");
    assert_eq!(sent.json_schema, None);
    assert_eq!(
        sent.preset_ref,
        json!({"apiId": "openai", "name": "narration"})
    );

    // The first request is the assembled prompt: system prompt, then the frozen conversation
    // (which ends with the user's request).
    let first = &h.model.requests()[0];
    assert_eq!(first.messages[0].role, ModelRole::System);
    assert_eq!(
        first.messages[0].text_content(),
        "You narrate in the present tense."
    );
    assert_eq!(
        first.messages.last().unwrap().text_content(),
        "Write a short scene."
    );

    // Journal: intent, then the handshake, then context_assembled; the stored assembly keeps
    // the host's generation intent.
    let types = h.event_types(&run.id);
    let pos = |t: &str| types.iter().position(|x| x == t).unwrap();
    assert!(pos("generation_intent_recorded") < pos("prompt_assembly_requested"));
    assert!(pos("prompt_assembly_completed") < pos("context_assembled"));
    assert!(pos("context_assembled") < pos("model_request_created"));
    let intent = &events_of(&h, &run.id, "generation_intent_recorded")[0];
    insta::assert_json_snapshot!("root_generation_intent", intent.payload);
    let stored = h.document(
        &run.id,
        RunDocument::InvocationPromptAssembly(tt_domain::ids::InvocationId::root()),
    );
    assert_eq!(stored["generationIntent"]["source"], "host");
    assert_eq!(stored["scope"]["taskId"], json!(null));
}

#[tokio::test]
async fn root_ref_prompt_assembly_failure_fails_the_run() {
    let h = narrating(FakePromptBroker::with(|_| {
        Err(HostBridgeError::Rejected("no such preset".into()))
    }));
    h.put_profile(custom_profile("narrator", |p| use_preset(p, "missing")));
    let run = h.run_to_end(request(Some("narrator"))).await;
    assert_eq!(run.status, AgentRunStatus::Failed);
    let failed = &events_of(&h, &run.id, "run_failed")[0];
    assert_eq!(failed.payload["code"], "agent.prompt_assembly_failed");
    assert_eq!(events_of(&h, &run.id, "prompt_assembly_failed").len(), 1);
    assert!(h.model.requests().is_empty());
}

/// A run of a root `ref` profile whose host answers with a temperature, on a store that fails
/// its `fault_at`-th write once (none when `None`): what the store held when the run ended
/// (the assembled prompt, its record), then, once resumed if it did not complete, the
/// temperature of each of the agent's model requests. `None` when the run could not start.
async fn assembled_run_with_a_fault(
    fault_at: Option<u64>,
) -> Option<((bool, bool), Vec<Option<f64>>, u64)> {
    use tt_testkit::fakes::{DiskFault, FaultPlan, FaultyStore, InMemoryStore};
    let inner = InMemoryStore::new();
    let faulty = FaultyStore::wrap(Arc::clone(&inner));
    let model = by_turn(happy_turns());
    let services = tt_application::RuntimeServices {
        prompt_broker: FakePromptBroker::with(|request| {
            let mut answer = default_assembly(request);
            answer.settings = Some(tt_ports::AssembledSettings {
                generation: tt_domain::generation::GenerationSettings {
                    temperature: Some(0.3),
                    ..Default::default()
                },
            });
            Ok(answer)
        }),
        ..faulty_services(&inner, &faulty, model.clone())
    };
    let service = tt_application::AgentRunService::new(services);
    inner.put_profile(custom_profile("narrator", |p| use_preset(p, "narration")));
    faulty.set_plan(fault_at.map(|at_write| FaultPlan {
        at_write,
        sticky: false,
        fault: DiskFault::NoSpace,
    }));
    let run = service.start_run(request(Some("narrator"))).await.ok()?;
    let ended = service.wait_for_run(&run.id).await.ok()?;
    let root = tt_domain::ids::InvocationId::root();
    let stored = (
        inner
            .document(
                &run.id,
                &RunDocument::InvocationPromptSnapshot(root.clone()),
            )
            .is_some(),
        inner
            .document(&run.id, &RunDocument::InvocationPromptAssembly(root))
            .is_some(),
    );
    let writes = faulty.writes();
    faulty.set_plan(None);
    if ended.status != AgentRunStatus::Completed {
        service.resume_run(&run.id).await.ok()?;
        let resumed = service.wait_for_run(&run.id).await.ok()?;
        if resumed.status != AgentRunStatus::Completed {
            return None;
        }
    }
    let temperatures = model
        .requests()
        .iter()
        .map(|request| request.generation.temperature)
        .collect();
    Some((stored, temperatures, writes))
}

/// The assembled prompt and its settings are one unit: whichever single write fails, the store
/// never holds the prompt without its record, and the resumed agent always runs with the
/// preset's settings.
#[tokio::test]
async fn a_failed_write_never_resumes_an_assembled_agent_without_its_settings() {
    let (_, temperatures, total) = assembled_run_with_a_fault(None).await.unwrap();
    assert!(
        temperatures.iter().all(|t| *t == Some(0.3)),
        "{temperatures:?}"
    );
    let mut resumed = 0;
    for at in 1..=total {
        let Some(((prompt, record), temperatures, _)) = assembled_run_with_a_fault(Some(at)).await
        else {
            continue;
        };
        assert!(
            !prompt || record,
            "write {at}: the prompt was stored without its assembly record"
        );
        assert!(
            temperatures.iter().all(|t| *t == Some(0.3)),
            "write {at}: a model request went without the preset's settings: {temperatures:?}"
        );
        resumed += 1;
    }
    assert!(resumed > total / 2, "{resumed} of {total}");
}
