//! Named model connections, resolved by a profile's `model.connectionRef`: those registered
//! with the builder, then the connection documents of the store's `ConnectionRepository`
//! (by default the connection files `<data dir>/connections/<name>.json`).

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use tt_domain::generation::GenerationSettings;
use tt_ports::{
    ConnectionRepository, ModelConnections, ModelError, ModelProvider, ResolvedConnection,
};

/// A provider, its non-secret description, its default generation settings and what it says
/// about its models.
#[derive(Clone)]
struct Entry {
    provider: Arc<dyn ModelProvider>,
    description: Value,
    generation: GenerationSettings,
    model_info: tt_ports::ConnectionModelInfo,
}

/// Connections by name: registered ones (name → provider + a non-secret description for
/// events), then, if a store is set, the documents it keeps, built on first use.
#[derive(Default, Clone)]
pub(crate) struct NamedConnections {
    entries: HashMap<String, Entry>,
    stored: Option<Arc<dyn ConnectionRepository>>,
    built: Arc<std::sync::Mutex<HashMap<String, Entry>>>,
}

/// A connection file: `{"connection": "openai:http://127.0.0.1:8080/v1", "model": "local",
/// "apiKeyEnv": "OPENAI_API_KEY", "stream": true, "timeoutSecs": 300, "headerTimeoutSecs":
/// 120, "callDeadlineSecs": 300, "generation": {"temperature": 0.7}, "dropUnsupportedSettings":
/// true}` (all but `connection` optional). The key itself never goes in the
/// file, only the variable's name.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ConnectionFile {
    pub connection: String,
    pub model: Option<String>,
    pub api_key_env: Option<String>,
    #[serde(default)]
    pub stream: bool,
    pub timeout_secs: Option<u64>,
    /// The longest wait for a response's headers.
    pub header_timeout_secs: Option<u64>,
    /// The deadline of one model call, attempts included, under a profile's own.
    pub call_deadline_secs: Option<u64>,
    /// Default generation settings of the connection's requests (validated when read).
    #[serde(default)]
    pub generation: GenerationSettings,
    /// The context window of the connection's models (at least 256 tokens).
    pub context_window_tokens: Option<u64>,
    /// US dollars per million tokens by model id (`"*"`: any model of the connection).
    #[serde(default)]
    pub prices: tt_domain::cost::PriceTable,
    /// Drop generation settings the provider does not take, with a journaled warning, instead
    /// of refusing them (LiteLLM's `drop_params`).
    #[serde(default)]
    pub drop_unsupported_settings: bool,
}

impl ConnectionFile {
    pub(crate) fn to_spec(&self) -> anyhow::Result<crate::connections::ConnectionSpec> {
        let mut spec =
            crate::connections::ConnectionSpec::parse(&self.connection)?.with_stream(self.stream);
        if let Some(model) = &self.model {
            spec = spec.with_model(model.clone());
        }
        if let Some(env) = &self.api_key_env {
            spec = spec.with_api_key_env(env.clone());
        }
        if let Some(secs) = self.timeout_secs {
            spec = spec.with_request_timeout(std::time::Duration::from_secs(secs));
        }
        if let Some(secs) = self.header_timeout_secs {
            spec = spec.with_header_timeout(std::time::Duration::from_secs(secs));
        }
        if let Some(secs) = self.call_deadline_secs {
            anyhow::ensure!(secs >= 1, "callDeadlineSecs must be at least 1");
            spec = spec.with_call_deadline(std::time::Duration::from_secs(secs));
        }
        self.generation
            .validate("generation")
            .map_err(|err| anyhow::anyhow!("{err}"))?;
        if let Some(tokens) = self.context_window_tokens {
            anyhow::ensure!(
                tokens >= tt_domain::profile::MIN_CONTEXT_WINDOW_TOKENS,
                "contextWindowTokens must be at least {}",
                tt_domain::profile::MIN_CONTEXT_WINDOW_TOKENS
            );
            spec = spec.with_context_window_tokens(tokens);
        }
        if let Some((model, _)) = self.prices.iter().find(|(_, price)| !price.is_valid()) {
            anyhow::bail!("prices.{model}: every price must be a number >= 0");
        }
        Ok(spec
            .with_drop_unsupported_settings(self.drop_unsupported_settings)
            .with_generation(self.generation.clone())
            .with_prices(self.prices.clone()))
    }
}

