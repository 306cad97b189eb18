//! `FakePromptBroker`: answers prompt-assembly requests from a closure (by default it places the
//! agent system prompt and the task prompt around the frozen conversation), or holds them until
//! the runtime drops them; and `FakeConnections`, a fixed set of named model connections.

use async_trait::async_trait;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::watch;
use tt_ports::{
    HostBridgeError, ModelConnections, ModelError, ModelProvider, PendingPromptAssembly,
    PromptAssemblyAnswer, PromptAssemblyBroker, PromptAssemblyRequest, ResolvedConnection,
};

type Answerer =
    dyn Fn(&PromptAssemblyRequest) -> Result<PromptAssemblyAnswer, HostBridgeError> + Send + Sync;

/// The host side of prompt assembly, for tests.
pub struct FakePromptBroker {
    answer: Mutex<Option<Arc<Answerer>>>,
    requests: Mutex<Vec<PromptAssemblyRequest>>,
    pending: Arc<watch::Sender<usize>>,
}

impl std::fmt::Debug for FakePromptBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakePromptBroker")
            .field("requests", &self.requests().len())
            .finish_non_exhaustive()
    }
}

/// The default assembly: a system message with the agent system prompt, the frozen conversation's
/// messages, then the task prompt as a user message; `contextPolicy` copied from the request.
pub fn default_assembly(request: &PromptAssemblyRequest) -> PromptAssemblyAnswer {
    let mut messages = vec![json!({"role": "system", "content": request.agent_system_prompt})];
    if let Some(frozen) = request
        .frozen_run_input_snapshot
        .get("messages")
        .and_then(Value::as_array)
    {
        messages.extend(frozen.iter().cloned());
    }
    if !request.agent_task_prompt.is_empty() {
        messages.push(json!({"role": "user", "content": request.agent_task_prompt}));
    }
    PromptAssemblyAnswer {
        prompt_snapshot: json!({"messages": messages, "contextPolicy": request.agent_context_policy}),
        assembly: json!({"preset": request.preset_ref, "engine": "fake"}),
        frozen_run_input_snapshot: None,
        generation_intent: None,
        settings: None,
    }
}

impl FakePromptBroker {
    /// Answers every request with [`default_assembly`].
    pub fn answering() -> Arc<Self> {
        Self::with(|request| Ok(default_assembly(request)))
    }

    /// Answers every request with `answer(request)`.
    pub fn with(
        answer: impl Fn(&PromptAssemblyRequest) -> Result<PromptAssemblyAnswer, HostBridgeError>
        + Send
        + Sync
        + 'static,
    ) -> Arc<Self> {
        Arc::new(Self {
            answer: Mutex::new(Some(Arc::new(answer))),
            requests: Mutex::new(Vec::new()),
            pending: Arc::new(watch::Sender::new(0)),
        })
    }

    /// Holds every request until the runtime drops it (run cancel).
    pub fn hanging() -> Arc<Self> {
        let broker = Self::answering();
        *broker.answer.lock().unwrap_or_else(PoisonError::into_inner) = None;
        broker
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<PromptAssemblyRequest> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Number of requests currently held.
    pub fn pending_count(&self) -> usize {
        *self.pending.borrow()
    }

    /// Resolves once at least `count` requests are held.
    pub async fn wait_for_pending(&self, count: usize) {
        let mut pending = self.pending.subscribe();
        let _ = pending.wait_for(|current| *current >= count).await;
    }
}

struct Held(Arc<watch::Sender<usize>>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.send_modify(|count| *count = count.saturating_sub(1));
    }
}

#[async_trait]
impl PromptAssemblyBroker for FakePromptBroker {
    async fn request_assembly(
        &self,
        request: PromptAssemblyRequest,
    ) -> Result<PendingPromptAssembly, HostBridgeError> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request.clone());
        let answer = self
            .answer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match answer {
            Some(answer) => {
                let result = answer(&request);
                Ok(Box::pin(std::future::ready(result)))
            }
            None => {
                self.pending.send_modify(|count| *count += 1);
                let held = Held(Arc::clone(&self.pending));
                Ok(Box::pin(async move {
                    let _held = held;
                    std::future::pending::<Result<PromptAssemblyAnswer, HostBridgeError>>().await
                }))
            }
        }
    }
}

/// Named connections, each a fixed provider.
#[derive(Default)]
pub struct FakeConnections {
    providers: HashMap<String, Arc<dyn ModelProvider>>,
    generation: HashMap<String, tt_domain::generation::GenerationSettings>,
    model_info: HashMap<String, tt_ports::ConnectionModelInfo>,
}

impl std::fmt::Debug for FakeConnections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeConnections")
            .field("names", &self.providers.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl FakeConnections {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the connection `name` served by `provider`.
    pub fn with(mut self, name: &str, provider: Arc<dyn ModelProvider>) -> Self {
        self.providers.insert(name.to_owned(), provider);
        self
    }

    /// Gives the connection `name` what it says about its models (window, prices).
    pub fn with_model_info(mut self, name: &str, info: tt_ports::ConnectionModelInfo) -> Self {
        self.model_info.insert(name.to_owned(), info);
        self
    }

    /// Gives the connection `name` default generation settings.
    pub fn with_generation(
        mut self,
        name: &str,
        settings: tt_domain::generation::GenerationSettings,
    ) -> Self {
        self.generation.insert(name.to_owned(), settings);
        self
    }
}

#[async_trait]
impl ModelConnections for FakeConnections {
    async fn resolve(
        &self,
        connection_ref: &str,
    ) -> Result<Option<ResolvedConnection>, ModelError> {
        Ok(self
            .providers
            .get(connection_ref)
            .map(|provider| ResolvedConnection {
                provider: Arc::clone(provider),
                description: json!({"kind": "fake", "name": connection_ref}),
                generation: self
                    .generation
                    .get(connection_ref)
                    .cloned()
                    .unwrap_or_default(),
                model_info: self
                    .model_info
                    .get(connection_ref)
                    .cloned()
                    .unwrap_or_default(),
            }))
    }
}
