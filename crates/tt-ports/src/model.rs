//! The model provider port: one completion over the canonical IR, cancellable.

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;
use tt_domain::model::{AgentModelRequest, AgentModelResponse};

use crate::error::ModelError;

#[async_trait]
pub trait ModelProvider: Send + Sync {
    /// A short name for events and errors (`scripted`, `openai`, …).
    fn name(&self) -> &str;

    /// Runs one model call. Must return `ModelError::Cancelled` promptly once `cancel` fires,
    /// aborting any in-flight request.
    async fn complete(
        &self,
        request: AgentModelRequest,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError>;

    /// Releases provider-side state of a session (`runId:invocationId`). Best effort.
    async fn close_session(&self, _session_id: &str) {}
}