impl std::fmt::Debug for NamedConnections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&String> = self.entries.keys().collect();
        names.sort();
        f.debug_struct("NamedConnections")
            .field("names", &names)
            .finish()
    }
}

impl NamedConnections {
    pub(crate) fn insert(
        &mut self,
        name: impl Into<String>,
        provider: Arc<dyn ModelProvider>,
        description: Value,
    ) {
        self.insert_with_generation(name, provider, description, GenerationSettings::default());
    }

    /// Registers a connection whose requests start from `generation`.
    pub(crate) fn insert_with_generation(
        &mut self,
        name: impl Into<String>,
        provider: Arc<dyn ModelProvider>,
        description: Value,
        generation: GenerationSettings,
    ) {
        self.entries.insert(
            name.into(),
            Entry {
                provider: crate::connections::LearnedWindows::wrap(provider),
                description,
                generation,
                model_info: tt_ports::ConnectionModelInfo::default(),
            },
        );
    }

    /// Every connection a run or profile may name, sorted by name: the registered ones, then
    /// the stored documents a registered name does not hide. A document that cannot be read
    /// or parsed is listed with its problem, never skipped in silence; no provider is built.
    /// A store that cannot list its names adds none.
    pub(crate) async fn list(&self) -> Vec<crate::dto::ConnectionSummary> {
        use crate::dto::{ConnectionSource, ConnectionSummary};
        let mut listed: Vec<ConnectionSummary> = self
            .entries
            .iter()
            .map(|(name, entry)| ConnectionSummary {
                name: name.clone(),
                source: ConnectionSource::Registered,
                description: entry.described(name),
                problem: None,
            })
            .collect();
        let names = match &self.stored {
            Some(stored) => stored.list_connection_names().await.unwrap_or_default(),
            None => Vec::new(),
        };
        for name in names {
            if self.entries.contains_key(&name) {
                continue;
            }
            let (description, problem) = match self.read_spec(&name).await {
                Ok(Some(spec)) => {
                    let mut description = spec.description();
                    description["name"] = json!(name);
                    (description, None)
                }
                // Removed since it was listed.
                Ok(None) => continue,
                Err(problem) => (json!({"name": name}), Some(problem)),
            };
            listed.push(ConnectionSummary {
                name,
                source: ConnectionSource::File,
                description,
                problem,
            });
        }
        listed.sort_by(|a, b| a.name.cmp(&b.name));
        listed
    }

    /// Also look for the connection documents `stored` keeps.
    pub(crate) fn with_store(mut self, stored: Arc<dyn ConnectionRepository>) -> Self {
        self.stored = Some(stored);
        self
    }

    /// Stores `document` as the connection `name` once it parses and its provider could be
    /// built from it, replacing a stored one (this process builds it anew at its next use).
    /// Returns the summary `list` shows of it. `agent.connection_name_registered` for a
    /// registered name, `agent.connection_invalid` for a document that is not a connection,
    /// the store's code (`agent.storage_segment_invalid` for a name that is not a storage
    /// segment) when it cannot be stored.
    pub(crate) async fn save(
        &self,
        name: &str,
        document: &Value,
    ) -> crate::dto::HostResult<crate::dto::ConnectionSummary> {
        use crate::dto::{ConnectionSource, ConnectionSummary, HostError};
        use tt_domain::error_codes;
        self.refuse_registered(name)?;
        let invalid = |err: String| {
            HostError::new(
                error_codes::AGENT_CONNECTION_INVALID,
                format!("connection `{name}`: {err}"),
            )
        };
        let file = ConnectionFile::deserialize(document).map_err(|err| invalid(err.to_string()))?;
        let spec = file.to_spec().map_err(|err| invalid(err.to_string()))?;
        crate::connections::build_provider(&spec).map_err(|err| invalid(err.to_string()))?;
        let text =
            serde_json::to_string_pretty(document).map_err(|err| invalid(err.to_string()))?;
        let stored = self.store()?;
        stored
            .put_connection(name, &text)
            .await
            .map_err(|err| HostError::new(err.code(), format!("connection `{name}`: {err}")))?;
        self.built_entries().remove(name);
        let mut description = spec.description();
        description["name"] = json!(name);
        Ok(ConnectionSummary {
            name: name.to_owned(),
            source: ConnectionSource::File,
            description,
            problem: None,
        })
    }

