//! Model connections: `kind:baseUrl` specs (`openai:http://127.0.0.1:8080/v1`,
//! `anthropic:https://api.anthropic.com`) and building the HTTP provider adapter for one.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use serde_json::json;
use std::collections::HashMap;
use tt_adapter_provider_anthropic::{
    ANTHROPIC_DEFAULT_BASE_URL, AnthropicConfig, AnthropicProvider,
};
use tt_adapter_provider_openai::{HttpLimits, OpenAiConfig, OpenAiProvider};
use tt_domain::generation::GenerationSettings;
use tt_domain::model::{AgentModelRequest, AgentModelResponse};
use tt_ports::{
    CancellationToken, ModelDeltaSink, ModelError, ModelProvider, ServerContextWindow,
    UnsupportedSettings,
};

use crate::system::SystemClock;

/// The base URL of `openai` without one.
pub(crate) const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// How long one model request (one attempt) may take, streamed or not: no longer than the
/// default deadline of a whole model call (`DEFAULT_MODEL_CALL_DEADLINE_SECONDS`, 300 s).
pub(crate) const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// Which wire protocol a connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionKind {
    /// OpenAI Chat Completions and every compatible server (llama.cpp, vLLM, Ollama, …).
    Openai,
    /// Anthropic Messages.
    Anthropic,
}

impl ConnectionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ConnectionKind::Openai => "openai",
            ConnectionKind::Anthropic => "anthropic",
        }
    }

    /// The environment variable the API key is read from unless another is named.
    pub fn default_api_key_env(self) -> &'static str {
        match self {
            ConnectionKind::Openai => "OPENAI_API_KEY",
            ConnectionKind::Anthropic => "ANTHROPIC_API_KEY",
        }
    }

    pub fn default_base_url(self) -> &'static str {
        match self {
            ConnectionKind::Openai => OPENAI_DEFAULT_BASE_URL,
            ConnectionKind::Anthropic => ANTHROPIC_DEFAULT_BASE_URL,
        }
    }
}

impl FromStr for ConnectionKind {
    type Err = anyhow::Error;

    fn from_str(text: &str) -> anyhow::Result<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "openai" | "openai-compatible" => Ok(ConnectionKind::Openai),
            "anthropic" => Ok(ConnectionKind::Anthropic),
            other => bail!("unknown connection kind `{other}` (expected `openai` or `anthropic`)"),
        }
    }
}

/// One model endpoint and how to use it. The API key itself is never stored here, only the
/// name of the environment variable that holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectionSpec {
    pub kind: ConnectionKind,
    /// OpenAI-compatible: up to the API version (`…/v1`); Anthropic: the host (`/v1/messages`
    /// is appended).
    pub base_url: String,
    /// The default model; a profile's `model.modelId` wins over it.
    pub model: Option<String>,
    pub api_key_env: String,
    /// Stream responses (live `model_delta` events) instead of waiting for whole answers.
    pub stream: bool,
    /// One attempt's whole exchange (300 s).
    pub request_timeout: Duration,
    /// Connect timeout (10 s), header timeout (120 s), idle timeout between pieces of a body
    /// (120 s) and the most bytes of one reply (8 MiB).
    pub limits: HttpLimits,
    /// The deadline of one model call, attempts and waits included, when the profile's
    /// `run.modelRetry.deadlineSeconds` names none; unset, the default (300 s).
    pub call_deadline: Option<Duration>,
    /// A cap on the tokens one call may generate; the profile's `model.maxOutputTokens` can
    /// only lower it. Unset, the provider's default (8192) applies.
    pub max_tokens: Option<u32>,
    /// Default generation settings of every request on this connection; a profile's
    /// `model.generation`, the host's prompt assembly and the run request each win over them.
    pub generation: GenerationSettings,
    /// The context window of the connection's models, over the known default of the model id.
    pub context_window_tokens: Option<u64>,
    /// Prices by model id (`"*"`: any), over the defaults (docs/providers.md, "Cost").
    pub prices: tt_domain::cost::PriceTable,
    /// A generation setting the provider does not take: refused when the agent starts (the
    /// default) or dropped from every request with a journaled warning.
    pub unsupported_settings: UnsupportedSettings,
}

