//! Model-facing specs of the seven workspace tools: names, titles, descriptions and strict JSON
//! schemas. Agents working on a delegated task get list/search/read/write/patch descriptions
//! that speak about "this task" and name the areas they can see or write.

use serde_json::Value;
use tt_domain::tool::{AgentToolSpec, ToolAnnotations, ToolName};
use tt_domain::workspace::WorkspaceRoot;

use crate::tools::schema::{Prop, boolean, builtin_spec, integer, object, string};

/// Who reads the spec: the agent that owns the run, or an agent working on a delegated task
/// (whose descriptions name its visible or writable roots).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SpecAudience {
    pub delegated: bool,
    pub visible_roots: Vec<WorkspaceRoot>,
    pub writable_roots: Vec<WorkspaceRoot>,
}

impl SpecAudience {
    /// The agent that owns the run, seeing and writing every root.
    #[cfg(test)]
    pub(crate) fn owner() -> Self {
        Self {
            delegated: false,
            visible_roots: WorkspaceRoot::ALL.to_vec(),
            writable_roots: WorkspaceRoot::ALL.to_vec(),
        }
    }

    /// An agent working on a delegated task with these roots.
    #[cfg(test)]
    pub(crate) fn delegated(
        visible_roots: Vec<WorkspaceRoot>,
        writable_roots: Vec<WorkspaceRoot>,
    ) -> Self {
        Self {
            delegated: true,
            visible_roots,
            writable_roots,
        }
    }
}

/// The spec of a workspace tool. A tool outside the workspace family gets a bare spec (name,
/// alias, empty-object schema); callers route only `ToolName::WORKSPACE` here, and
/// [`try_spec`] says so explicitly.
pub(crate) fn spec(tool: ToolName, audience: &SpecAudience) -> AgentToolSpec {
    try_spec(tool, audience).unwrap_or_else(|| {
        builtin_spec(
            tool,
            tool.model_alias(),
            String::new(),
            object().build(),
            ToolAnnotations::default(),
        )
    })
}

/// The spec of a workspace tool, or `None` for any other tool.
pub(crate) fn try_spec(tool: ToolName, audience: &SpecAudience) -> Option<AgentToolSpec> {
    let delegated = audience.delegated;
    let visible = root_list(&audience.visible_roots);
    let writable = root_list(&audience.writable_roots);
    let read_example = example_file(delegated, &audience.visible_roots);
    let write_example = example_file(delegated, &audience.writable_roots);
    let (title, description, schema, annotations) = match tool {
        ToolName::WorkspaceListFiles => (
            "List workspace files",
            list_description(delegated, &visible),
            object()
                .prop("path", string().describe("Folder to list; omit for all."))
                .prop(
                    "depth",
                    integer().min(1).max(4).describe("Folder levels. Default 2."),
                )
                .build(),
            read_only(),
        ),
        ToolName::WorkspaceSearchFiles => (
            "Search workspace files",
            search_description(delegated, &visible),
            search_schema(),
            read_only(),
        ),
        ToolName::WorkspaceReadFile => (
            "Read a workspace file",
            read_description(delegated, &visible),
            read_schema(&read_example),
            read_only(),
        ),
        ToolName::WorkspaceWriteFile => (
            "Write a workspace file",
            write_description(delegated, &writable),
            object()
                .required("path", file_path("File to write", &write_example))
                .required("content", string().describe("The exact text."))
                .prop(
                    "mode",
                    replace_or_append("`replace` (default) or `append` (adds no line break)."),
                )
                .build(),
            mutating(),
        ),
        ToolName::WorkspaceApplyPatch => (
            "Patch a workspace file",
            patch_description(delegated, &writable),
            patch_schema(&write_example),
            mutating(),
        ),
        ToolName::WorkspaceCommit => (
            "Publish your reply",
            "Publish a file as your reply, replacing any earlier one; commit again after revising.".to_owned(),
            object()
                .prop("path", string().describe("Default: your main output file."))
                .prop(
                    "mode",
                    replace_or_append("`replace` (default) or `append` to your published reply."),
                )
                .prop("reason", short_note())
                .build(),
            control(),
        ),
        ToolName::WorkspaceFinish => (
            "Finish the request",
            "End your work once nothing else is needed. Tasks you delegated that still run are cancelled.".to_owned(),
            object().prop("reason", short_note()).build(),
            control(),
        ),
        _ => return None,
    };
    Some(builtin_spec(tool, title, description, schema, annotations))
}

