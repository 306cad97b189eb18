//! Model-facing specs of the agent tools (`agent.list`, `agent.delegate`, `agent.handoff`,
//! `agent.await`) and of `task.return`: titles, descriptions written from the calling agent's
//! point of view, and the exact argument schemas of the contract.

use serde_json::{Value, json};
use tt_domain::tool::{AgentToolSpec, ToolAnnotations, ToolName};

use crate::tools::schema::{
    ObjectSchema, any_object, array, builtin_spec, integer, object, string, strings,
};

/// Spec of agent.list, agent.delegate, agent.handoff, agent.await or task.return; None otherwise.
pub(crate) fn agent_tool_spec(tool: ToolName) -> Option<AgentToolSpec> {
    let (title, description, schema, annotations) = match tool {
        ToolName::AgentList => (
            "List agents you can call",
            "See the agents you can call on, what each is for, and whether you can `delegate` or `handoff` to it. Starts nothing.",
            list_schema(),
            agent_annotations(true),
        ),
        ToolName::AgentDelegate => (
            "Delegate a task",
            "Give another agent one focused task. It runs in the background while you keep working; its result reaches you on its own. Brief it: the objective, the workspace paths to use, the output you expect.",
            delegate_schema(),
            agent_annotations(false),
        ),
        ToolName::AgentHandoff => (
            "Hand off to another agent",
            "Hand the rest of this job to another agent; it continues in the shared workspace from your brief. Once the handoff succeeds, make no more tool calls. Refused while tasks you delegated still run.",
            handoff_schema(),
            agent_annotations(false),
        ),
        ToolName::AgentAwait => (
            "Wait for delegated results",
            "Optional: wait for or check tasks you delegated. Results also reach you on their own; use this only when your next step depends on one. A timeout is not an error.",
            await_schema(),
            agent_annotations(true),
        ),
        ToolName::AgentCancelTask => (
            "Stop a delegated task",
            "Stop a task you delegated that you no longer need (off track, or already covered). Tasks it delegated stop with it; your other tasks keep running. Its result, with the files it wrote, still reaches you.",
            object()
                .required("taskId", string().describe("An id from `agent_delegate`."))
                .prop("reason", string().describe("Why, in a few words."))
                .build(),
            agent_annotations(false),
        ),
        ToolName::TaskReturn => (
            "Return your result",
            "Hand your result back; this ends the task, so call it once, last. Put the answer in `summary` and the files holding your work in `artifacts`. If you could not do the task, set `status: \"failed\"` and say why in `summary`.",
            task_return_schema(),
            ToolAnnotations {
                control: Some(true),
                source_kind: Some("agent".to_owned()),
                ..ToolAnnotations::default()
            },
        ),
        _ => return None,
    };
    Some(builtin_spec(
        tool,
        title,
        description.to_owned(),
        schema,
        annotations,
    ))
}

fn list_schema() -> Value {
    object()
        .prop(
            "purpose",
            string()
                .one_of(&["any", "delegate", "handoff"])
                .describe("`delegate`, `handoff`, or `any` (default)."),
        )
        .prop(
            "query",
            string().describe("Words to find in an agent's id, name or description."),
        )
        .prop("limit", integer().min(1).max(20).describe("Default 8."))
        .build()
}

/// `agentId`, the one argument `agent.delegate` and `agent.handoff` both require first.
fn agent_id() -> ObjectSchema {
    object().required("agentId", string().describe("An id from `agent_list`."))
}

/// A brief's object: open, so extra keys reach the agent too.
fn brief() -> ObjectSchema {
    object()
        .prop("title", string().describe("Short name."))
        .open()
        .describe("The brief; extra keys reach the agent too.")
}

fn delegate_schema() -> Value {
    let task = brief()
        .required("objective", string().describe("What to achieve."))
        .prop(
            "context",
            any_object().describe("Facts, constraints, paths to read."),
        )
        .prop(
            "expectedOutput",
            any_object().describe("What to hand back, and where."),
        );
    let most = |what: &str| integer().min(1).describe(what);
    let budget = object()
        .prop("maxRounds", most("Most model turns."))
        .prop("maxToolCalls", most("Most tool calls."))
        .prop(
            "maxTokens",
            most("Most tokens read and written over all turns."),
        )
        .describe("Optional limits within the agent's own.");
    agent_id()
        .required("task", task)
        .prop("budget", budget)
        .prop(
            "timeoutSeconds",
            integer().min(1).describe(
                "Optional: most seconds from now; then it stops and you get what it wrote.",
            ),
        )
        .build()
}

