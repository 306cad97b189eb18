//! The host's own tools (docs/tools.md, "Host tools"): a tool an embedding app serves from its
//! own data (the chat, a lorebook, character cards), registered on the builder with an async
//! handler, offered to the agents whose profiles list `host/<name>`.
//!
//! Each call's handler runs in a task of its own, so a panic in it becomes the coded,
//! recoverable `tool.host_panicked`, and a cancelled agent aborts it. A tool made with
//! [`HostTool::answered_by_host`] has no handler: its calls wait for the host's answer through
//! the host API (`host_answers.rs`).

use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tt_domain::error_codes;
use tt_domain::ids::RunId;
use tt_domain::tool_model::{
    ExternalToolFacts, ExternalToolId, SideEffect, ToolPermission, check_host_tool_name,
};
use tt_ports::{ExternalToolDefinition, ExternalToolOutput, ToolSourceError};

use super::host_answers::{DEFAULT_HOST_ANSWER_TIMEOUT, HostAnswers, PendingHostToolCall};
use crate::dto::{HostError, HostResult};

/// One call of a host tool, as its handler gets it. On the wire (camelCase) without `cancel`:
/// a host that forwards the call elsewhere keeps the token on its side.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HostToolCall {
    pub run_id: RunId,
    /// The tool's name (`chat.search`, without `host/`).
    pub tool: String,
    /// The arguments the model sent: one JSON object, at most the profile's
    /// `limits.maxToolArgumentBytes`. They are the model's: check them against your schema.
    pub arguments: Map<String, Value>,
    /// The call's key in the run, the same on every resume of it.
    pub call_key: String,
    /// Fires when the agent is cancelled; the handler's task is also aborted then.
    #[serde(skip)]
    pub cancel: CancellationToken,
}

/// What a handler answers: the text the agent reads, and structured content if any.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HostToolReply {
    pub text: String,
    #[serde(default)]
    pub structured: Value,
}

impl HostToolReply {
    /// A reply of plain text.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            structured: Value::Null,
        }
    }

    /// A reply of JSON: the agent reads it as compact JSON text, and it is kept as the
    /// structured result too.
    pub fn json(value: Value) -> Self {
        Self {
            text: value.to_string(),
            structured: value,
        }
    }
}

/// A handler's refusal: the agent reads `message` (as `tool.host_failed`); `code` is the
/// host's own, journaled as the call's `errorReason` for hosts to decide on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostToolError {
    pub code: String,
    pub message: String,
}

impl HostToolError {
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
        }
    }
}

type HandlerFuture = Pin<Box<dyn Future<Output = Result<HostToolReply, HostToolError>> + Send>>;
type Handler = Arc<dyn Fn(HostToolCall) -> HandlerFuture + Send + Sync>;

/// Who answers a tool's calls.
#[derive(Clone)]
enum Answerer {
    /// A handler in this process.
    Handler(Handler),
    /// The host, through the host API, within this time.
    HostApi { timeout: Duration },
}

/// A host tool: what the agent reads of it, the facts the runtime handles its calls by, and
/// its handler. Made with [`HostTool::new`]; registered with
/// `AgentRuntimeBuilder::host_tool`.
#[derive(Clone)]
pub struct HostTool {
    name: String,
    title: Option<String>,
    description: String,
    input_schema: Value,
    facts: ExternalToolFacts,
    answerer: Answerer,
}

impl std::fmt::Debug for HostTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostTool")
            .field("name", &self.name)
            .field("facts", &self.facts)
            .finish_non_exhaustive()
    }
}

