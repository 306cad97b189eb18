//! Host tools answered through the host API (docs/tools.md, "Host tools from another
//! language"): for a host that cannot hand the runtime a Rust handler (a webview, a process
//! speaking HTTP), a call waits here until the host answers it by run and call key, like a
//! commit or a prompt assembly waits for its answer.
//!
//! Waiting calls live in memory only: a runtime that stops loses them, and resume treats each
//! as a call in flight (its tool's in-flight rule decides whether it is made again).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{broadcast, oneshot};
use tokio_util::sync::CancellationToken;
use tt_domain::error_codes;
use tt_ports::{Clock, ExternalToolOutput, ToolSourceError};

use crate::dto::{HostError, HostResult};

/// How long a host-answered call waits for the host by default.
pub const DEFAULT_HOST_ANSWER_TIMEOUT: Duration = Duration::from_secs(300);

/// How many announcements a slow [`PendingHostToolCall`] listener may fall behind before it
/// misses some (it then reads the waiting calls again).
const ANNOUNCE_CAPACITY: usize = 256;

/// One call of a host-answered tool, waiting for the host's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingHostToolCall {
    pub run_id: String,
    /// The call's key in the run: what the answer names, the same on every resume of it.
    pub call_key: String,
    /// The tool's name (`chat.search`, without `host/`).
    pub tool: String,
    /// The model's arguments: check them against the tool's schema before using them.
    pub arguments: Map<String, Value>,
    /// When the answer is due, in milliseconds after the Unix epoch (the host's clock).
    pub answer_due_ms: u64,
}

/// The host's answer to one waiting call: `text` (and `structured` content) for a result, or
/// `error` for a refusal the agent reads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AnswerHostToolCallRequest {
    pub run_id: String,
    pub call_key: String,
    /// The text the agent reads. Absent with `structured`: the agent reads it as JSON.
    pub text: Option<String>,
    pub structured: Option<Value>,
    /// The call failed: the agent reads `message`; `code` is the host's own.
    pub error: Option<HostToolFailure>,
}

/// A host's refusal of one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostToolFailure {
    #[serde(default)]
    pub code: String,
    pub message: String,
}

type Answer = Result<ExternalToolOutput, HostToolFailure>;

/// A host's refusal of a call as the agent reads it: `tool.host_failed` with the host's
/// `message`, and the host's own `code` (when it gave one) as the reason.
pub(crate) fn host_refusal(message: String, code: String) -> ToolSourceError {
    ToolSourceError {
        code: error_codes::TOOL_HOST_FAILED,
        message,
        reason: Some(code).filter(|code| !code.is_empty()),
        may_have_run: false,
    }
}

struct Waiting {
    call: PendingHostToolCall,
    answer: oneshot::Sender<Answer>,
}

/// The calls waiting for the host, by run and call key.
pub(crate) struct HostAnswers {
    waiting: Mutex<BTreeMap<(String, String), Waiting>>,
    announce: broadcast::Sender<PendingHostToolCall>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for HostAnswers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostAnswers").finish_non_exhaustive()
    }
}

impl HostAnswers {
    pub(crate) fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            waiting: Mutex::new(BTreeMap::new()),
            announce: broadcast::channel(ANNOUNCE_CAPACITY).0,
            clock,
        }
    }

    /// The host's time, for an answer's due time.
    pub(crate) fn now(&self) -> tt_domain::time::Timestamp {
        self.clock.now()
    }
}

/// Takes a waiting call out of the map when its wait ends, however it ends.
struct Unregister<'a> {
    answers: &'a HostAnswers,
    key: (String, String),
}

impl Drop for Unregister<'_> {
    fn drop(&mut self) {
        self.answers.lock().remove(&self.key);
    }
}

impl HostAnswers {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<(String, String), Waiting>> {
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Offers `call` to the host and waits for its answer, the timeout, or `cancel`.
    pub(crate) async fn ask(
        &self,
        call: PendingHostToolCall,
        timeout: Duration,
        cancel: CancellationToken,
    ) -> Result<ExternalToolOutput, ToolSourceError> {
        let key = (call.run_id.clone(), call.call_key.clone());
        let tool = call.tool.clone();
        let (sender, receiver) = oneshot::channel();
        self.lock().insert(
            key.clone(),
            Waiting {
                call: call.clone(),
                answer: sender,
            },
        );
        let _unregister = Unregister { answers: self, key };
        // Nobody listening is fine: a host may read the waiting calls instead.
        let _ = self.announce.send(call);
        let answer = tokio::select! {
            answer = receiver => answer,
            () = tokio::time::sleep(timeout) => {
                return Err(ToolSourceError::new(
                    error_codes::TOOL_HOST_NO_ANSWER,
                    format!("`{tool}` got no answer in time; it may have run. Check before trying again."),
                )
                .sent());
            }
            () = cancel.cancelled() => {
                return Err(ToolSourceError::new(error_codes::AGENT_CANCELLED, "The call was cancelled.").sent());
            }
        };
        match answer {
            Ok(Ok(output)) => Ok(output),
            Ok(Err(failure)) => Err(host_refusal(failure.message, failure.code)),
            // The sender went away without an answer: only a replaced registration does that.
            Err(_) => Err(ToolSourceError::new(
                error_codes::TOOL_HOST_NO_ANSWER,
                format!("`{tool}` got no answer; it may have run. Check before trying again."),
            )
            .sent()),
        }
    }

    /// Answers one waiting call; `host.tool_call_not_pending` when nothing waits under that
    /// key, `host.request_invalid` for an answer with neither a result nor an error, or both.
    pub(crate) fn answer(&self, request: AnswerHostToolCallRequest) -> HostResult<()> {
        let answer = match (request.text, request.structured, request.error) {
            (None, None, Some(failure)) => Err(failure),
            (text, structured, None) if text.is_some() || structured.is_some() => {
                let structured = structured.unwrap_or(Value::Null);
                let text = text.unwrap_or_else(|| structured.to_string());
                Ok(ExternalToolOutput { text, structured })
            }
            _ => {
                return Err(HostError::new(
                    error_codes::HOST_REQUEST_INVALID,
                    "answer a host tool call with `text` and/or `structured`, or with `error`",
                ));
            }
        };
        let key = (request.run_id, request.call_key);
        let waiting = self.lock().remove(&key).ok_or_else(|| {
            HostError::new(
                error_codes::HOST_TOOL_CALL_NOT_PENDING,
                format!(
                    "no host tool call {} of run {} is waiting for an answer",
                    key.1, key.0
                ),
            )
        })?;
        // The caller may have stopped waiting a moment ago (cancel, timeout): then the answer
        // is dropped, as it would have been a moment later.
        let _ = waiting.answer.send(answer);
        Ok(())
    }

    /// The calls of `run_id` waiting for the host, oldest key first.
    pub(crate) fn pending_for_run(&self, run_id: &str) -> Vec<PendingHostToolCall> {
        self.lock()
            .range((run_id.to_owned(), String::new())..)
            .take_while(|((run, _), _)| run == run_id)
            .map(|(_, waiting)| waiting.call.clone())
            .collect()
    }

    /// A feed of calls as they start waiting.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<PendingHostToolCall> {
        self.announce.subscribe()
    }
}
