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
///     async fn stream(&self, request: AgentModelRequest, sink: Arc<dyn ModelDeltaSink>,
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
                request: $crate::__domain::model::AgentModelRequest,
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
                request: $crate::__domain::model::AgentModelRequest,
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