impl ConnectionSpec {
    /// A connection of `kind` at `base_url`, with the kind's default key variable, no default
    /// model, not streaming.
    pub fn new(kind: ConnectionKind, base_url: impl Into<String>) -> Self {
        Self {
            kind,
            base_url: base_url.into(),
            model: None,
            api_key_env: kind.default_api_key_env().to_owned(),
            stream: false,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            limits: HttpLimits::default(),
            call_deadline: None,
            max_tokens: None,
            generation: GenerationSettings::default(),
            context_window_tokens: None,
            prices: tt_domain::cost::PriceTable::new(),
            unsupported_settings: UnsupportedSettings::Refuse,
        }
    }

    /// Parses `kind:baseUrl`, or a bare `kind` for the provider's public endpoint.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let text = text.trim();
        let (kind, base_url) = match text.split_once(':') {
            Some((kind, base_url)) => (kind.parse::<ConnectionKind>()?, base_url.trim()),
            None => {
                let kind = text.parse::<ConnectionKind>()?;
                (kind, kind.default_base_url())
            }
        };
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            bail!(
                "the connection `{text}` needs an http(s) base URL after `{}:`, e.g. `{}:{}`",
                kind.as_str(),
                kind.as_str(),
                kind.default_base_url()
            );
        }
        Ok(Self::new(kind, base_url))
    }

    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    pub fn with_api_key_env(mut self, name: impl Into<String>) -> Self {
        self.api_key_env = name.into();
        self
    }

    pub fn with_stream(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.limits.connect_timeout = timeout;
        self
    }

    pub fn with_idle_timeout(mut self, timeout: Duration) -> Self {
        self.limits.idle_timeout = timeout;
        self
    }

    /// The longest wait for a response's status and headers (a non-streaming server sends them
    /// with its whole answer).
    pub fn with_header_timeout(mut self, timeout: Duration) -> Self {
        self.limits.header_timeout = timeout;
        self
    }

    /// The deadline of one model call, attempts and waits included, for profiles that set no
    /// `run.modelRetry.deadlineSeconds`.
    pub fn with_call_deadline(mut self, deadline: Duration) -> Self {
        self.call_deadline = Some(deadline);
        self
    }

    pub fn with_max_response_bytes(mut self, bytes: u64) -> Self {
        self.limits.max_response_bytes = bytes;
        self
    }

    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    pub fn with_generation(mut self, settings: GenerationSettings) -> Self {
        self.generation = settings;
        self
    }

    pub fn with_context_window_tokens(mut self, tokens: u64) -> Self {
        self.context_window_tokens = Some(tokens);
        self
    }

    pub fn with_prices(mut self, prices: tt_domain::cost::PriceTable) -> Self {
        self.prices = prices;
        self
    }

    /// Drop generation settings the provider does not take (LiteLLM's `drop_params`) instead
    /// of refusing them: each agent journals `model_settings_dropped` when it starts.
    pub fn with_drop_unsupported_settings(mut self, drop: bool) -> Self {
        self.unsupported_settings = if drop {
            UnsupportedSettings::Drop
        } else {
            UnsupportedSettings::Refuse
        };
        self
    }

    /// The default model, window, prices, call deadline and output cap, as the engine reads them.
    pub fn model_info(&self) -> tt_ports::ConnectionModelInfo {
        tt_ports::ConnectionModelInfo {
            default_model: self.model.clone(),
            context_window_tokens: self.context_window_tokens,
            prices: self.prices.clone(),
            call_deadline: self.call_deadline,
            max_output_tokens: self.max_tokens,
        }
    }

    /// A non-secret description for events and hosts.
    pub fn description(&self) -> serde_json::Value {
        let mut description = json!({
            "kind": self.kind.as_str(),
            "baseUrl": self.base_url,
            "model": self.model,
            "apiKeyEnv": self.api_key_env,
            "stream": self.stream,
        });
        if !self.generation.is_empty() {
            description["generation"] = json!(self.generation);
        }
        if let Some(tokens) = self.context_window_tokens {
            description["contextWindowTokens"] = json!(tokens);
        }
        if !self.prices.is_empty() {
            description["prices"] = json!(self.prices);
        }
        if self.unsupported_settings == UnsupportedSettings::Drop {
            description["dropUnsupportedSettings"] = json!(true);
        }
        description
    }
}

