//! The one tool model: every tool an agent can call (built-in, the host's own, an MCP server's)
//! has one identity ([`ToolId`]) and one set of facts ([`ToolFacts`]) that every decision about
//! it derives from: which approval group it is in, whether it names a path, whether a delegated
//! agent keeps it, whether it ends the loop, and what resume does with a call that was in
//! flight. A built-in's facts are one exhaustive `match` ([`ToolName::facts`]); an outside
//! tool's are declared where it is registered and frozen in the agent's tool snapshot
//! ([`ExternalToolFacts`]).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;

use crate::error::{DomainError, DomainResult};
use crate::error_codes;
use crate::tool_name::ToolName;

/// Where a tool comes from, and so who runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolFamily {
    Workspace,
    Agent,
    Task,
    Skill,
    /// Served by the host that embeds the runtime (`host/<name>`).
    Host,
    /// Served by an MCP server (`mcp/<server>:<tool>`).
    Mcp,
}

/// What a call does to the world beyond its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SideEffect {
    /// Reads only: running it twice answers the same.
    ReadsOnly,
    /// Changes the run's workspace.
    WritesWorkspace,
    /// Changes something outside the run (the chat, the host's data, a server's).
    Outside,
    /// Acts on the run itself (starts, waits for, stops or ends agents).
    RunControl,
}

/// What resume does with a call that had started and left no result (one that was answered
/// always returns its stored result and never runs again).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InFlightRule {
    /// Runs it again: it reads only, or doing it twice does no harm.
    RunAgain,
    /// Puts the workspace back where the call found it, then runs it again (a write or patch).
    RestoreWorkspace,
    /// The engine's own replay hook decides (delegation, handoff, commit).
    EngineHook,
    /// Never sends it again: the agent is told it may have run.
    OutcomeUnknown,
}

/// Whether a call waits for a person unless the profile says otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolPermission {
    /// Runs without asking.
    #[default]
    Allow,
    /// Every call waits for a person's approval.
    Ask,
}

/// Every fact the runtime decides a tool's handling by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolFacts {
    pub family: ToolFamily,
    pub side_effect: SideEffect,
    pub in_flight: InFlightRule,
    /// Its calls name a workspace `path` (an approval's `outside` rule needs one).
    pub names_path: bool,
    /// A delegated agent does not get it (it acts on the whole job).
    pub parent_only: bool,
    /// Calling it ends the agent's loop; a later call in the same reply is refused.
    pub ends_loop: bool,
    /// Whether a call asks a person unless the profile's `tools.approval` says otherwise.
    pub permission: ToolPermission,
}

impl ToolFacts {
    /// In the approval group `writes`: it changes the workspace or something outside the run.
    pub fn in_writes_group(&self) -> bool {
        matches!(
            self.side_effect,
            SideEffect::WritesWorkspace | SideEffect::Outside
        )
    }
}

impl ToolName {
    /// The facts of a built-in tool. Exhaustive: a new tool does not compile until each fact
    /// is decided.
    pub const fn facts(self) -> ToolFacts {
        use InFlightRule::*;
        use SideEffect::*;
        use ToolFamily::*;
        let (family, side_effect, in_flight) = match self {
            ToolName::AgentList => (Agent, ReadsOnly, RunAgain),
            ToolName::AgentDelegate => (Agent, RunControl, EngineHook),
            ToolName::AgentHandoff => (Agent, RunControl, EngineHook),
            // Waiting again delivers what the stored wait had not.
            ToolName::AgentAwait => (Agent, RunControl, RunAgain),
            // Cancelling a task twice changes nothing the first did not.
            ToolName::AgentCancelTask => (Agent, RunControl, RunAgain),
            // The task's transition is conditional: the first terminal write wins.
            ToolName::TaskReturn => (Task, RunControl, RunAgain),
            ToolName::SkillList | ToolName::SkillSearch | ToolName::SkillRead => {
                (Skill, ReadsOnly, RunAgain)
            }
            ToolName::WorkspaceListFiles
            | ToolName::WorkspaceSearchFiles
            | ToolName::WorkspaceReadFile => (Workspace, ReadsOnly, RunAgain),
            ToolName::WorkspaceWriteFile | ToolName::WorkspaceApplyPatch => {
                (Workspace, WritesWorkspace, RestoreWorkspace)
            }
            // Publishing reaches the chat; its hook asks the host what it already has.
            ToolName::WorkspaceCommit => (Workspace, Outside, EngineHook),
            ToolName::WorkspaceFinish => (Workspace, RunControl, RunAgain),
        };
        let names_path = matches!(
            self,
            ToolName::WorkspaceReadFile
                | ToolName::WorkspaceWriteFile
                | ToolName::WorkspaceApplyPatch
                | ToolName::WorkspaceCommit
        );
        let parent_only = matches!(
            self,
            ToolName::WorkspaceCommit
                | ToolName::WorkspaceFinish
                | ToolName::AgentList
                | ToolName::AgentDelegate
                | ToolName::AgentHandoff
                | ToolName::AgentAwait
                | ToolName::AgentCancelTask
        );
        let ends_loop = matches!(
            self,
            ToolName::WorkspaceFinish | ToolName::TaskReturn | ToolName::AgentHandoff
        );
        ToolFacts {
            family,
            side_effect,
            in_flight,
            names_path,
            parent_only,
            ends_loop,
            permission: ToolPermission::Allow,
        }
    }
}

