//! What a connection learns about its model before an agent's first request: the server's
//! window, asked once per connection and model for every agent of the runtime (a declared
//! window wins and nothing is asked; a server that cannot be asked never fails a run), and the
//! settings the provider does not take, refused or dropped with a warning when the agent starts.

use std::sync::Arc;

use tempfile::TempDir;
use tt_domain::generation::GenerationSettings;
use tt_ports::{DroppedSetting, ModelError, ServerContextWindow};
use tt_runtime::{AgentRunStatus, AgentRuntime, ConnectionModelInfo};
use tt_testkit::fakes::ShapedModel;

use super::{committing_writer, first_of, journal, request, run_to_end, transcript_builder};

/// The committing writer behind a server that states `window` (or cannot be reached) and does
/// not take `seed`, dropping or refusing it.
fn probed_server(window: Option<u64>, drop_seed: bool) -> Arc<ShapedModel> {
    let stated = match window {
        Some(tokens) => Ok(Some(ServerContextWindow {
            tokens,
            source: "/props".into(),
        })),
        None => Err(ModelError::Transient {
            message: "connection refused".into(),
        }),
    };
    let server = ShapedModel::around(committing_writer())
        .named("probed")
        .stating_window(stated)
        .checking_settings(move |settings, _| {
            if settings.seed.is_none() {
                Ok(Vec::new())
            } else if drop_seed {
                Ok(vec![DroppedSetting {
                    setting: "seed".into(),
                    reason: "no such setting".into(),
                }])
            } else {
                Err(ModelError::SettingUnsupported {
                    message: "the API does not take seed".into(),
                })
            }
        });
    Arc::new(server)
}

/// A server that cannot be asked for its window and refuses the first request, saying its
/// window is `window`.
fn refusing_first(window: u64) -> Arc<ShapedModel> {
    let refusal = ModelError::ContextOverflow {
        message: format!("the request exceeds the available context size ({window})"),
        prompt_tokens: None,
        window_tokens: Some(window),
    };
    let server = Arc::into_inner(probed_server(None, false)).unwrap();
    Arc::new(server.failing_first(1, refusal))
}

/// The output limit of every request `server` received since the last call.
fn output_limits(server: &ShapedModel) -> Vec<Option<u32>> {
    let requests = server.take_requests();
    requests.iter().map(|r| r.max_output_tokens).collect()
}

/// A runtime on `server` stating `info`, with a new data dir the test keeps.
fn runtime(server: &Arc<ShapedModel>, info: ConnectionModelInfo) -> (TempDir, AgentRuntime) {
    let dir = TempDir::new().unwrap();
    let runtime = transcript_builder(dir.path(), server.clone())
        .provider_model_info(info)
        .build()
        .unwrap();
    (dir, runtime)
}

/// Runs the default writer to its end, which must complete; its journal.
async fn completed(
    runtime: &AgentRuntime,
    settings: GenerationSettings,
) -> Vec<tt_runtime::AgentRunEvent> {
    let ended = run_to_end(runtime, request().generation(settings)).await;
    assert_eq!(ended.status, AgentRunStatus::Completed);
    journal(runtime, ended.id.as_str()).await
}

fn binding(events: &[tt_runtime::AgentRunEvent]) -> serde_json::Value {
    first_of(events, "agent_model_binding_resolved")
        .payload
        .clone()
}

#[tokio::test]
async fn the_servers_window_is_asked_once_for_every_agent_and_journaled_with_its_source() {
    let server = probed_server(Some(32768), false);
    let (_dir, runtime) = runtime(&server, ConnectionModelInfo::default());
    for _ in 0..2 {
        let events = completed(&runtime, GenerationSettings::default()).await;
        let binding = binding(&events);
        assert_eq!(binding["contextWindowTokens"], 32768);
        assert_eq!(binding["contextWindowSource"], "server");
        assert_eq!(binding["contextWindowEndpoint"], "/props");
    }
    assert_eq!(server.probe_count(), 1);
}

#[tokio::test]
async fn a_declared_window_wins_and_the_server_is_not_asked() {
    let server = probed_server(Some(2048), false);
    let info = ConnectionModelInfo {
        context_window_tokens: Some(4096),
        ..ConnectionModelInfo::default()
    };
    let (_dir, runtime) = runtime(&server, info);
    let events = completed(&runtime, GenerationSettings::default()).await;
    assert_eq!(binding(&events)["contextWindowTokens"], 4096);
    assert_eq!(binding(&events)["contextWindowSource"], "connection");
    assert_eq!(server.probe_count(), 0);
}

