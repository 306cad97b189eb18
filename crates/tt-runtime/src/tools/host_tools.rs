//! The host's own tools (docs/tools.md, "Host tools"): a tool an embedding app serves from its
//! own data (the chat, a lorebook, character cards), registered on the builder with an async
//! handler, offered to the agents whose profiles list `host/<name>`.
//!
//! Each call's handler runs in a task of its own, so a panic in it becomes the coded,
//! recoverable `tool.host_panicked`, and a cancelled agent aborts it.

use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tt_domain::error_codes;
use tt_domain::ids::RunId;
use tt_domain::tool_model::{
    ExternalToolFacts, ExternalToolId, SideEffect, ToolPermission, check_host_tool_name,
};
use tt_ports::{ExternalToolDefinition, ExternalToolOutput, ToolSourceError};

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
    handler: Handler,
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
        Self {
            name: name.into(),
            title: None,
            description: description.into(),
            input_schema,
            facts: ExternalToolFacts {
                side_effect: SideEffect::Outside,
                idempotent: false,
                permission: ToolPermission::Allow,
                server: None,
                max_inline_result_bytes: ExternalToolFacts::DEFAULT_INLINE_RESULT_BYTES,
            },
            handler: Arc::new(move |call| Box::pin(handler(call))),
        }
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

/// The host tools of one runtime, by name.
#[derive(Debug, Clone, Default)]
pub(crate) struct HostTools {
    tools: BTreeMap<String, HostTool>,
}

impl HostTools {
    /// Adds `tool`; a bad name, a schema that is not an object schema, or a name taken twice
    /// is `tool.id_invalid`.
    pub(crate) fn insert(&mut self, tool: HostTool) -> HostResult<()> {
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
        if self.tools.contains_key(&tool.name) {
            return Err(HostError::new(
                error_codes::TOOL_ID_INVALID,
                format!("host tool `{}` is registered twice", tool.name),
            ));
        }
        self.tools.insert(tool.name.clone(), tool);
        Ok(())
    }

    pub(crate) fn definition(&self, name: &str) -> Option<ExternalToolDefinition> {
        let tool = self.tools.get(name)?;
        tool.id().ok().map(|id| tool.definition(id))
    }

    /// Every registered tool's definition, by name.
    pub(crate) fn definitions(&self) -> Vec<ExternalToolDefinition> {
        self.tools
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
        let tool = self.tools.get(name).ok_or_else(|| {
            ToolSourceError::new(
                error_codes::AGENT_TOOL_UNAVAILABLE,
                format!("The tool `{name}` is not available any more."),
            )
        })?;
        let call = HostToolCall {
            run_id: run_id.clone(),
            tool: name.to_owned(),
            arguments: arguments.clone(),
            call_key: call_key.to_owned(),
            cancel: cancel.clone(),
        };
        // Aborted when this call is dropped too (a cancelled agent drops it).
        let mut task = AbortOnDrop(tokio::spawn((tool.handler)(call)));
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
            Ok(Err(err)) => Err(ToolSourceError {
                code: error_codes::TOOL_HOST_FAILED,
                message: err.message,
                reason: Some(err.code).filter(|code| !code.is_empty()),
                may_have_run: false,
            }),
            Err(_) => Err(ToolSourceError::new(
                error_codes::TOOL_HOST_PANICKED,
                format!("The tool `{name}` failed unexpectedly; try again or do without it."),
            )),
        }
    }
}
