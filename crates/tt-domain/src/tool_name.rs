//! The built-in tools' names: the contract's dotted id (`workspace.write_file`) and the name a
//! model sees (`workspace_write_file`). Their facts are in `tool_model`.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Every built-in tool, in registry order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ToolName {
    AgentList,
    AgentDelegate,
    AgentHandoff,
    AgentAwait,
    AgentCancelTask,
    TaskReturn,
    SkillList,
    SkillSearch,
    SkillRead,
    WorkspaceListFiles,
    WorkspaceSearchFiles,
    WorkspaceReadFile,
    WorkspaceWriteFile,
    WorkspaceApplyPatch,
    WorkspaceCommit,
    WorkspaceFinish,
}

impl ToolName {
    /// Registry order.
    pub const ALL: [ToolName; 16] = [
        ToolName::AgentList,
        ToolName::AgentDelegate,
        ToolName::AgentHandoff,
        ToolName::AgentAwait,
        ToolName::AgentCancelTask,
        ToolName::TaskReturn,
        ToolName::SkillList,
        ToolName::SkillSearch,
        ToolName::SkillRead,
        ToolName::WorkspaceListFiles,
        ToolName::WorkspaceSearchFiles,
        ToolName::WorkspaceReadFile,
        ToolName::WorkspaceWriteFile,
        ToolName::WorkspaceApplyPatch,
        ToolName::WorkspaceCommit,
        ToolName::WorkspaceFinish,
    ];

    /// The seven workspace tools.
    pub const WORKSPACE: [ToolName; 7] = [
        ToolName::WorkspaceListFiles,
        ToolName::WorkspaceSearchFiles,
        ToolName::WorkspaceReadFile,
        ToolName::WorkspaceWriteFile,
        ToolName::WorkspaceApplyPatch,
        ToolName::WorkspaceCommit,
        ToolName::WorkspaceFinish,
    ];

    pub fn canonical(self) -> &'static str {
        match self {
            ToolName::AgentList => "agent.list",
            ToolName::AgentDelegate => "agent.delegate",
            ToolName::AgentHandoff => "agent.handoff",
            ToolName::AgentAwait => "agent.await",
            ToolName::AgentCancelTask => "agent.cancel_task",
            ToolName::TaskReturn => "task.return",
            ToolName::SkillList => "skill.list",
            ToolName::SkillSearch => "skill.search",
            ToolName::SkillRead => "skill.read",
            ToolName::WorkspaceListFiles => "workspace.list_files",
            ToolName::WorkspaceSearchFiles => "workspace.search_files",
            ToolName::WorkspaceReadFile => "workspace.read_file",
            ToolName::WorkspaceWriteFile => "workspace.write_file",
            ToolName::WorkspaceApplyPatch => "workspace.apply_patch",
            ToolName::WorkspaceCommit => "workspace.commit",
            ToolName::WorkspaceFinish => "workspace.finish",
        }
    }

    /// The name a model sees and calls: dots replaced by underscores.
    pub fn model_alias(self) -> &'static str {
        match self {
            ToolName::AgentList => "agent_list",
            ToolName::AgentDelegate => "agent_delegate",
            ToolName::AgentHandoff => "agent_handoff",
            ToolName::AgentAwait => "agent_await",
            ToolName::AgentCancelTask => "agent_cancel_task",
            ToolName::TaskReturn => "task_return",
            ToolName::SkillList => "skill_list",
            ToolName::SkillSearch => "skill_search",
            ToolName::SkillRead => "skill_read",
            ToolName::WorkspaceListFiles => "workspace_list_files",
            ToolName::WorkspaceSearchFiles => "workspace_search_files",
            ToolName::WorkspaceReadFile => "workspace_read_file",
            ToolName::WorkspaceWriteFile => "workspace_write_file",
            ToolName::WorkspaceApplyPatch => "workspace_apply_patch",
            ToolName::WorkspaceCommit => "workspace_commit",
            ToolName::WorkspaceFinish => "workspace_finish",
        }
    }

    /// Matches a canonical name or a model alias.
    pub fn from_any(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|tool| tool.canonical() == name || tool.model_alias() == name)
    }

    /// Matches a canonical name only (profile files use canonical names).
    pub fn from_canonical(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|tool| tool.canonical() == name)
    }

    /// Calling one of these ends the tool loop; a later call in the same response is fatal.
    pub fn ends_loop(self) -> bool {
        self.facts().ends_loop
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.canonical())
    }
}

impl Serialize for ToolName {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.canonical())
    }
}

impl<'de> Deserialize<'de> for ToolName {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(deserializer)?;
        ToolName::from_canonical(&raw)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown tool `{raw}`")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_replace_dots_with_underscores() {
        for tool in ToolName::ALL {
            assert_eq!(tool.model_alias(), tool.canonical().replace('.', "_"));
            assert_eq!(ToolName::from_any(tool.model_alias()), Some(tool));
            assert_eq!(ToolName::from_any(tool.canonical()), Some(tool));
            let alias = tool.model_alias();
            assert!(
                alias.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{alias}"
            );
        }
        assert_eq!(ToolName::from_any("chat.search"), None);
        assert_eq!(ToolName::from_canonical("workspace_finish"), None);
    }

    #[test]
    fn tool_names_serialize_canonically() {
        assert_eq!(
            serde_json::to_string(&ToolName::WorkspaceApplyPatch).unwrap(),
            "\"workspace.apply_patch\""
        );
        assert!(serde_json::from_str::<ToolName>("\"nope\"").is_err());
    }
}
