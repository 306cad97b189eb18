//! A run as OpenTelemetry traces, from its journal: one `invoke_agent` span per agent (under
//! the agent that delegated it or handed over to it), and under each its `chat` spans (one per
//! model call attempt) and `execute_tool` spans (one per tool call), with the GenAI semantic
//! conventions' attributes (`gen_ai.operation.name`, `gen_ai.agent.name`, `gen_ai.usage.*`,
//! `gen_ai.tool.name`, …). The result is an OTLP/JSON `ExportTraceServiceRequest`
//! (docs/observability.md): what `tt-agent export-otel` prints and what it posts to an OTLP/HTTP
//! collector.
//!
//! What the journal does not hold comes in [`OtelExtras`], gathered from the stored records by
//! `AgentRunService::otel_traces`: the model a connection uses when the profile names none,
//! each answer's model and, when content capture is on, the messages of each model call
//! (`run_service::otel_content`). Each agent's span carries the usage and cost of its own model calls
//! and, as `tt.tree.*`, of those its sub-tree made while it worked (before its span ended).
//!
//! Ids are derived from the run and event ids, so exporting a run twice gives the same trace;
//! times are the journal's (the `Clock` port's). A span whose end the journal lacks (an
//! interrupted run) ends at the run's last event and carries `tt.unfinished = true`.

use serde_json::{Value, json};
use std::collections::BTreeMap;
use tt_domain::error_codes;
use tt_domain::event::{AgentRunEvent, RunEventType as T};
use tt_domain::run::AgentRun;
use tt_domain::text::sha256_hex;
use tt_domain::time::Timestamp;

/// OTLP span kinds.
const KIND_INTERNAL: u8 = 1;
const KIND_CLIENT: u8 = 3;
/// OTLP status codes.
const STATUS_OK: u8 = 1;
const STATUS_ERROR: u8 = 2;

/// What an export adds to the journal's facts, from the stored records and the runtime.
#[derive(Debug, Clone, Default)]
pub struct OtelExtras {
    /// The default model of each connection a binding names without a model id, by
    /// `connectionRef` ("" for the runtime's default provider).
    pub default_models: BTreeMap<String, String>,
    /// What the stored answer of each `model_completed` (by seq) says.
    pub answers: BTreeMap<u64, AnswerExtras>,
    /// With content capture: each agent's system instructions (`gen_ai.system_instructions`),
    /// by invocation.
    pub system_instructions: BTreeMap<String, Value>,
    /// With content capture: the messages each model call was given (`gen_ai.input.messages`),
    /// by (invocation, round).
    pub input_messages: BTreeMap<(String, u64), Value>,
}

/// What a stored answer adds to its `chat` span.
#[derive(Debug, Clone, Default)]
pub struct AnswerExtras {
    /// `gen_ai.response.model`.
    pub model: Option<String>,
    /// `gen_ai.response.id`.
    pub response_id: Option<String>,
    /// With content capture: `gen_ai.output.messages`.
    pub output_messages: Option<Value>,
}

/// The usage and cost of model calls, summed.
#[derive(Debug, Clone, Copy, Default)]
struct Usage {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    cost: Option<f64>,
}

impl Usage {
    fn add(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        if let Some(cost) = other.cost {
            *self.cost.get_or_insert(0.0) += cost;
        }
    }

