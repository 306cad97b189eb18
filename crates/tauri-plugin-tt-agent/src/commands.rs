//! The host command table as Tauri commands: one `#[tauri::command]` per entry of
//! `tt_runtime::for_each_host_command!`, generated, each taking `{request}` and answering the
//! command's answer or a `HostError {code, message}`; plus the stream commands
//! (`crate::messages` says what they send).

use tauri::ipc::Channel;
use tauri::{Runtime, State, Webview};
use tt_runtime::HostError;

use crate::messages::{
    HostToolCallsMessage, RunStreamMessage, RunUpdatesMessage, StreamId, SubscribeRunEventsRequest,
    UnsubscribeRequest,
};
use crate::request::decode;
use crate::state::TtAgent;

macro_rules! table_commands {
    ($(($name:ident, $request:ty, $answer:ty)),* $(,)?) => {
        $(
            #[tauri::command]
            pub(crate) async fn $name(
                state: State<'_, TtAgent>,
                request: Option<serde_json::Value>,
            ) -> Result<$answer, HostError> {
                let request: $request = decode(stringify!($name), request)?;
                tt_runtime::host_commands::$name(state.runtime(), request).await
            }
        )*

        /// Every command of the plugin: the table's, then the stream commands.
        pub(crate) fn handler<R: tauri::Runtime>(
        ) -> impl Fn(tauri::ipc::Invoke<R>) -> bool + Send + Sync + 'static {
            tauri::generate_handler![
                $($name,)*
                subscribe_agent_run_events,
                subscribe_agent_run_updates,
                subscribe_agent_host_tool_calls,
                unsubscribe_agent_stream,
            ]
        }
    };
}

tt_runtime::for_each_host_command!(table_commands);

#[tauri::command]
pub(crate) async fn subscribe_agent_run_events<R: Runtime>(
    webview: Webview<R>,
    state: State<'_, TtAgent>,
    request: Option<serde_json::Value>,
    on_event: Channel<RunStreamMessage>,
) -> Result<StreamId, HostError> {
    let request: SubscribeRunEventsRequest = decode("subscribe_agent_run_events", request)?;
    state
        .subscribe_run_events(webview.label(), request, on_event)
        .await
}

#[tauri::command]
pub(crate) async fn subscribe_agent_run_updates<R: Runtime>(
    webview: Webview<R>,
    state: State<'_, TtAgent>,
    on_update: Channel<RunUpdatesMessage>,
) -> Result<StreamId, HostError> {
    state.subscribe_run_updates(webview.label(), on_update)
}

#[tauri::command]
pub(crate) async fn subscribe_agent_host_tool_calls<R: Runtime>(
    webview: Webview<R>,
    state: State<'_, TtAgent>,
    on_call: Channel<HostToolCallsMessage>,
) -> Result<StreamId, HostError> {
    state.subscribe_host_tool_calls(webview.label(), on_call)
}

#[tauri::command]
pub(crate) async fn unsubscribe_agent_stream(
    state: State<'_, TtAgent>,
    request: Option<serde_json::Value>,
) -> Result<bool, HostError> {
    let request: UnsubscribeRequest = decode("unsubscribe_agent_stream", request)?;
    Ok(state.unsubscribe(request.stream_id))
}
