//! The compact spec style (`tools.specStyle: "compact"`, docs/profiles.md, "Tool specs"): a
//! built-in tool keeps its name and every argument (name, type, enum, bounds, what is
//! required), gets a shorter description, and loses the prose of its optional arguments. It
//! makes the first request of a small-window model smaller; the model still sees everything it
//! needs to call the tool right.

use serde_json::Value;
use tt_domain::tool::{AgentToolSpec, ToolName};

use crate::tools::workspace::{self, SpecAudience};

/// `spec` in the compact style: the compact description of its tool and no prose on optional
/// arguments. An outside tool's spec is its source's and stays as it is.
pub(crate) fn compact_spec(spec: &mut AgentToolSpec, audience: &SpecAudience) {
    let Some(tool) = spec.name.builtin() else {
        return;
    };
    if let Some(description) = compact_description(tool, audience) {
        spec.description = description;
    }
    strip_optional_prose(&mut spec.input_schema);
}

/// The compact description of a built-in tool.
fn compact_description(tool: ToolName, audience: &SpecAudience) -> Option<String> {
    if let Some(text) = workspace::compact_description(tool, audience) {
        return Some(text);
    }
    let text = match tool {
        ToolName::AgentList => "List the agents you can `delegate` or `handoff` to.",
        ToolName::AgentDelegate => {
            "Give another agent one focused task; it works in the background and its result reaches you on its own. Brief it: objective, paths, expected output."
        }
        ToolName::AgentHandoff => {
            "Hand the rest of this job to another agent with a brief; after it succeeds, make no more calls. Refused while your delegated tasks run."
        }
        ToolName::AgentAwait => {
            "Optional: wait for or check delegated tasks, only when your next step depends on one. A timeout is not an error."
        }
        ToolName::AgentCancelTask => {
            "Stop a task you delegated; its result and files still reach you."
        }
        ToolName::TaskReturn => {
            "Return your result, as your last call: the answer in `summary`, your files in `artifacts`; `status: \"failed\"` if you could not do the task."
        }
        ToolName::SkillList => "List the skills (short guides) you can read.",
        ToolName::SkillSearch => "Find skills about a topic.",
        ToolName::SkillRead => {
            "Read a skill's `SKILL.md` or another of its files; long text comes in parts."
        }
        ToolName::WorkspaceListFiles
        | ToolName::WorkspaceSearchFiles
        | ToolName::WorkspaceReadFile
        | ToolName::WorkspaceWriteFile
        | ToolName::WorkspaceApplyPatch
        | ToolName::WorkspaceCommit
        | ToolName::WorkspaceFinish => return None,
    };
    Some(text.to_owned())
}

/// Removes the `description` of every optional property of an object schema, and every
/// description inside an optional property; a required property keeps its own and is walked
/// the same way.
pub(crate) fn strip_optional_prose(schema: &mut Value) {
    let required: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    for (name, property) in properties.iter_mut() {
        if required.contains(name) {
            strip_optional_prose(property);
        } else {
            strip_all_prose(property);
        }
    }
}

/// Removes every `description` in `schema`: its own, its properties' and its items'.
fn strip_all_prose(schema: &mut Value) {
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    map.remove("description");
    if let Some(properties) = map.get_mut("properties").and_then(Value::as_object_mut) {
        properties.values_mut().for_each(strip_all_prose);
    }
    if let Some(items) = map.get_mut("items") {
        strip_all_prose(items);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn optional_prose_goes_and_required_prose_stays() {
        let mut schema = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "kept"},
                "depth": {"type": "integer", "minimum": 1, "description": "dropped"},
                "task": {
                    "type": "object",
                    "description": "kept",
                    "properties": {
                        "objective": {"type": "string", "description": "kept"},
                        "title": {"type": "string", "description": "dropped"}
                    },
                    "required": ["objective"]
                },
                "artifacts": {
                    "type": "array",
                    "description": "dropped",
                    "items": {
                        "type": "object",
                        "properties": {"path": {"type": "string", "description": "dropped"}},
                        "required": ["path"]
                    }
                }
            },
            "required": ["path", "task"],
            "additionalProperties": false
        });
        strip_optional_prose(&mut schema);
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "kept"},
                    "depth": {"type": "integer", "minimum": 1},
                    "task": {
                        "type": "object",
                        "description": "kept",
                        "properties": {
                            "objective": {"type": "string", "description": "kept"},
                            "title": {"type": "string"}
                        },
                        "required": ["objective"]
                    },
                    "artifacts": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"path": {"type": "string"}},
                            "required": ["path"]
                        }
                    }
                },
                "required": ["path", "task"],
                "additionalProperties": false
            })
        );
    }

    /// The specs as a model reads them: name, description, argument schema.
    fn model_view(tools: &[ToolName], audience: &SpecAudience) -> String {
        let specs: Vec<Value> = tools
            .iter()
            .map(|&tool| {
                let mut spec = crate::registry::builtin_spec(tool, audience).unwrap();
                compact_spec(&mut spec, audience);
                json!({"name": spec.model_name, "description": spec.description, "inputSchema": spec.input_schema})
            })
            .collect();
        serde_json::to_string_pretty(&specs).unwrap()
    }

    #[test]
    fn compact_specs_snapshot() {
        let mut owner_tools = tt_domain::profile::DEFAULT_WRITER_TOOLS.to_vec();
        owner_tools.extend([ToolName::AgentHandoff, ToolName::AgentCancelTask]);
        insta::assert_snapshot!(
            "compact_owner",
            model_view(&owner_tools, &SpecAudience::owner())
        );
        let delegated = SpecAudience::delegated(
            vec![
                tt_domain::workspace::WorkspaceRoot::Output,
                tt_domain::workspace::WorkspaceRoot::Scratch,
            ],
            vec![tt_domain::workspace::WorkspaceRoot::Scratch],
        );
        let mut delegated_tools = ToolName::WORKSPACE[..5].to_vec();
        delegated_tools.push(ToolName::TaskReturn);
        insta::assert_snapshot!(
            "compact_delegated",
            model_view(&delegated_tools, &delegated)
        );
        let read_only =
            SpecAudience::delegated(vec![tt_domain::workspace::WorkspaceRoot::Output], vec![]);
        insta::assert_snapshot!(
            "compact_delegated_read_only",
            model_view(
                &[ToolName::WorkspaceWriteFile, ToolName::WorkspaceApplyPatch],
                &read_only
            )
        );
    }

    #[test]
    fn every_builtin_tool_has_a_shorter_compact_description() {
        let audiences = [
            SpecAudience::owner(),
            SpecAudience::delegated(
                vec![
                    tt_domain::workspace::WorkspaceRoot::Output,
                    tt_domain::workspace::WorkspaceRoot::Scratch,
                ],
                vec![tt_domain::workspace::WorkspaceRoot::Scratch],
            ),
        ];
        for audience in &audiences {
            for tool in ToolName::ALL {
                let full = crate::registry::builtin_spec(tool, audience).unwrap();
                let mut compact = full.clone();
                compact_spec(&mut compact, audience);
                assert!(
                    compact.description.len() < full.description.len(),
                    "{tool}: {:?}",
                    compact.description
                );
                let found = tt_testkit::leaks::leaks_in(&compact.description);
                assert!(found.is_empty(), "{tool}: {found:?}");
                assert_eq!(
                    compact.input_schema["properties"]
                        .as_object()
                        .map(|p| p.keys().cloned().collect::<Vec<_>>()),
                    full.input_schema["properties"]
                        .as_object()
                        .map(|p| p.keys().cloned().collect::<Vec<_>>()),
                    "{tool}"
                );
            }
        }
    }
}
