//! Which store a runtime keeps its runs in: the embedded file store under the data dir (the
//! default, no server needed) or another adapter seen through the five storage ports, such as
//! PostgreSQL opened from a `postgres://` URL ([`open_store_url`]), which keeps skills,
//! transcripts and MCP server registrations too. Connections and preset templates stay under the data dir in either case.

use std::sync::Arc;
use tt_domain::error_codes;

use tt_domain::ids::EventId;
use tt_ports::{
    AgentInvocationRepository, AgentRunRepository, Clock, IdGenerator, McpServerRepository,
    ProfileRepository, RunJournal, SkillRepository, TranscriptRepository, WorkspaceRepository,
};

use crate::dto::{HostError, HostResult};

/// The environment variable the CLI reads a store URL from when `--store` is not given.
pub const STORE_URL_ENV: &str = "TT_STORE_URL";

/// One storage adapter seen through each storage port.
#[derive(Clone)]
pub struct StoragePorts {
    pub runs: Arc<dyn AgentRunRepository>,
    pub invocations: Arc<dyn AgentInvocationRepository>,
    pub journal: Arc<dyn RunJournal>,
    pub workspace: Arc<dyn WorkspaceRepository>,
    pub profiles: Arc<dyn ProfileRepository>,
    /// Where skills are kept; `None` keeps them in the data dir's file store.
    pub skills: Option<Arc<dyn SkillRepository>>,
    /// Where the transcript commit bridge keeps what it published; `None` keeps it in the data
    /// dir's file store.
    pub transcripts: Option<Arc<dyn TranscriptRepository>>,
    /// Where registered MCP servers are kept; `None` keeps them in the data dir
    /// (`mcp/servers/`).
    pub mcp_servers: Option<Arc<dyn McpServerRepository>>,
    /// Where the runs are, for messages (a URL without its password).
    pub description: String,
}

impl StoragePorts {
    /// Wraps one store that implements the five storage ports.
    pub fn from_store<S>(store: Arc<S>, description: impl Into<String>) -> Self
    where
        S: AgentRunRepository
            + AgentInvocationRepository
            + RunJournal
            + WorkspaceRepository
            + ProfileRepository
            + 'static,
    {
        Self {
            runs: store.clone(),
            invocations: store.clone(),
            journal: store.clone(),
            workspace: store.clone(),
            profiles: store,
            skills: None,
            transcripts: None,
            mcp_servers: None,
            description: description.into(),
        }
    }

    /// These ports with skills kept in `skills` too.
    pub fn with_skills(mut self, skills: Arc<dyn SkillRepository>) -> Self {
        self.skills = Some(skills);
        self
    }

    /// These ports with MCP servers kept in `mcp_servers` too.
    pub fn with_mcp_servers(mut self, mcp_servers: Arc<dyn McpServerRepository>) -> Self {
        self.mcp_servers = Some(mcp_servers);
        self
    }

    /// These ports with transcripts kept in `transcripts` too.
    pub fn with_transcripts(mut self, transcripts: Arc<dyn TranscriptRepository>) -> Self {
        self.transcripts = Some(transcripts);
        self
    }
}

impl std::fmt::Debug for StoragePorts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoragePorts")
            .field("description", &self.description)
            .finish_non_exhaustive()
    }
}

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

/// How a store named by a URL is opened.
#[derive(Debug, Clone, Default)]
pub struct StoreOptions {
    /// How long a run stays a host's after its last heartbeat (PostgreSQL's lease); `None`
    /// keeps the store's default.
    pub lease: Option<std::time::Duration>,
}

/// [`open_store_url_with`] with the default options.
pub async fn open_store_url(url: &str) -> HostResult<StoreChoice> {
    open_store_url_with(url, &StoreOptions::default()).await
}

/// Opens the store a URL names: `postgres://…` or `postgresql://…` is the PostgreSQL store
/// (its schema migrated on the way). Errors: `agent.store_url_unsupported` for any other
/// scheme, and the store's own code (e.g. `agent.storage_io`) when it cannot be reached.
/// Like the file store, it first marks `interrupted` the unfinished runs whose host died
/// (their lease expired).
pub async fn open_store_url_with(url: &str, options: &StoreOptions) -> HostResult<StoreChoice> {
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(HostError::new(
            error_codes::AGENT_STORE_URL_UNSUPPORTED,
            format!(
                "store URL `{}` is not supported: give postgres://user@host:port/db, or leave \
                 out --store for the embedded store under the data dir",
                redact(url)
            ),
        ));
    }
    let mut postgres = tt_adapter_storage_postgres::PostgresOptions::default();
    if let Some(lease) = options.lease {
        postgres.lease = lease;
    }
    let store = tt_adapter_storage_postgres::PostgresStore::open_with(url, postgres)
        .await
        .map_err(|err| {
            HostError::new(
                err.code(),
                format!("cannot open the store {}: {err}", redact(url)),
            )
        })?;
    // As the file store does when a runtime opens its data dir: runs whose host died (their
    // lease expired) are marked interrupted, so they can be resumed here.
    let ids = crate::system::UuidIds;
    store
        .recover_interrupted_runs(crate::system::SystemClock.now(), || {
            EventId::generate(&ids.next_token())
        })
        .await
        .map_err(|err| {
            HostError::new(
                err.code(),
                format!("cannot mark the interrupted runs of {}: {err}", redact(url)),
            )
        })?;
    // A run whose owner dies while this runtime follows or waits on it is recorded
    // `interrupted` by the read that finds it so (docs/host-api.md, "PostgreSQL for embedders").
    let store = Arc::new(store.with_observed_recovery(
        Arc::new(crate::system::SystemClock),
        Arc::new(crate::system::UuidIds),
    ));
    Ok(StoreChoice::Ports(
        StoragePorts::from_store(Arc::clone(&store), redact(url))
            .with_skills(Arc::clone(&store) as _)
            .with_mcp_servers(Arc::clone(&store) as _)
            .with_transcripts(store),
    ))
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
