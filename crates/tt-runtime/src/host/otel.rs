//! The host side of OpenTelemetry export (docs/observability.md): a stored run as OTLP/JSON
//! traces, read from its journal.

use tt_domain::ids::RunId;

use super::AgentRuntime;
use crate::dto::HostResult;

impl AgentRuntime {
    /// The run as OpenTelemetry traces (an OTLP/JSON `ExportTraceServiceRequest`), built from
    /// its journal: `invoke_agent`, `chat` and `execute_tool` spans with the GenAI semantic
    /// conventions' attributes (docs/observability.md).
    pub async fn export_otel(&self, run_id: &str) -> HostResult<serde_json::Value> {
        self.ensure_open()?;
        let run = self.get_run(run_id).await?;
        let journal = self.service.services().journal.as_ref();
        let id = RunId::from_raw(run_id);
        let mut events = Vec::new();
        loop {
            let page = journal
                .read(
                    &id,
                    &tt_ports::EventPage {
                        after_seq: events
                            .last()
                            .map(|event: &tt_domain::event::AgentRunEvent| event.seq),
                        limit: Some(tt_ports::journal::MAX_EVENT_PAGE_LIMIT),
                        ..tt_ports::EventPage::default()
                    },
                )
                .await
                .map_err(tt_application::ApplicationError::from)?;
            if page.is_empty() {
                break;
            }
            events.extend(page);
        }
        Ok(tt_application::otlp_traces(&run, &events))
    }
}
