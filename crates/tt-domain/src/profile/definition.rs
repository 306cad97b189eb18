//! The profile file format (`schemaVersion` 2, kind `tauritavern.agentProfile`), camelCase with
//! unknown fields rejected. Defaults follow the reference contract.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::ids::ProfileId;
use crate::run::Presentation;
use crate::tool::ToolName;
use crate::tool_model::{ExternalToolId, ToolId, ToolPermission};
use crate::workspace::WorkspaceRoot;

pub const PROFILE_KIND: &str = "tauritavern.agentProfile";
pub const PROFILE_SCHEMA_VERSION: u32 = 2;

#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentProfileDefinition {
    pub schema_version: u32,
    pub kind: String,
    pub id: ProfileId,
    pub display_name: String,
    pub description: Option<String>,
    pub preset: PresetBinding,
    pub model: ModelBinding,
    pub run: RunSection,
    #[serde(default)]
    pub context: ContextPolicy,
    #[serde(default)]
    pub delegation: DelegationPolicy,
    #[serde(default)]
    pub instructions: InstructionsSection,
    pub tools: ToolsSection,
    pub skills: SkillsSection,
    pub workspace: WorkspaceSection,
    pub plan: PlanSection,
    pub output: OutputSection,
    #[serde(default)]
    pub limits: LimitsSection,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PresetMode {
    CurrentPromptSnapshot,
    Ref,
    None,
}

pub use crate::skill::PresetRef;

#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PresetBinding {
    pub mode: PresetMode,
    #[serde(rename = "ref")]
    pub preset_ref: Option<PresetRef>,
    #[serde(default)]
    pub required: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ModelMode {
    CurrentPromptSnapshot,
    ConnectionRef,
    RequiresConfiguration,
}

#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelBinding {
    pub mode: ModelMode,
    pub connection_ref: Option<String>,
    pub model_id: Option<String>,
    /// The most tokens one model call may generate (1 to [`MAX_OUTPUT_TOKENS_LIMIT`]); unset,
    /// the provider's default applies (8192 for both HTTP providers).
    pub max_output_tokens: Option<u32>,
    /// Sampler settings of this agent's requests, over its connection's (docs/profiles.md has
    /// the precedence); a `maxOutputTokens` here wins over `model.maxOutputTokens`.
    #[serde(
        default,
        skip_serializing_if = "crate::generation::GenerationSettings::is_empty"
    )]
    pub generation: crate::generation::GenerationSettings,
    /// The model's context window in tokens, over the connection's and the known default of
    /// its model id (docs/providers.md, "Context window and compaction").
    pub context_window_tokens: Option<u64>,
    /// How long the provider keeps this agent's prompt cache (`model.cache.ttl`,
    /// docs/profiles.md "Prompt cache lifetime"); left out when not set.
    #[serde(
        default,
        skip_serializing_if = "super::model_cache::ModelCachePolicy::is_default"
    )]
    pub cache: super::model_cache::ModelCachePolicy,
    /// The bindings this agent moves to, in order, when its model fails in a way retrying does
    /// not fix (docs/profiles.md, "Fallback models"); empty: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Vec<super::model_fallbacks::FallbackBinding>,
    /// A rate limit that asks to wait longer than this many seconds moves the agent to its next
    /// fallback at once, without the retries; unset: rate limits are retried like other
    /// failures first.
    pub fallback_on_rate_limit_after_seconds: Option<u64>,
}

pub use crate::generation::MAX_OUTPUT_TOKENS_LIMIT;

#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelRetryPolicy {
    #[serde(default = "default_max_retries")]
    pub max_retries: u32,
    #[serde(default = "default_retry_interval_ms")]
    pub interval_ms: u64,
    /// The most one model call may take, its attempts and the waits between them included
    /// (`model.call_deadline_exceeded`, not retried). Unset: the connection's call deadline,
    /// else [`DEFAULT_MODEL_CALL_DEADLINE_SECONDS`].
    pub deadline_seconds: Option<u64>,
}

