//! Connection settings of the OpenAI-compatible provider and the errors of building one.

pub use tt_provider_http::http::HttpLimits;

/// `max_tokens` sent when neither the request nor the connection sets one, so a model that
/// never stops cannot generate without end.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The body field that carries the output-token limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenLimitField {
    /// `max_tokens`: what llama.cpp, vLLM, Ollama and most compatible servers read.
    MaxTokens,
    /// `max_completion_tokens`: what OpenAI's own API wants; its reasoning models (o-series,
    /// GPT-5) refuse `max_tokens`.
    MaxCompletionTokens,
}

impl TokenLimitField {
    /// The field's name in the request body.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenLimitField::MaxTokens => "max_tokens",
            TokenLimitField::MaxCompletionTokens => "max_completion_tokens",
        }
    }

    /// `max_completion_tokens` for OpenAI's own API (`api.openai.com`), `max_tokens` elsewhere.
    pub fn for_base_url(base_url: &str) -> Self {
        match Dialect::for_base_url(base_url) {
            Dialect::OpenAi => TokenLimitField::MaxCompletionTokens,
            Dialect::Compatible => TokenLimitField::MaxTokens,
        }
    }
}

/// Which generation settings and cache hints the server takes (docs/providers.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// OpenAI's own API: refuses fields it does not know (`top_k`, `min_p`, …); takes
    /// `prompt_cache_key`.
    OpenAi,
    /// llama.cpp, vLLM, Ollama and other compatible servers: also `top_k`, `min_p`,
    /// `repeat_penalty` and `cache_prompt`.
    Compatible,
}

impl Dialect {
    /// `OpenAi` for `api.openai.com`, `Compatible` elsewhere.
    pub fn for_base_url(base_url: &str) -> Self {
        let host = base_url
            .split_once("://")
            .map_or(base_url, |(_, rest)| rest)
            .split(['/', ':'])
            .next()
            .unwrap_or_default();
        if host.eq_ignore_ascii_case("api.openai.com") {
            Dialect::OpenAi
        } else {
            Dialect::Compatible
        }
    }
}

tt_provider_http::connection_settings! {
    /// Where and how to reach an OpenAI-compatible server.
    pub struct OpenAiConfig {
        /// Up to and including the API version, e.g. `https://api.openai.com/v1` or
        /// `http://127.0.0.1:8080/v1`; requests go to `{base_url}/chat/completions`.
        pub base_url: String,
        /// Sent as `Authorization: Bearer …` when present (local servers usually need none).
        pub api_key: Option<String>,
        /// Added to every request, after the standard headers.
        pub extra_headers: Vec<(String, String)>,
        /// A cap on `max_tokens`: the request's own limit (the profile's `model.maxOutputTokens`)
        /// or [`DEFAULT_MAX_TOKENS`], whichever this is lower than.
        pub max_tokens: Option<u32>,
        /// Which body field carries the token limit; by default chosen from the base URL
        /// ([`TokenLimitField::for_base_url`]).
        pub token_limit_field: TokenLimitField,
        /// Which settings and cache hints the server takes; by default chosen from the base URL
        /// ([`Dialect::for_base_url`]).
        pub dialect: Dialect,
        /// Replays reasoning as `reasoning_content` on assistant turns (servers such as DeepSeek's
        /// thinking mode want it back during a tool loop; most servers ignore or refuse it).
        pub replay_reasoning_content: bool,
    }
}

impl OpenAiConfig {
    /// Settings with only a base URL: no key, no default model, no timeout, not streaming.
    pub fn new(base_url: impl Into<String>) -> Self {
        let base_url = base_url.into();
        Self {
            token_limit_field: TokenLimitField::for_base_url(&base_url),
            dialect: Dialect::for_base_url(&base_url),
            base_url,
            default_model: None,
            api_key: None,
            extra_headers: Vec::new(),
            request_timeout: None,
            stream: false,
            max_tokens: None,
            replay_reasoning_content: false,
            clock: None,
            limits: HttpLimits::default(),
            unsupported_settings: tt_ports::UnsupportedSettings::Refuse,
        }
    }

    tt_provider_http::connection_setters!();

    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Treats the server as `dialect` whatever the base URL (e.g. a proxy in front of OpenAI).
    pub fn with_dialect(mut self, dialect: Dialect) -> Self {
        self.dialect = dialect;
        self
    }

    /// Sends the token limit in `field` whatever the base URL.
    pub fn with_token_limit_field(mut self, field: TokenLimitField) -> Self {
        self.token_limit_field = field;
        self
    }
}

/// Why a provider could not be built from its settings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenAiError {
    #[error("the base URL `{0}` is not an http(s) URL")]
    InvalidBaseUrl(String),
    #[error("the header `{0}` has an invalid name or value")]
    InvalidHeader(String),
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

impl From<tt_provider_http::exchange::EndpointError> for OpenAiError {
    fn from(err: tt_provider_http::exchange::EndpointError) -> Self {
        use tt_provider_http::exchange::EndpointError;
        match err {
            EndpointError::InvalidBaseUrl(url) => Self::InvalidBaseUrl(url),
            EndpointError::InvalidHeader(name) => Self::InvalidHeader(name),
            EndpointError::Client(reason) => Self::Client(reason),
        }
    }
}
