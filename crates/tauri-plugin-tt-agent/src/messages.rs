//! The stream commands' requests and messages: a run's events, the runs list's changes and the
//! calls of host-answered tools, pushed to the webview over a `tauri::ipc::Channel`, live,
//! without polling.
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

use serde::{Deserialize, Serialize};
use tt_runtime::{AgentRun, AgentRunEvent, PendingHostToolCall};

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
