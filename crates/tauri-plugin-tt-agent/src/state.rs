//! The plugin's managed state, [`TtAgent`]: the runtime and the open streams, each a task that
//! forwards a subscription to a channel and ends when its channel's page is gone, when it is
//! closed, or at shutdown. The forwarding tasks run on a thread of their own (one small tokio
//! runtime), not among the runs' tasks: an event waits for the OS to wake that thread, never
//! for the runs' work queued on the app's async runtime (`docs/benchmarks.md`, "channel").

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tauri::async_runtime::JoinHandle;
use tauri::ipc::Channel;
use tokio::sync::broadcast::error::RecvError;
use tt_runtime::{AgentRuntime, HostError, ReadEventsRequest, RunUpdate};

use crate::messages::{
    HostToolCallsMessage, RunStreamMessage, RunUpdatesMessage, StreamId, SubscribeRunEventsRequest,
};

/// The plugin's managed state: the runtime and the open streams. Reach it from Rust with
/// `app.state::<TtAgent>()` (or [`TtAgentExt::tt_agent`]).
pub struct TtAgent {
    runtime: Arc<AgentRuntime>,
    streams: Streams,
}

impl std::fmt::Debug for TtAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TtAgent")
            .field("data_dir", &self.runtime.data_dir())
            .finish_non_exhaustive()
    }
}

impl TtAgent {
    pub(crate) fn new(runtime: AgentRuntime) -> Self {
        Self {
            runtime: Arc::new(runtime),
            streams: Streams::default(),
        }
    }

    /// The runtime, for the app's own Rust code (the same one the commands use).
    pub fn runtime(&self) -> &Arc<AgentRuntime> {
        &self.runtime
    }

    /// Closes every stream and shuts the runtime down: runs still going are stopped and
    /// recorded (a later start resumes them with `resume_agent_run`), every subscription ends.
    /// The plugin calls it on `RunEvent::Exit`; a second call returns an empty list.
    pub async fn shutdown(&self) -> Result<Vec<tt_runtime::AgentRun>, HostError> {
        self.streams.close_all();
        self.runtime.shutdown().await
    }

    /// Closes the streams of webview `label` (its page is loading anew).
    pub(crate) fn close_webview_streams(&self, label: &str) {
        self.streams.close_webview(label);
    }

    /// Closes every stream.
    pub(crate) fn close_streams(&self) {
        self.streams.close_all();
    }
}

/// The open streams, by id, with the webview each belongs to.
#[derive(Default)]
pub(crate) struct Streams {
    next_id: AtomicU64,
    open: Mutex<HashMap<StreamId, (String, JoinHandle<()>)>>,
    forwarders: Forwarders,
}

/// The thread the forwarding tasks run on: a current-thread tokio runtime started with the
/// first stream, ended when the plugin's state goes (its sender dropped). Where no thread or
/// runtime can be made, the tasks run on the app's async runtime instead.
#[derive(Default)]
struct Forwarders {
    started:
        std::sync::OnceLock<Option<(tokio::runtime::Handle, tokio::sync::oneshot::Sender<()>)>>,
}

impl Forwarders {
    fn handle(&self) -> Option<&tokio::runtime::Handle> {
        self.started
            .get_or_init(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .ok()?;
                let handle = runtime.handle().clone();
                let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
                std::thread::Builder::new()
                    .name("tt-agent-streams".to_owned())
                    .spawn(move || {
                        let _ = runtime.block_on(stopped);
                    })
                    .ok()?;
                Some((handle, stop))
            })
            .as_ref()
            .map(|(handle, _)| handle)
    }

    fn spawn(&self, forward: impl Future<Output = ()> + Send + 'static) -> JoinHandle<()> {
        match self.handle() {
            Some(handle) => JoinHandle::Tokio(handle.spawn(forward)),
            None => tauri::async_runtime::spawn(forward),
        }
    }
}

impl Streams {
    fn open(&self, webview: &str, forward: impl Future<Output = ()> + Send + 'static) -> StreamId {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let task = self.forwarders.spawn(forward);
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

    fn close_webview(&self, label: &str) {
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

    fn close_all(&self) {
        if let Ok(mut open) = self.open.lock() {
            for (_, (_, task)) in open.drain() {
                task.abort();
            }
        }
    }
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
