//! Where the CLI's runtimes keep runs: the data dir and the store chosen by `--store` or
//! `TT_STORE_URL`, shared by every command.

use anyhow::Context as _;
use std::path::PathBuf;
use std::sync::Arc;
use tt_runtime::{AgentRuntimeBuilder, CommitBridgeChoice, ScriptedProvider, StoreChoice};

/// Where the CLI's runtimes keep runs: the data dir, and the store chosen by `--store` or
/// `TT_STORE_URL` (the embedded store under the data dir when neither is given).
pub(crate) struct Storage {
    pub(crate) data_dir: PathBuf,
    store: StoreChoice,
    pub(crate) url: Option<String>,
}

impl Storage {
    pub(crate) async fn open(data_dir: PathBuf, url: Option<String>) -> anyhow::Result<Self> {
        let url = url
            .or_else(|| std::env::var(tt_runtime::STORE_URL_ENV).ok())
            .filter(|url| !url.trim().is_empty());
        let store = match &url {
            Some(url) => tt_runtime::open_store_url_with(url, &store_options()?).await?,
            None => StoreChoice::Embedded,
        };
        Ok(Self {
            data_dir,
            store,
            url: url.map(|url| tt_runtime::redact_store_url(&url)),
        })
    }

    /// A builder on this data dir and store.
    pub(crate) fn builder(&self) -> AgentRuntimeBuilder {
        AgentRuntimeBuilder::new()
            .data_dir(&self.data_dir)
            .store(self.store.clone())
    }

    /// [`Storage::builder`] running `provider`, with commits published to the transcript and
    /// prompts from the stored templates: the runtime of the commands that run agents.
    pub(crate) fn running(
        &self,
        provider: Arc<dyn tt_runtime::ModelProvider>,
    ) -> AgentRuntimeBuilder {
        self.builder()
            .provider(provider)
            .commit_bridge(CommitBridgeChoice::Transcript)
            .prompt_broker(tt_runtime::PromptBrokerChoice::Templates)
    }

    /// A runtime for read-only commands: storage only, opened for reading (safe beside a process
    /// that is writing the same data dir), no model is ever called.
    pub(crate) fn inspect_runtime(&self) -> anyhow::Result<tt_runtime::AgentRuntime> {
        Ok(self.idle_builder()?.read_only().build()?)
    }

    /// A runtime that may write the data dir but runs no model (for `cancel` and `abandon`): a run another
    /// process executes stays locked to it, so writing to it is refused with `agent.run_locked`.
    pub(crate) fn writer_runtime(&self) -> anyhow::Result<tt_runtime::AgentRuntime> {
        Ok(self.idle_builder()?.build()?)
    }

    /// [`Storage::builder`] with a model that has no agents (never called) and commits
    /// published to the transcript.
    fn idle_builder(&self) -> anyhow::Result<AgentRuntimeBuilder> {
        let idle = ScriptedProvider::from_json_str(r#"{"schemaVersion":1,"agents":{}}"#)
            .context("building the idle model")?;
        Ok(self
            .builder()
            .provider(Arc::new(idle))
            .commit_bridge(CommitBridgeChoice::Transcript))
    }

    /// `data dir: …` and, with another store, `store: …`.
    pub(crate) fn describe(&self) -> String {
        match &self.url {
            Some(url) => format!("data dir: {}\nstore: {url}", self.data_dir.display()),
            None => format!("data dir: {}", self.data_dir.display()),
        }
    }
}

/// The store options from the environment: `TT_STORE_LEASE_MS`.
fn store_options() -> anyhow::Result<tt_runtime::StoreOptions> {
    let lease =
        match std::env::var(tt_runtime::STORE_LEASE_MS_ENV) {
            Ok(text) => {
                let millis: u64 = text.trim().parse().ok().filter(|ms| *ms >= 100).ok_or_else(|| {
                anyhow::anyhow!(
                    "{} must be a whole number of milliseconds, at least 100 (it is `{text}`)",
                    tt_runtime::STORE_LEASE_MS_ENV
                )
            })?;
                Some(std::time::Duration::from_millis(millis))
            }
            Err(_) => None,
        };
    Ok(tt_runtime::StoreOptions { lease })
}
