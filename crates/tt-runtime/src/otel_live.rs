//! Live OpenTelemetry export (docs/observability.md): when an OTLP endpoint is configured
//! (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`, or
//! [`OtelExportSettings`] given to the builder), one task of the runtime follows the events of
//! every run it executes, whichever surface started it (a host's `start_run`, the HTTP API, the
//! CLI), and posts each span once it has ended: batched like an SDK's batch span processor, at
//! the latest `OTEL_BSP_SCHEDULE_DELAY` ms after the first span of a batch ended, at once when
//! `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` spans wait, at most that many per post, each post bounded by
//! `OTEL_BSP_EXPORT_TIMEOUT`. What is left of a run is posted when it ends. The spans are the
//! run's journal seen as traces (`AgentRunService::otel_traces`), their ids derived from the
//! run, so each is sent once, also when a run is resumed (in this process after it was
//! forgotten, or in another): a run met part way counts as sent what its journal held at its
//! last end, when the exporter that followed it then posted all that was left. Only `http://` endpoints are spoken to (OTLP/HTTP with a JSON
//! body); a failed post stops a run's posts until its end, which tries once more.

use serde_json::Value;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tt_application::AgentRunService;
use tt_domain::event::{AgentRunEvent, RunEventType as T};
use tt_domain::ids::RunId;

/// Runs whose export has ended that are remembered (so a late flush does not send their spans
/// again); older ones are forgotten. A forgotten run resumed later is met part way, and what
/// was sent of it is read off its journal (`otel_spans_sent_before`), so only its new spans go.
const FINISHED_RUNS_KEPT: usize = 256;

/// Where and how spans are exported; [`from_env`](Self::from_env) reads the OpenTelemetry SDKs'
/// variables.
#[derive(Debug, Clone, PartialEq)]
pub struct OtelExportSettings {
    /// The OTLP/HTTP traces URL (`http://host:port/v1/traces`).
    pub endpoint: String,
    /// `OTEL_BSP_SCHEDULE_DELAY`: the longest an ended span waits (5000 ms by default).
    pub schedule_delay: Duration,
    /// `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`: spans per post, and how many waiting spans post at
    /// once (512 by default).
    pub max_export_batch_size: usize,
    /// `OTEL_BSP_EXPORT_TIMEOUT`: the longest one post may take (30000 ms by default).
    pub export_timeout: Duration,
    /// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`: `chat` spans carry the messages
    /// (off by default).
    pub capture_content: bool,
}

impl OtelExportSettings {
    /// The SDKs' defaults for `endpoint`.
    pub fn new(endpoint: impl Into<String>) -> Self {
        Self {
            endpoint: endpoint.into(),
            schedule_delay: Duration::from_millis(5_000),
            max_export_batch_size: 512,
            export_timeout: Duration::from_millis(30_000),
            capture_content: false,
        }
    }

    /// From the environment; `None` when no endpoint is set or `OTEL_SDK_DISABLED=true`.
    pub fn from_env() -> Option<Self> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// From variables read by `var` (the environment, or a test's map).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Option<Self> {
        let value = |name: &str| {
            var(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        if value("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return None;
        }
        let endpoint = value("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").or_else(|| {
            value("OTEL_EXPORTER_OTLP_ENDPOINT")
                .map(|base| format!("{}/v1/traces", base.trim_end_matches('/')))
        })?;
        let mut settings = Self::new(endpoint);
        let number = |name: &str| value(name).and_then(|v| v.parse::<u64>().ok());
        if let Some(ms) = number("OTEL_BSP_SCHEDULE_DELAY") {
            settings.schedule_delay = Duration::from_millis(ms);
        }
        if let Some(size) = number("OTEL_BSP_MAX_EXPORT_BATCH_SIZE").filter(|n| *n > 0) {
            settings.max_export_batch_size = usize::try_from(size).unwrap_or(usize::MAX);
        }
        if let Some(ms) = number("OTEL_BSP_EXPORT_TIMEOUT").filter(|n| *n > 0) {
            settings.export_timeout = Duration::from_millis(ms);
        }
        settings.capture_content = capture_content_from(&var);
        Some(settings)
    }
}

/// Whether `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` (read by `var`) turns content
/// capture on: `true`, `span_only` or `span_and_event`, in any case.
pub(crate) fn capture_content_from(var: impl Fn(&str) -> Option<String>) -> bool {
    var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT").is_some_and(|v| {
        ["true", "span_only", "span_and_event"]
            .iter()
            .any(|on| v.trim().eq_ignore_ascii_case(on))
    })
}

