//! The host side of OpenTelemetry export (docs/observability.md): a stored run as OTLP/JSON
//! traces, read from its journal and records, and the live export's flush.

use tt_domain::ids::RunId;

use super::AgentRuntime;
use crate::dto::HostResult;

impl AgentRuntime {
    /// The run as OpenTelemetry traces (an OTLP/JSON `ExportTraceServiceRequest`), built from
    /// its journal and records: `invoke_agent`, `chat` and `execute_tool` spans with the GenAI
    /// semantic conventions' attributes (docs/observability.md). The `chat` spans carry their
    /// messages when the live export captures content (without one, when
    /// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` says so).
    pub async fn export_otel(&self, run_id: &str) -> HostResult<serde_json::Value> {
        self.ensure_open()?;
        let capture = match &self.otel {
            Some(otel) => otel.captures_content(),
            None => crate::otel_live::capture_content_from(|name| std::env::var(name).ok()),
        };
        Ok(self
            .service
            .otel_traces(&RunId::from_raw(run_id), capture)
            .await?)
    }

    /// Where the live export posts spans; `None` when it is off.
    pub fn otel_endpoint(&self) -> Option<&str> {
        self.otel.as_ref().map(|otel| otel.endpoint())
    }

    /// Posts what is left of run `run_id` to the live export's collector now (a run's end
    /// does so by itself; this lets a host wait for it) and says how many spans went out;
    /// `None` when the live export is off. The error is the failed post's.
    pub async fn flush_otel(&self, run_id: &str) -> Option<Result<usize, String>> {
        let otel = self.otel.as_ref()?;
        if let Err(error) = self.ensure_open() {
            return Some(Err(error.to_string()));
        }
        Some(otel.flush(&RunId::from_raw(run_id)).await)
    }
}