    /// Removes the stored connection `name` (runs that already use it keep their provider).
    /// `agent.connection_name_registered` for a registered name,
    /// `agent.model_connection_not_found` when the store keeps none of that name.
    pub(crate) async fn remove(&self, name: &str) -> crate::dto::HostResult<()> {
        use crate::dto::HostError;
        use tt_domain::error_codes;
        self.refuse_registered(name)?;
        let removed = self
            .store()?
            .remove_connection(name)
            .await
            .map_err(|err| HostError::new(err.code(), format!("connection `{name}`: {err}")))?;
        self.built_entries().remove(name);
        if removed {
            Ok(())
        } else {
            Err(HostError::new(
                error_codes::AGENT_MODEL_CONNECTION_NOT_FOUND,
                format!("no stored connection is named `{name}`"),
            ))
        }
    }

    fn refuse_registered(&self, name: &str) -> crate::dto::HostResult<()> {
        if self.entries.contains_key(name) {
            return Err(crate::dto::HostError::new(
                tt_domain::error_codes::AGENT_CONNECTION_NAME_REGISTERED,
                format!("`{name}` is a connection registered with the runtime, not a stored one"),
            ));
        }
        Ok(())
    }

    fn store(&self) -> crate::dto::HostResult<&Arc<dyn ConnectionRepository>> {
        self.stored.as_ref().ok_or_else(|| {
            crate::dto::HostError::new(
                tt_domain::error_codes::AGENT_MODEL_CONNECTION_NOT_FOUND,
                "this runtime keeps no stored connections",
            )
        })
    }

    /// Also look for `<dir>/<name>.json` connection files.
    #[cfg(test)]
    pub(crate) fn with_directory(self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.with_store(Arc::new(tt_adapter_storage_userdata::ConnectionFiles::new(
            dir,
        )))
    }

    /// The stored document of `name` parsed into a spec; `Ok(None)` when there is none, the
    /// problem as text when it cannot be read or used.
    async fn read_spec(
        &self,
        name: &str,
    ) -> Result<Option<crate::connections::ConnectionSpec>, String> {
        let Some(stored) = &self.stored else {
            return Ok(None);
        };
        let Some(text) = stored
            .read_connection(name)
            .await
            .map_err(|err| err.to_string())?
        else {
            return Ok(None);
        };
        let file: ConnectionFile = serde_json::from_str(&text).map_err(|err| err.to_string())?;
        file.to_spec().map(Some).map_err(|err| err.to_string())
    }

    /// The stored connection `name`, its provider built once and kept.
    async fn load_stored(&self, name: &str) -> Result<Option<Entry>, ModelError> {
        if self.stored.is_none() || !tt_domain::ids::is_valid_storage_segment(name) {
            return Ok(None);
        }
        if let Some(entry) = self.built_entries().get(name) {
            return Ok(Some(entry.clone()));
        }
        let Some(spec) = self
            .read_spec(name)
            .await
            .map_err(|err| ModelError::Other(format!("connection `{name}`: {err}")))?
        else {
            return Ok(None);
        };
        let provider = crate::connections::build_provider(&spec)
            .map_err(|err| ModelError::Other(format!("connection `{name}`: {err}")))?;
        let provider = crate::connections::LearnedWindows::wrap(provider);
        let mut description = spec.description();
        description["name"] = json!(name);
        let entry = Entry {
            provider,
            description,
            model_info: spec.model_info(),
            generation: spec.generation,
        };
        // Two first uses at once: the first one built is kept, so every run shares it.
        let mut built = self.built_entries();
        let kept = built.entry(name.to_owned()).or_insert(entry);
        Ok(Some(kept.clone()))
    }