    fn of(event: &AgentRunEvent) -> Usage {
        let usage = event.payload.get("usage").filter(|u| u.is_object());
        let tokens = |field: &str| {
            usage
                .and_then(|u| u.get(field))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        Usage {
            input: tokens("inputTokens"),
            output: tokens("outputTokens"),
            cache_read: tokens("cachedInputTokens"),
            cache_write: tokens("cacheWriteTokens"),
            cost: event.payload.get("costUsd").and_then(Value::as_f64),
        }
    }

    /// The span attributes: `gen_ai.usage.*` and `tt.cost_usd` under `prefix`.
    fn attributes(&self, tokens: &str, cost: &str) -> Vec<(String, Value)> {
        let mut attributes = vec![
            (format!("{tokens}.input_tokens"), json!(self.input)),
            (format!("{tokens}.output_tokens"), json!(self.output)),
        ];
        if self.cache_read > 0 {
            attributes.push((
                format!("{tokens}.cache_read.input_tokens"),
                json!(self.cache_read),
            ));
        }
        if self.cache_write > 0 {
            attributes.push((
                format!("{tokens}.cache_creation.input_tokens"),
                json!(self.cache_write),
            ));
        }
        if let Some(usd) = self.cost {
            attributes.push((cost.to_owned(), json!(tt_domain::cost::round_usd(usd))));
        }
        attributes
    }
}

/// One span being built.
#[derive(Debug, Clone)]
struct Span {
    span_id: String,
    parent: Option<String>,
    name: String,
    kind: u8,
    start: Timestamp,
    end: Option<Timestamp>,
    attributes: Vec<(String, Value)>,
    error: Option<String>,
}

impl Span {
    fn to_otlp(&self, trace_id: &str, last: Timestamp) -> Value {
        let mut attributes: Vec<Value> = self
            .attributes
            .iter()
            .map(|(key, value)| json!({"key": key, "value": any_value(value)}))
            .collect();
        if self.end.is_none() {
            attributes.push(json!({"key": "tt.unfinished", "value": {"boolValue": true}}));
        }
        let mut span = json!({
            "traceId": trace_id,
            "spanId": self.span_id,
            "name": self.name,
            "kind": self.kind,
            "startTimeUnixNano": nanos(self.start),
            "endTimeUnixNano": nanos(self.end.unwrap_or(last).max(self.start)),
            "attributes": attributes,
            "status": match &self.error {
                Some(message) => json!({"code": STATUS_ERROR, "message": message}),
                None => json!({"code": STATUS_OK}),
            },
        });
        if let Some(parent) = &self.parent {
            span["parentSpanId"] = json!(parent);
        }
        span
    }
}

/// An OTLP `AnyValue`.
fn any_value(value: &Value) -> Value {
    match value {
        Value::Bool(flag) => json!({"boolValue": flag}),
        Value::Number(number) if number.is_i64() || number.is_u64() => {
            json!({"intValue": number.to_string()})
        }
        Value::Number(number) => json!({"doubleValue": number.as_f64().unwrap_or_default()}),
        Value::String(text) => json!({"stringValue": text}),
        other => json!({"stringValue": other.to_string()}),
    }
}

fn nanos(at: Timestamp) -> String {
    (i128::from(at.unix_millis()) * 1_000_000)
        .max(0)
        .to_string()
}

/// A 16-hex-digit span id (or 32 for the trace) derived from `key`.
fn id(key: &str, digits: usize) -> String {
    sha256_hex(key.as_bytes())[..digits].to_owned()
}

/// Where a tool comes from: `gen_ai.tool.type` (`extension` for an MCP server's tool,
/// `function` for any other), `tt.tool.source` (`builtin`, `host` or `mcp`) and, for an MCP
/// tool, `tt.tool.server` (its server's registration name).
fn tool_source_attributes(tool: &str) -> Vec<(String, Value)> {
    use tt_domain::tool_model::{ExternalSource, ToolId};
    match ToolId::parse(tool) {
        Ok(ToolId::External(id)) => match id.source() {
            ExternalSource::Host { .. } => vec![
                ("gen_ai.tool.type".into(), json!("function")),
                ("tt.tool.source".into(), json!("host")),
            ],
            ExternalSource::Mcp { server, .. } => vec![
                ("gen_ai.tool.type".into(), json!("extension")),
                ("tt.tool.source".into(), json!("mcp")),
                ("tt.tool.server".into(), json!(server)),
            ],
        },
        Ok(ToolId::Builtin(_)) => vec![
            ("gen_ai.tool.type".into(), json!("function")),
            ("tt.tool.source".into(), json!("builtin")),
        ],
        Err(_) => Vec::new(),
    }
}

fn text<'a>(event: &'a AgentRunEvent, field: &str) -> Option<&'a str> {
    event.payload.get(field).and_then(Value::as_str)
}

