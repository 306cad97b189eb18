//! A model held at a gate: it wraps any provider and makes each call wait for a permit, so a
//! test decides when each model call may go on (`add_permits`), without timing.

use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tt_domain::model::{AgentModelRequest, AgentModelResponse};
use tt_ports::{ModelError, ModelProvider};

/// Each `complete` takes one permit of `gate` (for good), then asks `inner`. Named `gated`.
pub struct GatedModel {
    pub inner: Arc<dyn ModelProvider>,
    pub gate: Arc<Semaphore>,
}

impl GatedModel {
    /// `inner` behind a gate with no permits yet; the gate, to hand out permits.
    pub fn closed(inner: Arc<dyn ModelProvider>) -> (Arc<Self>, Arc<Semaphore>) {
        let gate = Arc::new(Semaphore::new(0));
        let model = Arc::new(Self {
            inner,
            gate: Arc::clone(&gate),
        });
        (model, gate)
    }
}

#[async_trait]
impl ModelProvider for GatedModel {
    fn name(&self) -> &str {
        "gated"
    }

    async fn complete(
        &self,
        request: AgentModelRequest,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        if let Ok(permit) = self.gate.acquire().await {
            permit.forget();
        }
        self.inner.complete(request, cancel).await
    }
}