    fn built_entries(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.built
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Entry {
    /// Its description, or its name and provider when it was registered with none.
    fn described(&self, name: &str) -> Value {
        if self.description.is_null() {
            json!({"name": name, "provider": self.provider.name()})
        } else {
            self.description.clone()
        }
    }
}

#[async_trait]
impl ModelConnections for NamedConnections {
    async fn resolve(
        &self,
        connection_ref: &str,
    ) -> Result<Option<ResolvedConnection>, ModelError> {
        let entry = match self.entries.get(connection_ref) {
            Some(entry) => ResolvedConnection {
                provider: Arc::clone(&entry.provider),
                description: entry.described(connection_ref),
                generation: entry.generation.clone(),
                model_info: entry.model_info.clone(),
            },
            None => match self.load_stored(connection_ref).await? {
                Some(entry) => ResolvedConnection {
                    provider: entry.provider,
                    description: entry.description,
                    generation: entry.generation,
                    model_info: entry.model_info,
                },
                None => return Ok(None),
            },
        };
        Ok(Some(entry))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn connection_files_are_found_by_name_and_built_once() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("local.json"),
            r#"{"connection": "openai:http://127.0.0.1:9/v1", "model": "m", "stream": true}"#,
        )
        .unwrap();
        std::fs::write(
            dir.path().join("broken.json"),
            r#"{"connection": "nope:x"}"#,
        )
        .unwrap();
        let connections = NamedConnections::default().with_directory(dir.path());
        let first = connections.resolve("local").await.unwrap().unwrap();
        assert_eq!(first.description["name"], "local");
        let second = connections.resolve("local").await.unwrap().unwrap();
        assert!(Arc::ptr_eq(&first.provider, &second.provider));
        assert!(connections.resolve("missing").await.unwrap().is_none());
        assert!(connections.resolve("../escape").await.unwrap().is_none());
        assert!(connections.resolve("broken").await.is_err());
    }

    #[tokio::test]
    async fn a_connection_file_sets_its_header_timeout_and_call_deadline() {
        let file: ConnectionFile = serde_json::from_str(
            r#"{"connection": "openai:http://127.0.0.1:9/v1", "headerTimeoutSecs": 30, "callDeadlineSecs": 90}"#,
        )
        .unwrap();
        let spec = file.to_spec().unwrap();
        assert_eq!(
            spec.limits.header_timeout,
            std::time::Duration::from_secs(30)
        );
        assert_eq!(
            spec.model_info().call_deadline,
            Some(std::time::Duration::from_secs(90))
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("slow.json"),
            r#"{"connection": "openai:http://127.0.0.1:9/v1", "callDeadlineSecs": 90}"#,
        )
        .unwrap();
        let connections = NamedConnections::default().with_directory(dir.path());
        let resolved = connections.resolve("slow").await.unwrap().unwrap();
        assert_eq!(
            resolved.model_info.call_deadline,
            Some(std::time::Duration::from_secs(90))
        );
        let zero: ConnectionFile = serde_json::from_str(
            r#"{"connection": "openai:http://127.0.0.1:9/v1", "callDeadlineSecs": 0}"#,
        )
        .unwrap();
        assert!(zero.to_spec().is_err());
    }

    #[test]
    fn a_connection_file_may_drop_settings_its_provider_does_not_take() {
        let file: ConnectionFile = serde_json::from_str(
            r#"{"connection": "anthropic:http://127.0.0.1:9", "dropUnsupportedSettings": true}"#,
        )
        .unwrap();
        let spec = file.to_spec().unwrap();
        assert_eq!(
            spec.unsupported_settings,
            tt_ports::UnsupportedSettings::Drop
        );
        assert_eq!(spec.description()["dropUnsupportedSettings"], true);
        let default: ConnectionFile =
            serde_json::from_str(r#"{"connection": "anthropic:http://127.0.0.1:9"}"#).unwrap();
        assert_eq!(
            default.to_spec().unwrap().unsupported_settings,
            tt_ports::UnsupportedSettings::Refuse
        );
    }

    #[tokio::test]
    async fn the_list_shows_registered_names_and_files_with_their_problems() {
        use crate::dto::ConnectionSource;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("local.json"),
            r#"{"connection": "openai:http://127.0.0.1:9/v1", "model": "m"}"#,
        )
        .unwrap();
        std::fs::write(dir.path().join("broken.json"), r#"{"connection": 1}"#).unwrap();
        std::fs::write(dir.path().join("shadowed.json"), r#"{"connection": 1}"#).unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not a connection").unwrap();
        let mut connections = NamedConnections::default();
        let provider: Arc<dyn ModelProvider> =
            Arc::new(tt_adapter_provider_scripted::FnProvider::new(|_| {
                Ok(tt_adapter_provider_scripted::ModelReply::text("unused"))
            }));
        connections.insert("shadowed", provider, Value::Null);
        let listed = connections.with_directory(dir.path()).list().await;
        let names: Vec<_> = listed.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["broken", "local", "shadowed"]);
        assert_eq!(listed[0].source, ConnectionSource::File);
        assert!(listed[0].problem.is_some());
        assert_eq!(listed[1].description["model"], "m");
        assert_eq!(listed[1].description["apiKeyEnv"], "OPENAI_API_KEY");
        assert_eq!(listed[1].problem, None);
        assert_eq!(listed[2].source, ConnectionSource::Registered);
        assert_eq!(listed[2].description["provider"], "scripted");
    }
}
