//! Which store a runtime keeps its runs in: the embedded file store under the data dir (the
//! default, no server needed) or another adapter seen through the storage ports, opened from a
//! URL by the factory its scheme names in a [`StoreRegistry`]: `postgres://` is PostgreSQL
//! (which keeps skills, transcripts, MCP server registrations, connections and preset templates
//! too, so its hosts keep nothing under their data dirs), `file://<dir>` the file store at
//! `<dir>`, and whatever an embedder registers (`memory://` from tt-testkit). What a store
//! does not keep (its `StoragePorts` field is `None`) stays under the data dir.

use std::sync::Arc;

use async_trait::async_trait;
use tt_domain::ids::EventId;
use tt_ports::{Clock, IdGenerator, StorageError, StorageResult, StoreFactory};
pub use tt_ports::{StoragePorts, StoreOptions};

use crate::dto::{HostError, HostResult};

/// The environment variable the CLI reads a store URL from when `--store` is not given.
pub const STORE_URL_ENV: &str = "TT_STORE_URL";

/// Where a runtime stores its runs.
#[derive(Debug, Clone, Default)]
pub enum StoreChoice {
    /// The embedded file store under the data dir.
    #[default]
    Embedded,
    /// Another store (see [`open_store_url`]).
    Ports(StoragePorts),
}

/// The environment variable the CLI reads a store's lease from, in milliseconds: how soon after
/// a host dies another may take its runs over (PostgreSQL; 15 s when not set).
pub const STORE_LEASE_MS_ENV: &str = "TT_STORE_LEASE_MS";

/// [`open_store_url_with`] with the default options.
pub async fn open_store_url(url: &str) -> HostResult<StoreChoice> {
    open_store_url_with(url, &StoreOptions::default()).await
}

/// Opens the store a URL names, through the default table ([`StoreRegistry::with_defaults`]):
/// `postgres://…` or `postgresql://…` is the PostgreSQL store (its schema migrated on the
/// way), `file://<dir>` the file store at `<dir>`. Errors: `agent.store_url_unsupported` for
/// any other scheme, and the store's own code (e.g. `agent.storage_io`) when it cannot be
/// reached. Like the file store under the data dir, it first marks `interrupted` the
/// unfinished runs whose host died (their lease expired).
pub async fn open_store_url_with(url: &str, options: &StoreOptions) -> HostResult<StoreChoice> {
    StoreRegistry::with_defaults().open(url, options).await
}

/// The table of store factories by URL scheme: what [`open_store_url`] looks a URL's scheme up
/// in. Adapters register in it ([`register`](Self::register)); [`with_defaults`](Self::with_defaults)
/// holds the ones this crate links (PostgreSQL, the file store). docs/ARCHITECTURE.md, "How
/// to add a store".
#[derive(Clone, Default)]
pub struct StoreRegistry {
    /// Scheme (lower case) → its factory; a later registration of a scheme replaces it.
    factories: std::collections::BTreeMap<String, Arc<dyn StoreFactory>>,
}

impl std::fmt::Debug for StoreRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreRegistry")
            .field("schemes", &self.schemes())
            .finish()
    }
}

impl StoreRegistry {
    /// An empty table: no URL opens.
    pub fn new() -> Self {
        Self::default()
    }

    /// The stores this crate links: `postgres` and `postgresql` (PostgreSQL), `file` (the
    /// file store at a directory).
    pub fn with_defaults() -> Self {
        Self::new()
            .register(Arc::new(PostgresFactory))
            .register(Arc::new(FileStoreFactory))
    }

    /// Registers `factory` for each of its schemes (replacing an earlier one of the same
    /// scheme).
    #[must_use]
    pub fn register(mut self, factory: Arc<dyn StoreFactory>) -> Self {
        for scheme in factory.schemes() {
            self.factories
                .insert(scheme.to_ascii_lowercase(), Arc::clone(&factory));
        }
        self
    }

    /// The schemes it opens, sorted.
    pub fn schemes(&self) -> Vec<String> {
        self.factories.keys().cloned().collect()
    }

    /// Opens the store `url` names with the factory of its scheme (compared without case).
    /// `agent.store_url_unsupported` when no factory has it (the message lists what would
    /// open); the store's own code when it cannot be opened.
    pub async fn open(&self, url: &str, options: &StoreOptions) -> HostResult<StoreChoice> {
        let factory = url
            .split_once("://")
            .and_then(|(scheme, _)| self.factories.get(&scheme.to_ascii_lowercase()));
        let Some(factory) = factory else {
            return Err(self.unsupported(url));
        };
        let ports = factory.open(url, options).await.map_err(|err| {
            HostError::new(
                err.code(),
                format!("cannot open the store {}: {err}", redact(url)),
            )
        })?;
        Ok(StoreChoice::Ports(ports))
    }

