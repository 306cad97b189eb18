//! The stream commands: a run's events and the runs list's changes pushed to the webview over a
//! `tauri::ipc::Channel`, live, without polling.
//!
//! `subscribe_agent_run_events {request: {runId, afterSeq?, invocationId?, throughResumes?},
//! onEvent}` replays the run's journal after `afterSeq` and then follows it live
//! (`AgentRuntime::subscribe`), one `{kind: "event", event}` message per event in seq order,
//! then `{kind: "end"}` after the run's terminal event, or `{kind: "error", code, message}`
//! when the stream fails (subscribe again from the last seq seen). A page that reloads loses its
//! channels: the plugin closes that webview's streams when a page load starts, and the page
//! subscribes again with the last seq it kept, so it misses nothing and sees nothing twice.
//!
//! `subscribe_agent_run_updates {onUpdate}`: `{kind: "changed", run}` each time a run of this
//! runtime starts or changes status, `{kind: "lagged"}` when changes were skipped (re-read
//! `list_agent_runs`), `{kind: "end"}` at shutdown.
//!
//! `subscribe_agent_host_tool_calls {onCall}`: `{kind: "call", call}` each time a call of a
//! host-answered tool starts waiting for the page (answer it with
//! `answer_agent_host_tool_call`), `{kind: "lagged"}` when calls were missed (read
//! `list_agent_host_tool_calls`), `{kind: "end"}` when the runtime goes away.
//!
//! Each answers a [`StreamId`]; `unsubscribe_agent_stream {request: {streamId}}` closes one.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use tauri::async_runtime::JoinHandle;
use tauri::ipc::Channel;
use tauri::{Runtime, State, Webview};
use tokio::sync::broadcast::error::RecvError;
use tt_runtime::{
    AgentRun, AgentRunEvent, HostError, PendingHostToolCall, ReadEventsRequest, RunUpdate,
};

use crate::TtAgent;
use crate::request::decode;

/// The stream commands, after the host command table's in `commands.list`.
pub const STREAM_COMMANDS: &[&str] = &[
    "subscribe_agent_run_events",
    "subscribe_agent_run_updates",
    "subscribe_agent_host_tool_calls",
    "unsubscribe_agent_stream",
];

/// The id of an open stream, for `unsubscribe_agent_stream`.
pub type StreamId = u64;

/// `subscribe_agent_run_events`'s request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubscribeRunEventsRequest {
    pub run_id: String,
    /// The last seq the page has seen; 0 (the default) replays the whole journal.
    #[serde(default)]
    pub after_seq: u64,
    /// Only the events of this agent (its invocation id).
    #[serde(default)]
    pub invocation_id: Option<String>,
    /// Keep following past an end a resume may undo (`EventSubscription::through_resumes`).
    #[serde(default)]
    pub through_resumes: bool,
}

/// `unsubscribe_agent_stream`'s request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UnsubscribeRequest {
    pub stream_id: StreamId,
}

/// One message on a run's event channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum RunStreamMessage {
    /// The next event of the run, in seq order.
    Event { event: Box<AgentRunEvent> },
    /// The run ended (after its terminal event), or the runtime shut down.
    End,
    /// The stream failed; subscribe again after the last seq seen.
    Error { code: String, message: String },
}

/// One message on the run updates channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum RunUpdatesMessage {
    /// A run started or changed status: the run as it is now.
    Changed { run: Box<AgentRun> },
    /// Changes were skipped: re-read `list_agent_runs`.
    Lagged,
    /// The runtime shut down.
    End,
}

/// One message on the host-tool calls channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum HostToolCallsMessage {
    /// A call of a host-answered tool started waiting for the page's answer
    /// (`answer_agent_host_tool_call`).
    Call { call: Box<PendingHostToolCall> },
    /// Calls were missed: read `list_agent_host_tool_calls` of the runs the page follows.
    Lagged,
    /// The runtime shut down.
    End,
}

/// The open streams, by id, with the webview each belongs to.
#[derive(Default)]
pub(crate) struct Streams {
    next_id: AtomicU64,
    open: Mutex<HashMap<StreamId, (String, JoinHandle<()>)>>,
}