/// The deadline of one model call, retries included, when neither the profile
/// (`run.modelRetry.deadlineSeconds`) nor the connection sets one: 5 minutes. A hung server,
/// streamed or not, costs a run at most this per call.
pub const DEFAULT_MODEL_CALL_DEADLINE_SECONDS: u64 = 300;

impl ModelRetryPolicy {
    /// The deadline of one model call, retries included: the profile's, else the
    /// connection's (`connection`), else the default.
    pub fn call_deadline(&self, connection: Option<std::time::Duration>) -> std::time::Duration {
        match self.deadline_seconds {
            Some(seconds) => std::time::Duration::from_secs(seconds),
            None => connection.unwrap_or(std::time::Duration::from_secs(
                DEFAULT_MODEL_CALL_DEADLINE_SECONDS,
            )),
        }
    }
}

impl Default for ModelRetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: default_max_retries(),
            interval_ms: default_retry_interval_ms(),
            deadline_seconds: None,
        }
    }
}

fn default_max_retries() -> u32 {
    3
}
fn default_retry_interval_ms() -> u64 {
    3000
}
fn default_true() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunSection {
    pub presentation: Presentation,
    #[serde(default = "default_true")]
    pub direct_runnable: bool,
    #[serde(default)]
    pub model_retry: ModelRetryPolicy,
}

/// How much of the host conversation an agent's prompt includes.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContextPolicy {
    /// -1 = no limit (any negative value becomes -1), 0 = none, N = the last N messages.
    #[serde(default = "default_history", deserialize_with = "deserialize_history")]
    pub initial_chat_history_messages: i64,
    #[serde(default = "default_true")]
    pub include_activated_world_info: bool,
    /// What happens when a request does not fit the model's window even with older tool
    /// results replaced by stubs.
    /// Written only when not the default, so journals of runs that never set it stay as
    /// they were.
    #[serde(default, skip_serializing_if = "CompactionPolicy::is_default")]
    pub compaction: CompactionPolicy,
    /// A tool result larger than this (in estimated tokens) reaches the agent as its head and
    /// tail; unset, a quarter of the model's window when that is known.
    pub max_tool_result_tokens: Option<u64>,
}

impl Default for ContextPolicy {
    fn default() -> Self {
        Self {
            initial_chat_history_messages: -1,
            include_activated_world_info: true,
            compaction: CompactionPolicy::default(),
            max_tool_result_tokens: None,
        }
    }
}

impl CompactionPolicy {
    pub fn is_default(&self) -> bool {
        *self == CompactionPolicy::default()
    }
}

/// A profile's `context.compaction`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CompactionPolicy {
    /// Fail with `model.context_overflow`.
    None,
    /// One model call summarizes the oldest turns into one message.
    #[default]
    Summarize,
}

fn default_history() -> i64 {
    -1
}

fn deserialize_history<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    let value = i64::deserialize(deserializer)?;
    Ok(if value < 0 { -1 } else { value })
}

