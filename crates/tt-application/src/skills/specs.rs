//! Model-facing specs of `skill.list`, `skill.search` and `skill.read`: titles, descriptions
//! written from the agent's point of view, and strict argument schemas.

use serde_json::{Map, Value, json};
use tt_domain::tool::{AgentToolSpec, ToolAnnotations, ToolName};

use super::tools::{DEFAULT_LIST_LIMIT, DEFAULT_SEARCH_LIMIT, MAX_LIST_LIMIT, MAX_SEARCH_LIMIT};

/// The spec of `skill.list`, `skill.search` or `skill.read`; `None` for any other tool.
pub(crate) fn skill_tool_spec(tool: ToolName) -> Option<AgentToolSpec> {
    let (title, description, schema) = match tool {
        ToolName::SkillList => (
            "List skills",
            "See the skills you can read: short guides for one kind of work. Read one with `skill_read` before work it covers.".to_owned(),
            object(
                vec![
                    (
                        "query",
                        json!({"type": "string", "description": "Words to find in a skill's id, name or description."}),
                    ),
                    (
                        "limit",
                        json!({"type": "integer", "minimum": 1, "maximum": MAX_LIST_LIMIT, "description": format!("Default {DEFAULT_LIST_LIMIT}.")}),
                    ),
                ],
                &[],
            ),
        ),
        ToolName::SkillSearch => (
            "Search skills",
            "Find skills about a topic; returns the best matches with a passage.".to_owned(),
            object(
                vec![
                    (
                        "query",
                        json!({"type": "string", "description": "Words or a phrase."}),
                    ),
                    (
                        "limit",
                        json!({"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_LIMIT, "description": format!("Default {DEFAULT_SEARCH_LIMIT}.")}),
                    ),
                ],
                &["query"],
            ),
        ),
        ToolName::SkillRead => (
            "Read a skill",
            "Read a skill's `SKILL.md` (default) or another of its files. Long text comes in parts; each answer says where it continues and how much you may still read.".to_owned(),
            object(
                vec![
                    (
                        "skill",
                        json!({"type": "string", "description": "A skill id."}),
                    ),
                    (
                        "path",
                        json!({"type": "string", "description": "Default `SKILL.md`, which lists the other files."}),
                    ),
                    (
                        "start_char",
                        json!({"type": "integer", "minimum": 0, "description": "From 0."}),
                    ),
                    (
                        "max_chars",
                        json!({"type": "integer", "minimum": 1}),
                    ),
                ],
                &["skill"],
            ),
        ),
        ToolName::AgentList
        | ToolName::AgentDelegate
        | ToolName::AgentHandoff
        | ToolName::AgentAwait
        | ToolName::AgentCancelTask
        | ToolName::TaskReturn
        | ToolName::WorkspaceListFiles
        | ToolName::WorkspaceSearchFiles
        | ToolName::WorkspaceReadFile
        | ToolName::WorkspaceWriteFile
        | ToolName::WorkspaceApplyPatch
        | ToolName::WorkspaceCommit
        | ToolName::WorkspaceFinish => return None,
    };
    Some(AgentToolSpec {
        name: tool.into(),
        model_name: tool.model_alias().to_owned(),
        title: title.to_owned(),
        description,
        input_schema: schema,
        output_schema: None,
        annotations: ToolAnnotations {
            read_only: Some(true),
            source_kind: Some("skill".to_owned()),
            ..ToolAnnotations::default()
        },
        source: "builtin".to_owned(),
        external: None,
    })
}

fn object(properties: Vec<(&str, Value)>, required: &[&str]) -> Value {
    let mut props = Map::new();
    for (name, schema) in properties {
        props.insert(name.to_owned(), schema);
    }
    let mut schema = Map::new();
    schema.insert("type".to_owned(), json!("object"));
    schema.insert("properties".to_owned(), Value::Object(props));
    if !required.is_empty() {
        schema.insert("required".to_owned(), json!(required));
    }
    schema.insert("additionalProperties".to_owned(), json!(false));
    Value::Object(schema)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(crate) const SKILL_TOOLS: [ToolName; 3] = [
        ToolName::SkillList,
        ToolName::SkillSearch,
        ToolName::SkillRead,
    ];

    fn spec(tool: ToolName) -> AgentToolSpec {
        skill_tool_spec(tool).unwrap()
    }

    /// The one scanner for model-facing text (`tt_testkit::leaks`).
    pub(crate) use tt_testkit::leaks::leaks_in as leak_scan;

    /// Title, description and every schema description of a spec.
    fn spec_texts(spec: &AgentToolSpec) -> Vec<String> {
        fn walk(value: &Value, out: &mut Vec<String>) {
            match value {
                Value::Object(map) => {
                    for (key, inner) in map {
                        match inner {
                            Value::String(text) if key == "description" => out.push(text.clone()),
                            _ => walk(inner, out),
                        }
                    }
                }
                Value::Array(items) => items.iter().for_each(|item| walk(item, out)),
                Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
            }
        }
        let mut texts = vec![spec.title.clone(), spec.description.clone()];
        walk(&spec.input_schema, &mut texts);
        texts
    }

    #[test]
    fn specs_snapshot() {
        for tool in SKILL_TOOLS {
            insta::assert_snapshot!(
                tool.model_alias(),
                serde_json::to_string_pretty(&spec(tool)).unwrap()
            );
        }
    }

    #[test]
    fn only_skill_tools_have_specs_here() {
        for tool in ToolName::ALL {
            assert_eq!(
                skill_tool_spec(tool).is_some(),
                SKILL_TOOLS.contains(&tool),
                "{tool}"
            );
        }
    }

    #[test]
    fn schemas_are_strict_and_name_the_arguments() {
        let expected: [(ToolName, &[&str], &[&str]); 3] = [
            (ToolName::SkillList, &["query", "limit"], &[]),
            (ToolName::SkillSearch, &["query", "limit"], &["query"]),
            (
                ToolName::SkillRead,
                &["skill", "path", "start_char", "max_chars"],
                &["skill"],
            ),
        ];
        for (tool, properties, required) in expected {
            let spec = spec(tool);
            let schema = &spec.input_schema;
            assert_eq!(schema["type"], json!("object"), "{tool}");
            assert_eq!(schema["additionalProperties"], json!(false), "{tool}");
            let names: Vec<&str> = schema["properties"]
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(names, properties, "{tool}");
            let req: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|items| items.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            assert_eq!(req, required, "{tool}");
            assert_eq!(spec.name, tool);
            assert_eq!(spec.model_name, tool.model_alias());
            assert_eq!(spec.source, "builtin");
            assert_eq!(spec.annotations.read_only, Some(true));
            assert_eq!(spec.annotations.source_kind.as_deref(), Some("skill"));
        }
    }

    #[test]
    fn spec_texts_avoid_runtime_terms() {
        for tool in SKILL_TOOLS {
            let texts = spec_texts(&spec(tool));
            assert!(texts.len() >= 4, "{tool}");
            for text in texts {
                assert!(!text.trim().is_empty(), "{tool}");
                let found = leak_scan(&text);
                assert!(found.is_empty(), "{tool}: {found:?} in {text:?}");
            }
        }
    }
}