/// The OTLP/JSON export of `run` from its `events` (the whole journal, in seq order).
pub fn otlp_traces(run: &AgentRun, events: &[AgentRunEvent]) -> Value {
    otlp_traces_with(run, events, &OtelExtras::default())
}

/// [`otlp_traces`] with what the stored records add.
pub fn otlp_traces_with(run: &AgentRun, events: &[AgentRunEvent], extras: &OtelExtras) -> Value {
    let mut trace = TraceBuilder::new(run.id.as_str(), extras);
    for event in events {
        trace.read(event);
    }
    let last = events
        .last()
        .map_or(run.updated_at, |event| event.timestamp);
    trace.finish(run, last)
}

/// The spans of one run, built event by event.
struct TraceBuilder<'a> {
    run_id: &'a str,
    extras: &'a OtelExtras,
    /// Each agent's span, and the agents in the order they appeared.
    agents: BTreeMap<String, Span>,
    order: Vec<String>,
    /// Model and provider of each agent, from its binding.
    models: BTreeMap<String, (String, Option<String>)>,
    /// Model and tool calls, in the order they started.
    calls: Vec<Span>,
    /// Usage of each agent's own model calls, and who delegated to whom (for the sub-tree sums).
    usage: BTreeMap<String, Usage>,
    parents: BTreeMap<String, String>,
    tree: BTreeMap<String, Usage>,
    /// Open spans by key: model attempts by (invocation, round), tools by call.
    open_chats: BTreeMap<(String, u64), usize>,
    open_tools: BTreeMap<(String, String), usize>,
}

impl<'a> TraceBuilder<'a> {
    fn new(run_id: &'a str, extras: &'a OtelExtras) -> Self {
        Self {
            run_id,
            extras,
            agents: BTreeMap::new(),
            order: Vec::new(),
            models: BTreeMap::new(),
            calls: Vec::new(),
            usage: BTreeMap::new(),
            parents: BTreeMap::new(),
            tree: BTreeMap::new(),
            open_chats: BTreeMap::new(),
            open_tools: BTreeMap::new(),
        }
    }

    fn agent_span(&self, invocation: &str) -> String {
        id(&format!("{}/agent/{invocation}", self.run_id), 16)
    }

    fn read(&mut self, event: &AgentRunEvent) {
        let invocation = text(event, "invocationId").unwrap_or("inv_root").to_owned();
        match &event.event_type {
            T::AgentInvocationCreated | T::AgentInvocationStarted => {
                self.agent_started(event, invocation);
            }
            ended @ (T::AgentInvocationCompleted
            | T::AgentInvocationFailed
            | T::AgentInvocationCancelled
            | T::AgentInvocationTransferred
            | T::AgentInvocationInterrupted) => {
                if let Some(agent) = self.agents.get_mut(&invocation) {
                    agent.end = Some(event.timestamp);
                    let status = ended.as_str().trim_start_matches("agent_invocation_");
                    agent.attributes.push(("tt.status".into(), json!(status)));
                    if matches!(status, "failed" | "interrupted") {
                        agent.error = Some(
                            text(event, "message")
                                .or(text(event, "error"))
                                .unwrap_or(status)
                                .to_owned(),
                        );
                    }
                }
            }
            T::AgentModelBindingResolved => {
                let provider = text(event, "provider").unwrap_or("unknown").to_owned();
                // No model id: the connection's (or the default provider's) default model.
                let model = text(event, "modelId").map(str::to_owned).or_else(|| {
                    let connection = text(event, "connectionRef").unwrap_or_default();
                    self.extras.default_models.get(connection).cloned()
                });
                self.models.insert(invocation, (provider, model));
            }
            T::ModelCallAttemptStarted => self.chat_started(event, invocation),
            T::ModelCompleted | T::ModelCallAttemptFailed => self.chat_ended(event, invocation),
            T::ToolCallStarted => self.tool_started(event, invocation),
            T::ToolCallCompleted | T::ToolCallFailed => self.tool_ended(event, invocation),
            _ => {}
        }
    }

