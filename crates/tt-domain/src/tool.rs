//! Tool names, specs, calls, results and the per-invocation tool snapshot.
//!
//! Canonical names use dots (`workspace.write_file`); the name a model sees replaces `.` with `_`
//! (`workspace_write_file`). Incoming calls match either form and are canonicalized before audit.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use std::collections::BTreeMap;

use crate::ids::{InvocationId, ProfileId};
use crate::invocation::ExitPolicy;
use crate::presentation::Presentation;
use crate::tool_model::{ExternalToolFacts, ToolFacts, ToolId};
use crate::workspace::{WorkspacePath, WorkspaceRoot};

pub use crate::tool_name::ToolName;

/// Behavioural hints attached to a spec.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    pub read_only: Option<bool>,
    pub mutating: Option<bool>,
    pub control: Option<bool>,
    pub source_kind: Option<String>,
}

/// A tool as offered to a model.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentToolSpec {
    /// A built-in's canonical name, or an outside tool's id (`host/…`, `mcp/…`).
    pub name: ToolId,
    pub model_name: String,
    pub title: String,
    pub description: String,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    pub annotations: ToolAnnotations,
    pub source: String,
    /// An outside tool's declared facts, frozen with the snapshot; `None` for a built-in,
    /// whose facts are [`ToolName::facts`].
    pub external: Option<ExternalToolFacts>,
}

impl AgentToolSpec {
    /// Every fact the runtime handles this tool's calls by.
    pub fn facts(&self) -> ToolFacts {
        match (&self.name, &self.external) {
            (ToolId::Builtin(tool), _) => tool.facts(),
            (ToolId::External(id), Some(external)) => external.facts(id.family()),
            // An outside tool whose facts were lost is treated as the riskiest kind.
            (ToolId::External(id), None) => ExternalToolFacts {
                side_effect: crate::tool_model::SideEffect::Outside,
                idempotent: false,
                permission: crate::tool_model::ToolPermission::Ask,
                server: None,
                max_inline_result_bytes: ExternalToolFacts::DEFAULT_INLINE_RESULT_BYTES,
            }
            .facts(id.family()),
        }
    }
}

/// A tool call as decoded from a model response. `id` is the provider's, kept verbatim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub provider_metadata: Value,
}

impl AgentToolCall {
    /// A call without provider metadata.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments,
            provider_metadata: Value::Null,
        }
    }
}

/// The result of one tool call, as stored and as sent back to the model.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentToolResult {
    pub call_id: String,
    pub name: String,
    pub content: String,
    #[serde(default)]
    pub structured: Value,
    pub is_error: bool,
    pub error_code: Option<String>,
    /// The finer reason within `error_code`, when it has one (docs/events.md,
    /// `tool_call_failed.errorReason`); not part of what the model reads.
    pub error_reason: Option<String>,
    #[serde(default)]
    pub resource_refs: Vec<String>,
}

impl AgentToolResult {
    /// The JSON text a provider receives for this result.
    pub fn to_model_payload(&self) -> String {
        serde_json::json!({
            "ok": !self.is_error,
            "content": self.content,
            "structured": self.structured,
            "errorCode": self.error_code,
            "resourceRefs": self.resource_refs,
        })
        .to_string()
    }
}

/// Budgets frozen for one invocation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InvocationBudgets {
    pub max_rounds: u32,
    /// The profile's `maxCallsPerRun`, counted for this invocation only.
    pub max_calls_per_invocation: u32,
    #[serde(default)]
    pub max_calls_per_tool: BTreeMap<ToolId, u32>,
}

/// Everything one invocation exposes, frozen at its start and persisted as
/// `input/invocations/<id>/tool_snapshot.json`. The prompt, the provider request, alias
/// decoding and budgets all read this snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InvocationToolSnapshot {
    pub schema_version: u32,
    pub invocation_id: InvocationId,
    pub profile_id: ProfileId,
    pub exit_policy: ExitPolicy,
    pub presentation: Presentation,
    /// Visible tools in provider order (the order of the profile's `tools.allow`); shared with
    /// every model request of the invocation.
    pub tools: std::sync::Arc<[AgentToolSpec]>,
    pub budgets: InvocationBudgets,
    pub visible_roots: Vec<WorkspaceRoot>,
    pub writable_roots: Vec<WorkspaceRoot>,
    pub message_body_path: WorkspacePath,
}

impl InvocationToolSnapshot {
    pub const SCHEMA_VERSION: u32 = 1;

