//! Record through a fake provider, then replay offline: same answers, ids of the new run, and
//! a coded mismatch that names the field when the request changed.

// Test helpers outside #[test] functions may unwrap: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tt_adapter_provider_cassette::{RecordingProvider, ReplayProvider};
use tt_domain::ids::{InvocationId, ProfileId, RunId};
use tt_domain::model::{
    AgentModelMessage, AgentModelRequest, AgentModelResponse, ModelContentPart, ModelDelta,
    ModelRole, ProviderSession,
};
use tt_domain::tool::AgentToolCall;
use tt_ports::{ModelDeltaSink, ModelError, ModelProvider};
use tt_testkit::fakes::{FakeModel, ShapedModel};

const RECORDED_RUN: &str = "run_11111111111111111111111111111111";
const RECORDED_TASK: &str = "task_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const REPLAY_RUN: &str = "run_22222222222222222222222222222222";
const REPLAY_TASK: &str = "task_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

fn request(run: &str, round: u32, user_text: &str) -> AgentModelRequest {
    let run_id = RunId::from_raw(run);
    AgentModelRequest::new(
        ProviderSession::new(&run_id, &InvocationId::from_raw("inv_root")),
        ProfileId::parse("writer").unwrap(),
        round,
        vec![
            AgentModelMessage::text(ModelRole::System, "You write scenes."),
            AgentModelMessage::text(ModelRole::User, user_text),
        ],
    )
}

/// Streams two text pieces and answers with an `agent.await` on the task id it read; with
/// `fail_first`, its first call fails as a bad gateway.
fn upstream(fail_first: bool) -> ShapedModel {
    let answers = FakeModel::new(|request| {
        let text = request.messages[1].text_content();
        let task = text
            .split_whitespace()
            .find(|w| w.starts_with("task_"))
            .unwrap();
        Ok(AgentModelResponse {
            message: AgentModelMessage {
                role: ModelRole::Assistant,
                parts: vec![
                    ModelContentPart::Text {
                        text: "Waiting.".into(),
                    },
                    ModelContentPart::ToolCall {
                        call: AgentToolCall::new(
                            "call_1",
                            "agent_await",
                            json!({"taskIds": [task]}),
                        ),
                    },
                ],
                provider_metadata: serde_json::Value::Null,
            },
            response_id: Some("resp_1".into()),
            model: Some("m".into()),
            finish_reason: Some("tool_calls".into()),
            usage: None,
            raw_response: serde_json::Value::Null,
        })
    });
    let pieces = ["Wait", "ing."].map(|text| {
        let text = text.to_owned();
        (ModelDelta::Text { text }, Duration::ZERO)
    });
    let model = ShapedModel::around(answers)
        .named("upstream")
        .streaming_deltas(pieces.into());
    if fail_first {
        let bad_gateway = ModelError::Transient {
            message: "502 bad gateway".into(),
        };
        model.failing_first(1, bad_gateway)
    } else {
        model
    }
}

#[derive(Default)]
struct Collect(Mutex<Vec<ModelDelta>>);

impl ModelDeltaSink for Collect {
    fn delta(&self, delta: ModelDelta) {
        self.0.lock().unwrap().push(delta);
    }
}

async fn stream(
    provider: &dyn ModelProvider,
    request: &AgentModelRequest,
) -> (Result<AgentModelResponse, ModelError>, Vec<ModelDelta>) {
    let sink = Arc::new(Collect::default());
    let result = provider
        .stream(request, sink.clone(), CancellationToken::new())
        .await;
    let deltas = sink.0.lock().unwrap().clone();
    (result, deltas)
}

fn user_text(task: &str) -> String {
    format!("Your helper works on {task} now.")
}

async fn record(dir: &tempfile::TempDir, fail_first: bool) -> std::path::PathBuf {
    let path = dir.path().join("run.cassette.jsonl");
    let recorder = RecordingProvider::create(Arc::new(upstream(fail_first)), &path).unwrap();
    if fail_first {
        let (result, _) = stream(
            &recorder,
            &request(RECORDED_RUN, 1, &user_text(RECORDED_TASK)),
        )
        .await;
        assert!(matches!(result, Err(ModelError::Transient { .. })));
    }
    let (result, deltas) = stream(
        &recorder,
        &request(RECORDED_RUN, 1, &user_text(RECORDED_TASK)),
    )
    .await;
    assert!(result.is_ok());
    assert_eq!(deltas.len(), 2);
    path
}

/// A replay of a recording made in `dir` (whose first call failed when `fail_first`).
async fn recorded_replay(dir: &tempfile::TempDir, fail_first: bool) -> ReplayProvider {
    ReplayProvider::open(record(dir, fail_first).await).unwrap()
}

/// The replay run's first request: the recorded one, asked for another task.
fn replay_request() -> AgentModelRequest {
    request(REPLAY_RUN, 1, &user_text(REPLAY_TASK))
}

