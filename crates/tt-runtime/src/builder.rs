//! Building an [`AgentRuntime`] from adapters: userdata storage under a data dir by default, a
//! model provider, and a commit bridge.

use std::path::PathBuf;
use std::sync::Arc;
use tt_adapter_storage_userdata::UserDataStore;
use tt_application::{AgentRunService, RuntimeServices};
use tt_domain::error_codes;
use tt_domain::ids::EventId;
use tt_ports::{ChatCommitRequest, Clock, HostCommitBridge, IdGenerator, ModelProvider};

use crate::bridges::{
    CommitHandler, CommitHandlerResult, HostApiCommitBridge, TranscriptCommitBridge,
};
use crate::dto::{HostError, HostResult};
use crate::host::AgentRuntime;
use crate::named_connections::NamedConnections;
use crate::prompt_brokers::{HostApiPromptBroker, TemplatePromptBroker};
use crate::store::StoreChoice;
use crate::system::{SystemClock, UuidIds};

/// How `workspace.commit` reaches the host.
///
/// Only `HostApi` answers through the runtime's host calls (`pending_commits`,
/// `resolve_chat_commit`, the commit handler): with `Transcript` or `Custom`, those calls fail
/// with `agent.chat_commit_bridge_not_host_api` instead of silently finding nothing pending.
#[derive(Clone)]
pub enum CommitBridgeChoice {
    /// Commits wait for the host's `resolve_chat_commit` or the commit handler (the default
    /// for linked hosts).
    HostApi,
    /// Commits are recorded in the store's transcripts (`<data dir>/transcripts/<workspaceId>.jsonl`
    /// in the file store; the CLI).
    Transcript,
    /// Any other bridge: it answers every commit itself.
    Custom(Arc<dyn HostCommitBridge>),
}

impl std::fmt::Debug for CommitBridgeChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CommitBridgeChoice::HostApi => f.write_str("HostApi"),
            CommitBridgeChoice::Transcript => f.write_str("Transcript"),
            CommitBridgeChoice::Custom(_) => f.write_str("Custom"),
        }
    }
}

/// How prompts of `preset.mode = "ref"` profiles are assembled.
#[derive(Clone)]
pub enum PromptBrokerChoice {
    /// The host answers through `read_prompt_assembly_request` / `resolve_prompt_assembly`
    /// (the default for linked hosts).
    HostApi,
    /// Preset templates the store keeps (the CLI): by default the files
    /// `<data dir>/presets/<apiId>/<name>.json`, PostgreSQL's `tt_preset_templates` rows.
    Templates,
    /// Any other broker.
    Custom(Arc<dyn tt_ports::PromptAssemblyBroker>),
}

impl std::fmt::Debug for PromptBrokerChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PromptBrokerChoice::HostApi => f.write_str("HostApi"),
            PromptBrokerChoice::Templates => f.write_str("Templates"),
            PromptBrokerChoice::Custom(_) => f.write_str("Custom"),
        }
    }
}

/// Builder for [`AgentRuntime`].
#[derive(Default)]
pub struct AgentRuntimeBuilder {
    data_dir: Option<PathBuf>,
    provider: Option<Arc<dyn ModelProvider>>,
    provider_model_info: tt_ports::ConnectionModelInfo,
    commit_bridge: Option<CommitBridgeChoice>,
    commit_handler: Option<CommitHandler>,
    prompt_broker: Option<PromptBrokerChoice>,
    connections: NamedConnections,
    clock: Option<Arc<dyn Clock>>,
    ids: Option<Arc<dyn IdGenerator>>,
    read_only: bool,
    store: StoreChoice,
    host_tools: Vec<crate::tools::host_tools::HostTool>,
    mcp_client: Option<Arc<dyn tt_ports::McpClient>>,
    /// `None`: from the environment; `Some(None)`: no export.
    otel: Option<Option<crate::otel_live::OtelExportSettings>>,
}

impl std::fmt::Debug for AgentRuntimeBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRuntimeBuilder")
            .field("data_dir", &self.data_dir)
            .finish_non_exhaustive()
    }
}