fn handoff_schema() -> Value {
    let handoff = brief()
        .prop("reason", string().describe("Why it takes over."))
        .required("objective", string().describe("What to achieve."))
        .prop(
            "contextSummary",
            string().describe("What is done and decided."),
        )
        .prop(
            "workspaceRefs",
            strings().describe("Paths to continue from."),
        )
        .prop("mustPreserve", strings().describe("What must not change."))
        .prop("completionCriteria", strings().describe("When it is done."));
    agent_id()
        .required("handoff", handoff)
        .prop(
            "pendingTaskPolicy",
            string()
                .one_of(&["denyIfPending"])
                .describe("The only option (default)."),
        )
        .build()
}

fn await_schema() -> Value {
    object()
        .prop(
            "taskIds",
            strings().describe("Ids from `agent_delegate`; omit for all."),
        )
        .prop(
            "mode",
            string()
                .one_of(&["nextCompleted", "allCompleted", "statusOnly"])
                .describe("`nextCompleted` (default), `allCompleted`, or `statusOnly` (no wait)."),
        )
        .prop(
            "timeoutMs",
            integer()
                .min(0)
                .max(300_000)
                .describe("Longest wait. Default 120000."),
        )
        .build()
}

fn task_return_schema() -> Value {
    let artifact = object()
        .required(
            "path",
            string().describe("Workspace path, such as `scratch/notes.md`."),
        )
        .required(
            "kind",
            string().describe("The file's format: markdown, json or text."),
        )
        .required(
            "role",
            string().describe("How the caller should use it: draft, outline, evidence, revision or memory_update."),
        );
    object()
        .required(
            "summary",
            string().describe("Your result in a few sentences: what you found or made, and where."),
        )
        .prop(
            "status",
            string()
                .one_of(&["completed", "failed"])
                .describe("`completed` (default) or `failed` when you could not do the task."),
        )
        .prop(
            "confidence",
            string()
                .one_of(&["low", "medium", "high"])
                .describe("How sure you are of the result."),
        )
        .prop(
            "artifacts",
            array(artifact).describe("Workspace files you wrote or that hold the result."),
        )
        .prop(
            "findings",
            array(any_object()).describe(
                "Each an object with fitting fields, such as the issue, where it is, a fix.",
            ),
        )
        .prop(
            "warnings",
            strings().describe("Problems or risks the caller should know about."),
        )
        .prop(
            "suggestedNextActions",
            strings().describe("What you suggest doing next."),
        )
        .prop(
            "questionsForCaller",
            strings().describe("Open questions for the agent that gave you this task."),
        )
        .build()
}

/// `agent.delegate`'s optional `mode` argument, added to its schema only for an agent that
/// can reach a target started in fork mode (docs/delegation.md, "Fork mode"): with its prose
/// (`describe`) in the full spec style, the enum alone in the compact one.
pub(crate) fn add_fork_mode(schema: &mut Value, describe: bool) {
    let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    let mut mode = json!({"type": "string", "enum": ["brief", "fork"]});
    if describe {
        mode["description"] = json!(
            "`brief` (default): it reads only your brief. `fork`: it first reads this conversation as you see it now, then your brief; only for agents that allow it."
        );
    }
    properties.insert("mode".to_owned(), mode);
}