impl HostTool {
    /// A tool named `name` (lowercase words of `a-z0-9_` joined by dots: `chat.search`;
    /// profiles list it as `host/chat.search`), described to the model by `description`
    /// (write it from the agent's point of view) and `input_schema` (a JSON schema of an
    /// object). By default its calls act outside the run and are not idempotent: a call in
    /// flight when the run stopped is never made again by resume (the agent is told it may
    /// have run). Say otherwise with [`HostTool::reads_only`] or [`HostTool::idempotent`].
    pub fn new<F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: F,
    ) -> Self
    where
        F: Fn(HostToolCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<HostToolReply, HostToolError>> + Send + 'static,
    {
        Self::with_answerer(
            name.into(),
            description.into(),
            input_schema,
            Answerer::Handler(Arc::new(move |call| Box::pin(handler(call)))),
        )
    }

    /// A tool whose calls the host answers through the host API instead of a handler: each
    /// call waits, listed by `pending_host_tool_calls`, until `answer_host_tool_call` answers
    /// it, the agent is cancelled, or [`HostTool::answer_timeout`] passes (5 minutes by
    /// default; then the agent reads `tool.host_no_answer`). For hosts in another language
    /// (a webview, a process speaking HTTP); also registered at run time by
    /// `register_host_tool`. Same defaults and facts as [`HostTool::new`].
    pub fn answered_by_host(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Self {
        Self::with_answerer(
            name.into(),
            description.into(),
            input_schema,
            Answerer::HostApi {
                timeout: DEFAULT_HOST_ANSWER_TIMEOUT,
            },
        )
    }

    fn with_answerer(
        name: String,
        description: String,
        input_schema: Value,
        answerer: Answerer,
    ) -> Self {
        Self {
            name,
            title: None,
            description,
            input_schema,
            facts: ExternalToolFacts {
                side_effect: SideEffect::Outside,
                idempotent: false,
                permission: ToolPermission::Allow,
                server: None,
                max_inline_result_bytes: ExternalToolFacts::DEFAULT_INLINE_RESULT_BYTES,
            },
            answerer,
        }
    }

    /// How long a call of a tool made with [`HostTool::answered_by_host`] waits for the
    /// host's answer; nothing for a tool with a handler (the agent's own deadline bounds it).
    pub fn answer_timeout(mut self, timeout: Duration) -> Self {
        if let Answerer::HostApi { timeout: current } = &mut self.answerer {
            *current = timeout.max(Duration::from_millis(1));
        }
        self
    }

    /// Whether the host answers this tool's calls through the host API.
    pub fn is_answered_by_host(&self) -> bool {
        matches!(self.answerer, Answerer::HostApi { .. })
    }

    /// A short title shown in the agent's tool list instead of the description's first
    /// sentence.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Its calls only read: resume may make a call in flight again, and it is not in the
    /// approval group `writes`.
    pub fn reads_only(mut self) -> Self {
        self.facts.side_effect = SideEffect::ReadsOnly;
        self
    }

    /// Making a call twice does no harm: resume makes a call in flight again.
    pub fn idempotent(mut self) -> Self {
        self.facts.idempotent = true;
        self
    }

    /// Every call waits for a person's approval unless a profile's `tools.approval` says
    /// otherwise.
    pub fn ask_first(mut self) -> Self {
        self.facts.permission = ToolPermission::Ask;
        self
    }

    /// A reply longer than this many bytes is kept in a run file; the agent reads its head and
    /// the file's path (16 KiB by default).
    pub fn max_inline_result_bytes(mut self, bytes: u64) -> Self {
        self.facts.max_inline_result_bytes = bytes.max(1);
        self
    }

    fn id(&self) -> HostResult<ExternalToolId> {
        ExternalToolId::host(&self.name).map_err(|err| HostError::new(err.code, err.message))
    }

    fn definition(&self, id: ExternalToolId) -> ExternalToolDefinition {
        ExternalToolDefinition {
            id,
            title: self.title.clone(),
            description: self.description.clone(),
            input_schema: self.input_schema.clone(),
            facts: self.facts.clone(),
        }
    }
}

/// A handler's task, aborted when dropped.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The host tools of one runtime, by name, shared by its clones; and the calls of
/// host-answered tools waiting for the host.
#[derive(Debug, Clone)]
pub(crate) struct HostTools {
    tools: Arc<RwLock<BTreeMap<String, HostTool>>>,
    pub(crate) answers: Arc<HostAnswers>,
}

impl HostTools {
    pub(crate) fn new(clock: Arc<dyn tt_ports::Clock>) -> Self {
        Self {
            tools: Arc::default(),
            answers: Arc::new(HostAnswers::new(clock)),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, HostTool>> {
        self.tools
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, HostTool>> {
        self.tools
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Adds `tool`; a bad name, a schema that is not an object schema, or a name taken twice
    /// is `tool.id_invalid`. A host-answered tool may be registered again under its name
    /// (a host that restarted declares its tools anew): the new definition replaces the old
    /// one for agents that start later; agents already running keep what they were given.
    pub(crate) fn insert(&self, tool: HostTool) -> HostResult<()> {
        check_host_tool_name(&tool.name).map_err(|err| HostError::new(err.code, err.message))?;
        let is_object_schema = tool
            .input_schema
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|kind| kind == "object");
        if !is_object_schema {
            return Err(HostError::new(
                error_codes::TOOL_ID_INVALID,
                format!(
                    "host tool `{}`: its input schema must be a JSON schema of type \"object\"",
                    tool.name
                ),
            ));
        }
        let mut tools = self.write();
        let replaceable = tool.is_answered_by_host()
            && tools
                .get(&tool.name)
                .is_none_or(HostTool::is_answered_by_host);
        if tools.contains_key(&tool.name) && !replaceable {
            return Err(HostError::new(
                error_codes::TOOL_ID_INVALID,
                format!("host tool `{}` is registered twice", tool.name),
            ));
        }
        tools.insert(tool.name.clone(), tool);
        Ok(())
    }

    pub(crate) fn definition(&self, name: &str) -> Option<ExternalToolDefinition> {
        let tools = self.read();
        let tool = tools.get(name)?;
        tool.id().ok().map(|id| tool.definition(id))
    }

    /// Every registered tool's definition, by name.
    pub(crate) fn definitions(&self) -> Vec<ExternalToolDefinition> {
        self.read()
            .values()
            .filter_map(|tool| tool.id().ok().map(|id| tool.definition(id)))
            .collect()
    }

    /// Runs one call in a task of its own: a handler's error is `tool.host_failed`, a panic
    /// `tool.host_panicked`; cancelling `cancel` aborts the task.
    pub(crate) async fn call(
        &self,
        name: &str,
        run_id: &RunId,
        arguments: &Map<String, Value>,
        call_key: &str,
        cancel: CancellationToken,
    ) -> Result<ExternalToolOutput, ToolSourceError> {
        let tool = self.read().get(name).cloned().ok_or_else(|| {
            ToolSourceError::new(
                error_codes::AGENT_TOOL_UNAVAILABLE,
                format!("The tool `{name}` is not available any more."),
            )
        })?;
        let handler = match tool.answerer {
            Answerer::Handler(handler) => handler,
            Answerer::HostApi { timeout } => {
                let now = u64::try_from(self.answers.now().unix_millis()).unwrap_or(0);
                let answer_due_ms =
                    now.saturating_add(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX));
                let call = PendingHostToolCall {
                    run_id: run_id.as_str().to_owned(),
                    call_key: call_key.to_owned(),
                    tool: name.to_owned(),
                    arguments: arguments.clone(),
                    answer_due_ms,
                };
                return self.answers.ask(call, timeout, cancel).await;
            }
        };
        let call = HostToolCall {
            run_id: run_id.clone(),
            tool: name.to_owned(),
            arguments: arguments.clone(),
            call_key: call_key.to_owned(),
            cancel: cancel.clone(),
        };
        // Aborted when this call is dropped too (a cancelled agent drops it).
        let mut task = AbortOnDrop(tokio::spawn(handler(call)));
        let joined = tokio::select! {
            joined = &mut task.0 => joined,
            () = cancel.cancelled() => {
                return Err(ToolSourceError::new(
                    error_codes::AGENT_CANCELLED,
                    "The call was cancelled.",
                )
                .sent());
            }
        };
        match joined {
            Ok(Ok(reply)) => Ok(ExternalToolOutput {
                text: reply.text,
                structured: reply.structured,
            }),
            Ok(Err(err)) => Err(super::host_answers::host_refusal(err.message, err.code)),
            Err(_) => Err(ToolSourceError::new(
                error_codes::TOOL_HOST_PANICKED,
                format!("The tool `{name}` failed unexpectedly; try again or do without it."),
            )),
        }
    }
}