impl AgentRuntimeBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Where runs, profiles and transcripts live (CLI default `./.tt-agent`).
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(dir.into());
        self
    }

    pub fn provider(mut self, provider: Arc<dyn ModelProvider>) -> Self {
        self.provider = Some(provider);
        self
    }

    pub fn commit_bridge(mut self, choice: CommitBridgeChoice) -> Self {
        self.commit_bridge = Some(choice);
        self
    }

    /// An async commit handler for the host-API bridge: the runtime calls it with each typed
    /// commit request and resolves the commit with its answer (`Ok(messageId)` or
    /// `Err(reason)`). The commit stays listed by `pending_commits` until then, and a
    /// `resolve_chat_commit` that comes first wins. A cancelled run drops the handler's work; a
    /// handler that panics or answers an empty string refuses the commit.
    /// `build()` refuses it with any bridge other than `HostApi`
    /// (`agent.commit_handler_requires_host_bridge`).
    pub fn commit_handler<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(ChatCommitRequest) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = CommitHandlerResult> + Send + 'static,
    {
        self.commit_handler = Some(Arc::new(move |request| Box::pin(handler(request))));
        self
    }

    pub fn prompt_broker(mut self, choice: PromptBrokerChoice) -> Self {
        self.prompt_broker = Some(choice);
        self
    }

    /// What the default provider's connection says about its models: its default model id,
    /// context window and prices (`ConnectionSpec::model_info`). Unset, the engine knows no
    /// window or price for the default provider and never trims a request.
    pub fn provider_model_info(mut self, info: tt_ports::ConnectionModelInfo) -> Self {
        self.provider_model_info = info;
        self
    }

    /// Where the runtime exports its runs' spans as they end (docs/observability.md); `None`
    /// exports nothing. Unset, the OpenTelemetry SDKs' variables decide
    /// (`OtelExportSettings::from_env`).
    pub fn otel_export(mut self, settings: Option<crate::otel_live::OtelExportSettings>) -> Self {
        self.otel = Some(settings);
        self
    }

    /// Registers a named model connection for profiles with `model.connectionRef = name`.
    pub fn connection(mut self, name: impl Into<String>, provider: Arc<dyn ModelProvider>) -> Self {
        self.connections
            .insert(name, provider, serde_json::Value::Null);
        self
    }

    /// Replaces the wall clock (tests, golden files).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Replaces random ids (tests, golden files).
    pub fn ids(mut self, ids: Arc<dyn IdGenerator>) -> Self {
        self.ids = Some(ids);
        self
    }

    /// Opens the data dir for reading only: the runtime can list and read runs (also runs a
    /// live process is writing) but never writes, locks or repairs anything; starting a run
    /// fails with `agent.storage_read_only`. For inspection tools.
    pub fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    /// Where runs are stored: the embedded file store under the data dir (the default) or
    /// another store, e.g. PostgreSQL from [`crate::open_store_url`] (which keeps skills,
    /// transcripts, MCP servers, connections and preset templates too). What the store does
    /// not keep (a `None` of [`crate::StoragePorts`]) stays under the data dir; a store that
    /// keeps it all leaves the data dir untouched.
    pub fn store(mut self, choice: StoreChoice) -> Self {
        self.store = choice;
        self
    }

    /// Builds the runtime. A read-write runtime first marks every run that a process which is
    /// gone left unfinished as `interrupted` (see docs/storage.md).
    ///
    /// Errors (a [`HostError`] like every host call): `agent.runtime_provider_missing`,
    /// `agent.commit_handler_requires_host_bridge`, and the storage code (for example
    /// `agent.storage_io`) when the data dir cannot be opened or its interrupted runs marked.
    /// Offers `tool` to the agents whose profiles list `host/<name>` in `tools.allow`
    /// (docs/tools.md, "Host tools"). `build()` refuses a bad name, a schema that is not an
    /// object schema, or a name registered twice (`tool.id_invalid`).
    pub fn host_tool(mut self, tool: crate::tools::host_tools::HostTool) -> Self {
        self.host_tools.push(tool);
        self
    }

    /// The MCP client that reaches registered MCP servers (docs/tools.md, "MCP servers"); by
    /// default `RmcpClient`, on the official Rust SDK. A test may give a fake.
    pub fn mcp_client(mut self, client: Arc<dyn tt_ports::McpClient>) -> Self {
        self.mcp_client = Some(client);
        self
    }

    pub fn build(self) -> HostResult<AgentRuntime> {
        let data_dir = self.data_dir.unwrap_or_else(|| PathBuf::from(".tt-agent"));
        let provider = self.provider.ok_or_else(|| {
            HostError::new(
                error_codes::AGENT_RUNTIME_PROVIDER_MISSING,
                "a model provider is required (AgentRuntimeBuilder::provider)",
            )
        })?;
        let bridge_choice = self.commit_bridge.unwrap_or(CommitBridgeChoice::HostApi);
        if self.commit_handler.is_some() && !matches!(bridge_choice, CommitBridgeChoice::HostApi) {
            return Err(HostError::new(
                error_codes::AGENT_COMMIT_HANDLER_REQUIRES_HOST_BRIDGE,
                format!(
                    "a commit handler answers through the host-API commit bridge, not {bridge_choice:?}"
                ),
            ));
        }
        let clock = self.clock.unwrap_or_else(|| Arc::new(SystemClock));
        let ids = self.ids.unwrap_or_else(|| Arc::new(UuidIds));
        let host_tools = crate::tools::host_tools::HostTools::new(Arc::clone(&clock));
        for tool in self.host_tools {
            host_tools.insert(tool)?;
        }
        let (ports, skills, transcripts) = choose_stores(self.store, &data_dir, || {
            open_data_dir(&data_dir, self.read_only, clock.as_ref(), ids.as_ref())
        })?;
        let side = SideStores::of(&ports, (skills, transcripts), &data_dir);
        let transcripts = Arc::new(TranscriptCommitBridge::new(side.transcripts));
        let tools = crate::tools::ToolRouter {
            host: host_tools,
            mcp: crate::tools::mcp_servers::McpServers::new(
                side.mcp_servers,
                self.mcp_client
                    .unwrap_or_else(|| Arc::new(tt_adapter_tools_mcp::RmcpClient::new())),
                Arc::clone(&clock),
            ),
        };
        // Only a host-API bridge is kept for the host calls: with any other bridge they fail
        // with a clear code rather than reading an empty bridge nobody feeds.
        let (commit_bridge, host_bridge): (Arc<dyn HostCommitBridge>, _) = match bridge_choice {
            CommitBridgeChoice::HostApi => {
                let bridge = Arc::new(match self.commit_handler {
                    Some(handler) => HostApiCommitBridge::with_handler(handler),
                    None => HostApiCommitBridge::default(),
                });
                (bridge.clone(), Some(bridge))
            }
            CommitBridgeChoice::Transcript => (transcripts.clone(), None),
            CommitBridgeChoice::Custom(bridge) => (bridge, None),
        };
        let host_prompts = Arc::new(HostApiPromptBroker::default());
        let prompt_broker: Arc<dyn tt_ports::PromptAssemblyBroker> =
            match self.prompt_broker.unwrap_or(PromptBrokerChoice::HostApi) {
                PromptBrokerChoice::HostApi => host_prompts.clone(),
                PromptBrokerChoice::Templates => {
                    Arc::new(TemplatePromptBroker::new(side.preset_templates.clone()))
                }
                PromptBrokerChoice::Custom(broker) => broker,
            };
        let connections = self.connections.with_store(side.connections);
        let skills = side.skills;
        let services = RuntimeServices {
            runs: ports.runs,
            invocations: ports.invocations,
            journal: ports.journal,
            workspace: ports.workspace,
            profiles: ports.profiles,
            skills: Arc::clone(&skills),
            // The server's window is asked once per model, for every agent of the runtime.
            model: crate::connections::LearnedWindows::wrap(provider),
            model_info: self.provider_model_info,
            connections: Arc::new(connections.clone()),
            commit_bridge,
            external_tools: Arc::new(tools.clone()),
            prompt_broker,
            clock,
            ids,
        };
        let otel = self
            .otel
            .unwrap_or_else(crate::otel_live::OtelExportSettings::from_env)
            .map(|settings| Arc::new(crate::otel_live::OtelLive::new(settings)));
        Ok(AgentRuntime::new(
            AgentRunService::new(services),
            host_bridge,
            host_prompts,
            transcripts,
            (skills, side.preset_templates, tools),
            connections,
            (data_dir, otel),
        ))
    }
}

