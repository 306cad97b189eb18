//! The builder methods both HTTP adapters' connection settings share, written once as a macro
//! so each adapter keeps its own settings type (and its public API) without repeating them.

/// Expands, inside `impl <Settings> { … }`, to the shared `with_*` builder methods. The settings
/// type must have the fields `default_model: Option<String>`, `api_key: Option<String>`,
/// `extra_headers: Vec<(String, String)>`, `request_timeout: Option<Duration>`,
/// `stream: bool`, `limits: HttpLimits` and `clock: Option<Arc<dyn Clock>>`.
#[macro_export]
macro_rules! connection_setters {
    () => {
        pub fn with_default_model(mut self, model: impl Into<String>) -> Self {
            self.default_model = Some(model.into());
            self
        }

        pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
            self.api_key = Some(key.into());
            self
        }

        /// Takes the API key from the environment variable `name`, if it is set and not empty.
        pub fn with_api_key_from_env(mut self, name: &str) -> Self {
            self.api_key = std::env::var(name).ok().filter(|key| !key.is_empty());
            self
        }

        pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
            self.extra_headers.push((name.into(), value.into()));
            self
        }

        pub fn with_request_timeout(mut self, timeout: ::std::time::Duration) -> Self {
            self.request_timeout = Some(timeout);
            self
        }

        pub fn with_stream(mut self, stream: bool) -> Self {
            self.stream = stream;
            self
        }

        /// Replaces the default [`HttpLimits`](tt_provider_http::http::HttpLimits) (10 s connect,
        /// 120 s idle, 8 MiB per reply).
        pub fn with_limits(mut self, limits: $crate::http::HttpLimits) -> Self {
            self.limits = limits;
            self
        }

        pub fn with_clock(mut self, clock: ::std::sync::Arc<dyn ::tt_ports::Clock>) -> Self {
            self.clock = Some(clock);
            self
        }

        /// What the shared exchange needs from these settings, for `url` with `headers`.
        pub(crate) fn endpoint_config(
            &self,
            url: String,
            headers: ::reqwest::header::HeaderMap,
        ) -> $crate::exchange::EndpointConfig {
            $crate::exchange::EndpointConfig {
                url,
                headers,
                limits: self.limits,
                request_timeout: self.request_timeout,
                clock: self.clock.clone(),
            }
        }
    };
}