#[tokio::test]
async fn a_replay_answers_offline_with_the_ids_of_the_new_run() {
    let dir = tempfile::tempdir().unwrap();
    let replay = recorded_replay(&dir, false).await;
    assert_eq!(replay.remaining(), 1);
    assert_eq!(
        replay.name(),
        "upstream",
        "a replay goes by the recorded provider's name"
    );
    let (result, deltas) = stream(&replay, &replay_request()).await;
    let response = result.unwrap();
    assert_eq!(
        deltas,
        [
            ModelDelta::Text {
                text: "Wait".into()
            },
            ModelDelta::Text {
                text: "ing.".into()
            }
        ]
    );
    assert_eq!(response.text(), "Waiting.");
    assert_eq!(
        response.tool_calls()[0].arguments,
        json!({"taskIds": [REPLAY_TASK]}),
        "the recorded task id is rewritten to this run's"
    );
    assert_eq!(replay.remaining(), 0);
}

#[tokio::test]
async fn recorded_errors_replay_as_the_same_errors() {
    let dir = tempfile::tempdir().unwrap();
    let replay = recorded_replay(&dir, true).await;
    let (first, _) = stream(&replay, &replay_request()).await;
    assert_eq!(
        first.unwrap_err(),
        ModelError::Transient {
            message: "502 bad gateway".into()
        }
    );
    let (second, _) = stream(&replay, &replay_request()).await;
    assert!(second.is_ok(), "the retry gets the recorded answer");
}

#[tokio::test]
async fn a_changed_request_fails_with_a_mismatch_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let replay = recorded_replay(&dir, false).await;
    let edited = format!("Your critic works on {REPLAY_TASK} now.");
    let (result, _) = stream(&replay, &request(REPLAY_RUN, 1, &edited)).await;
    let error = result.unwrap_err();
    assert_eq!(error.code(), "model.cassette_mismatch");
    insta::assert_snapshot!(error.to_string(), @r#"model.cassette_mismatch: the request of agent `writer` in round 1 differs from the recording: messages[1].parts[0].text: differs at character 5: recorded "Your helper works on <task#1> now.", now "Your critic works on <task#1> now.""#);
    assert_eq!(replay.remaining(), 1, "a mismatch uses nothing up");
}

#[tokio::test]
async fn a_request_beyond_the_recording_is_a_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let replay = recorded_replay(&dir, false).await;
    let (_, _) = stream(&replay, &replay_request()).await;
    let (again, _) = stream(&replay, &replay_request()).await;
    let error = again.unwrap_err();
    assert_eq!(error.code(), "model.cassette_mismatch");
    assert!(
        error
            .to_string()
            .contains("no request of agent `writer` in round 1 left")
    );
}

#[test]
fn a_file_that_is_not_a_cassette_is_refused_with_its_line() {
    let error = ReplayProvider::from_text("x.jsonl", "{\"hello\": 1}\n").unwrap_err();
    assert_eq!(error.code(), "model.cassette_invalid");
    assert!(error.to_string().contains("x.jsonl line 1"), "{error}");
    let error = ReplayProvider::from_text(
        "x.jsonl",
        "{\"cassette\":\"tt-agent-runtime\",\"version\":1,\"provider\":\"p\"}\n\nnot json\n",
    )
    .unwrap_err();
    assert!(error.to_string().contains("line 3"), "{error}");
    let error = ReplayProvider::from_text(
        "x.jsonl",
        "{\"cassette\":\"tt-agent-runtime\",\"version\":9,\"provider\":\"p\"}\n",
    )
    .unwrap_err();
    assert!(error.to_string().contains("version 9"), "{error}");
}

#[tokio::test]
async fn a_cancelled_replay_call_answers_cancelled_and_uses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let replay = recorded_replay(&dir, false).await;
    let cancel = CancellationToken::new();
    cancel.cancel();
    let result = replay
        .stream(&replay_request(), Arc::new(Collect::default()), cancel)
        .await;
    assert_eq!(result.unwrap_err(), ModelError::Cancelled);
    assert_eq!(replay.remaining(), 1);
}

/// A provider whose format and transport are not its name and `in_process`.
struct OverHttp(Arc<FakeModel>);

tt_ports::decorated_model_provider!(OverHttp, 0, forward[complete], {
    fn name(&self) -> &str {
        "house"
    }

    fn provider_format(&self) -> &str {
        "house_chat"
    }

    fn transport(&self) -> &str {
        "http"
    }
});

#[test]
fn a_recording_reports_the_format_and_transport_of_the_provider_it_records() {
    let dir = tempfile::tempdir().unwrap();
    let live = OverHttp(FakeModel::new(|_| Err(ModelError::Cancelled)));
    let recorder = RecordingProvider::create(Arc::new(live), dir.path().join("c.jsonl")).unwrap();
    assert_eq!(
        (
            recorder.name(),
            recorder.provider_format(),
            recorder.transport()
        ),
        ("house", "house_chat", "http")
    );
}