#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DelegationPolicy {
    #[serde(default)]
    pub can_delegate: bool,
    #[serde(default)]
    pub can_handoff: bool,
    #[serde(default)]
    pub callable: bool,
    #[serde(default)]
    pub allow_as_subagent: bool,
    #[serde(default)]
    pub allow_as_handoff_target: bool,
    /// With `canDelegate`, this profile keeps its delegation tools when it runs as a
    /// delegated agent, within the run's `maxDelegationDepth`.
    #[serde(default)]
    pub allow_nested_delegation: bool,
    #[serde(default = "default_allowed_callers")]
    pub allowed_callers: Vec<String>,
    pub description_for_agents: Option<String>,
    #[serde(default = "default_max_concurrent")]
    pub max_concurrent_invocations: u32,
    #[serde(default = "default_max_invocations")]
    pub max_invocations_per_run: u32,
    #[serde(default = "default_result_budget")]
    pub result_budget_tokens: u32,
    #[serde(default = "default_max_handoff_depth")]
    pub max_handoff_depth: u32,
    /// Deadline, in seconds from delegation, of a task this profile runs as a delegated agent
    /// when the delegating agent gives none. `None`: no deadline.
    pub task_timeout_seconds: Option<u64>,
    /// The longest deadline a delegating agent may give a task of this profile
    /// (`agent.delegate.timeoutSeconds`). `None`: [`MAX_TASK_TIMEOUT_SECONDS`].
    pub max_task_timeout_seconds: Option<u64>,
    /// A task of this profile that makes no model progress (no model response) for this many
    /// seconds after it starts is cancelled. `None`: no idle limit.
    pub idle_timeout_seconds: Option<u64>,
    /// Read from the run's own profile: how deep delegated tasks may nest (1 = only the
    /// run's agents delegate; 2 = a delegated agent whose profile has `canDelegate` and
    /// `allowNestedDelegation` may delegate once more; ...).
    #[serde(default = "default_max_delegation_depth")]
    pub max_delegation_depth: u32,
    /// Most model tokens a task of this profile may use (input + output over its model calls);
    /// also the most a delegating agent may give it (`budget.maxTokens`). `None`: no limit.
    pub max_task_tokens: Option<u64>,
    /// Most a task of this profile may cost in US dollars, with everything it delegates
    /// (priced calls only, docs/providers.md "Cost"). `None`: no limit.
    pub max_task_cost_usd: Option<crate::cost::Usd>,
    /// A delegating agent may start a task of this profile in fork mode
    /// (`agent.delegate`'s `mode: "fork"`): the task's agent reads the delegating agent's
    /// conversation so far, byte for byte, before its own note and brief (docs/delegation.md,
    /// "Fork mode").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_fork: bool,
    /// A grader checks the result a task of this profile hands back before it stands
    /// (docs/delegation.md, "The return gate"). `None`: a `task.return` is final.
    pub return_gate: Option<ReturnGate>,
}

/// `delegation.returnGate`: when an agent of the profile calls `task.return`, the grader
/// profile's model reads the task's brief, the rubric and the result, and answers accept,
/// revise (with notes, sent back to the agent as the call's result) or reject (the task
/// fails with its reason).
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReturnGate {
    /// The profile whose model grades (its `instructions.agentSystemPrompt`, when set, opens
    /// the grading).
    pub grader: String,
    /// What a result must satisfy.
    pub rubric: String,
    /// How many times a result may be sent back for revision (at most 10).
    #[serde(default = "default_max_revisions")]
    pub max_revisions: u32,
    /// What happens to a result the grader would send back once the revisions are spent (or
    /// once the gradings used `maxGraderTokens`): it stands, or the task fails.
    #[serde(default)]
    pub when_revisions_spent: RevisionsSpent,
    /// Most model tokens the gradings of one task may use together. `None`: no limit.
    pub max_grader_tokens: Option<u64>,
}

/// `returnGate.whenRevisionsSpent`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RevisionsSpent {
    /// The last result stands, with the grader's notes journaled.
    #[default]
    Accept,
    /// The task fails (`agent.return_revisions_spent`).
    Fail,
}

/// The most revisions a return gate may allow.
pub const MAX_RETURN_REVISIONS: u32 = 10;

fn default_max_revisions() -> u32 {
    2
}

/// The longest task deadline when a profile sets no `maxTaskTimeoutSeconds`: one day.
pub const MAX_TASK_TIMEOUT_SECONDS: u64 = 86_400;

