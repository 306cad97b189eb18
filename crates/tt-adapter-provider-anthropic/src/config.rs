//! Connection settings of the Anthropic Messages provider and the errors of building one.

pub use tt_provider_http::http::HttpLimits;

/// The public API's base URL.
pub const ANTHROPIC_DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The `anthropic-version` header every request carries.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// `max_tokens` when none is configured.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

tt_provider_http::connection_settings! {
    /// Where and how to reach the Messages API.
    pub struct AnthropicConfig {
        /// Without the API version, e.g. `https://api.anthropic.com`; requests go to
        /// `{base_url}/v1/messages`.
        pub base_url: String,
        /// Sent as `x-api-key` when present.
        pub api_key: Option<String>,
        /// Added to every request after the standard headers (for example `anthropic-beta`).
        pub extra_headers: Vec<(String, String)>,
        /// Sent as `max_tokens` (required by the API).
        pub max_tokens: u32,
        /// Turns on extended thinking with this token budget (must be below `max_tokens`).
        pub thinking_budget_tokens: Option<u32>,
        /// Marks `cache_control` breakpoints on the tools, the system prompt and the last user
        /// turns (on by default; docs/providers.md).
        pub prompt_caching: bool,
    }
}

impl Default for AnthropicConfig {
    fn default() -> Self {
        Self::new(ANTHROPIC_DEFAULT_BASE_URL)
    }
}

impl AnthropicConfig {
    /// Settings with only a base URL: no key, no default model, no timeout, not streaming,
    /// `max_tokens` [`DEFAULT_MAX_TOKENS`], no thinking.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            default_model: None,
            api_key: None,
            extra_headers: Vec::new(),
            request_timeout: None,
            stream: false,
            max_tokens: DEFAULT_MAX_TOKENS,
            thinking_budget_tokens: None,
            prompt_caching: true,
            clock: None,
            limits: HttpLimits::default(),
            unsupported_settings: tt_ports::UnsupportedSettings::Refuse,
        }
    }

    tt_provider_http::connection_setters!();

    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    pub fn with_thinking(mut self, budget_tokens: u32) -> Self {
        self.thinking_budget_tokens = Some(budget_tokens);
        self
    }

    /// Turns the `cache_control` breakpoints off (e.g. for a server that refuses them).
    pub fn with_prompt_caching(mut self, on: bool) -> Self {
        self.prompt_caching = on;
        self
    }
}

/// Why a provider could not be built from its settings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnthropicError {
    #[error("the base URL `{0}` is not an http(s) URL")]
    InvalidBaseUrl(String),
    #[error("the header `{0}` has an invalid name or value")]
    InvalidHeader(String),
    #[error("max_tokens must be positive and above the thinking budget ({0})")]
    InvalidTokenLimits(String),
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

impl From<tt_provider_http::exchange::EndpointError> for AnthropicError {
    fn from(err: tt_provider_http::exchange::EndpointError) -> Self {
        use tt_provider_http::exchange::EndpointError;
        match err {
            EndpointError::InvalidBaseUrl(url) => Self::InvalidBaseUrl(url),
            EndpointError::InvalidHeader(name) => Self::InvalidHeader(name),
            EndpointError::Client(reason) => Self::Client(reason),
        }
    }
}