fn agent_annotations(read_only: bool) -> ToolAnnotations {
    ToolAnnotations {
        read_only: Some(read_only),
        source_kind: Some("agent".to_owned()),
        ..ToolAnnotations::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delegation::rendering::leak_scan;
    use crate::tools::schema::testing::{
        property_names as keys, required_names as required, spec_texts,
    };

    const AGENT_TOOLS: [ToolName; 6] = [
        ToolName::AgentList,
        ToolName::AgentDelegate,
        ToolName::AgentHandoff,
        ToolName::AgentAwait,
        ToolName::AgentCancelTask,
        ToolName::TaskReturn,
    ];

    fn spec(tool: ToolName) -> AgentToolSpec {
        agent_tool_spec(tool).unwrap()
    }

    #[test]
    fn specs_snapshot() {
        for tool in AGENT_TOOLS {
            let spec = spec(tool);
            insta::assert_snapshot!(
                tool.model_alias(),
                serde_json::to_string_pretty(&spec).unwrap()
            );
        }
    }

    #[test]
    fn fork_mode_is_an_optional_argument_of_delegate_only_when_added() {
        let mut delegate = spec(ToolName::AgentDelegate).input_schema;
        assert!(delegate["properties"].get("mode").is_none());
        add_fork_mode(&mut delegate, true);
        assert_eq!(
            delegate["properties"]["mode"]["enum"],
            json!(["brief", "fork"])
        );
        assert_eq!(required(&delegate), ["agentId", "task"]);
        assert!(
            leak_scan(
                delegate["properties"]["mode"]["description"]
                    .as_str()
                    .unwrap()
            )
            .is_empty()
        );
        let mut compact = spec(ToolName::AgentDelegate).input_schema;
        add_fork_mode(&mut compact, false);
        assert_eq!(
            compact["properties"]["mode"],
            json!({"type": "string", "enum": ["brief", "fork"]})
        );
    }

    #[test]
    fn only_agent_tools_have_specs_here() {
        crate::tools::schema::testing::assert_specs_only_for(agent_tool_spec, &AGENT_TOOLS);
        for tool in AGENT_TOOLS {
            let spec = spec(tool);
            assert_eq!(spec.name, tool);
            assert_eq!(spec.model_name, tool.model_alias());
            assert_eq!(spec.source, "builtin");
            assert!(spec.output_schema.is_none());
        }
    }

    #[test]
    fn schemas_match_the_contract() {
        let list = spec(ToolName::AgentList).input_schema;
        assert_eq!(keys(&list), ["purpose", "query", "limit"]);
        assert!(required(&list).is_empty());
        assert_eq!(list["additionalProperties"], json!(false));
        assert_eq!(
            list["properties"]["purpose"]["enum"],
            json!(["any", "delegate", "handoff"])
        );
        assert_eq!(list["properties"]["limit"]["maximum"], json!(20));

        let delegate = spec(ToolName::AgentDelegate).input_schema;
        assert_eq!(
            keys(&delegate),
            ["agentId", "task", "budget", "timeoutSeconds"]
        );
        assert_eq!(required(&delegate), ["agentId", "task"]);
        assert_eq!(delegate["additionalProperties"], json!(false));
        let task = &delegate["properties"]["task"];
        assert_eq!(
            keys(task),
            ["title", "objective", "context", "expectedOutput"]
        );
        assert_eq!(required(task), ["objective"]);
        assert_eq!(task["additionalProperties"], json!(true));
        let budget = &delegate["properties"]["budget"];
        assert_eq!(keys(budget), ["maxRounds", "maxToolCalls", "maxTokens"]);
        assert_eq!(budget["additionalProperties"], json!(false));
        assert_eq!(budget["properties"]["maxRounds"]["type"], json!("integer"));

        let handoff = spec(ToolName::AgentHandoff).input_schema;
        assert_eq!(keys(&handoff), ["agentId", "handoff", "pendingTaskPolicy"]);
        assert_eq!(required(&handoff), ["agentId", "handoff"]);
        assert_eq!(handoff["additionalProperties"], json!(false));
        let brief = &handoff["properties"]["handoff"];
        assert_eq!(
            keys(brief),
            [
                "title",
                "reason",
                "objective",
                "contextSummary",
                "workspaceRefs",
                "mustPreserve",
                "completionCriteria"
            ]
        );
        assert_eq!(required(brief), ["objective"]);
        assert_eq!(brief["additionalProperties"], json!(true));
        assert_eq!(
            handoff["properties"]["pendingTaskPolicy"]["enum"],
            json!(["denyIfPending"])
        );

        let await_ = spec(ToolName::AgentAwait).input_schema;
        assert_eq!(keys(&await_), ["taskIds", "mode", "timeoutMs"]);
        assert!(required(&await_).is_empty());
        assert_eq!(await_["additionalProperties"], json!(false));
        assert_eq!(
            await_["properties"]["mode"]["enum"],
            json!(["nextCompleted", "allCompleted", "statusOnly"])
        );
        assert_eq!(await_["properties"]["timeoutMs"]["type"], json!("integer"));
        assert_eq!(await_["properties"]["timeoutMs"]["maximum"], json!(300_000));

        let ret = spec(ToolName::TaskReturn).input_schema;
        assert_eq!(
            keys(&ret),
            crate::delegation::args::TASK_RETURN_KEYS,
            "the schema offers exactly the keys the parser takes, in its order"
        );
        assert_eq!(required(&ret), ["summary"]);
        assert_eq!(ret["additionalProperties"], json!(false));
        assert_eq!(
            ret["properties"]["status"]["enum"],
            json!(["completed", "failed"])
        );
        assert_eq!(
            ret["properties"]["confidence"]["enum"],
            json!(["low", "medium", "high"])
        );
        let artifact = &ret["properties"]["artifacts"]["items"];
        assert_eq!(keys(artifact), ["path", "kind", "role"]);
        assert_eq!(required(artifact), ["path", "kind", "role"]);
        assert_eq!(artifact["additionalProperties"], json!(false));
        let kind = artifact["properties"]["kind"]["description"]
            .as_str()
            .unwrap();
        assert!(
            ["markdown", "json", "text"]
                .iter()
                .all(|k| kind.contains(k))
        );
        let role = artifact["properties"]["role"]["description"]
            .as_str()
            .unwrap();
        assert!(
            ["draft", "outline", "evidence", "revision", "memory_update"]
                .iter()
                .all(|r| role.contains(r))
        );
        assert_eq!(
            ret["properties"]["findings"]["items"]["type"],
            json!("object")
        );
    }

    #[test]
    fn annotations_follow_the_contract() {
        let agent = |read_only| ToolAnnotations {
            read_only: Some(read_only),
            source_kind: Some("agent".to_owned()),
            ..ToolAnnotations::default()
        };
        assert_eq!(spec(ToolName::AgentList).annotations, agent(true));
        assert_eq!(spec(ToolName::AgentAwait).annotations, agent(true));
        assert_eq!(spec(ToolName::AgentDelegate).annotations, agent(false));
        assert_eq!(spec(ToolName::AgentHandoff).annotations, agent(false));
        assert_eq!(
            spec(ToolName::TaskReturn).annotations,
            ToolAnnotations {
                control: Some(true),
                source_kind: Some("agent".to_owned()),
                ..ToolAnnotations::default()
            }
        );
    }

    #[test]
    fn agent_tool_specs_keep_runtime_terms_out_of_model_descriptions() {
        for tool in AGENT_TOOLS {
            let spec = spec(tool);
            let texts = spec_texts(&spec);
            assert!(texts.len() > 3, "{tool}");
            for text in texts {
                assert!(!text.trim().is_empty(), "{tool}");
                let found = leak_scan(&text);
                assert!(found.is_empty(), "{tool}: {found:?} in {text:?}");
                if tool == ToolName::AgentCancelTask {
                    tt_testkit::leaks::assert_no_leaks("the agent_cancel_task spec", &text);
                }
                // Specs never name a task id pattern either.
                assert!(!text.contains("task_"), "{tool}: {text:?}");
            }
        }
    }

    #[test]
    fn descriptions_say_what_the_caller_needs() {
        let delegate = spec(ToolName::AgentDelegate).description;
        assert!(delegate.contains("background"));
        assert!(delegate.contains("keep working"));
        assert!(delegate.contains("on its own"));
        // When to wait is said once, by `agent_await` itself.
        let wait = spec(ToolName::AgentAwait).description;
        assert!(wait.starts_with("Optional"));
        assert!(wait.contains("only when your next step depends"));
        assert!(
            spec(ToolName::AgentHandoff)
                .description
                .contains("Once the handoff succeeds, make no more tool calls")
        );
        let ret = spec(ToolName::TaskReturn).description;
        assert!(ret.contains("Hand your result back") && ret.contains("ends the task"));
    }
}
