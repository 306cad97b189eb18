//! Sending a run's spans to an OpenTelemetry collector (docs/observability.md): the runtime's
//! live export posts each span as it ends, batched by the `OTEL_BSP_*` variables, whenever
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` is set
//! (`tt_runtime::OtelExportSettings::from_env`). At the run's end the command waits for what
//! is left to be posted and says on stderr how it went; its outcome never depends on the
//! collector.

/// Waits until the rest of the run's spans are posted, and says so on stderr (nothing when the
/// live export is off).
pub(crate) async fn finish(runtime: &tt_runtime::AgentRuntime, run_id: &str) {
    let Some(flushed) = runtime.flush_otel(run_id).await else {
        return;
    };
    let endpoint = runtime.otel_endpoint().unwrap_or_default();
    match flushed {
        Ok(_) => eprintln!("spans of run {run_id} sent to {endpoint}"),
        Err(error) => eprintln!("could not send the spans of run {run_id} to {endpoint}: {error}"),
    }
}
