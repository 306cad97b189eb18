//! The built-in `default-writer` profile, used when a run names no profile.

use super::definition::*;
use crate::ids::ProfileId;
use crate::run::Presentation;
use crate::tool::ToolName;
use crate::workspace::WorkspaceRoot;

pub const DEFAULT_PROFILE_ID: &str = "default-writer";

/// The built-in foreground writer: the seven workspace tools, every root visible and writable,
/// one required markdown message body at `output/main.md`.
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
        },
        run: RunSection {
            presentation: Presentation::Foreground,
            direct_runnable: true,
            model_retry: ModelRetryPolicy::default(),
        },
        context: ContextPolicy::default(),
        delegation: DelegationPolicy::default(),
        instructions: InstructionsSection::default(),
        tools: ToolsSection {
            allow: ToolName::WORKSPACE
                .iter()
                .map(|tool| tool.canonical().to_owned())
                .collect(),
            deny: Vec::new(),
            tool_descriptions: Default::default(),
            max_rounds: 80,
            max_calls_per_run: 80,
            max_calls_per_tool: Default::default(),
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