impl Default for DelegationPolicy {
    fn default() -> Self {
        Self {
            can_delegate: false,
            can_handoff: false,
            callable: false,
            allow_as_subagent: false,
            allow_as_handoff_target: false,
            allow_nested_delegation: false,
            allowed_callers: default_allowed_callers(),
            description_for_agents: None,
            max_concurrent_invocations: default_max_concurrent(),
            max_invocations_per_run: default_max_invocations(),
            result_budget_tokens: default_result_budget(),
            max_handoff_depth: default_max_handoff_depth(),
            task_timeout_seconds: None,
            max_task_timeout_seconds: None,
            idle_timeout_seconds: None,
            max_delegation_depth: default_max_delegation_depth(),
            max_task_tokens: None,
            max_task_cost_usd: None,
            allow_fork: false,
            return_gate: None,
        }
    }
}

impl DelegationPolicy {
    /// The longest deadline a delegating agent may give a task of this profile.
    pub fn task_timeout_limit(&self) -> u64 {
        self.max_task_timeout_seconds
            .unwrap_or(MAX_TASK_TIMEOUT_SECONDS)
    }

    /// `allowedCallers` contains `*` or the caller's id.
    pub fn allows_caller(&self, caller: &ProfileId) -> bool {
        self.allowed_callers
            .iter()
            .any(|entry| entry == "*" || entry == caller.as_str())
    }
}

fn default_allowed_callers() -> Vec<String> {
    vec!["*".to_owned()]
}
fn default_max_concurrent() -> u32 {
    3
}
fn default_max_invocations() -> u32 {
    8
}
fn default_result_budget() -> u32 {
    8000
}
fn default_max_delegation_depth() -> u32 {
    1
}
fn default_max_handoff_depth() -> u32 {
    8
}

#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InstructionsSection {
    /// `None` = the generated default; a non-empty string replaces it entirely.
    pub agent_system_prompt: Option<String>,
}

#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolDescriptionOverride {
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub properties: BTreeMap<String, String>,
}

#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolsSection {
    /// Canonical tool names, in the order the provider sees them. Unknown names are kept as
    /// strings so validation can report them instead of failing to parse.
    pub allow: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tool_descriptions: BTreeMap<String, ToolDescriptionOverride>,
    /// How the built-in tools' specs are written for the model: `full` or `compact`
    /// ([`ToolSpecStyle`]); absent: `full`. Kept as a string so validation can report a bad
    /// value with its code (`agent.profile_tool_spec_style_invalid`).
    pub spec_style: Option<String>,
    pub max_rounds: u32,
    #[serde(default = "default_max_calls")]
    pub max_calls_per_run: u32,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub max_calls_per_tool: BTreeMap<String, u32>,
    /// Which calls wait for a person's approval (docs/profiles.md, "Approval"); empty: none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub approval: crate::approval::ApprovalPolicy,
    /// How long a call waits for an answer before it is denied; `None`: as long as the run.
    pub approval_timeout_ms: Option<u64>,
    /// MCP tools this agent may use: server registration name → tool name → permission
    /// (docs/tools.md). A tool not named is off; a delegated agent gets its own profile's
    /// table, never its delegator's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mcp: BTreeMap<String, BTreeMap<String, McpToolPermission>>,
}

/// One MCP tool's permission in a profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpToolPermission {
    /// Not offered.
    Off,
    /// Offered; every call waits for a person's approval.
    Ask,
    /// Offered; calls run without asking.
    Allow,
}

fn default_max_calls() -> u32 {
    80
}

/// How the runtime writes its built-in tools' specs for the model (docs/profiles.md, "Tool
/// specs").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ToolSpecStyle {
    /// Every description, optional arguments' included.
    #[default]
    Full,
    /// A shorter description per tool and no prose on optional arguments (their names, types
    /// and bounds stay): a smaller first request for small windows.
    Compact,
}

impl ToolSpecStyle {
    /// The profile spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::Compact => "compact",
        }
    }

    /// The style a profile spells `name`, if any.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Full, Self::Compact]
            .into_iter()
            .find(|style| style.as_str() == name)
    }
}

