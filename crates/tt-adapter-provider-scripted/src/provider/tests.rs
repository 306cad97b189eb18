//! Turn selection, interleaving, error injection, exhaustion and cancellation.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio_util::sync::CancellationToken;
use tt_domain::ids::{InvocationId, ProfileId, RunId};
use tt_domain::model::{AgentModelMessage, AgentModelRequest, ModelRole, ProviderSession};
use tt_ports::{ModelError, ModelProvider};

use super::ScriptedProvider;

const SCRIPT: &str = r#"{
  "schemaVersion": 1,
  "agents": {
    "default-writer": [
      { "text": "Drafting.",
        "toolCalls": [ { "id": "call_w1", "name": "workspace_write_file",
                         "arguments": { "path": "output/main.md", "content": "hi" } } ] },
      { "error": { "kind": "rateLimited", "message": "slow down", "retryAfterMs": 10 } },
      { "error": { "kind": "transient", "message": "502" } },
      { "toolCalls": [ { "id": "call_f1", "name": "workspace_finish" } ] }
    ],
    "scene-critic": [
      { "toolCalls": [ { "id": "call_r1", "name": "workspace_read_file",
                         "arguments": { "path": "output/main.md" } } ] },
      { "text": "", "delayMs": 1000 }
    ]
  }
}"#;

fn provider() -> Arc<ScriptedProvider> {
    Arc::new(ScriptedProvider::from_json_str(SCRIPT).unwrap())
}

/// A request for `agent` in session `run_a:<invocation>` with `assistant_turns` assistant
/// messages already in the conversation.
fn request(agent: &str, invocation: &str, assistant_turns: usize) -> AgentModelRequest {
    let mut messages = vec![
        AgentModelMessage::text(ModelRole::System, "You are a writer."),
        AgentModelMessage::text(ModelRole::User, "Write a scene."),
    ];
    for n in 0..assistant_turns {
        messages.push(AgentModelMessage::text(
            ModelRole::Assistant,
            format!("turn {n}"),
        ));
        messages.push(AgentModelMessage::text(ModelRole::User, "continue"));
    }
    AgentModelRequest::new(
        ProviderSession::new(
            &RunId::from_raw("run_a"),
            &InvocationId::from_raw(invocation),
        ),
        ProfileId::parse(agent).unwrap(),
        u32::try_from(assistant_turns + 1).unwrap(),
        messages,
    )
}

async fn call(
    provider: &ScriptedProvider,
    request: &AgentModelRequest,
) -> Result<tt_domain::model::AgentModelResponse, ModelError> {
    provider.complete(request, CancellationToken::new()).await
}

#[tokio::test]
async fn turn_is_chosen_by_the_round_of_the_request() {
    let provider = provider();
    let first = call(&provider, &request("default-writer", "inv_root", 0))
        .await
        .unwrap();
    assert_eq!(first.text(), "Drafting.");
    let calls = first.tool_calls();
    assert_eq!(calls[0].id, "call_w1");
    assert_eq!(calls[0].name, "workspace_write_file");
    assert_eq!(
        calls[0].arguments,
        json!({"path": "output/main.md", "content": "hi"})
    );
    assert_eq!(first.model.as_deref(), Some("scripted"));
    assert_eq!(first.finish_reason.as_deref(), Some("tool_calls"));
    let usage = first.usage.unwrap();
    assert!(usage.input_tokens > 0 && usage.output_tokens > 0);

    // Replaying the same conversation replays the same turn.
    let again = call(&provider, &request("default-writer", "inv_root", 0))
        .await
        .unwrap();
    assert_eq!(again, first);
}

#[tokio::test]
async fn two_agents_interleave_on_their_own_scripts() {
    let provider = provider();
    let (critic_request, writer_request) = (
        request("scene-critic", "inv_c", 0),
        request("default-writer", "inv_root", 0),
    );
    let critic_1 = call(&provider, &critic_request);
    let writer_1 = call(&provider, &writer_request);
    let (critic_1, writer_1) = tokio::join!(critic_1, writer_1);
    assert_eq!(critic_1.unwrap().tool_calls()[0].id, "call_r1");
    assert_eq!(writer_1.unwrap().tool_calls()[0].id, "call_w1");

    // A second session of the same agent starts from its first turn.
    let other_critic = call(&provider, &request("scene-critic", "inv_d", 0))
        .await
        .unwrap();
    assert_eq!(other_critic.tool_calls()[0].id, "call_r1");
    assert_eq!(provider.turn_count("scene-critic"), 2);
    assert_eq!(provider.agent_ids(), ["default-writer", "scene-critic"]);
}