    fn unsupported(&self, url: &str) -> HostError {
        let mut examples: Vec<String> = self
            .factories
            .values()
            .map(|factory| factory.example())
            .collect();
        examples.dedup();
        let give = if examples.is_empty() {
            "no store URL opens here".to_owned()
        } else {
            format!("give {}", examples.join(" or "))
        };
        HostError::new(
            tt_domain::error_codes::AGENT_STORE_URL_UNSUPPORTED,
            format!(
                "store URL `{}` is not supported: {give}, or leave out --store for the embedded \
                 store under the data dir",
                redact(url)
            ),
        )
    }
}

/// `postgres://…` and `postgresql://…`: the PostgreSQL store, its schema migrated, the runs of
/// hosts that died marked `interrupted`, and a reader that records a dead owner's run so.
struct PostgresFactory;

#[async_trait]
impl StoreFactory for PostgresFactory {
    fn schemes(&self) -> Vec<String> {
        vec!["postgres".to_owned(), "postgresql".to_owned()]
    }

    fn example(&self) -> String {
        "postgres://user@host:port/db".to_owned()
    }

    async fn open(&self, url: &str, options: &StoreOptions) -> StorageResult<StoragePorts> {
        let mut postgres = tt_adapter_storage_postgres::PostgresOptions::default();
        if let Some(lease) = options.lease {
            postgres.lease = lease;
        }
        let store = tt_adapter_storage_postgres::PostgresStore::open_with(url, postgres).await?;
        // As the file store does when a runtime opens its data dir: runs whose host died (their
        // lease expired) are marked interrupted, so they can be resumed here.
        let ids = crate::system::UuidIds;
        store
            .recover_interrupted_runs(crate::system::SystemClock.now(), || {
                EventId::generate(ids.next_token())
            })
            .await?;
        // A run whose owner dies while this runtime follows or waits on it is recorded
        // `interrupted` by the read that finds it so (docs/host-api.md, "PostgreSQL for
        // embedders").
        let store = Arc::new(store.with_observed_recovery(
            Arc::new(crate::system::SystemClock),
            Arc::new(crate::system::UuidIds),
        ));
        Ok(StoragePorts::from_store(Arc::clone(&store), redact(url))
            .with_skills(Arc::clone(&store) as _)
            .with_mcp_servers(Arc::clone(&store) as _)
            .with_connections(Arc::clone(&store) as _)
            .with_preset_templates(Arc::clone(&store) as _)
            .with_transcripts(store))
    }
}

/// `file://<dir>`: the file store at `<dir>` (created when missing), with its skills,
/// transcripts, MCP servers, connections and preset templates, its runs that a dead process left unfinished
/// marked `interrupted`. For a store apart from the data dir; the data dir's own needs no URL.
struct FileStoreFactory;

#[async_trait]
impl StoreFactory for FileStoreFactory {
    fn schemes(&self) -> Vec<String> {
        vec!["file".to_owned()]
    }

    fn example(&self) -> String {
        "file:///path/to/dir".to_owned()
    }

    async fn open(&self, url: &str, _options: &StoreOptions) -> StorageResult<StoragePorts> {
        let dir = url
            .split_once("://")
            .map(|(_, path)| path)
            .filter(|path| !path.is_empty())
            .ok_or_else(|| {
                StorageError::Domain(tt_domain::DomainError::new(
                    tt_domain::error_codes::AGENT_STORE_URL_INVALID,
                    format!("`{url}` names no directory: give file:///path/to/dir"),
                ))
            })?;
        let dir = std::path::PathBuf::from(dir);
        let store = tt_adapter_storage_userdata::UserDataStore::open(dir.clone())?;
        let ids = crate::system::UuidIds;
        store.recover_interrupted_runs(crate::system::SystemClock.now(), || {
            EventId::generate(ids.next_token())
        })?;
        Ok(
            StoragePorts::from_store(Arc::clone(&store), dir.display().to_string())
                .with_skills(Arc::clone(&store) as _)
                .with_transcripts(store)
                .with_mcp_servers(Arc::new(
                    tt_adapter_storage_userdata::McpServerFiles::in_data_dir(&dir),
                ))
                .with_connections(Arc::new(
                    tt_adapter_storage_userdata::ConnectionFiles::in_data_dir(&dir),
                ))
                .with_preset_templates(Arc::new(
                    tt_adapter_storage_userdata::PresetTemplateFiles::in_data_dir(&dir),
                )),
        )
    }
}

/// `url` with any password replaced by `***`.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, tail) = match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn passwords_never_show() {
        assert_eq!(
            redact("postgres://tt:secret@127.0.0.1:5432/tt"),
            "postgres://tt:***@127.0.0.1:5432/tt"
        );
        assert_eq!(
            redact("postgres://tt@127.0.0.1/tt"),
            "postgres://tt@127.0.0.1/tt"
        );
        assert_eq!(redact("postgres://h/db"), "postgres://h/db");
    }
}