    /// An agent's span opens at its creation; started again after an interruption, it is open
    /// until its next end.
    fn agent_started(&mut self, event: &AgentRunEvent, invocation: String) {
        let profile = text(event, "profileId").unwrap_or("agent").to_owned();
        let parent = text(event, "parentInvocationId").map(|parent| self.agent_span(parent));
        let kind = text(event, "kind").unwrap_or("root").to_owned();
        if let Some(parent) = text(event, "parentInvocationId") {
            self.parents.insert(invocation.clone(), parent.to_owned());
        }
        let span_id = self.agent_span(&invocation);
        let run_id = self.run_id;
        let order = &mut self.order;
        self.agents.entry(invocation.clone()).or_insert_with(|| {
            order.push(invocation.clone());
            Span {
                span_id,
                parent,
                name: format!("invoke_agent {profile}"),
                kind: KIND_INTERNAL,
                start: event.timestamp,
                end: None,
                attributes: vec![
                    ("gen_ai.operation.name".into(), json!("invoke_agent")),
                    ("gen_ai.agent.name".into(), json!(profile)),
                    ("gen_ai.agent.id".into(), json!(invocation)),
                    ("gen_ai.conversation.id".into(), json!(run_id)),
                    ("tt.invocation.kind".into(), json!(kind)),
                ],
                error: None,
            }
        });
        if event.event_type == T::AgentInvocationStarted
            && let Some(agent) = self.agents.get_mut(&invocation)
        {
            agent.end = None;
        }
    }

    /// A model call's span opens with its attempt, named after the model it asks for.
    fn chat_started(&mut self, event: &AgentRunEvent, invocation: String) {
        let (provider, model) = self
            .models
            .get(&invocation)
            .cloned()
            .unwrap_or_else(|| ("unknown".to_owned(), None));
        let round = round_of(event);
        let mut attributes = vec![
            ("gen_ai.operation.name".into(), json!("chat")),
            ("gen_ai.provider.name".into(), json!(provider)),
            ("tt.round".into(), json!(round)),
            (
                "tt.attempt".into(),
                event.payload.get("attempt").cloned().unwrap_or(json!(1)),
            ),
        ];
        if let Some(model) = &model {
            attributes.push(("gen_ai.request.model".into(), json!(model)));
        }
        if let Some(instructions) = self.extras.system_instructions.get(&invocation) {
            attributes.push(("gen_ai.system_instructions".into(), instructions.clone()));
        }
        if let Some(messages) = self.extras.input_messages.get(&(invocation.clone(), round)) {
            attributes.push(("gen_ai.input.messages".into(), messages.clone()));
        }
        let parent = Some(self.agent_span(&invocation));
        self.open_chats
            .insert((invocation, round), self.calls.len());
        self.calls.push(Span {
            span_id: id(&format!("{}/event/{}", self.run_id, event.id), 16),
            parent,
            name: format!("chat {}", model.as_deref().unwrap_or(&provider)),
            kind: KIND_CLIENT,
            start: event.timestamp,
            end: None,
            attributes,
            error: None,
        });
    }

    /// A model call's span ends with its answer (usage, cost, the answer's model and id) or its
    /// failure; its usage counts for the agent and for the agents above it still working.
    fn chat_ended(&mut self, event: &AgentRunEvent, invocation: String) {
        let Some(index) = self
            .open_chats
            .remove(&(invocation.clone(), round_of(event)))
        else {
            return;
        };
        let span = &mut self.calls[index];
        span.end = Some(event.timestamp);
        if event.event_type == T::ModelCallAttemptFailed {
            let code = text(event, "code").unwrap_or(error_codes::MODEL_ERROR.as_str());
            span.attributes.push(("error.type".into(), json!(code)));
            span.error = Some(text(event, "message").unwrap_or(code).to_owned());
            return;
        }
        answer_attributes(span, event, self.extras);
        let call = Usage::of(event);
        self.usage.entry(invocation.clone()).or_default().add(&call);
        // The sub-tree sums of the agents still working: the agent and those above it (a span
        // already ended keeps what it had, so a later export says the same).
        let mut at = Some(invocation);
        for _ in 0..=self.agents.len() {
            let Some(current) = at else { break };
            if self
                .agents
                .get(&current)
                .is_some_and(|agent| agent.end.is_none())
            {
                self.tree.entry(current.clone()).or_default().add(&call);
            }
            at = self.parents.get(&current).cloned();
        }
    }

