//! What both HTTP adapters would otherwise write twice around their own types: their
//! connection settings' shared fields and builder methods and their `ModelProvider` impl, written once as macros
//! so each adapter keeps its own types (and its public API).

/// Declares an adapter's connection settings: the struct with the fields every HTTP adapter's
/// settings have (the adapter documents `base_url`, `api_key` and `extra_headers`, whose use
/// differs, and adds its own fields after them), and its `Debug`, which leaves secrets out
/// (the key redacted, extra headers by name only) and the clock unshown.
#[macro_export]
macro_rules! connection_settings {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(#[$base_url_meta:meta])* pub base_url: String,
            $(#[$api_key_meta:meta])* pub api_key: Option<String>,
            $(#[$extra_headers_meta:meta])* pub extra_headers: Vec<(String, String)>,
            $($(#[$field_meta:meta])* pub $field:ident: $ty:ty,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone)]
        pub struct $name {
            $(#[$base_url_meta])*
            pub base_url: String,
            /// Used when a request has no `model_id` of its own.
            pub default_model: Option<String>,
            $(#[$api_key_meta])*
            pub api_key: Option<String>,
            $(#[$extra_headers_meta])*
            pub extra_headers: Vec<(String, String)>,
            /// Non-streamed: the whole exchange. Streamed: the wait for the response headers and
            /// for each further piece of the body. `None` waits as long as the server takes.
            pub request_timeout: Option<::std::time::Duration>,
            /// Whether the runtime should prefer `ModelProvider::stream` for this connection.
            pub stream: bool,
            $($(#[$field_meta])* pub $field: $ty,)*
            /// "Now" for an HTTP-date `Retry-After` when the response carries no `Date` header.
            pub clock: Option<::std::sync::Arc<dyn ::tt_ports::Clock>>,
            /// Connect timeout, idle timeout between pieces, and the most bytes of one reply.
            pub limits: $crate::http::HttpLimits,
            /// A generation setting the API does not take: refused (the default) or dropped.
            pub unsupported_settings: ::tt_ports::UnsupportedSettings,
        }

        impl ::std::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                let header_names: Vec<&str> = self
                    .extra_headers
                    .iter()
                    .map(|(name, _)| name.as_str())
                    .collect();
                f.debug_struct(stringify!($name))
                    .field("base_url", &self.base_url)
                    .field("default_model", &self.default_model)
                    .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
                    .field("extra_headers", &header_names)
                    .field("request_timeout", &self.request_timeout)
                    .field("stream", &self.stream)
                    $(.field(stringify!($field), &self.$field))*
                    .field("limits", &self.limits)
                    .field("unsupported_settings", &self.unsupported_settings)
                    .finish_non_exhaustive()
            }
        }
    };
}

/// Expands, inside `impl <Settings> { … }`, to the shared `with_*` builder methods. The settings
/// type must have the fields `base_url: String`, `default_model: Option<String>`, `api_key: Option<String>`,
/// `extra_headers: Vec<(String, String)>`, `request_timeout: Option<Duration>`,
/// `stream: bool`, `limits: HttpLimits`, `unsupported_settings: UnsupportedSettings` and
/// `clock: Option<Arc<dyn Clock>>`.
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
        /// 120 s for the response headers, 120 s idle, 8 MiB per reply).
        pub fn with_limits(mut self, limits: $crate::http::HttpLimits) -> Self {
            self.limits = limits;
            self
        }

        /// Whether a generation setting the provider does not take is refused (the default)
        /// or dropped from every request (docs/providers.md, "Generation settings").
        pub fn with_unsupported_settings(mut self, mode: ::tt_ports::UnsupportedSettings) -> Self {
            self.unsupported_settings = mode;
            self
        }

        pub fn with_clock(mut self, clock: ::std::sync::Arc<dyn ::tt_ports::Clock>) -> Self {
            self.clock = Some(clock);
            self
        }

        /// The model a request goes to: its own, or these settings' default.
        pub(crate) fn model_for<'a>(
            &'a self,
            request: &'a ::tt_domain::model::AgentModelRequest,
        ) -> Result<&'a str, ::tt_ports::ModelError> {
            request
                .model_id
                .as_deref()
                .or(self.default_model.as_deref())
                .ok_or_else(|| {
                    ::tt_ports::ModelError::Other(
                        "no model id: the agent's profile names none and the connection has no default model"
                            .to_owned(),
                    )
                })
        }

        /// The endpoint `{base_url}{path}` of these settings, whose requests carry the
        /// provider's `fixed` headers, its `credential` and these settings' extra headers.
        pub(crate) fn http_endpoint(
            &self,
            path: &str,
            fixed: &[(&'static str, &'static str)],
            credential: Option<(&'static str, String)>,
        ) -> Result<$crate::exchange::HttpEndpoint, $crate::exchange::EndpointError> {
            use $crate::exchange::EndpointError;
            let url = $crate::exchange::endpoint_url(&self.base_url, path)
                .ok_or_else(|| EndpointError::InvalidBaseUrl(self.base_url.clone()))?;
            let headers = $crate::exchange::request_headers(fixed, credential, &self.extra_headers)
                .map_err(EndpointError::InvalidHeader)?;
            $crate::exchange::HttpEndpoint::new($crate::exchange::EndpointConfig {
                url,
                headers,
                limits: self.limits,
                request_timeout: self.request_timeout,
                clock: self.clock.clone(),
            })
            .map_err(EndpointError::Client)
        }
    };
}

/// Expands, inside `impl <Provider> { … }`, to the provider's read accessors. The provider type
/// must have the fields `config: $config` (settings built with [`connection_setters!`]) and
/// `http: HttpEndpoint`.
#[macro_export]
macro_rules! provider_accessors {
    ($config:ty) => {
        /// Whether the runtime should call `stream` rather than `complete` for this connection.
        pub fn prefers_streaming(&self) -> bool {
            self.config.stream
        }

        /// The URL requests are posted to.
        pub fn endpoint(&self) -> &str {
            self.http.url()
        }

        /// The settings this provider was built from.
        pub fn config(&self) -> &$config {
            &self.config
        }
    };
}

/// Implements `ModelProvider` for an adapter's provider type `$provider` named `$name`: both
/// calls go through its `http: HttpEndpoint` field with the provider as the
/// [`WireFormat`](crate::exchange::WireFormat), whose `PROVIDER_FORMAT` is its
/// `provider_format`. The provider type also has
/// `server_context_window` (the window probe) and `unsupported_settings` (the settings check).
#[macro_export]
macro_rules! http_model_provider {
    ($provider:ty, $name:expr) => {
        #[::async_trait::async_trait]
        impl ::tt_ports::ModelProvider for $provider {
            fn name(&self) -> &str {
                $name
            }

            fn provider_format(&self) -> &str {
                <$provider as $crate::exchange::WireFormat>::PROVIDER_FORMAT
            }

            fn transport(&self) -> &str {
                "http"
            }

            async fn complete(
                &self,
                request: &::tt_domain::model::AgentModelRequest,
                cancel: ::tokio_util::sync::CancellationToken,
            ) -> Result<::tt_domain::model::AgentModelResponse, ::tt_ports::ModelError> {
                self.http.complete(self, $name, request, &cancel).await
            }

            async fn stream(
                &self,
                request: &::tt_domain::model::AgentModelRequest,
                sink: ::std::sync::Arc<dyn ::tt_ports::ModelDeltaSink>,
                cancel: ::tokio_util::sync::CancellationToken,
            ) -> Result<::tt_domain::model::AgentModelResponse, ::tt_ports::ModelError> {
                self.http
                    .stream(self, $name, request, sink.as_ref(), &cancel)
                    .await
            }

            async fn context_window(
                &self,
                model_id: Option<&str>,
                cancel: ::tokio_util::sync::CancellationToken,
            ) -> Result<Option<::tt_ports::ServerContextWindow>, ::tt_ports::ModelError> {
                self.server_context_window(model_id, &cancel).await
            }

            fn check_settings(
                &self,
                settings: &::tt_domain::generation::GenerationSettings,
                max_output_tokens: Option<u32>,
            ) -> Result<Vec<::tt_ports::DroppedSetting>, ::tt_ports::ModelError> {
                self.unsupported_settings(settings, max_output_tokens)
            }
        }
    };
}