/// A store's run ports, with where skills and transcripts are kept.
type ChosenStores = (
    crate::store::StoragePorts,
    Arc<dyn tt_ports::SkillRepository>,
    Arc<dyn tt_ports::TranscriptRepository>,
);

/// The run ports of `choice`, and where skills and transcripts are kept: the chosen store's,
/// else the data dir's file store, which `open_file_store` opens only when needed (always for
/// the embedded store; never for one that keeps both, as PostgreSQL does).
fn choose_stores(
    choice: StoreChoice,
    data_dir: &std::path::Path,
    open_file_store: impl FnOnce() -> HostResult<Arc<UserDataStore>>,
) -> HostResult<ChosenStores> {
    Ok(match choice {
        StoreChoice::Embedded => {
            let store = open_file_store()?;
            let description = data_dir.display().to_string();
            let ports = crate::store::StoragePorts::from_store(store.clone(), description);
            (ports, store.clone() as _, store as _)
        }
        StoreChoice::Ports(ports) => match (ports.skills.clone(), ports.transcripts.clone()) {
            (Some(skills), Some(transcripts)) => (ports, skills, transcripts),
            (skills, transcripts) => {
                let store = open_file_store()?;
                let skills = skills.unwrap_or_else(|| store.clone());
                (ports, skills, transcripts.unwrap_or(store))
            }
        },
    })
}