impl FromStr for ConnectionSpec {
    type Err = anyhow::Error;

    fn from_str(text: &str) -> anyhow::Result<Self> {
        Self::parse(text)
    }
}

/// Builds the provider adapter for `spec`, reading the API key from `spec.api_key_env`. An
/// OpenAI-compatible connection may go without a key (local servers); Anthropic needs one.
/// A connection that does not stream answers `ModelProvider::stream` with a whole response.
pub fn build_provider(spec: &ConnectionSpec) -> anyhow::Result<Arc<dyn ModelProvider>> {
    let api_key = std::env::var(&spec.api_key_env)
        .ok()
        .filter(|key| !key.trim().is_empty());
    let provider: Arc<dyn ModelProvider> = match spec.kind {
        ConnectionKind::Openai => {
            let mut config = OpenAiConfig::new(spec.base_url.clone())
                .with_request_timeout(spec.request_timeout)
                .with_stream(spec.stream)
                .with_limits(spec.limits)
                .with_unsupported_settings(spec.unsupported_settings)
                .with_clock(Arc::new(SystemClock));
            if let Some(max_tokens) = spec.max_tokens {
                config = config.with_max_tokens(max_tokens);
            }
            if let Some(model) = &spec.model {
                config = config.with_default_model(model.clone());
            }
            if let Some(key) = api_key {
                config = config.with_api_key(key);
            }
            Arc::new(OpenAiProvider::new(config).with_context(|| {
                format!("cannot set up the openai connection to {}", spec.base_url)
            })?)
        }
        ConnectionKind::Anthropic => {
            let key = api_key.ok_or_else(|| {
                anyhow!(
                    "the anthropic connection needs an API key: set {} (or name another variable)",
                    spec.api_key_env
                )
            })?;
            let mut config = AnthropicConfig::new(spec.base_url.clone())
                .with_api_key(key)
                .with_request_timeout(spec.request_timeout)
                .with_stream(spec.stream)
                .with_limits(spec.limits)
                .with_unsupported_settings(spec.unsupported_settings)
                .with_clock(Arc::new(SystemClock));
            if let Some(model) = &spec.model {
                config = config.with_default_model(model.clone());
            }
            if let Some(max_tokens) = spec.max_tokens {
                config = config.with_max_tokens(max_tokens);
            }
            Arc::new(AnthropicProvider::new(config).with_context(|| {
                format!(
                    "cannot set up the anthropic connection to {}",
                    spec.base_url
                )
            })?)
        }
    };
    if spec.stream {
        Ok(provider)
    } else {
        Ok(Arc::new(WholeResponses(provider)))
    }
}

/// Makes `stream` send a non-streamed request (the runtime always calls `stream`; a connection
/// with streaming off must not open an event stream).
struct WholeResponses(Arc<dyn ModelProvider>);

tt_ports::decorated_model_provider!(WholeResponses, 0, forward [
    name, complete, close_session, provider_format, transport, check_settings,
    context_window, remember_context_window,
], {
    async fn stream(
        &self,
        request: &AgentModelRequest,
        _sink: Arc<dyn ModelDeltaSink>,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        self.0.complete(request, cancel).await
    }
});

/// The provider of one connection with the windows its server stated, asked once per model and
/// shared by every agent of the runtime (docs/providers.md, "The window"). An answer is kept,
/// "the server does not say" too; a server that could not be asked is asked again by the next
/// agent. The runtime wraps each provider it is given (the default one, registered and
/// file connections) in one.
pub(crate) struct LearnedWindows {
    inner: Arc<dyn ModelProvider>,
    learned: tokio::sync::Mutex<HashMap<Option<String>, Option<ServerContextWindow>>>,
}

impl LearnedWindows {
    pub(crate) fn wrap(inner: Arc<dyn ModelProvider>) -> Arc<dyn ModelProvider> {
        Arc::new(Self {
            inner,
            learned: tokio::sync::Mutex::new(HashMap::new()),
        })
    }
}