#[tokio::test]
async fn injected_errors_fire_once_per_session_then_the_turn_plays() {
    let provider = provider();
    let second_turn = || request("default-writer", "inv_root", 1);
    assert_eq!(
        call(&provider, &second_turn()).await.unwrap_err(),
        ModelError::RateLimited {
            message: "slow down".into(),
            retry_after_ms: Some(10)
        }
    );
    assert_eq!(
        call(&provider, &second_turn()).await.unwrap_err(),
        ModelError::Transient {
            message: "502".into()
        }
    );
    let answer = call(&provider, &second_turn()).await.unwrap();
    assert_eq!(answer.tool_calls()[0].id, "call_f1");
    assert_eq!(call(&provider, &second_turn()).await.unwrap(), answer);

    // Another session of the same agent gets its own errors.
    let other = request("default-writer", "inv_handoff", 1);
    assert!(
        call(&provider, &other.clone())
            .await
            .unwrap_err()
            .is_retryable()
    );

    // Closing a session forgets its counters.
    provider.close_session("run_a:inv_root").await;
    assert!(call(&provider, &second_turn()).await.is_err());
}

#[tokio::test]
async fn exhaustion_names_the_agent_and_turn() {
    let provider = provider();
    let err = call(&provider, &request("default-writer", "inv_root", 2))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "model.script_exhausted");
    let message = err.to_string();
    assert!(message.contains("`default-writer`"), "{message}");
    assert!(message.contains("turn 3"), "{message}");
    assert!(!err.is_retryable());

    let err = call(&provider, &request("stranger", "inv_x", 0))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "model.script_exhausted");
    assert!(err.to_string().contains("`stranger`"), "{err}");
    assert!(err.to_string().contains("turn 1"), "{err}");
}

#[tokio::test]
async fn trailing_errors_then_exhaustion() {
    let provider = ScriptedProvider::from_json_str(
        r#"{"schemaVersion":1,"agents":{"w":[{"error":{"kind":"invalidResponse"}}]}}"#,
    )
    .unwrap();
    let err = call(&provider, &request("w", "inv_root", 0))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "model.upstream_invalid_response");
    let err = call(&provider, &request("w", "inv_root", 0))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "model.script_exhausted");
}

#[tokio::test(start_paused = true)]
async fn delays_use_tokio_time_and_cancel_interrupts_them() {
    let provider = provider();
    let started = tokio::time::Instant::now();
    let answer = call(&provider, &request("scene-critic", "inv_c", 1))
        .await
        .unwrap();
    assert_eq!(started.elapsed(), Duration::from_millis(1000));
    assert!(answer.message.parts.is_empty());
    assert_eq!(answer.finish_reason.as_deref(), Some("stop"));

    let cancel = CancellationToken::new();
    let pending = tokio::spawn({
        let provider = provider.clone();
        let cancel = cancel.clone();
        async move {
            provider
                .complete(&request("scene-critic", "inv_c", 1), cancel)
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(10)).await;
    let cancelled_at = tokio::time::Instant::now();
    cancel.cancel();
    assert_eq!(pending.await.unwrap(), Err(ModelError::Cancelled));
    assert_eq!(cancelled_at.elapsed(), Duration::ZERO);

    let already = CancellationToken::new();
    already.cancel();
    assert_eq!(
        provider
            .complete(&request("default-writer", "inv_root", 0), already)
            .await,
        Err(ModelError::Cancelled)
    );
}

#[test]
fn bad_script_json_gives_a_clear_error() {
    let err = ScriptedProvider::from_json_str(
        "{\"schemaVersion\": 1, \"agents\": {\"w\": [ {\"text\": 3} ]}}",
    )
    .unwrap_err();
    let message = err.to_string();
    assert!(
        message.starts_with("model.script_invalid: agents.w[0]:"),
        "{message}"
    );
    assert!(message.contains("invalid type"), "{message}");

    let err = ScriptedProvider::from_json_str("not json").unwrap_err();
    assert!(err.to_string().contains("line 1, column 2"), "{err}");
}

#[test]
fn scripts_load_from_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.json");
    std::fs::write(&path, SCRIPT).unwrap();
    let provider = ScriptedProvider::from_file(&path).unwrap();
    assert_eq!(provider.name(), "scripted");
    assert_eq!(provider.turn_count("default-writer"), 2);
}

#[tokio::test]
async fn a_held_answer_waits_for_release_and_cancel_still_stops_it() {
    let provider = provider();
    let hold = provider.hold_after("default-writer", 1);
    let held = tokio::spawn({
        let provider = Arc::clone(&provider);
        async move { call(&provider, &request("default-writer", "inv_root", 0)).await }
    });
    hold.reached().await;
    assert!(!held.is_finished());
    // Other agents and rounds are not held.
    call(&provider, &request("scene-critic", "inv_c", 0))
        .await
        .unwrap();
    hold.release();
    assert_eq!(held.await.unwrap().unwrap().text(), "Drafting.");

    let hold = provider.hold_after("scene-critic", 1);
    let cancel = CancellationToken::new();
    let held = tokio::spawn({
        let provider = Arc::clone(&provider);
        let cancel = cancel.clone();
        async move {
            provider
                .complete(&request("scene-critic", "inv_d", 0), cancel)
                .await
        }
    });
    hold.reached().await;
    cancel.cancel();
    assert_eq!(held.await.unwrap().unwrap_err(), ModelError::Cancelled);
}