/// The facts an outside tool declares where it is registered, frozen in the snapshot of every
/// agent offered it.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExternalToolFacts {
    pub side_effect: SideEffect,
    /// Running a call twice does no harm: resume may send one that was in flight again.
    #[serde(default)]
    pub idempotent: bool,
    /// Whether its calls wait for a person (a profile's `tools.approval` entry wins).
    #[serde(default)]
    pub permission: ToolPermission,
    /// The MCP server's registration name, for whoever reads the journal.
    pub server: Option<String>,
    /// A result longer than this is stored as a run file; the agent reads its head and the
    /// file's path.
    pub max_inline_result_bytes: u64,
}

impl ExternalToolFacts {
    /// The default inline limit of an outside tool's result (16 KiB).
    pub const DEFAULT_INLINE_RESULT_BYTES: u64 = 16 * 1024;

    pub fn facts(&self, family: ToolFamily) -> ToolFacts {
        ToolFacts {
            family,
            side_effect: self.side_effect,
            in_flight: if self.idempotent || self.side_effect == SideEffect::ReadsOnly {
                InFlightRule::RunAgain
            } else {
                InFlightRule::OutcomeUnknown
            },
            names_path: false,
            parent_only: false,
            ends_loop: false,
            permission: self.permission,
        }
    }
}

/// The identity of an outside tool: its canonical id, `host/<name>` or `mcp/<server>:<tool>`,
/// checked once when made.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExternalToolId(Arc<str>);

/// Which source an [`ExternalToolId`] names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExternalSource<'a> {
    Host { name: &'a str },
    Mcp { server: &'a str, tool: &'a str },
}

/// The longest host tool name, MCP server name and MCP tool name.
pub const MAX_HOST_TOOL_NAME: usize = 64;
pub const MAX_MCP_SERVER_NAME: usize = 32;
pub const MAX_MCP_TOOL_NAME: usize = 128;

impl ExternalToolId {
    /// `host/<name>`: lowercase ASCII words of `[a-z0-9_]` joined by dots (`chat.search`).
    pub fn host(name: &str) -> DomainResult<Self> {
        check_host_tool_name(name)?;
        Ok(Self(format!("host/{name}").into()))
    }

    /// `mcp/<server>:<tool>`.
    pub fn mcp(server: &str, tool: &str) -> DomainResult<Self> {
        check_mcp_server_name(server)?;
        check_mcp_tool_name(tool)?;
        Ok(Self(format!("mcp/{server}:{tool}").into()))
    }

    /// Reads a canonical id.
    pub fn parse(canonical: &str) -> DomainResult<Self> {
        if let Some(name) = canonical.strip_prefix("host/") {
            return Self::host(name);
        }
        if let Some(rest) = canonical.strip_prefix("mcp/")
            && let Some((server, tool)) = rest.split_once(':')
        {
            return Self::mcp(server, tool);
        }
        Err(DomainError::new(
            error_codes::TOOL_ID_INVALID,
            format!("`{canonical}` is no tool id (host/<name> or mcp/<server>:<tool>)"),
        ))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn source(&self) -> ExternalSource<'_> {
        if let Some(name) = self.0.strip_prefix("host/") {
            return ExternalSource::Host { name };
        }
        let rest = self.0.strip_prefix("mcp/").unwrap_or(&self.0);
        let (server, tool) = rest.split_once(':').unwrap_or((rest, ""));
        ExternalSource::Mcp { server, tool }
    }

    pub fn family(&self) -> ToolFamily {
        match self.source() {
            ExternalSource::Host { .. } => ToolFamily::Host,
            ExternalSource::Mcp { .. } => ToolFamily::Mcp,
        }
    }

