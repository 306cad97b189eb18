//! Sending a run's spans to an OpenTelemetry collector over OTLP/HTTP (JSON), when the standard
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` is set
//! (docs/observability.md). The spans are the run's journal seen as traces
//! (`AgentRuntime::export_otel`). While the run works, each span is sent once it has ended
//! ([`LiveExport`]: when an agent ends, at most every `OTEL_BSP_SCHEDULE_DELAY` ms); what is
//! left is sent when the run ends. Span ids are derived from the run, so no span is sent twice.
//!
//! Only `http://` endpoints are spoken to (a collector on the machine or the local network, as
//! `otelcol` listens on `:4318`); for anything else, `tt-agent export-otel` writes the same JSON
//! to a file the collector can read. The command's outcome never depends on the collector: a
//! failure is reported on stderr.

use anyhow::{Context, anyhow, bail, ensure};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Where traces go, from the environment (the OpenTelemetry SDKs' variables).
pub fn endpoint_from_env() -> Option<String> {
    let nonempty = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    nonempty("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").or_else(|| {
        nonempty("OTEL_EXPORTER_OTLP_ENDPOINT")
            .map(|base| format!("{}/v1/traces", base.trim_end_matches('/')))
    })
}

/// The OpenTelemetry SDKs' default `OTEL_BSP_SCHEDULE_DELAY`: the least time between two posts
/// while the run works.
const DEFAULT_SCHEDULE_DELAY: Duration = Duration::from_millis(5_000);

/// A run's spans sent while it works: each ended span once, the rest at the run's end.
pub struct LiveExport {
    endpoint: String,
    delay: Duration,
    /// Span ids already sent.
    sent: std::collections::HashSet<String>,
    last_post: Option<std::time::Instant>,
    /// A post failed while the run worked: no more until the end, which tries once again.
    failing: bool,
}

impl LiveExport {
    /// A live export when an endpoint is configured.
    pub fn from_env() -> Option<Self> {
        let delay = std::env::var("OTEL_BSP_SCHEDULE_DELAY")
            .ok()
            .and_then(|ms| ms.trim().parse().ok())
            .map_or(DEFAULT_SCHEDULE_DELAY, Duration::from_millis);
        Some(Self {
            endpoint: endpoint_from_env()?,
            delay,
            sent: Default::default(),
            last_post: None,
            failing: false,
        })
    }

    /// Called for each event of the run: when `event` ends an agent and the schedule delay has
    /// passed since the last post, sends the spans that ended since.
    pub async fn on_event(
        &mut self,
        runtime: &tt_runtime::AgentRuntime,
        run_id: &str,
        event: &tt_runtime::AgentRunEvent,
    ) {
        use tt_runtime::RunEventType as T;
        let ends_agent = matches!(
            event.event_type,
            T::AgentInvocationCompleted
                | T::AgentInvocationFailed
                | T::AgentInvocationCancelled
                | T::AgentInvocationTransferred
        );
        let due = self
            .last_post
            .is_none_or(|last| last.elapsed() >= self.delay);
        if !ends_agent || !due || self.failing {
            return;
        }
        if let Err(error) = self.send(runtime, run_id, false).await {
            self.failing = true;
            eprintln!(
                "could not send spans of run {run_id} to {} (trying again when it ends): {error:#}",
                self.endpoint
            );
        }
    }

    /// The run has ended: sends every span not sent yet and says so on stderr.
    pub async fn finish(mut self, runtime: &tt_runtime::AgentRuntime, run_id: &str) {
        match self.send(runtime, run_id, true).await {
            Ok(_) => eprintln!("spans of run {run_id} sent to {}", self.endpoint),
            Err(error) => eprintln!(
                "could not send the spans of run {run_id} to {}: {error:#}",
                self.endpoint
            ),
        }
    }

    /// Posts the spans not sent yet (only ended ones unless `all`); returns how many.
    async fn send(
        &mut self,
        runtime: &tt_runtime::AgentRuntime,
        run_id: &str,
        all: bool,
    ) -> anyhow::Result<usize> {
        let mut body = runtime.export_otel(run_id).await?;
        let Some(spans) = body
            .pointer_mut("/resourceSpans/0/scopeSpans/0/spans")
            .and_then(serde_json::Value::as_array_mut)
        else {
            return Ok(0);
        };
        spans.retain(|span| {
            let id = span["spanId"].as_str().unwrap_or_default();
            !self.sent.contains(id) && (all || !is_unfinished(span))
        });
        let ids: Vec<String> = spans
            .iter()
            .filter_map(|span| span["spanId"].as_str().map(str::to_owned))
            .collect();
        self.last_post = Some(std::time::Instant::now());
        if ids.is_empty() {
            return Ok(0);
        }
        post_json(&self.endpoint, &body).await?;
        let count = ids.len();
        self.sent.extend(ids);
        Ok(count)
    }
}

/// Whether a span was still open when it was built (`tt.unfinished`).
fn is_unfinished(span: &serde_json::Value) -> bool {
    span["attributes"]
        .as_array()
        .is_some_and(|attributes| attributes.iter().any(|a| a["key"] == "tt.unfinished"))
}

/// POSTs `body` as JSON to an `http://host:port/path` URL and checks for a 2xx answer.
pub async fn post_json(url: &str, body: &serde_json::Value) -> anyhow::Result<()> {
    let Some(rest) = url.strip_prefix("http://") else {
        bail!(
            "only http:// OTLP endpoints are supported; write the spans with `tt-agent export-otel` instead"
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
    tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .map_err(|_| anyhow!("no answer within 10 s"))?
}