fn search_schema() -> Value {
    object()
        .required("query", string().describe("Words or a phrase."))
        .prop(
            "path",
            string().describe("Folder or file to search; omit for all."),
        )
        .prop("limit", integer().min(1).max(50).describe("Default 20."))
        .prop(
            "context_lines",
            integer().min(0).max(5).describe("Default 2."),
        )
        .build()
}

fn read_schema(example: &str) -> Value {
    object()
        .required("path", file_path("File to read", example))
        .prop(
            "start_line",
            integer().min(1).describe("From 1, with `line_count`."),
        )
        .prop("line_count", integer().min(1).max(1200))
        .prop(
            "start_char",
            integer().min(0).describe("From 0, with `max_chars`."),
        )
        .prop("max_chars", integer().min(1).max(80000))
        .build()
}

fn patch_schema(example: &str) -> Value {
    object()
        .required("path", file_path("File to change", example))
        .required(
            "old_string",
            string().describe("Exact text to replace, spaces and line breaks included."),
        )
        .required(
            "new_string",
            string().describe("Its replacement; empty deletes."),
        )
        .prop(
            "replace_all",
            boolean().describe("Replace every occurrence (needs a whole-file read)."),
        )
        .build()
}

/// A `path` argument: "{what}, such as `{example}`."
fn file_path(what: &str, example: &str) -> Prop {
    string().describe(format!("{what}, such as `{example}`."))
}

fn replace_or_append(description: &str) -> Prop {
    string()
        .one_of(&["replace", "append"])
        .describe(description)
}

fn short_note() -> Prop {
    string().describe("Short note.")
}

/// The compact description of a workspace tool (docs/profiles.md, "Tool specs"), or `None`
/// for any other tool. An agent working on a delegated task still reads its areas.
pub(crate) fn compact_description(tool: ToolName, audience: &SpecAudience) -> Option<String> {
    let visible = root_list(&audience.visible_roots);
    let writable = root_list(&audience.writable_roots);
    let seen = |text: &str| {
        if audience.delegated {
            format!("{text}; you can see {visible}.")
        } else {
            format!("{text}.")
        }
    };
    let written = |text: &str| {
        if !audience.delegated {
            format!("{text}.")
        } else if writable.is_empty() {
            "You cannot write any files for this task, so this call will be refused.".to_owned()
        } else {
            format!("{text}; you can write only inside {writable}.")
        }
    };
    Some(match tool {
        ToolName::WorkspaceListFiles => seen("List files and folders (folders end with `/`)"),
        ToolName::WorkspaceSearchFiles => seen("Search file text, ignoring case"),
        ToolName::WorkspaceReadFile => seen("Read a file as numbered lines, whole or a range"),
        ToolName::WorkspaceWriteFile => {
            written("Create, replace or append to a file; read a file before replacing it")
        }
        ToolName::WorkspaceApplyPatch => written(
            "Replace exact text, found once (unless `replace_all`), in a part of a file you have read",
        ),
        ToolName::WorkspaceCommit => {
            "Publish a file as your reply, replacing any earlier one.".to_owned()
        }
        ToolName::WorkspaceFinish => {
            "End your work; tasks you delegated that still run are cancelled.".to_owned()
        }
        _ => return None,
    })
}

/// What `workspace.list_files` does, for `delegated` agents naming the areas they see.
fn list_description(delegated: bool, visible: &str) -> String {
    seen_description(
        (delegated, visible),
        (
            "List the files and folders you can see for this task",
            ". Omit `path` to see all of them.",
        ),
        "List files and folders in the shared workspace.",
        "Folders end with `/`; use paths as shown.",
    )
}