    /// The name a model sees before clashes are resolved: a host tool's name with `.` as `_`;
    /// `mcp__<server>__<tool>` for an MCP tool, cut to what providers accept
    /// ([`provider_safe_name`]).
    pub fn base_model_name(&self) -> String {
        match self.source() {
            ExternalSource::Host { name } => name.replace('.', "_"),
            ExternalSource::Mcp { server, tool } => {
                provider_safe_name(&format!("mcp__{server}__{tool}"))
            }
        }
    }
}

impl fmt::Display for ExternalToolId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `Ok` when `name` is 1 to `max` bytes long and `follows` its rule; else `tool.id_invalid`
/// saying the rule (`rule`).
fn check_name(
    name: &str,
    max: usize,
    follows: bool,
    rule: impl FnOnce() -> String,
) -> DomainResult<()> {
    if name.is_empty() || name.len() > max || !follows {
        return Err(DomainError::new(error_codes::TOOL_ID_INVALID, rule()));
    }
    Ok(())
}

/// Lowercase ASCII words of `[a-z0-9_]`, each starting with a letter, joined by dots.
pub fn check_host_tool_name(name: &str) -> DomainResult<()> {
    let words_ok = name.split('.').all(|word| {
        word.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
            && word
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    });
    check_name(name, MAX_HOST_TOOL_NAME, words_ok, || {
        format!(
            "host tool name `{name}` must be 1..={MAX_HOST_TOOL_NAME} lowercase words of a-z, 0-9 and _ joined by dots"
        )
    })
}

/// 1 to 32 characters of `[a-z0-9_-]`, starting with a letter or digit.
pub fn check_mcp_server_name(name: &str) -> DomainResult<()> {
    let follows = name
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphanumeric())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    check_name(name, MAX_MCP_SERVER_NAME, follows, || {
        format!(
            "MCP server name `{name}` must be 1..={MAX_MCP_SERVER_NAME} characters of a-z, 0-9, _ and -"
        )
    })
}

/// What a server may name a tool: 1 to 128 printable characters without whitespace.
pub fn check_mcp_tool_name(name: &str) -> DomainResult<()> {
    let follows = name.chars().all(|c| !c.is_control() && !c.is_whitespace());
    check_name(name, MAX_MCP_TOOL_NAME, follows, || {
        format!(
            "MCP tool name `{}` must be 1..={MAX_MCP_TOOL_NAME} printable characters without spaces",
            name.escape_debug()
        )
    })
}

/// The longest tool name providers accept.
pub const MAX_MODEL_TOOL_NAME: usize = 64;

/// `name` with every character outside `[A-Za-z0-9_-]` as `_`, cut to 64 characters.
pub fn provider_safe_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_MODEL_TOOL_NAME)
        .collect()
}

/// The name a model sees for each outside tool of one agent, in order: its base name, or on a
/// clash with a name already taken (a built-in's alias or an earlier tool's) the base name cut
/// to leave room for `_` and 6 hex digits of its canonical id's hash, which are the same in
/// every run.
pub fn assign_model_names<'a>(
    taken: impl IntoIterator<Item = &'a str>,
    tools: &[ExternalToolId],
) -> Vec<String> {
    let mut used: std::collections::HashSet<String> =
        taken.into_iter().map(str::to_owned).collect();
    tools
        .iter()
        .map(|id| {
            let base = id.base_model_name();
            let name = if used.contains(&base) {
                let suffix = &crate::text::sha256_hex(id.as_str().as_bytes())[..6];
                let keep: String = base.chars().take(MAX_MODEL_TOOL_NAME - 7).collect();
                format!("{keep}_{suffix}")
            } else {
                base
            };
            used.insert(name.clone());
            name
        })
        .collect()
}

/// Any tool: a built-in or an outside one. Serialized as its canonical id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ToolId {
    Builtin(ToolName),
    External(ExternalToolId),
}

impl ToolId {
    /// A built-in's canonical name, or an outside tool's canonical id.
    pub fn canonical(&self) -> &str {
        match self {
            ToolId::Builtin(tool) => tool.canonical(),
            ToolId::External(id) => id.as_str(),
        }
    }

    pub fn builtin(&self) -> Option<ToolName> {
        match self {
            ToolId::Builtin(tool) => Some(*tool),
            ToolId::External(_) => None,
        }
    }

    pub fn external(&self) -> Option<&ExternalToolId> {
        match self {
            ToolId::Builtin(_) => None,
            ToolId::External(id) => Some(id),
        }
    }

