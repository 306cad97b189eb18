//! The compact spec style (`tools.specStyle: "compact"`, docs/profiles.md, "Tool specs"): a
//! built-in tool keeps its name, its required arguments and the optional arguments of its main
//! use (name, type, enum, upper bounds), gets a shorter description, and loses the prose of its
//! optional arguments, the optional arguments that only tune it (limits, timeouts, budgets,
//! optional brief fields: still accepted when given), `additionalProperties` and lower bounds of
//! 0 or 1. It makes the first request of a small-window model smaller; the model still sees
//! everything it needs to call the tool right.

use serde_json::Value;
use tt_domain::tool::{AgentToolSpec, ToolName};

use crate::tools::workspace::{self, SpecAudience};

/// `spec` in the compact style: the compact description of its tool, the arguments of its main
/// use (and those in `also_keep`, which a profile describes), no prose on optional arguments,
/// no `additionalProperties` and no lower bound of 0 or 1. An outside tool's spec is its
/// source's and stays as it is.
pub(crate) fn compact_spec(spec: &mut AgentToolSpec, audience: &SpecAudience, also_keep: &[&str]) {
    let Some(tool) = spec.name.builtin() else {
        return;
    };
    if let Some(description) = compact_description(tool, audience) {
        spec.description = description;
    }
    keep_main_arguments(
        &mut spec.input_schema,
        main_optional_arguments(tool),
        also_keep,
    );
    strip_optional_prose(&mut spec.input_schema);
    strip_schema_noise(&mut spec.input_schema);
}

/// The optional arguments a compact spec keeps: those of the tool's main use. The others only
/// tune a call (limits, timeouts, budgets, a reason for the record); the tool still takes them.
fn main_optional_arguments(tool: ToolName) -> &'static [&'static str] {
    match tool {
        ToolName::AgentList => &["purpose"],
        ToolName::AgentAwait => &["taskIds", "mode"],
        ToolName::TaskReturn => &["status", "artifacts"],
        ToolName::SkillRead => &["path", "start_char"],
        ToolName::WorkspaceListFiles | ToolName::WorkspaceSearchFiles => &["path"],
        ToolName::WorkspaceReadFile => &["start_line", "line_count"],
        ToolName::WorkspaceWriteFile => &["mode"],
        ToolName::WorkspaceApplyPatch => &["replace_all"],
        ToolName::WorkspaceCommit => &["path"],
        ToolName::AgentDelegate
        | ToolName::AgentHandoff
        | ToolName::AgentCancelTask
        | ToolName::SkillList
        | ToolName::SkillSearch
        | ToolName::WorkspaceFinish => &[],
    }
}

/// Removes the optional properties of an object schema that are in neither `kept` nor
/// `also_keep`; inside a required object property (a brief), only its required properties stay.
fn keep_main_arguments(schema: &mut Value, kept: &[&str], also_keep: &[&str]) {
    let required = required_names(schema);
    let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    properties.retain(|name, _| {
        required.contains(name)
            || kept.contains(&name.as_str())
            || also_keep.contains(&name.as_str())
    });
    for (name, property) in properties.iter_mut() {
        if required.contains(name) && property.get("properties").is_some() {
            keep_main_arguments(property, &[], &[]);
        }
    }
}

/// Removes every `additionalProperties` and every `minimum` of 0 or 1: the tool refuses an
/// unknown argument or a bad count with a message that says so.
fn strip_schema_noise(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            map.remove("additionalProperties");
            if map
                .get("minimum")
                .and_then(Value::as_i64)
                .is_some_and(|minimum| minimum <= 1)
            {
                map.remove("minimum");
            }
            map.values_mut().for_each(strip_schema_noise);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_schema_noise),
        _ => {}
    }
}

fn required_names(schema: &Value) -> Vec<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
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
        _ => return None,
    };
    Some(text.to_owned())
}

/// Removes the `description` of every optional property of an object schema, and every
/// description inside an optional property; a required property keeps its own and is walked
/// the same way.
pub(crate) fn strip_optional_prose(schema: &mut Value) {
    let required = required_names(schema);
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

    #[test]
    fn tuning_arguments_and_schema_noise_go_and_described_ones_stay() {
        let audience = SpecAudience::owner();
        let full = crate::registry::builtin_spec(ToolName::AgentDelegate, &audience).unwrap();
        let mut compact = full.clone();
        compact_spec(&mut compact, &audience, &["timeoutSeconds"]);
        let schema = &compact.input_schema;
        assert_eq!(
            schema["properties"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["agentId", "task", "timeoutSeconds"]
        );
        assert_eq!(
            schema["properties"]["task"]["properties"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["objective"]
        );
        let text = schema.to_string();
        assert!(!text.contains("additionalProperties"), "{text}");
        assert!(!text.contains("minimum"), "{text}");
        let mut read =
            crate::registry::builtin_spec(ToolName::WorkspaceReadFile, &audience).unwrap();
        compact_spec(&mut read, &audience, &[]);
        assert_eq!(
            read.input_schema["properties"]["line_count"]["maximum"],
            1200
        );
    }

    /// The specs as a model reads them: name, description, argument schema.
    fn model_view(tools: &[ToolName], audience: &SpecAudience) -> String {
        let specs: Vec<Value> = tools
            .iter()
            .map(|&tool| {
                let mut spec = crate::registry::builtin_spec(tool, audience).unwrap();
                compact_spec(&mut spec, audience, &[]);
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
                compact_spec(&mut compact, audience, &[]);
                assert!(
                    compact.description.len() < full.description.len(),
                    "{tool}: {:?}",
                    compact.description
                );
                let found = tt_testkit::leaks::leaks_in(&compact.description);
                assert!(found.is_empty(), "{tool}: {found:?}");
                // Every required argument stays, with its type; nothing is added.
                let names = |spec: &AgentToolSpec| {
                    spec.input_schema["properties"]
                        .as_object()
                        .map(|p| p.keys().cloned().collect::<Vec<_>>())
                        .unwrap_or_default()
                };
                let (full_names, compact_names) = (names(&full), names(&compact));
                assert!(
                    compact_names.iter().all(|name| full_names.contains(name)),
                    "{tool}"
                );
                for name in required_names(&full.input_schema) {
                    assert!(compact_names.contains(&name), "{tool}: {name}");
                    assert_eq!(
                        compact.input_schema["properties"][&name]["type"],
                        full.input_schema["properties"][&name]["type"],
                        "{tool}: {name}"
                    );
                }
                assert_eq!(
                    compact.input_schema["required"], full.input_schema["required"],
                    "{tool}"
                );
            }
        }
    }
}
