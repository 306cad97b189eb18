//! The built-in tools' names: the contract's dotted id (`workspace.write_file`) and the name a
//! model sees (`workspace_write_file`). Their facts are in `tool_model`.

use serde::Deserialize;

/// Declares the built-in tools once, in registry order: each variant with its contract id and
/// the name a model sees. `ALL`, `canonical` and `model_alias` come from this one list, so a
/// new tool is one line here; the compiler then points to every `match` that must decide its
/// facts, spec and executor.
macro_rules! builtin_tools {
    ($($variant:ident => $canonical:literal, $alias:literal;)*) => {
        /// Every built-in tool, in registry order.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ToolName {
            $($variant,)*
        }

        impl ToolName {
            /// How many built-in tools there are.
            pub const COUNT: usize = [$(stringify!($variant),)*].len();

            /// Registry order.
            pub const ALL: [ToolName; Self::COUNT] = [$(ToolName::$variant,)*];

            pub fn canonical(self) -> &'static str {
                match self {
                    $(ToolName::$variant => $canonical,)*
                }
            }

            /// The name a model sees and calls: dots replaced by underscores.
            pub fn model_alias(self) -> &'static str {
                match self {
                    $(ToolName::$variant => $alias,)*
                }
            }
        }
    };
}

builtin_tools! {
    AgentList => "agent.list", "agent_list";
    AgentDelegate => "agent.delegate", "agent_delegate";
    AgentHandoff => "agent.handoff", "agent_handoff";
    AgentAwait => "agent.await", "agent_await";
    AgentCancelTask => "agent.cancel_task", "agent_cancel_task";
    TaskReturn => "task.return", "task_return";
    SkillList => "skill.list", "skill_list";
    SkillSearch => "skill.search", "skill_search";
    SkillRead => "skill.read", "skill_read";
    WorkspaceListFiles => "workspace.list_files", "workspace_list_files";
    WorkspaceSearchFiles => "workspace.search_files", "workspace_search_files";
    WorkspaceReadFile => "workspace.read_file", "workspace_read_file";
    WorkspaceWriteFile => "workspace.write_file", "workspace_write_file";
    WorkspaceApplyPatch => "workspace.apply_patch", "workspace_apply_patch";
    WorkspaceCommit => "workspace.commit", "workspace_commit";
    WorkspaceFinish => "workspace.finish", "workspace_finish";
}

impl ToolName {
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

/// `Display` and `Serialize` of a tool type as its `canonical()` name (each type parses it back
/// its own way).
macro_rules! shown_as_canonical {
    ($ty:ty) => {
        impl ::std::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.canonical())
            }
        }

        impl ::serde::Serialize for $ty {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.canonical())
            }
        }
    };
}
pub(crate) use shown_as_canonical;

shown_as_canonical!(ToolName);

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