    /// Reads a built-in's canonical name or an outside tool's canonical id.
    pub fn parse(canonical: &str) -> DomainResult<Self> {
        match ToolName::from_canonical(canonical) {
            Some(tool) => Ok(ToolId::Builtin(tool)),
            None => ExternalToolId::parse(canonical).map(ToolId::External),
        }
    }
}

impl From<ToolName> for ToolId {
    fn from(tool: ToolName) -> Self {
        ToolId::Builtin(tool)
    }
}

impl PartialEq<ToolName> for ToolId {
    fn eq(&self, other: &ToolName) -> bool {
        self.builtin() == Some(*other)
    }
}

crate::tool_name::shown_as_canonical!(ToolId);

impl<'de> Deserialize<'de> for ToolId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(deserializer)?;
        ToolId::parse(&raw).map_err(|err| serde::de::Error::custom(err.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_has_consistent_facts() {
        for tool in ToolName::ALL {
            let facts = tool.facts();
            // A tool that writes can always be put back or has its own hook; one that only
            // reads never needs either.
            match facts.side_effect {
                SideEffect::ReadsOnly => assert_eq!(facts.in_flight, InFlightRule::RunAgain),
                SideEffect::WritesWorkspace => {
                    assert_eq!(facts.in_flight, InFlightRule::RestoreWorkspace)
                }
                SideEffect::Outside => assert_eq!(facts.in_flight, InFlightRule::EngineHook),
                SideEffect::RunControl => {}
            }
            assert_ne!(facts.in_flight, InFlightRule::OutcomeUnknown, "{tool}");
            assert!(!matches!(facts.family, ToolFamily::Host | ToolFamily::Mcp));
        }
        let writes: Vec<_> = ToolName::ALL
            .into_iter()
            .filter(|tool| tool.facts().in_writes_group())
            .collect();
        assert_eq!(
            writes,
            [
                ToolName::WorkspaceWriteFile,
                ToolName::WorkspaceApplyPatch,
                ToolName::WorkspaceCommit
            ]
        );
    }

    #[test]
    fn ids_parse_and_print_canonically() {
        let host = ToolId::parse("host/chat.search").unwrap();
        assert_eq!(host.canonical(), "host/chat.search");
        let ToolId::External(id) = &host else {
            panic!("not external")
        };
        assert_eq!(
            id.source(),
            ExternalSource::Host {
                name: "chat.search"
            }
        );
        assert_eq!(id.base_model_name(), "chat_search");
        let mcp = ExternalToolId::parse("mcp/everything:get-sum").unwrap();
        assert_eq!(
            mcp.source(),
            ExternalSource::Mcp {
                server: "everything",
                tool: "get-sum"
            }
        );
        assert_eq!(mcp.base_model_name(), "mcp__everything__get-sum");
        assert_eq!(
            ToolId::parse("workspace.read_file").unwrap(),
            ToolName::WorkspaceReadFile
        );
        for bad in [
            "nope",
            "host/",
            "host/Chat",
            "host/chat..x",
            "mcp/x",
            "mcp/:t",
            "mcp/Srv:t",
            "mcp/s:a b",
        ] {
            let err = ToolId::parse(bad).unwrap_err();
            assert_eq!(err.code, error_codes::TOOL_ID_INVALID, "{bad}");
        }
        let json = serde_json::to_string(&host).unwrap();
        assert_eq!(json, "\"host/chat.search\"");
        assert_eq!(serde_json::from_str::<ToolId>(&json).unwrap(), host);
    }

    #[test]
    fn model_names_fit_providers_and_clashes_get_a_stable_suffix() {
        let long = "t".repeat(100);
        let a = ExternalToolId::mcp("srv", &format!("{long}.a")).unwrap();
        let b = ExternalToolId::mcp("srv", &format!("{long}.b")).unwrap();
        let odd = ExternalToolId::mcp("srv", "say/héllo").unwrap();
        let names = assign_model_names(["agent_list"], &[a.clone(), b.clone(), odd]);
        assert_eq!(names[0].len(), 64);
        assert_ne!(names[0], names[1]);
        assert_eq!(names[1].len(), 64);
        assert_eq!(names[2], "mcp__srv__say_h_llo");
        for name in &names {
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            );
        }
        // The same inputs give the same names in every run.
        assert_eq!(
            assign_model_names(["agent_list"], &[a.clone(), b.clone()]),
            names[..2]
        );
        // A host tool cannot take a built-in's name.
        let clash = ExternalToolId::host("agent_list").unwrap();
        let named = assign_model_names(["agent_list"], &[clash]);
        assert!(named[0].starts_with("agent_list_") && named[0].len() == 17);
    }
}