/// A request to post what is left of a run now.
struct Flush {
    run_id: RunId,
    reply: oneshot::Sender<Result<usize, String>>,
}

/// The runtime's live exporter: started on first use (it needs the tokio runtime).
pub(crate) struct OtelLive {
    settings: OtelExportSettings,
    flushes: Mutex<Option<mpsc::UnboundedSender<Flush>>>,
}

impl OtelLive {
    pub(crate) fn new(settings: OtelExportSettings) -> Self {
        Self {
            settings,
            flushes: Mutex::new(None),
        }
    }

    pub(crate) fn endpoint(&self) -> &str {
        &self.settings.endpoint
    }

    pub(crate) fn captures_content(&self) -> bool {
        self.settings.capture_content
    }

    /// Starts the exporter task once (inside a tokio runtime; outside one it waits for the next
    /// call).
    pub(crate) fn ensure_started(&self, service: &Arc<AgentRunService>, end: &CancellationToken) {
        let mut flushes = self.flushes.lock().unwrap_or_else(PoisonError::into_inner);
        if flushes.is_some() {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (sender, receiver) = mpsc::unbounded_channel();
        let exporter = Exporter {
            settings: self.settings.clone(),
            service: Arc::downgrade(service),
            runs: HashMap::new(),
            finished: VecDeque::new(),
        };
        handle.spawn(exporter.run(service.event_sink().live(), receiver, end.clone()));
        *flushes = Some(sender);
    }

    /// Posts what is left of `run_id` now and says how many spans went out.
    pub(crate) async fn flush(&self, run_id: &RunId) -> Result<usize, String> {
        let sender = self
            .flushes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or_else(|| "the exporter has not started".to_owned())?;
        let (reply, answer) = oneshot::channel();
        sender
            .send(Flush {
                run_id: run_id.clone(),
                reply,
            })
            .map_err(|_| "the exporter has stopped".to_owned())?;
        answer
            .await
            .map_err(|_| "the exporter has stopped".to_owned())?
    }
}

/// What the exporter keeps of one run.
#[derive(Default)]
struct RunExport {
    sent: HashSet<String>,
    /// Spans ended and not posted yet (counted from the events).
    pending: usize,
    /// When the oldest of them must go.
    due: Option<Instant>,
    /// A post failed: nothing more until the run ends.
    failing: bool,
    finished: bool,
}

struct Exporter {
    settings: OtelExportSettings,
    /// Weak, so a runtime dropped without `shutdown` ends the task (its events channel closes).
    service: Weak<AgentRunService>,
    runs: HashMap<RunId, RunExport>,
    finished: VecDeque<RunId>,
}

/// Whether the event ends a span (an agent, a model call attempt, a tool call).
fn ends_span(event_type: &T) -> bool {
    matches!(
        event_type,
        T::AgentInvocationCompleted
            | T::AgentInvocationFailed
            | T::AgentInvocationCancelled
            | T::AgentInvocationTransferred
            | T::AgentInvocationInterrupted
            | T::ModelCompleted
            | T::ModelCallAttemptFailed
            | T::ToolCallCompleted
            | T::ToolCallFailed
    )
}

/// Whether the event ends the run (what is left is posted).
fn ends_run(event_type: &T) -> bool {
    matches!(
        event_type,
        T::RunCompleted | T::RunPartialSuccess | T::RunCancelled | T::RunFailed | T::RunInterrupted
    )
}

impl Exporter {
    async fn run(
        mut self,
        mut events: broadcast::Receiver<AgentRunEvent>,
        mut flushes: mpsc::UnboundedReceiver<Flush>,
        end: CancellationToken,
    ) {
        loop {
            let next_due = self.runs.values().filter_map(|run| run.due).min();
            tokio::select! {
                biased;
                () = end.cancelled() => break,
                Some(flush) = flushes.recv() => {
                    let sent = self.post(&flush.run_id, true).await;
                    let _ = flush.reply.send(sent);
                }
                received = events.recv() => match received {
                    Ok(event) => self.on_event(&event).await,
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        // Events were missed: every run may have ended spans.
                        let now = Instant::now();
                        for run in self.runs.values_mut().filter(|run| !run.finished) {
                            run.pending += 1;
                            run.due = Some(now);
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => break,
                },
                () = sleep_until(next_due), if next_due.is_some() => {
                    let now = Instant::now();
                    let due: Vec<RunId> = self
                        .runs
                        .iter()
                        .filter(|(_, run)| run.due.is_some_and(|at| at <= now))
                        .map(|(id, _)| id.clone())
                        .collect();
                    for run_id in due {
                        let _ = self.post(&run_id, false).await;
                    }
                }
            }
        }
        // Shutting down: what is left of every run still followed goes out.
        let open: Vec<RunId> = self
            .runs
            .iter()
            .filter(|(_, run)| !run.finished)
            .map(|(id, _)| id.clone())
            .collect();
        for run_id in open {
            let _ = self.post(&run_id, true).await;
        }
    }

    async fn on_event(&mut self, event: &AgentRunEvent) {
        if !self.runs.contains_key(&event.run_id) && event.seq > 1 {
            // Met part way (a run resumed by this process after it was forgotten, or first
            // written by another process): what was sent of it before is read off its journal.
            let sent = match self.service.upgrade() {
                Some(service) => service
                    .otel_spans_sent_before(&event.run_id, event.seq)
                    .await
                    .map(|ids| ids.into_iter().collect())
                    .unwrap_or_default(),
                None => HashSet::new(),
            };
            self.runs.insert(
                event.run_id.clone(),
                RunExport {
                    sent,
                    ..RunExport::default()
                },
            );
        }
        let run = self.runs.entry(event.run_id.clone()).or_default();
        // A run resumed in this process is followed again.
        run.finished = false;
        if ends_run(&event.event_type) {
            let _ = self.post(&event.run_id, true).await;
            return;
        }
        if !ends_span(&event.event_type) || run.failing {
            return;
        }
        run.pending += 1;
        run.due
            .get_or_insert_with(|| Instant::now() + self.settings.schedule_delay);
        if run.pending >= self.settings.max_export_batch_size {
            let _ = self.post(&event.run_id, false).await;
        }
    }

    /// Posts the run's ended spans not sent yet (`all`: every span, at its end), in batches.
    async fn post(&mut self, run_id: &RunId, all: bool) -> Result<usize, String> {
        let result = self.post_spans(run_id, all).await;
        let run = self.runs.entry(run_id.clone()).or_default();
        run.pending = 0;
        run.due = None;
        if result.is_err() {
            run.failing = true;
        }
        if all && !run.finished {
            run.finished = true;
            run.failing = false;
            self.finished.push_back(run_id.clone());
            while self.finished.len() > FINISHED_RUNS_KEPT {
                if let Some(old) = self.finished.pop_front()
                    && self.runs.get(&old).is_some_and(|run| run.finished)
                {
                    self.runs.remove(&old);
                }
            }
        }
        result
    }

    async fn post_spans(&mut self, run_id: &RunId, all: bool) -> Result<usize, String> {
        let service = self
            .service
            .upgrade()
            .ok_or_else(|| "the runtime is gone".to_owned())?;
        let mut body = service
            .otel_traces(run_id, self.settings.capture_content)
            .await
            .map_err(|err| err.to_string())?;
        let sent = &self.runs.entry(run_id.clone()).or_default().sent;
        let Some(spans) = body
            .pointer_mut("/resourceSpans/0/scopeSpans/0/spans")
            .and_then(Value::as_array_mut)
        else {
            return Ok(0);
        };
        let fresh: Vec<Value> = std::mem::take(spans)
            .into_iter()
            .filter(|span| {
                let id = span["spanId"].as_str().unwrap_or_default();
                !sent.contains(id) && (all || !is_unfinished(span))
            })
            .collect();
        let mut count = 0;
        for batch in fresh.chunks(self.settings.max_export_batch_size.max(1)) {
            if let Some(spans) = body
                .pointer_mut("/resourceSpans/0/scopeSpans/0/spans")
                .and_then(Value::as_array_mut)
            {
                *spans = batch.to_vec();
            }
            post_json(&self.settings.endpoint, &body, self.settings.export_timeout)
                .await
                .map_err(|err| format!("{err:#}"))?;
            let sent = &mut self.runs.entry(run_id.clone()).or_default().sent;
            sent.extend(
                batch
                    .iter()
                    .filter_map(|span| span["spanId"].as_str().map(str::to_owned)),
            );
            count += batch.len();
        }
        Ok(count)
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Whether a span was still open when it was built (`tt.unfinished`).
fn is_unfinished(span: &Value) -> bool {
    span["attributes"]
        .as_array()
        .is_some_and(|attributes| attributes.iter().any(|a| a["key"] == "tt.unfinished"))
}

/// POSTs `body` as JSON to an `http://host:port/path` URL within `timeout` and checks for a
/// 2xx answer.
pub async fn post_json(url: &str, body: &Value, timeout: Duration) -> anyhow::Result<()> {
    use anyhow::{Context, anyhow, bail, ensure};
    let Some(rest) = url.strip_prefix("http://") else {
        bail!(
            "only http:// OTLP endpoints are supported; write the spans with `export_otel` instead"
        );
    };
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/v1/traces"),
    };
    ensure!(!authority.is_empty(), "the endpoint `{url}` names no host");
    let address = if authority.contains(':') {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    let payload = serde_json::to_vec(body)?;
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(&address)
            .await
            .with_context(|| format!("connecting to {address}"))?;
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            payload.len()
        );
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(&payload).await?;
        let mut answer = Vec::new();
        // The status line is enough; a collector's answer body is small.
        stream.take(64 * 1024).read_to_end(&mut answer).await?;
        let status_line = String::from_utf8_lossy(&answer);
        let status = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|code| code.parse::<u16>().ok())
            .ok_or_else(|| anyhow!("the collector sent no HTTP status"))?;
        ensure!(
            (200..300).contains(&status),
            "the collector answered HTTP {status}"
        );
        Ok(())
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| anyhow!("no answer within {} ms", timeout.as_millis()))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_come_from_the_sdks_variables() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| (*value).to_owned())
            }
        };
        assert_eq!(OtelExportSettings::from_vars(vars(&[])), None);
        let settings = OtelExportSettings::from_vars(vars(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318/"),
            ("OTEL_BSP_SCHEDULE_DELAY", "250"),
            ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "8"),
            ("OTEL_BSP_EXPORT_TIMEOUT", "900"),
            ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "TRUE"),
        ]))
        .unwrap();
        assert_eq!(settings.endpoint, "http://127.0.0.1:4318/v1/traces");
        assert_eq!(settings.schedule_delay, Duration::from_millis(250));
        assert_eq!(settings.max_export_batch_size, 8);
        assert_eq!(settings.export_timeout, Duration::from_millis(900));
        assert!(settings.capture_content);
        let traces = OtelExportSettings::from_vars(vars(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:1"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b:2/t"),
        ]))
        .unwrap();
        assert_eq!(traces, OtelExportSettings::new("http://b:2/t"));
        assert_eq!(
            OtelExportSettings::from_vars(vars(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:1"),
                ("OTEL_SDK_DISABLED", "true"),
            ])),
            None
        );
    }
}
