//! The tool registry: which tools this build implements, their specs as a given agent sees them,
//! and the frozen per-invocation `InvocationToolSnapshot`.

use serde_json::Value;
use std::collections::BTreeMap;
use tt_domain::ids::InvocationId;
use tt_domain::invocation::ExitPolicy;
use tt_domain::profile::ResolvedProfile;
use tt_domain::run::Presentation;
use tt_domain::tool::{AgentToolSpec, InvocationBudgets, InvocationToolSnapshot, ToolName};

use crate::error::{ApplicationError, ApplicationResult};
use crate::tools::workspace::{self, SpecAudience};

/// Tools this build can execute.
pub(crate) fn is_implemented(tool: ToolName) -> bool {
    match tool {
        ToolName::WorkspaceListFiles
        | ToolName::WorkspaceSearchFiles
        | ToolName::WorkspaceReadFile
        | ToolName::WorkspaceWriteFile
        | ToolName::WorkspaceApplyPatch
        | ToolName::WorkspaceCommit
        | ToolName::WorkspaceFinish
        | ToolName::AgentList
        | ToolName::AgentDelegate
        | ToolName::AgentAwait
        | ToolName::AgentCancelTask
        | ToolName::AgentHandoff
        | ToolName::TaskReturn
        | ToolName::SkillList
        | ToolName::SkillSearch
        | ToolName::SkillRead => true,
    }
}

/// Builds the snapshot for an invocation of `profile` with `exit_policy`.
///
/// Visible tools are `tools.allow` minus `tools.deny`, in `allow` order; a delegated agent
/// (`task_return_required`) also gets `task.return`, last. A profile that asks for a tool this
/// build does not implement cannot start (`agent.tool_unavailable`).
pub fn build_tool_snapshot(
    profile: &ResolvedProfile,
    invocation_id: &InvocationId,
    exit_policy: ExitPolicy,
    presentation: Presentation,
) -> ApplicationResult<InvocationToolSnapshot> {
    let definition = &profile.definition;
    let visible = definition.tools.visible_tools();
    let audience = SpecAudience {
        delegated: exit_policy == ExitPolicy::TaskReturnRequired,
        visible_roots: definition.workspace.visible_roots.clone(),
        writable_roots: definition.workspace.writable_roots.clone(),
    };
    let mut tools = Vec::with_capacity(visible.len());
    for tool in visible {
        if !is_implemented(tool) {
            return Err(ApplicationError::fatal(
                "agent.tool_unavailable",
                format!(
                    "profile `{}` lists `{tool}`, which this runtime does not provide yet",
                    profile.id()
                ),
            ));
        }
        let mut spec = spec_for(tool, &audience)?;
        // Delegated agents get task-specific workspace descriptions that replace overrides.
        let rewritten = audience.delegated && ToolName::WORKSPACE.contains(&tool);
        if let Some(override_) = definition
            .tools
            .tool_descriptions
            .get(tool.canonical())
            .filter(|_| !rewritten)
        {
            apply_description_override(
                &mut spec,
                override_.description.as_deref(),
                &override_.properties,
            )?;
        }
        tools.push(spec);
    }
    if exit_policy == ExitPolicy::TaskReturnRequired {
        // The runtime, not the profile, gives a delegated agent its way to hand results back.
        tools.push(spec_for(ToolName::TaskReturn, &audience)?);
    }
    let mut max_calls_per_tool = BTreeMap::new();
    for (name, limit) in &definition.tools.max_calls_per_tool {
        if let Some(tool) = ToolName::from_canonical(name) {
            max_calls_per_tool.insert(tool, *limit);
        }
    }
    Ok(InvocationToolSnapshot {
        schema_version: InvocationToolSnapshot::SCHEMA_VERSION,
        invocation_id: invocation_id.clone(),
        profile_id: profile.id().clone(),
        exit_policy,
        presentation,
        tools: tools.into(),
        budgets: InvocationBudgets {
            max_rounds: definition.tools.max_rounds,
            max_calls_per_invocation: definition.tools.max_calls_per_run,
            max_calls_per_tool,
        },
        visible_roots: definition.workspace.visible_roots.clone(),
        writable_roots: definition.workspace.writable_roots.clone(),
        message_body_path: profile.message_body_path.clone(),
    })
}

fn spec_for(tool: ToolName, audience: &SpecAudience) -> ApplicationResult<AgentToolSpec> {
    if ToolName::WORKSPACE.contains(&tool) {
        return Ok(workspace::spec(tool, audience));
    }
    crate::delegation::specs::agent_tool_spec(tool)
        .or_else(|| crate::skills::skill_tool_spec(tool))
        .ok_or_else(|| {
            ApplicationError::fatal("agent.tool_unavailable", format!("no spec for `{tool}`"))
        })
}

/// Applies a profile's `toolDescriptions` entry. Property overrides must name real properties.
fn apply_description_override(
    spec: &mut AgentToolSpec,
    description: Option<&str>,
    properties: &BTreeMap<String, String>,
) -> ApplicationResult<()> {
    if let Some(text) = description.map(str::trim).filter(|text| !text.is_empty()) {
        spec.description = text.to_owned();
    }
    for (property, text) in properties {
        let slot = spec
            .input_schema
            .get_mut("properties")
            .and_then(|props| props.get_mut(property))
            .and_then(Value::as_object_mut)
            .ok_or_else(|| {
                ApplicationError::fatal(
                    "agent.profile_tool_description_invalid",
                    format!(
                        "toolDescriptions for `{}` names unknown property `{property}`",
                        spec.name
                    ),
                )
            })?;
        slot.insert("description".to_owned(), Value::String(text.clone()));
    }
    Ok(())
}