/// What `workspace.search_files` does, for `delegated` agents naming the areas they see.
fn search_description(delegated: bool, visible: &str) -> String {
    seen_description(
        (delegated, visible),
        (
            "Search the text of the files you can see for this task",
            ", ignoring case.",
        ),
        "Search the text of the workspace files, ignoring case.",
        "Returns matching passages with line numbers, best first.",
    )
}

/// What `workspace.read_file` does, for `delegated` agents naming the areas they see.
fn read_description(delegated: bool, visible: &str) -> String {
    seen_description(
        (delegated, visible),
        ("Read a text file you can see for this task", "."),
        "Read a text file from the workspace.",
        "Returns numbered lines: the whole file (up to 1200 lines or 256 KiB) or a range. Read before you replace or patch.",
    )
}

/// A reading tool's description then `base`: for a delegated agent the `(before, after)` pair
/// around the areas it sees (`visible`), for any other `shared`.
fn seen_description(
    (delegated, visible): (bool, &str),
    (before, after): (&str, &str),
    shared: &str,
    base: &str,
) -> String {
    if delegated {
        format!("{before} (areas: {visible}){after} {base}")
    } else {
        format!("{shared} {base}")
    }
}

fn write_description(delegated: bool, writable: &str) -> String {
    let base =
        "Creates or replaces a file, or appends to it. Read an existing file before replacing it.";
    if delegated {
        if writable.is_empty() {
            format!(
                "Write a workspace file for this task; you cannot write any files for this task, so this call will be refused. {base}"
            )
        } else {
            format!("Write a file for this task; you can write only inside {writable}. {base}")
        }
    } else {
        format!("Write a workspace file. {base}")
    }
}

fn patch_description(delegated: bool, writable: &str) -> String {
    let base = "Replaces exact text in a file you have read. `old_string` must occur once (unless `replace_all`) and lie in the part you read.";
    if delegated {
        if writable.is_empty() {
            format!(
                "Edit a workspace file for this task; you cannot write any files for this task, so this call will be refused. {base}"
            )
        } else {
            format!(
                "Edit a file for this task; you can change only files inside {writable}. {base}"
            )
        }
    } else {
        format!("Edit a workspace file. {base}")
    }
}

/// An example file path inside the first of `roots` (the owner's is always the main output).
fn example_file(delegated: bool, roots: &[WorkspaceRoot]) -> String {
    match roots.iter().min() {
        Some(root) if delegated && *root != WorkspaceRoot::Output => {
            format!("{}/notes.md", root.name())
        }
        Some(_) | None => "output/main.md".to_owned(),
    }
}

