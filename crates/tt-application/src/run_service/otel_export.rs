//! A run as OpenTelemetry traces (`AgentRunService::otel_traces`): the journal read whole, and
//! what the stored records and the runtime add to it ([`OtelExtras`]): the default model of a
//! connection a binding names no model of, each answer's model and id, and with content capture
//! each model call's messages. Linear in the run: one record read per model answer, one
//! conversation per agent when content is captured.

use serde_json::Value;
use std::collections::BTreeSet;
use tt_domain::event::{AgentRunEvent, RunEventType};
use tt_domain::ids::{InvocationId, RunId};
use tt_domain::model::AgentModelResponse;
use tt_ports::RunDocument;

use super::otel_content::{agent_content, output_messages};
use crate::error::ApplicationResult;
use crate::journal_read::read_all_events;
use crate::otel::{AnswerExtras, OtelExtras, otlp_traces_with};

use super::AgentRunService;

impl AgentRunService {
    /// The run as an OTLP/JSON `ExportTraceServiceRequest` (docs/observability.md); with
    /// `capture_content`, each `chat` span also carries its messages.
    pub async fn otel_traces(
        &self,
        run_id: &RunId,
        capture_content: bool,
    ) -> ApplicationResult<Value> {
        let run = self.get_run(run_id).await?;
        let events = self.all_events(run_id).await?;
        let mut extras = OtelExtras::default();
        let mut agents: BTreeSet<String> = BTreeSet::new();
        for event in &events {
            let field = |name: &str| event.payload.get(name).and_then(Value::as_str);
            match event.event_type {
                RunEventType::AgentModelBindingResolved if field("modelId").is_none() => {
                    let connection = field("connectionRef").unwrap_or_default().to_owned();
                    if extras.default_models.contains_key(&connection) {
                        continue;
                    }
                    if let Some(model) = self.default_model(&connection).await {
                        extras.default_models.insert(connection, model);
                    }
                }
                RunEventType::ModelCompleted => {
                    if let Some(invocation) = field("invocationId") {
                        agents.insert(invocation.to_owned());
                    }
                    let Some(document) =
                        field("modelResponsePath").and_then(RunDocument::from_relative_path)
                    else {
                        continue;
                    };
                    let response: Option<AgentModelResponse> = self
                        .services
                        .runs
                        .read_document(run_id, &document)
                        .await?
                        .and_then(|mut stored| stored.get_mut("response").map(Value::take))
                        .and_then(|response| serde_json::from_value(response).ok());
                    if let Some(response) = response {
                        extras.answers.insert(
                            event.seq,
                            AnswerExtras {
                                output_messages: capture_content
                                    .then(|| output_messages(&response)),
                                model: response.model,
                                response_id: response.response_id,
                            },
                        );
                    }
                }
                _ => {}
            }
        }
        if capture_content {
            for invocation in agents {
                let conversation = self
                    .agent_conversation(run_id, &InvocationId::from_raw(invocation.as_str()))
                    .await?;
                let content = agent_content(&conversation);
                if let Some(instructions) = content.system_instructions {
                    extras
                        .system_instructions
                        .insert(invocation.clone(), instructions);
                }
                for (round, messages) in content.inputs {
                    extras
                        .input_messages
                        .insert((invocation.clone(), round), messages);
                }
            }
        }
        Ok(otlp_traces_with(&run, &events, &extras))
    }

    /// The ids of the spans a live exporter had sent of a run before the event at `before_seq`,
    /// as its journal tells them, for an exporter that meets the run there without remembering
    /// it (a run resumed in a new process, or one the exporter forgot): an exporter posts all
    /// that is left of a run when it ends, so everything the journal held at the run's last end
    /// before `before_seq` went out then. A branch's copied events (up to `forkedFrom.seq`)
    /// were sent under its source's trace, never its own: an end among them does not count.
    /// Empty when no end comes before `before_seq`.
    pub async fn otel_spans_sent_before(
        &self,
        run_id: &RunId,
        before_seq: u64,
    ) -> ApplicationResult<BTreeSet<String>> {
        let run = self.get_run(run_id).await?;
        let own_from = run.forked_from.as_ref().map_or(0, |fork| fork.seq);
        let mut events = self.all_events(run_id).await?;
        events.retain(|event| event.seq < before_seq);
        let Some(end) = events
            .iter()
            .rposition(|event| event.seq > own_from && ends_run(&event.event_type))
        else {
            return Ok(BTreeSet::new());
        };
        events.truncate(end + 1);
        let traces = otlp_traces_with(&run, &events, &OtelExtras::default());
        Ok(traces
            .pointer("/resourceSpans/0/scopeSpans/0/spans")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|span| span["spanId"].as_str().map(str::to_owned))
            .collect())
    }

    /// The default model of a named connection ("": the runtime's default provider).
    async fn default_model(&self, connection: &str) -> Option<String> {
        if connection.is_empty() {
            return self.services.model_info.default_model.clone();
        }
        match self.services.connections.resolve(connection).await {
            Ok(Some(resolved)) => resolved.model_info.default_model,
            _ => None,
        }
    }

    /// The whole journal of a run, in seq order.
    async fn all_events(&self, run_id: &RunId) -> ApplicationResult<Vec<AgentRunEvent>> {
        Ok(read_all_events(self.services.journal.as_ref(), run_id).await?)
    }
}

/// Whether the event ends the run (its live export posts all that is left of it then).
fn ends_run(event_type: &RunEventType) -> bool {
    matches!(
        event_type,
        RunEventType::RunCompleted
            | RunEventType::RunPartialSuccess
            | RunEventType::RunCancelled
            | RunEventType::RunFailed
            | RunEventType::RunInterrupted
    )
}