impl Streams {
    fn open(&self, webview: &str, forward: impl Future<Output = ()> + Send + 'static) -> StreamId {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let task = tauri::async_runtime::spawn(forward);
        if let Ok(mut open) = self.open.lock() {
            open.retain(|_, (_, task)| !task.inner().is_finished());
            open.insert(id, (webview.to_owned(), task));
        }
        id
    }

    fn close(&self, id: StreamId) -> bool {
        let closed = self.open.lock().ok().and_then(|mut open| open.remove(&id));
        match closed {
            Some((_, task)) => {
                task.abort();
                true
            }
            None => false,
        }
    }

    pub(crate) fn close_webview(&self, label: &str) {
        if let Ok(mut open) = self.open.lock() {
            open.retain(|_, (owner, task)| {
                let keep = owner != label;
                if !keep {
                    task.abort();
                }
                keep
            });
        }
    }

    pub(crate) fn close_all(&self) {
        if let Ok(mut open) = self.open.lock() {
            for (_, (_, task)) in open.drain() {
                task.abort();
            }
        }
    }
}

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

impl TtAgent {
    /// What `subscribe_agent_run_events` does, for any channel (also one the app makes in Rust);
    /// `webview` is the label of the webview whose page load closes the stream.
    /// An unknown run, or an invalid invocation id, is refused here with its code rather than
    /// as a stream that fails at once.
    pub async fn subscribe_run_events(
        &self,
        webview: &str,
        request: SubscribeRunEventsRequest,
        channel: Channel<RunStreamMessage>,
    ) -> Result<StreamId, HostError> {
        self.runtime
            .read_events(ReadEventsRequest {
                run_id: request.run_id.clone(),
                limit: Some(1),
                invocation_id: request.invocation_id.clone(),
                ..ReadEventsRequest::default()
            })
            .await?;
        let mut subscription =
            self.runtime
                .subscribe(&request.run_id, request.after_seq, request.invocation_id);
        if request.through_resumes {
            subscription = subscription.through_resumes();
        }
        Ok(self.streams.open(webview, async move {
            loop {
                let (message, last) = match subscription.next().await {
                    Ok(Some(event)) => (
                        RunStreamMessage::Event {
                            event: Box::new(event),
                        },
                        false,
                    ),
                    Ok(None) => (RunStreamMessage::End, true),
                    Err(err) => (
                        RunStreamMessage::Error {
                            code: err.code,
                            message: err.message,
                        },
                        true,
                    ),
                };
                // A channel whose page is gone stops the stream.
                if channel.send(message).is_err() || last {
                    return;
                }
            }
        }))
    }

    /// What `subscribe_agent_run_updates` does, for any channel.
    pub fn subscribe_run_updates(
        &self,
        webview: &str,
        channel: Channel<RunUpdatesMessage>,
    ) -> Result<StreamId, HostError> {
        let mut updates = self.runtime.run_updates()?;
        Ok(self.streams.open(webview, async move {
            loop {
                let message = match updates.next().await {
                    Some(RunUpdate::Changed(run)) => RunUpdatesMessage::Changed { run },
                    Some(_) => RunUpdatesMessage::Lagged,
                    None => RunUpdatesMessage::End,
                };
                let last = message == RunUpdatesMessage::End;
                if channel.send(message).is_err() || last {
                    return;
                }
            }
        }))
    }

    /// What `subscribe_agent_host_tool_calls` does, for any channel: each call of a
    /// host-answered tool (`HostTool::answered_by_host`, `register_agent_host_tool`) as it starts
    /// waiting, in any run.
    pub fn subscribe_host_tool_calls(
        &self,
        webview: &str,
        channel: Channel<HostToolCallsMessage>,
    ) -> Result<StreamId, HostError> {
        let mut calls = self.runtime.host_tool_call_feed()?;
        Ok(self.streams.open(webview, async move {
            loop {
                let message = match calls.recv().await {
                    Ok(call) => HostToolCallsMessage::Call {
                        call: Box::new(call),
                    },
                    Err(RecvError::Lagged(_)) => HostToolCallsMessage::Lagged,
                    Err(RecvError::Closed) => HostToolCallsMessage::End,
                };
                let last = message == HostToolCallsMessage::End;
                if channel.send(message).is_err() || last {
                    return;
                }
            }
        }))
    }

    /// Closes a stream; `false` when it was not open (already ended or closed).
    pub fn unsubscribe(&self, id: StreamId) -> bool {
        self.streams.close(id)
    }
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