tt_ports::decorated_model_provider!(LearnedWindows, inner, forward [
    name, complete, stream, close_session, provider_format, transport, check_settings,
], {
    async fn context_window(
        &self,
        model_id: Option<&str>,
        cancel: CancellationToken,
    ) -> Result<Option<ServerContextWindow>, ModelError> {
        let key = model_id.map(str::to_owned);
        // Held across the probe: agents starting together ask the server once.
        let mut learned = self.learned.lock().await;
        if let Some(answer) = learned.get(&key) {
            return Ok(answer.clone());
        }
        let answer = self.inner.context_window(model_id, cancel).await?;
        learned.insert(key, answer.clone());
        Ok(answer)
    }

    /// A window a refusal stated replaces what the server said (or did not say) for the model:
    /// it is what the server does.
    async fn remember_context_window(&self, model_id: Option<&str>, window: ServerContextWindow) {
        let key = model_id.map(str::to_owned);
        self.learned.lock().await.insert(key, Some(window.clone()));
        self.inner.remember_context_window(model_id, window).await;
    }
});

#[cfg(test)]
mod tests {
    use super::*;

    /// A variable name no environment sets.
    const UNSET: &str = "TT_AGENT_TEST_KEY_THAT_IS_NEVER_SET_7F3A";

    #[test]
    fn specs_parse_from_kind_and_base_url() {
        let spec = ConnectionSpec::parse("openai:http://127.0.0.1:8080/v1").unwrap();
        assert_eq!(spec.kind, ConnectionKind::Openai);
        assert_eq!(spec.base_url, "http://127.0.0.1:8080/v1");
        assert_eq!(spec.api_key_env, "OPENAI_API_KEY");
        assert!(!spec.stream);
        let spec: ConnectionSpec = "anthropic:https://api.anthropic.com".parse().unwrap();
        assert_eq!(spec.kind, ConnectionKind::Anthropic);
        assert_eq!(spec.api_key_env, "ANTHROPIC_API_KEY");
        assert_eq!(
            ConnectionSpec::parse("anthropic").unwrap().base_url,
            "https://api.anthropic.com"
        );
        assert_eq!(
            ConnectionSpec::parse("openai").unwrap().base_url,
            "https://api.openai.com/v1"
        );
        assert!(ConnectionSpec::parse("gemini:https://x").is_err());
        assert!(ConnectionSpec::parse("openai:127.0.0.1:8080").is_err());
    }

    #[test]
    fn the_output_cap_reaches_the_engine_with_the_window() {
        let spec = ConnectionSpec::parse("openai:http://127.0.0.1:8080/v1")
            .unwrap()
            .with_max_tokens(160)
            .with_context_window_tokens(2048);
        let info = spec.model_info();
        assert_eq!(info.max_output_tokens, Some(160));
        assert_eq!(info.context_window_tokens, Some(2048));
        assert_eq!(
            ConnectionSpec::parse("openai")
                .unwrap()
                .model_info()
                .max_output_tokens,
            None
        );
    }

    #[test]
    fn openai_needs_no_key_anthropic_does() {
        let openai = ConnectionSpec::parse("openai:http://127.0.0.1:8080/v1")
            .unwrap()
            .with_model("qwen3")
            .with_api_key_env(UNSET);
        assert_eq!(build_provider(&openai).unwrap().name(), "openai");
        let anthropic = ConnectionSpec::parse("anthropic:http://127.0.0.1:8081")
            .unwrap()
            .with_api_key_env(UNSET);
        let error = build_provider(&anthropic).err().unwrap().to_string();
        assert!(error.contains(UNSET), "{error}");
    }

    #[test]
    fn descriptions_hold_no_secrets() {
        let spec = ConnectionSpec::parse("openai:http://127.0.0.1:8080/v1")
            .unwrap()
            .with_model("m")
            .with_stream(true);
        assert_eq!(
            spec.description(),
            json!({"kind": "openai", "baseUrl": "http://127.0.0.1:8080/v1", "model": "m",
                   "apiKeyEnv": "OPENAI_API_KEY", "stream": true})
        );
    }
}
