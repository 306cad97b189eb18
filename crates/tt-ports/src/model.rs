//! The model provider port: one completion over the canonical IR, cancellable.

use async_trait::async_trait;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tt_domain::model::{AgentModelRequest, AgentModelResponse, ModelDelta};

use crate::error::ModelError;

/// Receives partial output while a streamed call is in flight. Must not block.
pub trait ModelDeltaSink: Send + Sync {
    fn delta(&self, delta: ModelDelta);
}

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

    /// Like `complete`, forwarding partial output to `sink` as it arrives. The returned response
    /// is the complete one (tool-call fragments reassembled exactly). Providers that cannot
    /// stream keep this default, which forwards nothing.
    async fn stream(
        &self,
        request: AgentModelRequest,
        sink: Arc<dyn ModelDeltaSink>,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        let _ = sink;
        self.complete(request, cancel).await
    }

    /// Releases provider-side state of a session (`runId:invocationId`). Best effort.
    async fn close_session(&self, _session_id: &str) {}
}
