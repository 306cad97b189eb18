//! The plugin's config, `plugins."tt-agent"` in `tauri.conf.json`: where the runtime keeps its
//! data and which model it talks to by default. Everything else of the runtime is set in Rust
//! through `Builder::runtime`.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;
use tt_runtime::{AgentRuntimeBuilder, ConnectionSpec, HostError, ScriptedProvider, error_codes};

/// `plugins."tt-agent"` in `tauri.conf.json` (camelCase; every field optional):
///
/// ```json
/// { "dataDir": "/var/lib/my-app/agents",
///   "connection": "openai:http://127.0.0.1:8080/v1", "model": "my-model",
///   "apiKeyEnv": "MY_KEY", "stream": true }
/// ```
///
/// or, offline, `{ "script": "/path/to/script.json" }` (docs/scripted-provider.md). With
/// neither `connection` nor `script`, the app gives the provider in `Builder::runtime`, else
/// setup fails with `agent.runtime_provider_missing`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Config {
    /// The runtime's data dir; default: the app's data dir joined with `tt-agent`.
    pub data_dir: Option<PathBuf>,
    /// The default model connection, `kind:baseUrl` (`openai:…`, `anthropic:…`) or a bare kind
    /// for the provider's public endpoint (docs/providers.md).
    pub connection: Option<String>,
    /// The connection's default model.
    pub model: Option<String>,
    /// The environment variable holding the API key (default: the kind's).
    pub api_key_env: Option<String>,
    /// Stream model answers (live `model_delta` events).
    pub stream: bool,
    /// A scripted model's JSON file instead of a connection (offline demos and tests).
    pub script: Option<PathBuf>,
}

impl Config {
    /// Sets the config's provider on `builder`, when it names one.
    pub(crate) fn apply(
        &self,
        builder: AgentRuntimeBuilder,
    ) -> Result<AgentRuntimeBuilder, HostError> {
        if let Some(connection) = &self.connection {
            let invalid = |err: String| {
                HostError::new(
                    error_codes::AGENT_RUNTIME_PROVIDER_MISSING,
                    format!("plugins.tt-agent.connection `{connection}`: {err}"),
                )
            };
            let mut spec = ConnectionSpec::parse(connection)
                .map_err(|err| invalid(format!("{err:#}")))?
                .with_stream(self.stream);
            if let Some(model) = &self.model {
                spec = spec.with_model(model.clone());
            }
            if let Some(env) = &self.api_key_env {
                spec = spec.with_api_key_env(env.clone());
            }
            let provider =
                tt_runtime::build_provider(&spec).map_err(|err| invalid(format!("{err:#}")))?;
            return Ok(builder
                .provider_model_info(spec.model_info())
                .provider(provider));
        }
        if let Some(script) = &self.script {
            let provider = ScriptedProvider::from_file(script)
                .map_err(|err| HostError::new(err.code(), err.to_string()))?;
            return Ok(builder.provider(Arc::new(provider)));
        }
        Ok(builder)
    }
}
