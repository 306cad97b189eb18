//! The ports one runtime instance works with, handed in by the composition root.

use std::sync::Arc;

use tt_ports::{
    AgentInvocationRepository, AgentRunRepository, Clock, ExternalTools, HostCommitBridge,
    IdGenerator, ModelConnections, ModelProvider, ProfileRepository, PromptAssemblyBroker,
    RunJournal, SkillRepository, WorkspaceRepository,
};

/// Every port the application needs. Cloning is cheap (all `Arc`s).
#[derive(Clone)]
pub struct RuntimeServices {
    pub runs: Arc<dyn AgentRunRepository>,
    pub invocations: Arc<dyn AgentInvocationRepository>,
    pub journal: Arc<dyn RunJournal>,
    pub workspace: Arc<dyn WorkspaceRepository>,
    pub profiles: Arc<dyn ProfileRepository>,
    /// Skills offered to agents through `skill.list` / `skill.search` / `skill.read`.
    pub skills: Arc<dyn SkillRepository>,
    /// The run's default provider (profiles with `model.mode = "currentPromptSnapshot"`).
    pub model: Arc<dyn ModelProvider>,
    /// What the default provider's connection says about its models (default model id,
    /// context window, prices); empty when nothing is known.
    pub model_info: tt_ports::ConnectionModelInfo,
    /// Named connections for profiles with `model.mode = "connectionRef"`.
    pub connections: Arc<dyn ModelConnections>,
    pub commit_bridge: Arc<dyn HostCommitBridge>,
    /// The host's own tools and MCP servers' tools (`host/…`, `mcp/…`; docs/tools.md).
    pub external_tools: Arc<dyn ExternalTools>,
    /// Assembles prompts for profiles with `preset.mode = "ref"`.
    pub prompt_broker: Arc<dyn PromptAssemblyBroker>,
    pub clock: Arc<dyn Clock>,
    pub ids: Arc<dyn IdGenerator>,
}

impl std::fmt::Debug for RuntimeServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeServices")
            .field("model", &self.model.name())
            .finish_non_exhaustive()
    }
}