    fn tool_started(&mut self, event: &AgentRunEvent, invocation: String) {
        let call = text(event, "callId").unwrap_or_default().to_owned();
        let tool = text(event, "name").unwrap_or("tool").to_owned();
        let mut attributes = vec![
            ("gen_ai.operation.name".into(), json!("execute_tool")),
            ("gen_ai.tool.name".into(), json!(tool)),
            ("gen_ai.tool.call.id".into(), json!(call)),
        ];
        attributes.extend(tool_source_attributes(&tool));
        let parent = Some(self.agent_span(&invocation));
        self.open_tools.insert((invocation, call), self.calls.len());
        self.calls.push(Span {
            span_id: id(&format!("{}/event/{}", self.run_id, event.id), 16),
            parent,
            name: format!("execute_tool {tool}"),
            kind: KIND_INTERNAL,
            start: event.timestamp,
            end: None,
            attributes,
            error: None,
        });
    }

    fn tool_ended(&mut self, event: &AgentRunEvent, invocation: String) {
        let call = text(event, "callId").unwrap_or_default().to_owned();
        let Some(index) = self.open_tools.remove(&(invocation, call)) else {
            return;
        };
        let span = &mut self.calls[index];
        span.end = Some(event.timestamp);
        let failed = event.payload.get("isError").and_then(Value::as_bool) == Some(true)
            || event.event_type == T::ToolCallFailed;
        if failed {
            let code = text(event, "errorCode").unwrap_or(error_codes::TOOL_ERROR.as_str());
            span.attributes.push(("error.type".into(), json!(code)));
            span.error = Some(text(event, "message").unwrap_or(code).to_owned());
        }
    }

    /// The OTLP/JSON document: every agent's span with its own and its sub-tree's usage, then
    /// the calls; a span still open ends at `last`.
    fn finish(mut self, run: &AgentRun, last: Timestamp) -> Value {
        let trace_id = id(self.run_id, 32);
        for (invocation, agent) in &mut self.agents {
            let own = self.usage.get(invocation).copied().unwrap_or_default();
            agent
                .attributes
                .extend(own.attributes("gen_ai.usage", "tt.cost_usd"));
            let total = self.tree.get(invocation).copied().unwrap_or_default();
            agent
                .attributes
                .extend(total.attributes("tt.tree.usage", "tt.tree.cost_usd"));
        }
        let spans: Vec<Value> = self
            .order
            .iter()
            .filter_map(|invocation| self.agents.get(invocation))
            .chain(self.calls.iter())
            .map(|span| span.to_otlp(&trace_id, last))
            .collect();
        json!({
            "resourceSpans": [{
                "resource": {"attributes": [
                    {"key": "service.name", "value": {"stringValue": "tt-agent-runtime"}},
                    {"key": "tt.run.id", "value": {"stringValue": self.run_id}},
                    {"key": "tt.run.status", "value": {"stringValue": run.status.as_str()}},
                ]},
                "scopeSpans": [{
                    "scope": {"name": "tt-agent-runtime", "version": env!("CARGO_PKG_VERSION")},
                    "spans": spans,
                }],
            }],
        })
    }
}

