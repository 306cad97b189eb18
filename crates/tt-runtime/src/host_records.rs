//! Reading what a run stored on [`AgentRuntime`]: any record by the reference its events
//! carry (docs/storage.md), and one agent's conversation rebuilt from them.

use tt_application::AgentConversation;
use tt_domain::error_codes;
use tt_domain::ids::{InvocationId, RunId};

use crate::dto::{HostError, HostResult};
use crate::host::AgentRuntime;

impl AgentRuntime {
    /// Any stored record of a run by the reference its events use (`argumentsRef`,
    /// `modelResponsePath`, `resultRef`, `blobs/<sha256>`, `tasks/<id>.json`,
    /// `checkpoints/<id>`, …; see docs/storage.md), read through the storage ports, so from any
    /// store. `agent.not_found` when the run has no such record.
    pub async fn read_record(
        &self,
        run_id: &str,
        reference: &str,
    ) -> HostResult<serde_json::Value> {
        self.ensure_open()?;
        let record = self
            .service
            .read_record(&RunId::from_raw(run_id), reference)
            .await?;
        record.ok_or_else(|| HostError {
            code: error_codes::AGENT_NOT_FOUND.to_string(),
            message: format!("run {run_id} has no record `{reference}`"),
        })
    }

    /// One agent's conversation as a chat: what it started from (system prompt, brief or the
    /// run's conversation), then per round its guidance, its answer (text, tool calls, tokens,
    /// cost), its tool results, injected results and reminders, and the result it returned;
    /// rebuilt from the journal and the stored records through the storage ports, so it reads
    /// a live run as far as it has gone, and a finished or interrupted one, on any store
    /// (docs/host-api.md, "An agent's conversation"). `agent.not_found` for an unknown run or
    /// agent.
    pub async fn agent_conversation(
        &self,
        run_id: &str,
        invocation_id: &str,
    ) -> HostResult<AgentConversation> {
        self.ensure_open()?;
        Ok(self
            .service
            .agent_conversation(
                &RunId::from_raw(run_id),
                &InvocationId::from_raw(invocation_id),
            )
            .await?)
    }
}
