//! Where the CLI's runtimes keep runs: the data dir and the store chosen by `--store` or
//! `TT_STORE_URL`, shared by every command.

use std::path::PathBuf;
use tt_runtime::{AgentRuntimeBuilder, StoreChoice};

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
