//! The host command table as Tauri commands: one `#[tauri::command]` per entry of
//! `tt_runtime::for_each_host_command!`, generated, each taking `{request}` and answering the
//! command's answer or a `HostError {code, message}`; plus the stream commands.

use tauri::State;
use tt_runtime::HostError;

use crate::TtAgent;
use crate::request::decode;

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
                crate::streams::subscribe_agent_run_events,
                crate::streams::subscribe_agent_run_updates,
                crate::streams::subscribe_agent_host_tool_calls,
                crate::streams::unsubscribe_agent_stream,
            ]
        }
    };
}

tt_runtime::for_each_host_command!(table_commands);
