//! `tauri-plugin-tt-agent`: the tt-agent-runtime host API as a Tauri 2 plugin.
//!
//! The plugin builds an [`AgentRuntime`] in its `setup` (from the plugin's config in
//! `tauri.conf.json` and what the app passes to [`Builder`]), keeps it as managed state
//! ([`TtAgent`]), offers every command of the runtime's host command table as a Tauri command
//! (`plugin:tt-agent|start_agent_run`, …, generated from `tt_runtime::for_each_host_command!`,
//! so nothing is mapped by hand), streams a run's events and the runs list's changes over
//! `tauri::ipc::Channel`s, and shuts the runtime down when the app exits. `docs/host-api.md`,
//! "Embedding in a Tauri app", shows the five lines an app writes.

mod commands;
mod config;
mod messages;
mod request;
mod state;

use std::path::PathBuf;
use std::sync::Arc;

use tauri::plugin::TauriPlugin;
use tauri::{AppHandle, Manager, RunEvent, Runtime};
use tt_runtime::{AgentRuntime, AgentRuntimeBuilder, HostError};

pub use config::Config;
pub use messages::{
    HostToolCallsMessage, RunStreamMessage, RunUpdatesMessage, STREAM_COMMANDS, StreamId,
    SubscribeRunEventsRequest, UnsubscribeRequest,
};
pub use state::TtAgent;
/// The host command table's names, which the plugin's commands are.
pub use tt_runtime::HOST_COMMANDS;

/// The plugin's name: its commands are invoked as `plugin:tt-agent|<command>`, its permissions
/// are `tt-agent:<permission>` and its config is `plugins."tt-agent"` in `tauri.conf.json`.
pub const PLUGIN_NAME: &str = "tt-agent";

/// The names of the plugin's commands, one a line, as `build.rs` generates their permissions
/// from them: the host command table's, then [`STREAM_COMMANDS`].
pub const COMMAND_LIST: &str = include_str!("../commands.list");

/// `app.tt_agent()` on an `App`, `AppHandle`, `Window` or `Webview`.
pub trait TtAgentExt<R: Runtime> {
    /// The plugin's state. Only valid after the plugin's `setup` ran (any time a window exists).
    fn tt_agent(&self) -> tauri::State<'_, TtAgent>;
}

impl<R: Runtime, T: Manager<R>> TtAgentExt<R> for T {
    fn tt_agent(&self) -> tauri::State<'_, TtAgent> {
        self.state::<TtAgent>()
    }
}

type Configure<R> = Box<
    dyn FnOnce(AgentRuntimeBuilder, &AppHandle<R>) -> Result<AgentRuntimeBuilder, HostError> + Send,
>;

/// Builds the plugin. `Builder::new().build()` (or [`init`]) takes everything from the plugin's
/// config; [`Builder::runtime`] lets the app set anything of the [`AgentRuntimeBuilder`] (a
/// provider of its own, named connections, host tools, a commit handler, a store).
pub struct Builder<R: Runtime> {
    data_dir: Option<PathBuf>,
    configure: Option<Configure<R>>,
}

impl<R: Runtime> std::fmt::Debug for Builder<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("data_dir", &self.data_dir)
            .finish_non_exhaustive()
    }
}

impl<R: Runtime> Default for Builder<R> {
    fn default() -> Self {
        Self::new()
    }
}

impl<R: Runtime> Builder<R> {
    /// A builder that takes the data dir and the model connection from the plugin's config.
    pub fn new() -> Self {
        Self {
            data_dir: None,
            configure: None,
        }
    }

    /// The runtime's data dir, over the config's `dataDir` and the default (the app's data dir
    /// joined with `tt-agent`).
    #[must_use]
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(dir.into());
        self
    }

    /// Changes the runtime builder before it is built, in `setup`: the data dir and the config's
    /// connection are already set on it.
    #[must_use]
    pub fn runtime<F>(mut self, configure: F) -> Self
    where
        F: FnOnce(AgentRuntimeBuilder, &AppHandle<R>) -> Result<AgentRuntimeBuilder, HostError>
            + Send
            + 'static,
    {
        self.configure = Some(Box::new(configure));
        self
    }

    /// The plugin.
    pub fn build(self) -> TauriPlugin<R, Option<Config>> {
        let Builder {
            data_dir,
            configure,
        } = self;
        tauri::plugin::Builder::<R, Option<Config>>::new(PLUGIN_NAME)
            .invoke_handler(commands::handler())
            .setup(move |app, api| {
                let config = api.config().clone().unwrap_or_default();
                let runtime = build_runtime(app, &config, data_dir, configure)?;
                app.manage(TtAgent::new(runtime));
                Ok(())
            })
            .on_page_load(|webview, payload| {
                // A reload or a navigation: the page's channels are gone with it; it subscribes
                // again from the last seq it kept.
                if payload.event() == tauri::webview::PageLoadEvent::Started
                    && let Some(state) = webview.try_state::<TtAgent>()
                {
                    state.close_webview_streams(webview.label());
                }
            })
            .on_event(|app, event| {
                if let RunEvent::Exit = event {
                    shutdown_on_exit(app);
                }
            })
            .build()
    }
}

/// The plugin with everything from its config (`plugins."tt-agent"` in `tauri.conf.json`).
pub fn init<R: Runtime>() -> TauriPlugin<R, Option<Config>> {
    Builder::new().build()
}

fn build_runtime<R: Runtime>(
    app: &AppHandle<R>,
    config: &Config,
    data_dir: Option<PathBuf>,
    configure: Option<Configure<R>>,
) -> Result<AgentRuntime, HostError> {
    let data_dir = match data_dir.or_else(|| config.data_dir.clone()) {
        Some(dir) => dir,
        None => app
            .path()
            .app_data_dir()
            .map_err(|err| {
                HostError::new(
                    tt_runtime::error_codes::AGENT_STORAGE_IO,
                    format!("the app's data dir is unknown: {err}"),
                )
            })?
            .join("tt-agent"),
    };
    let mut builder = config.apply(AgentRuntimeBuilder::new().data_dir(data_dir))?;
    if let Some(configure) = configure {
        builder = configure(builder, app)?;
    }
    // `build` marks runs a dead process left unfinished; it runs inside the app's async runtime
    // so that whatever it starts has a reactor.
    tauri::async_runtime::block_on(async move { builder.build() })
}

/// What the plugin does on `RunEvent::Exit`: close the streams, then shut the runtime down
/// before the process ends.
fn shutdown_on_exit<R: Runtime>(app: &AppHandle<R>) {
    if let Some(state) = app.try_state::<TtAgent>() {
        let runtime = Arc::clone(state.runtime());
        state.close_streams();
        // A failed shutdown leaves the runs for the next start to mark interrupted.
        let _ = tauri::async_runtime::block_on(async move { runtime.shutdown().await });
    }
}