/// `` `output/`, `scratch/` `` in canonical root order; empty when there are none.
fn root_list(roots: &[WorkspaceRoot]) -> String {
    let mut roots = roots.to_vec();
    roots.sort();
    roots.dedup();
    roots
        .iter()
        .map(|root| format!("`{}/`", root.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn read_only() -> ToolAnnotations {
    ToolAnnotations {
        read_only: Some(true),
        ..ToolAnnotations::default()
    }
}

fn mutating() -> ToolAnnotations {
    ToolAnnotations {
        mutating: Some(true),
        ..ToolAnnotations::default()
    }
}

fn control() -> ToolAnnotations {
    ToolAnnotations {
        control: Some(true),
        ..ToolAnnotations::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::schema::testing::{property_names, required_names, spec_texts};
    use serde_json::json;

    fn delegated_audience() -> SpecAudience {
        SpecAudience::delegated(
            vec![
                WorkspaceRoot::Output,
                WorkspaceRoot::Summaries,
                WorkspaceRoot::Scratch,
            ],
            vec![WorkspaceRoot::Scratch],
        )
    }

    const DELEGATED_TOOLS: [ToolName; 5] = [
        ToolName::WorkspaceListFiles,
        ToolName::WorkspaceSearchFiles,
        ToolName::WorkspaceReadFile,
        ToolName::WorkspaceWriteFile,
        ToolName::WorkspaceApplyPatch,
    ];

    fn pretty(spec: &AgentToolSpec) -> String {
        serde_json::to_string_pretty(spec).unwrap()
    }

    #[test]
    fn owner_specs_snapshot() {
        let audience = SpecAudience::owner();
        for tool in ToolName::WORKSPACE {
            let spec = spec(tool, &audience);
            insta::assert_snapshot!(format!("owner__{}", tool.model_alias()), pretty(&spec));
        }
    }

    #[test]
    fn delegated_specs_snapshot() {
        let audience = delegated_audience();
        for tool in DELEGATED_TOOLS {
            let spec = spec(tool, &audience);
            insta::assert_snapshot!(format!("delegated__{}", tool.model_alias()), pretty(&spec));
        }
    }

    #[test]
    fn spec_texts_avoid_runtime_terms() {
        let mut specs: Vec<AgentToolSpec> = ToolName::WORKSPACE
            .into_iter()
            .map(|tool| spec(tool, &SpecAudience::owner()))
            .collect();
        specs.extend(DELEGATED_TOOLS.map(|tool| spec(tool, &delegated_audience())));
        specs.extend(DELEGATED_TOOLS.map(|tool| {
            spec(
                tool,
                &SpecAudience::delegated(vec![WorkspaceRoot::Output], vec![]),
            )
        }));
        for spec in &specs {
            for text in spec_texts(spec) {
                assert!(
                    !text.trim().is_empty() || text == spec.title,
                    "{}",
                    spec.name
                );
                let found = tt_testkit::leaks::leaks_in(&text);
                assert!(found.is_empty(), "{}: {found:?} in {text:?}", spec.name);
            }
        }
    }

    #[test]
    fn schemas_are_strict_and_name_the_contract_arguments() {
        let expected: [(ToolName, &[&str], &[&str]); 7] = [
            (ToolName::WorkspaceListFiles, &["path", "depth"], &[]),
            (
                ToolName::WorkspaceSearchFiles,
                &["query", "path", "limit", "context_lines"],
                &["query"],
            ),
            (
                ToolName::WorkspaceReadFile,
                &[
                    "path",
                    "start_line",
                    "line_count",
                    "start_char",
                    "max_chars",
                ],
                &["path"],
            ),
            (
                ToolName::WorkspaceWriteFile,
                &["path", "content", "mode"],
                &["path", "content"],
            ),
            (
                ToolName::WorkspaceApplyPatch,
                &["path", "old_string", "new_string", "replace_all"],
                &["path", "old_string", "new_string"],
            ),
            (ToolName::WorkspaceCommit, &["path", "mode", "reason"], &[]),
            (ToolName::WorkspaceFinish, &["reason"], &[]),
        ];
        for (tool, properties, required) in expected {
            let spec = spec(tool, &SpecAudience::owner());
            let schema = &spec.input_schema;
            assert_eq!(schema["additionalProperties"], json!(false), "{tool}");
            assert_eq!(property_names(schema), properties, "{tool}");
            assert_eq!(required_names(schema), required, "{tool}");
            assert_eq!(spec.model_name, tool.model_alias());
            assert_eq!(spec.source, "builtin");
        }
        assert!(try_spec(ToolName::AgentList, &SpecAudience::owner()).is_none());
        assert_eq!(
            spec(ToolName::AgentList, &SpecAudience::owner()).model_name,
            "agent_list"
        );
    }

    #[test]
    fn annotations_follow_the_tool_kind() {
        let owner = SpecAudience::owner();
        for tool in ToolName::WORKSPACE {
            let annotations = spec(tool, &owner).annotations;
            let expected = match tool {
                ToolName::WorkspaceListFiles
                | ToolName::WorkspaceSearchFiles
                | ToolName::WorkspaceReadFile => read_only(),
                ToolName::WorkspaceWriteFile | ToolName::WorkspaceApplyPatch => mutating(),
                _ => control(),
            };
            assert_eq!(annotations, expected, "{tool}");
        }
    }
}