impl ToolsSection {
    /// The spec style the profile chose; `full` when absent (or, before validation, invalid).
    pub fn spec_style(&self) -> ToolSpecStyle {
        self.spec_style
            .as_deref()
            .and_then(ToolSpecStyle::parse)
            .unwrap_or_default()
    }

    /// Known tools in `allow` order, minus `deny`.
    pub fn visible_tools(&self) -> Vec<ToolName> {
        self.allow
            .iter()
            .filter(|name| !self.deny.contains(name))
            .filter_map(|name| ToolName::from_canonical(name))
            .collect()
    }

    pub fn is_visible(&self, tool: ToolName) -> bool {
        self.visible_tools().contains(&tool)
    }

    /// The outside tools offered, in provider order after the built-ins: the `host/…` ids of
    /// `allow` minus `deny`, then the MCP tools of `mcp` that are not off, by server and tool
    /// name. Each with the permission the profile gives it (`None`: the tool's own default).
    pub fn external_tools(&self) -> Vec<(ExternalToolId, Option<ToolPermission>)> {
        let hosts = self
            .allow
            .iter()
            .filter(|name| !self.deny.contains(name))
            .filter_map(|name| match ToolId::parse(name) {
                Ok(ToolId::External(id)) => Some((id, None)),
                _ => None,
            });
        let mcp = self.mcp.iter().flat_map(|(server, tools)| {
            tools.iter().filter_map(move |(tool, permission)| {
                let permission = match permission {
                    McpToolPermission::Off => return None,
                    McpToolPermission::Ask => ToolPermission::Ask,
                    McpToolPermission::Allow => ToolPermission::Allow,
                };
                let id = ExternalToolId::mcp(server, tool).ok()?;
                (!self.deny.iter().any(|denied| denied == id.as_str()))
                    .then_some((id, Some(permission)))
            })
        });
        hosts.chain(mcp).collect()
    }