#[tokio::test]
async fn a_server_that_cannot_be_asked_leaves_the_window_unknown_and_is_asked_again() {
    let server = probed_server(None, false);
    let (_dir, runtime) = runtime(&server, ConnectionModelInfo::default());
    for _ in 0..2 {
        let events = completed(&runtime, GenerationSettings::default()).await;
        assert!(binding(&events).get("contextWindowTokens").is_none());
    }
    assert_eq!(server.probe_count(), 2);
}

#[tokio::test]
async fn a_setting_the_provider_does_not_take_fails_the_run_at_its_start_or_is_dropped_with_a_warning()
 {
    let seed = GenerationSettings {
        seed: Some(7),
        ..GenerationSettings::default()
    };
    let refusing = probed_server(Some(32768), false);
    let (_dir, runtime_refusing) = runtime(&refusing, ConnectionModelInfo::default());
    // The start itself fails: the root agent is set up before the run is handed back.
    let refused = runtime_refusing
        .start_run(request().generation(seed.clone()))
        .await
        .unwrap_err();
    assert_eq!(refused.code, "model.setting_unsupported");
    assert_eq!(refusing.call_count(), 0, "no request was sent");

    let dropping = probed_server(Some(32768), true);
    let (_dir, runtime_dropping) = runtime(&dropping, ConnectionModelInfo::default());
    let events = completed(&runtime_dropping, seed).await;
    let warning = first_of(&events, "model_settings_dropped");
    assert_eq!(warning.level, tt_domain::event::EventLevel::Warn);
    assert_eq!(warning.payload["dropped"][0]["setting"], "seed");
}

#[tokio::test]
async fn a_window_a_refusal_stated_is_kept_for_the_next_agent_of_the_connection() {
    let server = refusing_first(16_384);
    let (_dir, runtime) = runtime(&server, ConnectionModelInfo::default());
    let events = completed(&runtime, GenerationSettings::default()).await;
    assert!(binding(&events).get("contextWindowTokens").is_none());
    // The next run's agent starts from the window the refusal stated, without asking the
    // server (which cannot be asked) again.
    let probes = server.probe_count();
    let events = completed(&runtime, GenerationSettings::default()).await;
    let binding = binding(&events);
    assert_eq!(binding["contextWindowTokens"], 16_384);
    assert_eq!(binding["contextWindowSource"], "server");
    assert_eq!(binding["contextWindowEndpoint"], "overflow error");
    assert_eq!(server.probe_count(), probes);
}

#[tokio::test]
async fn the_connections_output_cap_is_every_requests_limit_and_the_answers_reserve() {
    let server = probed_server(Some(32_768), false);
    let info = ConnectionModelInfo {
        max_output_tokens: Some(160),
        ..ConnectionModelInfo::default()
    };
    let (_dir, capped) = runtime(&server, info.clone());
    let events = completed(&capped, GenerationSettings::default()).await;
    assert_eq!(binding(&events)["generation"]["maxOutputTokens"], 160);
    let limits = output_limits(&server);
    assert!(!limits.is_empty());
    assert!(limits.iter().all(|limit| *limit == Some(160)), "{limits:?}");
    // A larger limit from the run is capped; a smaller one stays.
    for (asked, sent) in [(4096, 160), (100, 100)] {
        let settings = GenerationSettings {
            max_output_tokens: Some(asked),
            ..GenerationSettings::default()
        };
        completed(&capped, settings).await;
        let limits = output_limits(&server);
        assert!(
            limits.iter().all(|limit| *limit == Some(sent)),
            "{limits:?}"
        );
    }

    // On a window too small for the opening, the reserve named is the cap, not an eighth of
    // the window (at least 256).
    let server = probed_server(Some(1_000), false);
    let (_dir, small) = runtime(&server, info);
    let message = match small.start_run(request()).await {
        Err(error) => {
            assert_eq!(error.code, "model.context_window_too_small");
            error.message
        }
        Ok(run) => {
            let ended = small.wait_for_run(run.id.as_str()).await.unwrap();
            assert_eq!(ended.status, AgentRunStatus::Failed);
            let events = journal(&small, run.id.as_str()).await;
            let failed = first_of(&events, "run_failed");
            assert_eq!(failed.payload["code"], "model.context_window_too_small");
            failed.payload.to_string()
        }
    };
    assert!(
        message.contains("after 160 kept for the answer"),
        "{message}"
    );
}
