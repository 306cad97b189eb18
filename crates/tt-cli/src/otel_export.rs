//! Sending a finished run's spans to an OpenTelemetry collector over OTLP/HTTP (JSON), when
//! the standard `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` is set
//! (docs/observability.md). The spans are the run's journal seen as traces
//! (`AgentRuntime::export_otel`); they are sent once the run has ended.
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

/// Exports `run_id`'s spans when an endpoint is configured; says what happened on stderr.
pub async fn export_if_configured(runtime: &tt_runtime::AgentRuntime, run_id: &str) {
    let Some(endpoint) = endpoint_from_env() else {
        return;
    };
    let outcome = async {
        let body = runtime.export_otel(run_id).await?;
        post_json(&endpoint, &body).await
    }
    .await;
    match outcome {
        Ok(()) => eprintln!("spans of run {run_id} sent to {endpoint}"),
        Err(error) => {
            eprintln!("could not send the spans of run {run_id} to {endpoint}: {error:#}")
        }
    }
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
