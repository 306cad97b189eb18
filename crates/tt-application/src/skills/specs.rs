//! Model-facing specs of `skill.list`, `skill.search` and `skill.read`: titles, descriptions
//! written from the agent's point of view, and strict argument schemas.

use tt_domain::tool::{AgentToolSpec, ToolAnnotations, ToolName};

use crate::tools::schema::{Prop, builtin_spec, integer, object, string};

use super::tools::{DEFAULT_LIST_LIMIT, DEFAULT_SEARCH_LIMIT, MAX_LIST_LIMIT, MAX_SEARCH_LIMIT};

/// The spec of `skill.list`, `skill.search` or `skill.read`; `None` for any other tool.
pub(crate) fn skill_tool_spec(tool: ToolName) -> Option<AgentToolSpec> {
    let (title, description, schema) = match tool {
        ToolName::SkillList => (
            "List skills",
            "See the skills you can read: short guides for one kind of work. Read one with `skill_read` before work it covers.",
            object()
                .prop(
                    "query",
                    string().describe("Words to find in a skill's id, name or description."),
                )
                .prop("limit", limit(MAX_LIST_LIMIT, DEFAULT_LIST_LIMIT)),
        ),
        ToolName::SkillSearch => (
            "Search skills",
            "Find skills about a topic; returns the best matches with a passage.",
            object()
                .required("query", string().describe("Words or a phrase."))
                .prop("limit", limit(MAX_SEARCH_LIMIT, DEFAULT_SEARCH_LIMIT)),
        ),
        ToolName::SkillRead => (
            "Read a skill",
            "Read a skill's `SKILL.md` (default) or another of its files. Long text comes in parts; each answer says where it continues and how much you may still read.",
            object()
                .required("skill", string().describe("A skill id."))
                .prop(
                    "path",
                    string().describe("Default `SKILL.md`, which lists the other files."),
                )
                .prop("start_char", integer().min(0).describe("From 0."))
                .prop("max_chars", integer().min(1)),
        ),
        _ => return None,
    };
    let annotations = ToolAnnotations {
        read_only: Some(true),
        source_kind: Some("skill".to_owned()),
        ..ToolAnnotations::default()
    };
    Some(builtin_spec(
        tool,
        title,
        description.to_owned(),
        schema.build(),
        annotations,
    ))
}

/// A `limit` argument from 1 to `max`.
fn limit(max: usize, default: usize) -> Prop {
    integer()
        .min(1)
        .max(max)
        .describe(format!("Default {default}."))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::tools::schema::testing::{property_names, required_names, spec_texts};
    use serde_json::json;

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
        crate::tools::schema::testing::assert_specs_only_for(skill_tool_spec, &SKILL_TOOLS);
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
            assert_eq!(property_names(schema), properties, "{tool}");
            assert_eq!(required_names(schema), required, "{tool}");
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
