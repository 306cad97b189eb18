//! `decorated_model_provider!`: a [`ModelProvider`](crate::ModelProvider) that wraps another
//! and passes the methods it does not change on to it. Each decorator names the methods it
//! forwards, so adding one to the trait is a compile error in no decorator but a visible choice
//! in each (a decorator that forgot `provider_format` reported the wrong format in events).

/// Implements [`ModelProvider`](crate::ModelProvider) for `$decorator`, whose field `$inner`
/// (a name or a tuple index) holds the wrapped provider: the methods listed in `forward [..]`
/// call the wrapped provider's, the ones given in the braces are the decorator's own. Any
/// method in neither keeps the trait's default. With `before_each_call hook,` a forwarded
/// `complete` or `stream` first calls `self.hook(&request)` (a decorator that only looks at
/// requests).
///
/// ```ignore
/// tt_ports::decorated_model_provider!(Metered, inner, forward [name, complete, transport], {
///     async fn stream(&self, request: &AgentModelRequest, sink: Arc<dyn ModelDeltaSink>,
///         cancel: CancellationToken) -> Result<AgentModelResponse, ModelError> { .. }
/// });
/// ```
///
/// The forwarded methods are written out here, inside one expansion, so that `#[async_trait]`
/// sees every `async fn` of the impl.
#[macro_export]
macro_rules! decorated_model_provider {
    ($decorator:ty, $inner:tt, forward [$($method:ident),* $(,)?], { $($own:tt)* }) => {
        $crate::decorated_model_provider!(@munch $decorator, $inner, [], [$($method)*], [], { $($own)* });
    };
    ($decorator:ty, $inner:tt, before_each_call $hook:ident, forward [$($method:ident),* $(,)?], { $($own:tt)* }) => {
        $crate::decorated_model_provider!(@munch $decorator, $inner, [$hook], [$($method)*], [], { $($own)* });
    };
    (@munch $decorator:ty, $inner:tt, [$($hook:ident)?], [], [$($forwarded:tt)*], { $($own:tt)* }) => {
        #[$crate::__async_trait]
        impl $crate::ModelProvider for $decorator {
            $($forwarded)*
            $($own)*
        }
    };
    (@munch $decorator:ty, $inner:tt, [$($hook:ident)?], [name $($rest:ident)*], [$($done:tt)*], $own:tt) => {
        $crate::decorated_model_provider!(@munch $decorator, $inner, [$($hook)?], [$($rest)*], [$($done)*
            fn name(&self) -> &str {
                self.$inner.name()
            }
        ], $own);
    };
    (@munch $decorator:ty, $inner:tt, [$($hook:ident)?], [complete $($rest:ident)*], [$($done:tt)*], $own:tt) => {
        $crate::decorated_model_provider!(@munch $decorator, $inner, [$($hook)?], [$($rest)*], [$($done)*
            async fn complete(
                &self,
                request: &$crate::__domain::model::AgentModelRequest,
                cancel: $crate::CancellationToken,
            ) -> Result<$crate::__domain::model::AgentModelResponse, $crate::ModelError> {
                $(self.$hook(&request);)?
                self.$inner.complete(request, cancel).await
            }
        ], $own);
    };
    (@munch $decorator:ty, $inner:tt, [$($hook:ident)?], [stream $($rest:ident)*], [$($done:tt)*], $own:tt) => {
        $crate::decorated_model_provider!(@munch $decorator, $inner, [$($hook)?], [$($rest)*], [$($done)*
            async fn stream(
                &self,
                request: &$crate::__domain::model::AgentModelRequest,
                sink: ::std::sync::Arc<dyn $crate::ModelDeltaSink>,
                cancel: $crate::CancellationToken,
            ) -> Result<$crate::__domain::model::AgentModelResponse, $crate::ModelError> {
                $(self.$hook(&request);)?
                self.$inner.stream(request, sink, cancel).await
            }
        ], $own);
    };
    (@munch $decorator:ty, $inner:tt, [$($hook:ident)?], [close_session $($rest:ident)*], [$($done:tt)*], $own:tt) => {
        $crate::decorated_model_provider!(@munch $decorator, $inner, [$($hook)?], [$($rest)*], [$($done)*
            async fn close_session(&self, session_id: &str) {
                self.$inner.close_session(session_id).await;
            }
        ], $own);
    };
    (@munch $decorator:ty, $inner:tt, [$($hook:ident)?], [provider_format $($rest:ident)*], [$($done:tt)*], $own:tt) => {
        $crate::decorated_model_provider!(@munch $decorator, $inner, [$($hook)?], [$($rest)*], [$($done)*
            fn provider_format(&self) -> &str {
                self.$inner.provider_format()
            }
        ], $own);
    };
    (@munch $decorator:ty, $inner:tt, [$($hook:ident)?], [transport $($rest:ident)*], [$($done:tt)*], $own:tt) => {
        $crate::decorated_model_provider!(@munch $decorator, $inner, [$($hook)?], [$($rest)*], [$($done)*
            fn transport(&self) -> &str {
                self.$inner.transport()
            }
        ], $own);
    };
    (@munch $decorator:ty, $inner:tt, [$($hook:ident)?], [context_window $($rest:ident)*], [$($done:tt)*], $own:tt) => {
        $crate::decorated_model_provider!(@munch $decorator, $inner, [$($hook)?], [$($rest)*], [$($done)*
            async fn context_window(
                &self,
                model_id: Option<&str>,
                cancel: $crate::CancellationToken,
            ) -> Result<Option<$crate::ServerContextWindow>, $crate::ModelError> {
                self.$inner.context_window(model_id, cancel).await
            }
        ], $own);
    };
    (@munch $decorator:ty, $inner:tt, [$($hook:ident)?], [remember_context_window $($rest:ident)*], [$($done:tt)*], $own:tt) => {
        $crate::decorated_model_provider!(@munch $decorator, $inner, [$($hook)?], [$($rest)*], [$($done)*
            async fn remember_context_window(
                &self,
                model_id: Option<&str>,
                window: $crate::ServerContextWindow,
            ) {
                self.$inner.remember_context_window(model_id, window).await;
            }
        ], $own);
    };
    (@munch $decorator:ty, $inner:tt, [$($hook:ident)?], [check_settings $($rest:ident)*], [$($done:tt)*], $own:tt) => {
        $crate::decorated_model_provider!(@munch $decorator, $inner, [$($hook)?], [$($rest)*], [$($done)*
            fn check_settings(
                &self,
                settings: &$crate::__domain::generation::GenerationSettings,
                max_output_tokens: Option<u32>,
            ) -> Result<Vec<$crate::DroppedSetting>, $crate::ModelError> {
                self.$inner.check_settings(settings, max_output_tokens)
            }
        ], $own);
    };
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicU32, Ordering};

    use async_trait::async_trait;
    use tt_domain::ids::{InvocationId, ProfileId, RunId};
    use tt_domain::model::{AgentModelRequest, AgentModelResponse, ProviderSession};

    use crate::{CancellationToken, ModelError, ModelProvider, ServerContextWindow};

    /// The format and transport `House` reports.
    const HOUSE_WIRE: (&str, &str) = ("house_chat", "http");

    /// A provider whose every answer differs from the trait's defaults.
    #[derive(Default)]
    struct House {
        closed: Mutex<Vec<String>>,
    }

    #[async_trait]
    impl ModelProvider for House {
        fn name(&self) -> &str {
            "house"
        }

        async fn complete(
            &self,
            _request: &AgentModelRequest,
            _cancel: CancellationToken,
        ) -> Result<AgentModelResponse, ModelError> {
            Err(ModelError::Cancelled)
        }

        async fn close_session(&self, session_id: &str) {
            self.closed.lock().unwrap().push(session_id.to_owned());
        }

        fn provider_format(&self) -> &str {
            HOUSE_WIRE.0
        }

        fn transport(&self) -> &str {
            HOUSE_WIRE.1
        }

        async fn context_window(
            &self,
            _model_id: Option<&str>,
            _cancel: CancellationToken,
        ) -> Result<Option<ServerContextWindow>, ModelError> {
            Ok(Some(ServerContextWindow {
                tokens: 4096,
                source: "/props".to_owned(),
            }))
        }
    }

    /// Forwards everything, counting the requests it sees.
    struct Counted {
        inner: House,
        seen: AtomicU32,
    }

    impl Counted {
        fn count(&self, _request: &AgentModelRequest) {
            self.seen.fetch_add(1, Ordering::Relaxed);
        }
    }

    crate::decorated_model_provider!(Counted, inner, before_each_call count, forward [
        name, complete, stream, close_session, provider_format, transport, context_window,
        remember_context_window, check_settings,
    ], {});

    /// Forwards only its name and calls: everything else is the trait's default.
    struct NameOnly(House);

    crate::decorated_model_provider!(NameOnly, 0, forward [name, complete], {});

    fn request() -> AgentModelRequest {
        AgentModelRequest::new(
            ProviderSession::new(&RunId::from_raw("run_a"), &InvocationId::from_raw("inv_a")),
            ProfileId::parse("writer").unwrap(),
            1,
            Vec::new(),
        )
    }

    #[tokio::test]
    async fn forwarded_methods_answer_as_the_wrapped_provider_and_the_hook_sees_each_call() {
        let counted = Counted {
            inner: House::default(),
            seen: AtomicU32::new(0),
        };
        assert_eq!(
            (
                counted.name(),
                counted.provider_format(),
                counted.transport()
            ),
            ("house", "house_chat", "http")
        );
        let window = counted
            .context_window(None, CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(window.map(|w| w.tokens), Some(4096));
        counted.close_session("run_a:inv_a").await;
        assert_eq!(*counted.inner.closed.lock().unwrap(), ["run_a:inv_a"]);
        let cancel = CancellationToken::new();
        assert!(counted.complete(&request(), cancel.clone()).await.is_err());
        let sink: std::sync::Arc<dyn crate::ModelDeltaSink> = std::sync::Arc::new(Ignore);
        assert!(counted.stream(&request(), sink, cancel).await.is_err());
        assert_eq!(counted.seen.load(Ordering::Relaxed), 2);
    }

    #[tokio::test]
    async fn a_method_not_forwarded_keeps_the_default() {
        let name_only = NameOnly(House::default());
        assert_eq!(
            (name_only.provider_format(), name_only.transport()),
            ("house", "in_process")
        );
        let window = name_only
            .context_window(None, CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(window, None);
    }

    struct Ignore;

    impl crate::ModelDeltaSink for Ignore {
        fn delta(&self, _delta: tt_domain::model::ModelDelta) {}
    }
}