/// The round an event names, 0 when it names none.
fn round_of(event: &AgentRunEvent) -> u64 {
    event
        .payload
        .get("round")
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// What a model call's answer adds to its span: token usage, the answer's model, id and
/// messages (from the stored answer), its cost and finish reason.
fn answer_attributes(span: &mut Span, event: &AgentRunEvent, extras: &OtelExtras) {
    if let Some(usage) = event.payload.get("usage").filter(|u| u.is_object()) {
        for (field, key) in [
            ("inputTokens", "gen_ai.usage.input_tokens"),
            ("outputTokens", "gen_ai.usage.output_tokens"),
            ("cachedInputTokens", "gen_ai.usage.cache_read.input_tokens"),
            (
                "cacheWriteTokens",
                "gen_ai.usage.cache_creation.input_tokens",
            ),
        ] {
            if let Some(tokens) = usage.get(field).and_then(Value::as_u64) {
                span.attributes.push((key.into(), json!(tokens)));
            }
        }
    }
    if let Some(answer) = extras.answers.get(&event.seq) {
        if let Some(model) = &answer.model {
            span.attributes
                .push(("gen_ai.response.model".into(), json!(model)));
        }
        if let Some(id) = &answer.response_id {
            span.attributes
                .push(("gen_ai.response.id".into(), json!(id)));
        }
        if let Some(messages) = &answer.output_messages {
            span.attributes
                .push(("gen_ai.output.messages".into(), messages.clone()));
        }
    }
    if let Some(cost) = event.payload.get("costUsd").and_then(Value::as_f64) {
        span.attributes.push(("tt.cost_usd".into(), json!(cost)));
    }
    if let Some(reason) = text(event, "finishReason") {
        span.attributes
            .push(("gen_ai.response.finish_reasons".into(), json!(reason)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_spans_say_where_the_tool_comes_from() {
        let attributes = |tool| {
            tool_source_attributes(tool)
                .into_iter()
                .map(|(key, value)| format!("{key}={value}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(
            attributes("mcp/everything:echo"),
            r#"gen_ai.tool.type="extension" tt.tool.source="mcp" tt.tool.server="everything""#
        );
        assert_eq!(
            attributes("host/chat.search"),
            r#"gen_ai.tool.type="function" tt.tool.source="host""#
        );
        assert_eq!(
            attributes("workspace.read_file"),
            r#"gen_ai.tool.type="function" tt.tool.source="builtin""#
        );
        assert_eq!(attributes("no such tool"), "");
    }
    use tt_domain::event::EventLevel;
    use tt_domain::ids::{EventId, RunId};

    fn event(seq: u64, at: i64, event_type: &str, payload: Value) -> AgentRunEvent {
        AgentRunEvent {
            seq,
            id: EventId::from_raw(format!("evt_{seq}")),
            run_id: RunId::from_raw("run_a"),
            timestamp: Timestamp::from_unix_millis(at),
            level: EventLevel::Info,
            event_type: tt_domain::event::RunEventType::from_name(event_type),
            payload,
        }
    }

    fn journal() -> Vec<AgentRunEvent> {
        vec![
            event(
                1,
                1_000,
                "agent_invocation_created",
                json!({"invocationId": "inv_root", "profileId": "writer", "kind": "root"}),
            ),
            event(
                2,
                1_001,
                "agent_model_binding_resolved",
                json!({"invocationId": "inv_root", "provider": "openai", "modelId": "gpt-4o"}),
            ),
            event(
                3,
                1_002,
                "agent_invocation_started",
                json!({"invocationId": "inv_root", "profileId": "writer", "kind": "root"}),
            ),
            event(
                4,
                1_010,
                "model_call_attempt_started",
                json!({"invocationId": "inv_root", "round": 1, "attempt": 1}),
            ),
            event(
                5,
                1_500,
                "model_completed",
                json!({"invocationId": "inv_root", "round": 1, "usage": {"inputTokens": 900, "outputTokens": 40, "cachedInputTokens": 512}, "costUsd": 0.0026, "finishReason": "tool_calls"}),
            ),
            event(
                6,
                1_501,
                "tool_call_started",
                json!({"invocationId": "inv_root", "round": 1, "callId": "c1", "name": "agent.delegate"}),
            ),
            event(
                7,
                1_502,
                "agent_invocation_created",
                json!({"invocationId": "inv_c", "parentInvocationId": "inv_root", "profileId": "critic", "kind": "subagent"}),
            ),
            event(
                8,
                1_503,
                "tool_call_completed",
                json!({"invocationId": "inv_root", "round": 1, "callId": "c1", "name": "agent.delegate", "isError": false}),
            ),
            event(
                9,
                1_504,
                "agent_invocation_started",
                json!({"invocationId": "inv_c", "parentInvocationId": "inv_root", "profileId": "critic", "kind": "subagent"}),
            ),
            event(
                10,
                1_600,
                "tool_call_started",
                json!({"invocationId": "inv_c", "round": 1, "callId": "x", "name": "workspace.read_file"}),
            ),
            event(
                11,
                1_601,
                "tool_call_completed",
                json!({"invocationId": "inv_c", "round": 1, "callId": "x", "name": "workspace.read_file", "isError": true, "errorCode": "workspace.file_not_found", "message": "no such file"}),
            ),
            event(
                12,
                1_700,
                "agent_invocation_completed",
                json!({"invocationId": "inv_c"}),
            ),
        ]
    }

    fn run() -> AgentRun {
        serde_json::from_value(json!({
            "id": "run_a", "workspaceId": "chat_0000000000000000", "stableChatId": "c",
            "conversationKind": "character", "chatRef": null, "generationType": null,
            "profileId": null, "presentation": "foreground", "status": "interrupted",
            "createdAt": "2026-12-04T00:00:00Z", "updatedAt": "2026-12-04T00:00:02Z",
            "inputMessageCount": 0,
        }))
        .unwrap_or_else(|err| panic!("{err}"))
    }

    #[test]
    fn agents_nest_and_calls_hang_under_their_agent_with_genai_attributes() {
        let export = otlp_traces(&run(), &journal());
        let spans = export["resourceSpans"][0]["scopeSpans"][0]["spans"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let names: Vec<&str> = spans.iter().filter_map(|s| s["name"].as_str()).collect();
        assert_eq!(
            names,
            [
                "invoke_agent writer",
                "invoke_agent critic",
                "chat gpt-4o",
                "execute_tool agent.delegate",
                "execute_tool workspace.read_file",
            ]
        );
        let root = &spans[0];
        let critic = &spans[1];
        assert!(root.get("parentSpanId").is_none());
        assert_eq!(critic["parentSpanId"], root["spanId"]);
        assert_eq!(spans[2]["parentSpanId"], root["spanId"]);
        assert_eq!(spans[4]["parentSpanId"], critic["spanId"]);
        assert_eq!(spans[2]["startTimeUnixNano"], "1010000000");
        assert_eq!(spans[2]["endTimeUnixNano"], "1500000000");
        let attribute = |span: &Value, key: &str| {
            span["attributes"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|a| a["key"] == key)
                .map(|a| a["value"].clone())
        };
        assert_eq!(
            attribute(&spans[2], "gen_ai.usage.input_tokens"),
            Some(json!({"intValue": "900"}))
        );
        assert_eq!(
            attribute(&spans[2], "gen_ai.usage.cache_read.input_tokens"),
            Some(json!({"intValue": "512"}))
        );
        assert_eq!(
            attribute(&spans[2], "gen_ai.request.model"),
            Some(json!({"stringValue": "gpt-4o"}))
        );
        assert_eq!(spans[4]["status"]["code"], STATUS_ERROR);
        assert_eq!(
            attribute(&spans[4], "error.type"),
            Some(json!({"stringValue": "workspace.file_not_found"}))
        );
        // The root never ended (an interrupted run): it ends at the last event, marked.
        assert_eq!(root["endTimeUnixNano"], "1700000000");
        assert_eq!(
            attribute(root, "tt.unfinished"),
            Some(json!({"boolValue": true}))
        );
        // The same run exports the same ids.
        assert_eq!(otlp_traces(&run(), &journal()), export);
        assert_eq!(root["traceId"].as_str().map(str::len), Some(32));
        assert_eq!(root["spanId"].as_str().map(str::len), Some(16));
    }
}
