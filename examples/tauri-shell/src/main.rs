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
    AgentProfileDefinition, HostError, ModelProvider, ScriptedProvider, ScriptedScenarios,
};

const STORY: &str = include_str!("../../desktop-shell/assets/script.json");
const SECOND_TAKE: &str = include_str!("../../desktop-shell/assets/second-take.json");
const HOLD: &str = include_str!("../../desktop-shell/assets/hold.json");
const PROFILES: [&str; 2] = [
    include_str!("../../desktop-shell/assets/shell-writer.json"),
    include_str!("../../desktop-shell/assets/shell-critic.json"),
];

/// The story; a request with `[hold]` waits a day on its model (a run to interrupt); a branch
/// whose note says `[second take]` writes a quieter ending.
fn scripted_model() -> Result<Arc<dyn ModelProvider>, HostError> {
    let script = |text: &str| {
        ScriptedProvider::from_json_str(text)
            .map_err(|err| HostError::new(err.code(), err.to_string()))
    };
    Ok(Arc::new(
        ScriptedScenarios::new(script(STORY)?)
            .scenario("[hold]", script(HOLD)?)
            .scenario("[second take]", script(SECOND_TAKE)?),
    ))
}

fn install_profiles(app: &tauri::App) -> Result<(), Box<dyn std::error::Error>> {
    let runtime = Arc::clone(app.tt_agent().runtime());
    for text in PROFILES {
        let profile: AgentProfileDefinition = serde_json::from_str(text)?;
        tauri::async_runtime::block_on(runtime.save_profile(profile))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    // ANCHOR: plugin
    let mut agent = tauri_plugin_tt_agent::Builder::new() // the runtime, built in `setup`
        .runtime(|builder, _app| Ok(builder.provider(scripted_model()?))); // any ModelProvider
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
