//! The tool registry: which tools this build implements, their specs as a given agent sees them,
//! and the frozen per-invocation `InvocationToolSnapshot`.

use serde_json::Value;
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use tt_domain::error_codes;
use tt_domain::ids::InvocationId;
use tt_domain::invocation::ExitPolicy;
use tt_domain::profile::{ResolvedProfile, ToolDescriptionOverride, ToolSpecStyle};
use tt_domain::run::Presentation;
use tt_domain::tool::{
    AgentToolSpec, InvocationBudgets, InvocationToolSnapshot, ToolAnnotations, ToolName,
};
use tt_domain::tool_model::{
    ExternalSource, ExternalToolId, SideEffect, ToolId, assign_model_names,
};
use tt_ports::ExternalToolDefinition;

use crate::error::{ApplicationError, ApplicationResult};
use crate::tools::workspace::{self, SpecAudience};

/// Builds the snapshot for an invocation of `profile` with `exit_policy`.
///
/// Visible built-ins are `tools.allow` minus `tools.deny`, in `allow` order; then the outside
/// tools the profile offers (`host/…` ids of `allow`, the MCP tools of `tools.mcp` that are
/// not off), each from its definition in `external` (docs/tools.md); a delegated agent
/// (`task_return_required`) also gets `task.return`, last. A profile that asks for a tool this
/// build does not implement, or an outside tool `external` does not define, cannot start
/// (`agent.tool_unavailable`).
pub fn build_tool_snapshot(
    profile: &ResolvedProfile,
    invocation_id: &InvocationId,
    exit_policy: ExitPolicy,
    presentation: Presentation,
    external: &[ExternalToolDefinition],
) -> ApplicationResult<InvocationToolSnapshot> {
    let definition = &profile.definition;
    let visible = definition.tools.visible_tools();
    let audience = SpecAudience {
        delegated: exit_policy == ExitPolicy::TaskReturnRequired,
        visible_roots: definition.workspace.visible_roots.clone(),
        writable_roots: definition.workspace.writable_roots.clone(),
    };
    let builtins = tool_specs(profile, visible, audience, exit_policy)?;
    let tools = with_external_specs(profile, builtins, external)?;
    let mut max_calls_per_tool = BTreeMap::new();
    for (name, limit) in &definition.tools.max_calls_per_tool {
        if let Ok(tool) = ToolId::parse(name) {
            max_calls_per_tool.insert(tool, *limit);
        }
    }
    Ok(InvocationToolSnapshot {
        schema_version: InvocationToolSnapshot::SCHEMA_VERSION,
        invocation_id: invocation_id.clone(),
        profile_id: profile.id().clone(),
        exit_policy,
        presentation,
        tools,
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

/// What an invocation's tool specs are made of: the profile's visible tools, spec style and
/// description overrides, and who reads them.
#[derive(Debug, PartialEq)]
struct SpecInputs {
    visible: Vec<ToolName>,
    style: ToolSpecStyle,
    descriptions: BTreeMap<String, ToolDescriptionOverride>,
    audience: SpecAudience,
    task_return: bool,
}

/// How many distinct spec inputs are kept (a run uses a handful of profiles).
const KEPT_SPEC_SETS: usize = 16;

/// Specs made recently, by their inputs. Specs are a function of [`SpecInputs`] alone, and
/// writing every tool's JSON schema for every invocation was about 2% of a 256-agent
/// fan-out's CPU; the invocations of one profile now share one copy.
static SPEC_SETS: Mutex<Vec<(SpecInputs, Arc<[AgentToolSpec]>)>> = Mutex::new(Vec::new());

/// The JSON text of spec sets written recently, by identity. An entry keeps its set alive, so
/// the set's address is not reused by another while the entry is here.
static SPEC_SET_JSON: Mutex<Vec<SpecSetJson>> = Mutex::new(Vec::new());

/// A spec set and its JSON text.
type SpecSetJson = (Arc<[AgentToolSpec]>, Arc<RawValue>);

/// The JSON text of `specs`, written once for all the invocations that share them (an
/// invocation's tool snapshot document holds them: about 33,000 instructions per invocation
/// in a fan-out's children). `None` if they cannot be serialized.
pub(crate) fn specs_json(specs: &Arc<[AgentToolSpec]>) -> Option<Arc<RawValue>> {
    {
        let texts = SPEC_SET_JSON.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, text)) = texts.iter().find(|(set, _)| Arc::ptr_eq(set, specs)) {
            return Some(Arc::clone(text));
        }
    }
    let text: Arc<RawValue> = serde_json::value::to_raw_value(&**specs).ok()?.into();
    let mut texts = SPEC_SET_JSON.lock().unwrap_or_else(PoisonError::into_inner);
    if texts.len() >= KEPT_SPEC_SETS {
        texts.remove(0);
    }
    texts.push((Arc::clone(specs), Arc::clone(&text)));
    Some(text)
}

/// The specs of `visible` for `audience` in the profile's spec style, with its description
/// overrides and, for a delegated agent, `task.return` last.
fn tool_specs(
    profile: &ResolvedProfile,
    visible: Vec<ToolName>,
    audience: SpecAudience,
    exit_policy: ExitPolicy,
) -> ApplicationResult<Arc<[AgentToolSpec]>> {
    let definition = &profile.definition;
    let task_return = exit_policy == ExitPolicy::TaskReturnRequired;
    let style = definition.tools.spec_style();
    {
        let sets = SPEC_SETS.lock().unwrap_or_else(PoisonError::into_inner);
        let found = sets.iter().find(|(inputs, _)| {
            inputs.task_return == task_return
                && inputs.style == style
                && inputs.visible == visible
                && inputs.audience == audience
                && inputs.descriptions == definition.tools.tool_descriptions
        });
        if let Some((_, specs)) = found {
            return Ok(Arc::clone(specs));
        }
    }
    let mut tools = Vec::with_capacity(visible.len() + 1);
    for &tool in &visible {
        // Delegated agents get task-specific workspace descriptions that replace overrides.
        let rewritten = audience.delegated && ToolName::WORKSPACE.contains(&tool);
        let override_ = definition
            .tools
            .tool_descriptions
            .get(tool.canonical())
            .filter(|_| !rewritten);
        // A property the profile describes stays in a compact spec.
        let described: Vec<&str> = override_
            .map(|o| o.properties.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let mut spec = styled_spec(tool, &audience, style, &described)?;
        if let Some(override_) = override_ {
            apply_description_override(
                &mut spec,
                override_.description.as_deref(),
                &override_.properties,
            )?;
        }
        tools.push(spec);
    }
    if task_return {
        // The runtime, not the profile, gives a delegated agent its way to hand results back.
        tools.push(styled_spec(ToolName::TaskReturn, &audience, style, &[])?);
    }
    let specs: Arc<[AgentToolSpec]> = tools.into();
    let mut sets = SPEC_SETS.lock().unwrap_or_else(PoisonError::into_inner);
    if sets.len() >= KEPT_SPEC_SETS {
        sets.remove(0);
    }
    sets.push((
        SpecInputs {
            visible,
            style,
            descriptions: definition.tools.tool_descriptions.clone(),
            audience,
            task_return,
        },
        Arc::clone(&specs),
    ));
    Ok(specs)
}

/// `builtins` followed by the specs of the outside tools `profile` offers (before a delegated
/// agent's `task.return`, which stays last), each from its definition in `external`, named
/// for the model without a clash ([`assign_model_names`]) and with the permission the profile
/// gives it.
fn with_external_specs(
    profile: &ResolvedProfile,
    builtins: Arc<[AgentToolSpec]>,
    external: &[ExternalToolDefinition],
) -> ApplicationResult<Arc<[AgentToolSpec]>> {
    let offered = profile.definition.tools.external_tools();
    if offered.is_empty() {
        return Ok(builtins);
    }
    let ids: Vec<ExternalToolId> = offered.iter().map(|(id, _)| id.clone()).collect();
    let names = assign_model_names(builtins.iter().map(|spec| spec.model_name.as_str()), &ids);
    let mut specs: Vec<AgentToolSpec> = builtins.to_vec();
    let task_return = specs
        .last()
        .filter(|spec| spec.name == ToolName::TaskReturn)
        .is_some()
        .then(|| specs.pop())
        .flatten();
    for ((id, permission), model_name) in offered.into_iter().zip(names) {
        let definition = external
            .iter()
            .find(|known| known.id == id)
            .ok_or_else(|| {
                ApplicationError::fatal(
                    error_codes::AGENT_TOOL_UNAVAILABLE,
                    format!(
                        "profile `{}` lists `{id}`, which no host tool or MCP server provides",
                        profile.id()
                    ),
                )
            })?;
        let mut facts = definition.facts.clone();
        if let Some(permission) = permission {
            facts.permission = permission;
        }
        let (kind, source) = match id.source() {
            ExternalSource::Host { .. } => ("host", "host".to_owned()),
            ExternalSource::Mcp { server, .. } => ("mcp", format!("mcp:{server}")),
        };
        let mut spec = AgentToolSpec {
            name: ToolId::External(id.clone()),
            title: definition
                .title
                .clone()
                .unwrap_or_else(|| model_name.clone()),
            model_name,
            description: definition.description.clone(),
            input_schema: definition.input_schema.clone(),
            output_schema: None,
            annotations: ToolAnnotations {
                read_only: Some(facts.side_effect == SideEffect::ReadsOnly),
                mutating: Some(facts.side_effect != SideEffect::ReadsOnly),
                control: None,
                source_kind: Some(kind.to_owned()),
            },
            source,
            external: Some(facts),
        };
        if let Some(override_) = profile.definition.tools.tool_descriptions.get(id.as_str()) {
            apply_description_override(
                &mut spec,
                override_.description.as_deref(),
                &override_.properties,
            )?;
        }
        specs.push(spec);
    }
    specs.extend(task_return);
    Ok(specs.into())
}

/// The definitions of the outside tools `profile` offers, for the snapshot of `invocation`:
/// the ones its frozen snapshot holds when it has one (a resumed agent keeps the catalog it
/// saw), else the ones the sources give now. Nothing is read for a profile without outside
/// tools.
pub(crate) async fn external_definitions(
    services: &crate::services::RuntimeServices,
    run_id: &tt_domain::ids::RunId,
    invocation: &InvocationId,
    profile: &ResolvedProfile,
) -> ApplicationResult<Vec<ExternalToolDefinition>> {
    let offered = profile.definition.tools.external_tools();
    if offered.is_empty() {
        return Ok(Vec::new());
    }
    let document = tt_ports::RunDocument::InvocationToolSnapshot(invocation.clone());
    if let Some(stored) = services.runs.read_document(run_id, &document).await?
        && let Ok(snapshot) = serde_json::from_value::<InvocationToolSnapshot>(stored)
    {
        return Ok(frozen_definitions(&snapshot));
    }
    let ids: Vec<ExternalToolId> = offered.into_iter().map(|(id, _)| id).collect();
    services
        .external_tools
        .definitions(&ids)
        .await
        .map_err(|err| ApplicationError::fatal(err.code, err.message))
}

/// An outside tool's definition as a frozen snapshot holds it: resume offers a resumed agent
/// the catalog it saw, not the one its source has now.
pub(crate) fn frozen_definitions(snapshot: &InvocationToolSnapshot) -> Vec<ExternalToolDefinition> {
    snapshot
        .tools
        .iter()
        .filter_map(|spec| {
            let id = spec.name.external()?.clone();
            Some(ExternalToolDefinition {
                id,
                title: Some(spec.title.clone()),
                description: spec.description.clone(),
                input_schema: spec.input_schema.clone(),
                facts: spec.external.clone()?,
            })
        })
        .collect()
}

/// The spec of a built-in tool for `audience` in `style`; a compact spec keeps the optional
/// arguments named in `also_keep` too.
fn styled_spec(
    tool: ToolName,
    audience: &SpecAudience,
    style: ToolSpecStyle,
    also_keep: &[&str],
) -> ApplicationResult<AgentToolSpec> {
    let mut spec = builtin_spec(tool, audience)?;
    if style == ToolSpecStyle::Compact {
        crate::tools::compact::compact_spec(&mut spec, audience, also_keep);
    }
    Ok(spec)
}

/// The argument schema a call of `spec`'s tool is held to: a built-in tool's full schema, every
/// argument it takes (a compact spec shows fewer, docs/profiles.md "Tool specs"); an outside
/// tool's own.
pub(crate) fn full_input_schema(spec: &AgentToolSpec) -> Value {
    let audience = SpecAudience {
        delegated: false,
        visible_roots: tt_domain::workspace::WorkspaceRoot::ALL.to_vec(),
        writable_roots: tt_domain::workspace::WorkspaceRoot::ALL.to_vec(),
    };
    let mut schema = spec
        .name
        .builtin()
        .and_then(|tool| builtin_spec(tool, &audience).ok())
        .map_or_else(|| spec.input_schema.clone(), |full| full.input_schema);
    if spec.name == ToolName::AgentDelegate {
        crate::delegation::specs::add_fork_mode(&mut schema, false);
    }
    schema
}

/// The full spec of a built-in tool for `audience`.
pub(crate) fn builtin_spec(
    tool: ToolName,
    audience: &SpecAudience,
) -> ApplicationResult<AgentToolSpec> {
    if ToolName::WORKSPACE.contains(&tool) {
        return Ok(workspace::spec(tool, audience));
    }
    crate::delegation::specs::agent_tool_spec(tool)
        .or_else(|| crate::skills::skill_tool_spec(tool))
        .ok_or_else(|| {
            ApplicationError::fatal(
                error_codes::AGENT_TOOL_UNAVAILABLE,
                format!("no spec for `{tool}`"),
            )
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
                    error_codes::AGENT_PROFILE_TOOL_DESCRIPTION_INVALID,
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

#[cfg(test)]
mod tests {
    use super::*;
    use tt_domain::profile::{
        AgentProfileDefinition, ProfileSource, default_writer_definition, resolve_profile,
    };
    use tt_domain::workspace::WorkspaceRoot;

    fn snapshot(
        edit: impl FnOnce(&mut AgentProfileDefinition),
        exit_policy: ExitPolicy,
    ) -> InvocationToolSnapshot {
        let mut definition = default_writer_definition();
        edit(&mut definition);
        let profile = resolve_profile(definition, ProfileSource::built_in()).unwrap();
        let presentation = profile.definition.run.presentation;
        build_tool_snapshot(
            &profile,
            &InvocationId::from_raw("inv_x"),
            exit_policy,
            presentation,
            &[],
        )
        .unwrap()
    }

    #[test]
    fn a_shared_spec_set_is_written_once_as_serializing_it_writes_it() {
        let plain = snapshot(|_| {}, ExitPolicy::RunFinishAllowed);
        let again = snapshot(|_| {}, ExitPolicy::RunFinishAllowed);
        let text = specs_json(&plain.tools).unwrap();
        assert!(Arc::ptr_eq(&text, &specs_json(&again.tools).unwrap()));
        assert_eq!(text.get(), serde_json::to_string(&*plain.tools).unwrap());
        let delegated = snapshot(|_| {}, ExitPolicy::TaskReturnRequired);
        assert_eq!(
            specs_json(&delegated.tools).unwrap().get(),
            serde_json::to_string(&*delegated.tools).unwrap()
        );
    }

    #[test]
    fn invocations_of_one_profile_share_specs_and_other_inputs_get_their_own() {
        let plain = snapshot(|_| {}, ExitPolicy::RunFinishAllowed);
        let again = snapshot(|_| {}, ExitPolicy::RunFinishAllowed);
        assert!(Arc::ptr_eq(&plain.tools, &again.tools));

        let delegated = snapshot(|_| {}, ExitPolicy::TaskReturnRequired);
        assert_eq!(
            delegated.tools.last().map(|spec| spec.name.clone()),
            Some(ToolName::TaskReturn.into())
        );
        assert_ne!(plain.tools, delegated.tools);

        let read = ToolName::WorkspaceReadFile.canonical();
        let described = snapshot(
            |definition| {
                definition.tools.tool_descriptions.insert(
                    read.to_owned(),
                    ToolDescriptionOverride {
                        description: Some("Reads one note.".to_owned()),
                        properties: BTreeMap::new(),
                    },
                );
            },
            ExitPolicy::RunFinishAllowed,
        );
        let description = |snapshot: &InvocationToolSnapshot| {
            snapshot
                .tools
                .iter()
                .find(|spec| spec.name == ToolName::WorkspaceReadFile)
                .map(|spec| spec.description.clone())
        };
        assert_eq!(description(&described).as_deref(), Some("Reads one note."));
        assert_ne!(description(&plain).as_deref(), Some("Reads one note."));

        let fewer_roots = snapshot(
            |definition| definition.workspace.writable_roots = vec![WorkspaceRoot::Output],
            ExitPolicy::TaskReturnRequired,
        );
        assert_ne!(fewer_roots.tools, delegated.tools);
        // The first profile's specs are still the ones it gets.
        let plain_again = snapshot(|_| {}, ExitPolicy::RunFinishAllowed);
        assert_eq!(plain_again.tools, plain.tools);
    }

    #[test]
    fn the_spec_style_decides_how_built_in_tools_are_written() {
        let full_style = |definition: &mut AgentProfileDefinition| {
            definition.tools.spec_style = Some("full".to_owned());
        };
        let compact = snapshot(|_| {}, ExitPolicy::RunFinishAllowed);
        let full = snapshot(full_style, ExitPolicy::RunFinishAllowed);
        let unset = snapshot(
            |definition| definition.tools.spec_style = None,
            ExitPolicy::RunFinishAllowed,
        );
        assert_eq!(unset.tools, full.tools);
        assert_eq!(compact.tools.len(), full.tools.len());
        for (small, whole) in compact.tools.iter().zip(full.tools.iter()) {
            assert_eq!(small.name, whole.name);
            assert!(
                small.description.len() < whole.description.len(),
                "{}",
                small.name
            );
        }
        // What a model reads of them, in the engine's estimate: over a quarter less.
        let tokens = |tools: &[AgentToolSpec]| tt_domain::context_window::tools_tokens(tools);
        assert!(tokens(&compact.tools) * 4 < tokens(&full.tools) * 3);
        // A delegated agent's task.return follows its profile's style too.
        let delegated = |edit: fn(&mut AgentProfileDefinition)| {
            snapshot(edit, ExitPolicy::TaskReturnRequired)
                .tools
                .last()
                .map(|spec| spec.description.clone())
        };
        assert_ne!(delegated(|_| {}), delegated(full_style));
    }
}
