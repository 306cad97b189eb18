//! The built-in `default-writer` profile, used when a run names no profile.

use super::definition::*;
use crate::ids::ProfileId;
use crate::run::Presentation;
use crate::tool::ToolName;
use crate::workspace::WorkspaceRoot;

pub const DEFAULT_PROFILE_ID: &str = "default-writer";

/// Every profile built into the runtime: used when nothing is stored under its id (a stored
/// profile of the same id replaces it), listed as built in, never deleted.
pub fn built_in_profiles() -> Vec<AgentProfileDefinition> {
    vec![default_writer_definition()]
}

/// The built-in writer's tools, in the contract's allow order (agent tools, skill tools, workspace
/// tools). `agent.handoff` is not among them: the contract's default writer delegates but does not
/// hand off.
pub const DEFAULT_WRITER_TOOLS: [ToolName; 13] = [
    ToolName::AgentList,
    ToolName::AgentDelegate,
    ToolName::AgentAwait,
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

/// The built-in foreground writer, as the reference contract defines it: it may delegate
/// (`agent.list`, `agent.delegate`, `agent.await`, `canDelegate = true`), read skills
/// (`skill.list`, `skill.search`, `skill.read`) and use the seven workspace tools; every root is
/// visible and writable; one required markdown message body at `output/main.md`.
///
/// The contract's chat/world-info tools are host concerns this runtime does not build, so they are
/// not listed (docs/contract-differences.md).
pub fn default_writer_definition() -> AgentProfileDefinition {
    AgentProfileDefinition {
        schema_version: PROFILE_SCHEMA_VERSION,
        kind: PROFILE_KIND.to_owned(),
        id: ProfileId::parse(DEFAULT_PROFILE_ID).unwrap_or_else(|_| unreachable_profile_id()),
        display_name: "Default Writer".to_owned(),
        description: Some("Writes the reply in the shared workspace and publishes it.".to_owned()),
        preset: PresetBinding {
            mode: PresetMode::CurrentPromptSnapshot,
            preset_ref: None,
            required: false,
        },
        model: ModelBinding {
            mode: ModelMode::CurrentPromptSnapshot,
            connection_ref: None,
            model_id: None,
            max_output_tokens: None,
            generation: Default::default(),
            context_window_tokens: None,
            cache: Default::default(),
            fallbacks: Vec::new(),
            fallback_on_rate_limit_after_seconds: None,
        },
        run: RunSection {
            presentation: Presentation::Foreground,
            direct_runnable: true,
            model_retry: ModelRetryPolicy::default(),
        },
        context: ContextPolicy::default(),
        delegation: DelegationPolicy {
            can_delegate: true,
            ..DelegationPolicy::default()
        },
        instructions: InstructionsSection::default(),
        tools: ToolsSection {
            allow: DEFAULT_WRITER_TOOLS
                .iter()
                .map(|tool| tool.canonical().to_owned())
                .collect(),
            deny: Vec::new(),
            tool_descriptions: Default::default(),
            spec_style: Some(ToolSpecStyle::Compact.as_str().to_owned()),
            max_rounds: 80,
            max_calls_per_run: 80,
            max_calls_per_tool: Default::default(),
            approval: Default::default(),
            approval_timeout_ms: None,
            mcp: Default::default(),
        },
        skills: SkillsSection {
            visible: vec!["*".to_owned()],
            deny: Vec::new(),
            max_read_chars_per_call: 20_000,
            max_read_chars_per_run: 80_000,
        },
        workspace: WorkspaceSection {
            visible_roots: WorkspaceRoot::ALL.to_vec(),
            writable_roots: WorkspaceRoot::ALL.to_vec(),
        },
        plan: PlanSection {
            mode: PlanMode::None,
            beta: true,
            nodes: Vec::new(),
        },
        output: OutputSection {
            artifacts: vec![OutputArtifact {
                id: "main".to_owned(),
                path: "output/main.md".to_owned(),
                kind: "markdown".to_owned(),
                target: ArtifactTarget::MessageBody,
                required: true,
                assembly_order: 0,
            }],
        },
        limits: LimitsSection::default(),
    }
}

// `default-writer` is a valid id by construction; this keeps the constructor panic-free.
fn unreachable_profile_id() -> ProfileId {
    ProfileId::from_trusted(DEFAULT_PROFILE_ID)
}
