//! A whole store seen through the storage ports (`StoragePorts`), and the factory an adapter
//! registers to be opened from a URL (`StoreFactory`): the composition root keeps a table of
//! factories by URL scheme and opens the one a store URL names (docs/ARCHITECTURE.md, "How to
//! add a store").

use std::sync::Arc;

use async_trait::async_trait;

use crate::connections::ConnectionRepository;
use crate::error::StorageResult;
use crate::journal::RunJournal;
use crate::mcp_servers::McpServerRepository;
use crate::presets::PresetTemplateRepository;
use crate::profiles::ProfileRepository;
use crate::runs::{AgentInvocationRepository, AgentRunRepository};
use crate::skills::SkillRepository;
use crate::transcripts::TranscriptRepository;
use crate::workspace::WorkspaceRepository;

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
    /// Where named model connections are kept; `None` keeps them in the data dir
    /// (`connections/<name>.json`).
    pub connections: Option<Arc<dyn ConnectionRepository>>,
    /// Where the template prompt broker's preset templates are kept; `None` keeps them in the
    /// data dir (`presets/<apiId>/<name>.json`).
    pub preset_templates: Option<Arc<dyn PresetTemplateRepository>>,
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
            connections: None,
            preset_templates: None,
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

    /// These ports with named model connections kept in `connections` too.
    pub fn with_connections(mut self, connections: Arc<dyn ConnectionRepository>) -> Self {
        self.connections = Some(connections);
        self
    }
}

impl StoragePorts {
    /// These ports with the template prompt broker's preset templates kept in `templates` too.
    pub fn with_preset_templates(mut self, templates: Arc<dyn PresetTemplateRepository>) -> Self {
        self.preset_templates = Some(templates);
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

/// How a store named by a URL is opened.
#[derive(Debug, Clone, Default)]
pub struct StoreOptions {
    /// How long a run stays a host's after its last heartbeat (PostgreSQL's lease); `None`
    /// keeps the store's default.
    pub lease: Option<std::time::Duration>,
}

/// Opens the stores of one or more URL schemes: what a storage adapter registers in the
/// composition root's store table (`tt_runtime::StoreRegistry`).
#[async_trait]
pub trait StoreFactory: Send + Sync {
    /// The URL schemes it opens, lower case, without `://` (`["postgres", "postgresql"]`).
    fn schemes(&self) -> Vec<String>;

    /// What a URL of its schemes looks like, for the message that lists the known schemes
    /// (`postgres://user@host:port/db`).
    fn example(&self) -> String;

    /// Opens the store `url` names (its scheme is one of [`schemes`](Self::schemes)), ready
    /// for a runtime: schema migrated, runs a dead writer left unfinished marked
    /// `interrupted`. Errors carry the store's own code (`agent.storage_io` when it cannot
    /// be reached).
    async fn open(&self, url: &str, options: &StoreOptions) -> StorageResult<StoragePorts>;
}
