//! The ports one runtime instance works with, handed in by the composition root.

use std::sync::Arc;

use tt_ports::{
    AgentInvocationRepository, AgentRunRepository, Clock, HostCommitBridge, IdGenerator,
    ModelProvider, ProfileRepository, RunJournal, WorkspaceRepository,
};

/// Every port the application needs. Cloning is cheap (all `Arc`s).
#[derive(Clone)]
pub struct RuntimeServices {
    pub runs: Arc<dyn AgentRunRepository>,
    pub invocations: Arc<dyn AgentInvocationRepository>,
    pub journal: Arc<dyn RunJournal>,
    pub workspace: Arc<dyn WorkspaceRepository>,
    pub profiles: Arc<dyn ProfileRepository>,
    pub model: Arc<dyn ModelProvider>,
    pub commit_bridge: Arc<dyn HostCommitBridge>,
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
