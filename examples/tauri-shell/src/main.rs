//! `tauri-shell`: a desktop shell on `tauri-plugin-tt-agent`.
//!
//! The Rust side is the plugin with a scripted model (offline, the `desktop-shell` example's
//! story) and the example's two profiles; everything else is the page (`ui/app.js`), which
//! drives runs through the plugin's commands and channels. The data dir is
//! `$TAURI_SHELL_DATA_DIR`, else the app's data dir.

#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

use std::process::ExitCode;
use std::sync::Arc;

use tauri_plugin_tt_agent::TtAgentExt;
use tt_runtime::{
    AgentProfileDefinition, ConnectionModelInfo, HostError, ModelPrice, ModelProvider,
    ScriptedProvider, ScriptedScenarios,
};

const STORY: &str = include_str!("../../desktop-shell/assets/script.json");
const SECOND_TAKE: &str = include_str!("../../desktop-shell/assets/second-take.json");
const HOLD: &str = include_str!("../../desktop-shell/assets/hold.json");
const PROFILES: [&str; 2] = [
    include_str!("../../desktop-shell/assets/shell-writer.json"),
    include_str!("../../desktop-shell/assets/shell-critic.json"),
];

/// The story, in which `shell-writer-budgeted` plays the writer's part too (the script is
/// keyed by profile).
fn story() -> Result<String, serde_json::Error> {
    let mut story: serde_json::Value = serde_json::from_str(STORY)?;
    let writer = story["agents"]["shell-writer"].clone();
    story["agents"]["shell-writer-budgeted"] = writer;
    serde_json::to_string(&story)
}

/// The story; a request with `[hold]` waits a day on its model (a run to interrupt); a branch
/// whose note says `[second take]` writes a quieter ending.
fn scripted_model() -> Result<Arc<dyn ModelProvider>, HostError> {
    let script = |text: &str| {
        ScriptedProvider::from_json_str(text)
            .map_err(|err| HostError::new(err.code(), err.to_string()))
    };
    let story = story().map_err(|err| {
        HostError::new(
            tt_runtime::error_codes::MODEL_SCRIPT_INVALID,
            err.to_string(),
        )
    })?;
    Ok(Arc::new(
        ScriptedScenarios::new(script(&story)?)
            .scenario("[hold]", script(HOLD)?)
            .scenario("[second take]", script(SECOND_TAKE)?),
    ))
}

/// The scripted model priced as a mid-size hosted model (US dollars per million tokens), so
/// every run's spend is counted.
fn scripted_prices() -> ConnectionModelInfo {
    let mut info = ConnectionModelInfo {
        default_model: Some("scripted".into()),
        ..Default::default()
    };
    let price = ModelPrice {
        input: 3.0,
        output: 15.0,
        cached_input: None,
        cache_write: None,
    };
    info.prices.insert("scripted".into(), price);
    info
}

/// `shell-writer` under a spend limit its first model call passes: a run of it stops before
/// its next call until the person raises the limit or refuses (`limits.askAboveTotalCostUsd`).
fn budgeted_writer() -> Result<AgentProfileDefinition, serde_json::Error> {
    let mut profile: serde_json::Value = serde_json::from_str(PROFILES[0])?;
    profile["id"] = "shell-writer-budgeted".into();
    profile["displayName"] = "Shell Writer (spend limit)".into();
    profile["limits"] = serde_json::json!({ "askAboveTotalCostUsd": 0.000_001 });
    serde_json::from_value(profile)
}

fn install_profiles(app: &tauri::App) -> Result<(), Box<dyn std::error::Error>> {
    let runtime = Arc::clone(app.tt_agent().runtime());
    let mut profiles = PROFILES
        .iter()
        .map(|text| serde_json::from_str::<AgentProfileDefinition>(text))
        .collect::<Result<Vec<_>, _>>()?;
    profiles.push(budgeted_writer()?);
    for profile in profiles {
        tauri::async_runtime::block_on(runtime.save_profile(profile))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    // ANCHOR: plugin
    let mut agent = tauri_plugin_tt_agent::Builder::new() // the runtime, built in `setup`
        .runtime(|builder, _app| {
            // any ModelProvider; prices make spend limits apply
            Ok(builder
                .provider(scripted_model()?)
                .provider_model_info(scripted_prices()))
        });
    if let Some(dir) = std::env::var_os("TAURI_SHELL_DATA_DIR") {
        agent = agent.data_dir(dir); // default: the app's data dir + `tt-agent`
    }
    let outcome = tauri::Builder::default()
        .plugin(agent.build()) // commands, channels, shutdown on exit
        .setup(|app| install_profiles(app))
        .run(tauri::generate_context!());
    // ANCHOR_END: plugin
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("tauri-shell: {err}");
            ExitCode::FAILURE
        }
    }
}
