//! Tools: specs as the model sees them, argument parsing helpers, and the shared shapes of a
//! successful call. Dispatch (visibility, budgets, audit, events) lives in `crate::engine::dispatch`.

pub(crate) mod args;
pub(crate) mod compact;
pub(crate) mod external;
pub(crate) mod schema;
#[cfg(test)]
pub(crate) mod test_calls;
pub(crate) mod workspace;

use serde_json::Value;
use tt_domain::ids::TaskId;
use tt_domain::workspace::WorkspacePath;

/// What a tool tells the loop beyond its result, so the loop can emit events, take
/// checkpoints or end.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ToolEffect {
    None,
    /// `workspace.write_file` succeeded.
    FileWritten {
        path: WorkspacePath,
        mode: &'static str,
        chars: usize,
        words: usize,
        sha256: String,
    },
    /// `workspace.apply_patch` succeeded.
    PatchApplied {
        path: WorkspacePath,
        chars: usize,
        words: usize,
        old_sha256: String,
        sha256: String,
        replacements: usize,
    },
    /// `agent.await` handed the agent these finished results: the loop marks them seen, so
    /// neither an injection nor a later wait shows them again.
    ResultsDelivered {
        task_ids: Vec<TaskId>,
    },
}

/// A successful tool call, before the dispatcher wraps it into an `AgentToolResult`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolSuccess {
    /// Markdown/plain text the model reads.
    pub content: String,
    /// Machine-readable result.
    pub structured: Value,
    /// `workspace:<path>` style references to what the call touched.
    pub resource_refs: Vec<String>,
    pub effect: ToolEffect,
}

impl ToolSuccess {
    pub(crate) fn new(content: impl Into<String>, structured: Value) -> Self {
        Self {
            content: content.into(),
            structured,
            resource_refs: Vec::new(),
            effect: ToolEffect::None,
        }
    }

    pub(crate) fn with_refs(mut self, refs: Vec<String>) -> Self {
        self.resource_refs = refs;
        self
    }

    pub(crate) fn with_effect(mut self, effect: ToolEffect) -> Self {
        self.effect = effect;
        self
    }
}