    /// Resolves a call's name (canonical or alias) against what this invocation was offered.
    pub fn offered(&self, name: &str) -> Option<&AgentToolSpec> {
        self.tools
            .iter()
            .find(|spec| spec.name.canonical() == name || spec.model_name == name)
    }

    pub fn offers(&self, tool: ToolName) -> bool {
        self.tools.iter().any(|spec| spec.name == tool)
    }

    /// The spec of `tool`, when this invocation was offered it.
    pub fn spec_of(&self, tool: &ToolId) -> Option<&AgentToolSpec> {
        self.tools.iter().find(|spec| &spec.name == tool)
    }

    /// Model-facing names, in provider order.
    pub fn model_names(&self) -> Vec<&str> {
        self.tools
            .iter()
            .map(|spec| spec.model_name.as_str())
            .collect()
    }

    /// This snapshot with `tools_json`, the JSON text of its `tools`, in their place: it
    /// serializes as the snapshot does, without writing the specs again. The invocations of
    /// one profile share their specs, whose text can then be written once.
    pub fn with_tools_json<'a>(&'a self, tools_json: &'a RawValue) -> impl Serialize + 'a {
        /// The snapshot's fields in its order and names, `tools` as text.
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct WithToolsJson<'a> {
            schema_version: u32,
            invocation_id: &'a InvocationId,
            profile_id: &'a ProfileId,
            exit_policy: ExitPolicy,
            presentation: Presentation,
            tools: &'a RawValue,
            budgets: &'a InvocationBudgets,
            visible_roots: &'a [WorkspaceRoot],
            writable_roots: &'a [WorkspaceRoot],
            message_body_path: &'a WorkspacePath,
        }
        // Every field named, so that a new one cannot be left out here.
        let Self {
            schema_version,
            invocation_id,
            profile_id,
            exit_policy,
            presentation,
            tools: _,
            budgets,
            visible_roots,
            writable_roots,
            message_body_path,
        } = self;
        WithToolsJson {
            schema_version: *schema_version,
            invocation_id,
            profile_id,
            exit_policy: *exit_policy,
            presentation: *presentation,
            tools: tools_json,
            budgets,
            visible_roots,
            writable_roots,
            message_body_path,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_with_its_tools_as_text_serializes_as_the_snapshot() {
        let spec = |name: ToolName| AgentToolSpec {
            name: ToolId::Builtin(name),
            model_name: name.canonical().replace('.', "_"),
            title: "A \"quoted\" title".into(),
            description: "Line one.\nLine two: é".into(),
            input_schema: serde_json::json!({"type": "object", "properties": {"b": {}, "a": {}}}),
            output_schema: None,
            annotations: ToolAnnotations::default(),
            source: "builtin".into(),
            external: None,
        };
        let snapshot = InvocationToolSnapshot {
            schema_version: InvocationToolSnapshot::SCHEMA_VERSION,
            invocation_id: InvocationId::generate("abc"),
            profile_id: ProfileId::parse("writer").unwrap(),
            exit_policy: ExitPolicy::TaskReturnRequired,
            presentation: Presentation::Background,
            tools: vec![
                spec(ToolName::TaskReturn),
                spec(ToolName::WorkspaceWriteFile),
            ]
            .into(),
            budgets: InvocationBudgets {
                max_rounds: 7,
                max_calls_per_invocation: 40,
                max_calls_per_tool: BTreeMap::from([(ToolId::Builtin(ToolName::TaskReturn), 1)]),
            },
            visible_roots: vec![WorkspaceRoot::Scratch, WorkspaceRoot::Output],
            writable_roots: vec![],
            message_body_path: WorkspacePath::parse("output/reply.md").unwrap(),
        };
        let tools =
            RawValue::from_string(serde_json::to_string(&*snapshot.tools).unwrap()).unwrap();
        assert_eq!(
            serde_json::to_string(&snapshot.with_tools_json(&tools)).unwrap(),
            serde_json::to_string(&snapshot).unwrap()
        );
    }

    #[test]
    fn result_payload_shape() {
        let result = AgentToolResult {
            call_id: "c1".into(),
            name: "workspace.read_file".into(),
            content: "ok".into(),
            structured: serde_json::json!({"a":1}),
            is_error: false,
            error_code: None,
            error_reason: None,
            resource_refs: vec![],
        };
        assert_eq!(
            result.to_model_payload(),
            r#"{"ok":true,"content":"ok","structured":{"a":1},"errorCode":null,"resourceRefs":[]}"#
        );
    }
}