/// The stores a runtime keeps beside the run ports: those the chosen store keeps, else the data
/// dir's (its file store, `mcp/servers/`, `connections/`, `presets/`).
struct SideStores {
    skills: Arc<dyn tt_ports::SkillRepository>,
    transcripts: Arc<dyn tt_ports::TranscriptRepository>,
    mcp_servers: Arc<dyn tt_ports::McpServerRepository>,
    connections: Arc<dyn tt_ports::ConnectionRepository>,
    preset_templates: Arc<dyn tt_ports::PresetTemplateRepository>,
}

impl SideStores {
    /// `skills` and `transcripts` are already chosen (the store's, else the data dir's file
    /// store); the rest is what `ports` keeps, else the data dir's files.
    fn of(
        ports: &crate::store::StoragePorts,
        (skills, transcripts): (
            Arc<dyn tt_ports::SkillRepository>,
            Arc<dyn tt_ports::TranscriptRepository>,
        ),
        data_dir: &std::path::Path,
    ) -> Self {
        use tt_adapter_storage_userdata::{ConnectionFiles, McpServerFiles, PresetTemplateFiles};
        Self {
            skills,
            transcripts,
            mcp_servers: ports
                .mcp_servers
                .clone()
                .unwrap_or_else(|| Arc::new(McpServerFiles::in_data_dir(data_dir))),
            connections: ports
                .connections
                .clone()
                .unwrap_or_else(|| Arc::new(ConnectionFiles::in_data_dir(data_dir))),
            preset_templates: ports
                .preset_templates
                .clone()
                .unwrap_or_else(|| Arc::new(PresetTemplateFiles::in_data_dir(data_dir))),
        }
    }
}

/// The file store on `data_dir`: read-only, or opened for writing with the runs a dead process
/// left unfinished marked `interrupted`.
fn open_data_dir(
    data_dir: &std::path::Path,
    read_only: bool,
    clock: &dyn tt_ports::Clock,
    ids: &dyn tt_ports::IdGenerator,
) -> HostResult<Arc<UserDataStore>> {
    if read_only {
        return Ok(UserDataStore::open_read_only(data_dir.to_path_buf()));
    }
    let store = UserDataStore::open(data_dir.to_path_buf()).map_err(|err| {
        HostError::new(
            err.code(),
            format!("cannot open the data dir {}: {err}", data_dir.display()),
        )
    })?;
    store
        .recover_interrupted_runs(clock.now(), || EventId::generate(ids.next_token()))
        .map_err(|err| {
            HostError::new(
                err.code(),
                format!(
                    "cannot mark the interrupted runs of {}: {err}",
                    data_dir.display()
                ),
            )
        })?;
    Ok(store)
}