    /// Whether `tool` (a built-in or an outside tool) is offered.
    pub fn offers(&self, tool: &ToolId) -> bool {
        match tool {
            ToolId::Builtin(tool) => self.is_visible(*tool),
            ToolId::External(id) => self.external_tools().iter().any(|(known, _)| known == id),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SkillsSection {
    pub visible: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
    #[serde(default = "default_skill_chars_per_call")]
    pub max_read_chars_per_call: u32,
    #[serde(default = "default_skill_chars_per_run")]
    pub max_read_chars_per_run: u32,
}

fn default_skill_chars_per_call() -> u32 {
    20_000
}
fn default_skill_chars_per_run() -> u32 {
    80_000
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkspaceSection {
    pub visible_roots: Vec<WorkspaceRoot>,
    pub writable_roots: Vec<WorkspaceRoot>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PlanMode {
    None,
    Free,
    Strict,
    Hybrid,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlanNode {
    pub id: String,
    pub title: String,
    #[serde(default)]
    pub locked: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlanSection {
    pub mode: PlanMode,
    #[serde(default = "default_true")]
    pub beta: bool,
    #[serde(default)]
    pub nodes: Vec<PlanNode>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ArtifactTarget {
    MessageBody,
    MessageExtra,
    CombinedMarkdown,
    HiddenRunArtifact,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OutputArtifact {
    pub id: String,
    pub path: String,
    pub kind: String,
    pub target: ArtifactTarget,
    #[serde(default)]
    pub required: bool,
    #[serde(default)]
    pub assembly_order: i32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OutputSection {
    pub artifacts: Vec<OutputArtifact>,
}

/// Bounds on how much a misbehaving model can cost an agent before its work fails.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LimitsSection {
    /// Model slips in a row (an unknown tool name, tool arguments that are not a JSON object or
    /// are too large, an unusable workspace path) that go back to the model as recoverable tool
    /// errors; the next one in a row fails the agent. 0 fails at the first slip, as the
    /// reference does.
    #[serde(default = "default_max_consecutive_slips")]
    pub max_consecutive_slips: u32,
    /// The largest tool-call arguments accepted, in bytes of JSON; larger ones are a slip
    /// (`model.invalid_tool_call`).
    #[serde(default = "default_max_tool_argument_bytes")]
    pub max_tool_argument_bytes: u64,
    /// Wall-clock seconds the whole run may take (read from the run's root profile); then it
    /// ends with `agent.run_deadline_exceeded` (`partial_success` when something was already
    /// published). Unset: no limit besides rounds and provider timeouts.
    pub max_run_seconds: Option<u64>,
    /// Wall-clock seconds one agent's work may take; then it fails with
    /// `agent.invocation_deadline_exceeded` (a delegated agent: only its task). Unset: no
    /// limit.
    pub max_invocation_seconds: Option<u64>,
    /// Model tokens (input + output) the whole run may use, over every agent in it (read from
    /// the run's root profile); past it the run ends with `agent.run_budget_exhausted`
    /// (`partial_success` when something was already published). Unset: no limit.
    pub max_total_tokens: Option<u64>,
    /// Most the whole run may cost in US dollars (read from the run's root profile; priced
    /// calls only); past it the run ends with `agent.run_budget_exhausted`. Unset: no limit.
    pub max_total_cost_usd: Option<crate::cost::Usd>,
    /// US dollars the whole run may spend before a person is asked (read from the run's root
    /// profile; priced calls only): once the run's spend reaches it, the run parks (no agent
    /// makes another model call) until a person raises the limit, or refuses and the run ends
    /// with `agent.run_spend_refused` (docs/delegation.md, "Run spend approval"). Unset: never
    /// asks.
    pub ask_above_total_cost_usd: Option<crate::cost::Usd>,
    /// The longest result of an outside tool (host or MCP) the agent reads inline, in bytes;
    /// a longer one is kept in a run file and the agent reads its head and the path. The
    /// smaller of this and the tool's own limit applies. Unset: the tool's own (16 KiB by
    /// default).
    pub max_inline_tool_result_bytes: Option<u64>,
    /// The inactivity watchdog of this profile's agents (docs/profiles.md, "Inactivity
    /// watchdog"); read from the run's root profile too, for agents whose profile sets none.
    /// Unset: no watchdog.
    pub watchdog: Option<super::watchdog::WatchdogLimits>,
}

impl Default for LimitsSection {
    fn default() -> Self {
        Self {
            max_consecutive_slips: default_max_consecutive_slips(),
            max_tool_argument_bytes: default_max_tool_argument_bytes(),
            max_run_seconds: None,
            max_invocation_seconds: None,
            max_total_tokens: None,
            max_total_cost_usd: None,
            ask_above_total_cost_usd: None,
            max_inline_tool_result_bytes: None,
            watchdog: None,
        }
    }
}

/// Upper bound of `limits.maxConsecutiveSlips`.
pub const MAX_CONSECUTIVE_SLIPS_LIMIT: u32 = 100;
/// Upper bound of `limits.maxRunSeconds` and `limits.maxInvocationSeconds` (7 days).
pub const MAX_DEADLINE_SECONDS: u64 = 7 * 24 * 3600;
/// Bounds of `limits.maxInlineToolResultBytes`: 256 bytes to 4 MiB (an MCP result's bound).
pub const INLINE_TOOL_RESULT_BYTES_RANGE: std::ops::RangeInclusive<u64> = 256..=4 * 1024 * 1024;
/// Upper bound of `limits.maxToolArgumentBytes` (16 MiB).
pub const MAX_TOOL_ARGUMENT_BYTES_LIMIT: u64 = 16 * 1024 * 1024;

fn default_max_consecutive_slips() -> u32 {
    3
}
fn default_max_tool_argument_bytes() -> u64 {
    1024 * 1024
}
