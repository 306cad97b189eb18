//! Everything the model reads is snapshot-tested and scanned for leaks of runtime terms.

use serde_json::json;
use tt_application::build_tool_snapshot;
use tt_application::default_system_prompt;
use tt_domain::ids::InvocationId;
use tt_domain::invocation::ExitPolicy;
use tt_domain::model::ModelContentPart;
use tt_domain::profile::{ProfileSource, default_writer_definition, resolve_profile};
use tt_domain::run::Presentation;
use tt_domain::workspace::WorkspaceRoot;

use crate::support::*;

fn root_snapshot(
    change: impl FnOnce(&mut tt_domain::profile::AgentProfileDefinition),
) -> tt_domain::tool::InvocationToolSnapshot {
    let mut definition = default_writer_definition();
    change(&mut definition);
    let profile = resolve_profile(definition, ProfileSource::built_in()).expect("valid");
    let presentation = profile.definition.run.presentation;
    build_tool_snapshot(
        &profile,
        &InvocationId::root(),
        ExitPolicy::RunFinishAllowed,
        presentation,
        &[],
    )
    .expect("snapshot")
}

#[test]
fn root_default_system_prompt() {
    insta::assert_snapshot!(
        "root_system_prompt_foreground",
        default_system_prompt(&root_snapshot(|_| {}))
    );
}

/// The built-in writer is `compact`: the front matter lists its tools, and only the tools that
/// come with a rule get a line.
#[test]
fn root_system_prompt_in_the_compact_style() {
    let definition = default_writer_definition();
    let profile = resolve_profile(definition, ProfileSource::built_in()).expect("valid");
    let prompt = tt_application::agent_system_prompt(&profile, &root_snapshot(|_| {}));
    assert_eq!(
        prompt,
        tt_application::default_system_prompt_in(
            &root_snapshot(|_| {}),
            tt_domain::profile::ToolSpecStyle::Compact
        )
    );
    assert!(prompt.len() < default_system_prompt(&root_snapshot(|_| {})).len());
    assert_clean("the compact system prompt", &prompt);
    insta::assert_snapshot!("root_system_prompt_compact", prompt);
}

#[test]
fn background_system_prompt_without_persist() {
    let snapshot = root_snapshot(|p| {
        p.run.presentation = Presentation::Background;
        p.workspace
            .writable_roots
            .retain(|root| *root != WorkspaceRoot::Persist);
    });
    let prompt = default_system_prompt(&snapshot);
    assert!(!prompt.contains("persist/` is long-term memory"));
    insta::assert_snapshot!("root_system_prompt_background", prompt);
}

#[test]
fn custom_system_prompt_replaces_the_default() {
    let mut definition = default_writer_definition();
    definition.instructions.agent_system_prompt = Some("You are terse.".into());
    let profile = resolve_profile(definition, ProfileSource::built_in()).unwrap();
    let snapshot = build_tool_snapshot(
        &profile,
        &InvocationId::root(),
        ExitPolicy::RunFinishAllowed,
        Presentation::Foreground,
        &[],
    )
    .unwrap();
    assert_eq!(
        tt_application::agent_system_prompt(&profile, &snapshot),
        "You are terse."
    );
}

#[test]
fn tool_description_overrides_apply_to_specs() {
    let snapshot = root_snapshot(|p| {
        p.tools.tool_descriptions.insert(
            "workspace.commit".into(),
            tt_domain::profile::ToolDescriptionOverride {
                description: Some("Publish the scene.".into()),
                properties: [("reason".to_owned(), "Why now.".to_owned())].into(),
            },
        );
    });
    let commit = snapshot
        .tools
        .iter()
        .find(|spec| spec.model_name == "workspace_commit")
        .unwrap();
    assert_eq!(commit.description, "Publish the scene.");
    assert_eq!(
        commit.input_schema["properties"]["reason"]["description"],
        "Why now."
    );
}

/// The one scanner for model-facing text.
fn assert_clean(origin: &str, text: &str) {
    tt_testkit::leaks::assert_no_leaks(origin, text);
}

/// `agent_delegate`'s optional `budget` takes the contract's argument names `maxRounds` and
/// `maxToolCalls` (docs/delegation.md). They are the agent's own argument names, so their keys are
/// left out of the scan; their descriptions are still scanned.
fn without_contract_argument_names(schema: &serde_json::Value) -> serde_json::Value {
    let mut schema = schema.clone();
    if let Some(budget) = schema
        .pointer_mut("/properties/budget/properties")
        .and_then(serde_json::Value::as_object_mut)
    {
        let descriptions: Vec<serde_json::Value> = budget
            .values()
            .map(|property| property["description"].clone())
            .collect();
        budget.clear();
        for (index, description) in descriptions.into_iter().enumerate() {
            budget.insert(
                format!("argument{index}"),
                json!({"description": description}),
            );
        }
    }
    schema
}

#[tokio::test]
async fn runtime_text_sent_to_the_model_leaks_no_runtime_terms() {
    // A run that provokes every kind of runtime-authored text: system prompt, tool specs,
    // recoverable errors, successful results, drift reminders.
    let turns = vec![
        tt_testkit::fakes::responses::text("Just text."),
        turn(vec![
            call(
                "a",
                "workspace_read_file",
                json!({"path": "output/missing.md"}),
            ),
            call("b", "workspace_finish", json!({})),
            call("c", "workspace_list_files", json!({"depth": 9})),
            write("d", "output/main.md", "Scene."),
            call(
                "e",
                "workspace_read_file",
                json!({"path": "output/main.md"}),
            ),
            call(
                "f",
                "workspace_apply_patch",
                json!({"path": "output/main.md", "old_string": "Scene", "new_string": "Act"}),
            ),
            call("g", "workspace_search_files", json!({"query": "Act"})),
            call("h", "workspace_commit", json!({})),
        ]),
        turn(vec![call("i", "workspace_finish", json!({}))]),
    ];
    let h = harness(by_turn(turns));
    let run = h.run_to_end(request(None)).await;
    assert_eq!(run.status, tt_domain::run::AgentRunStatus::Completed);
    let last = h.model.requests().pop().unwrap();
    for spec in last.tools.iter() {
        assert_clean(&spec.model_name, &spec.description);
        assert_clean(
            &spec.model_name,
            &without_contract_argument_names(&spec.input_schema).to_string(),
        );
    }
    for message in &last.messages {
        for part in &message.parts {
            match part {
                ModelContentPart::Text { text } => assert_clean("message text", text),
                ModelContentPart::ToolResult { result } => {
                    assert_clean(&result.call_id, &result.content);
                    assert_clean(&result.call_id, &result.structured.to_string());
                }
                _ => {}
            }
        }
    }
}

#[tokio::test]
async fn slip_errors_read_from_the_agent_point_of_view() {
    // Every kind of model slip, as the model reads it back; and from a delegated agent, whose
    // texts must not mention who delegated it.
    let slips = || {
        vec![
            call("u", "shell_exec", json!({"cmd": "ls"})),
            call("s", "workspace_write_file", json!("{\"path\": \"output/")),
            // A good call in between: four slips in a row would end the run.
            call("l", "workspace_list_files", json!({})),
            call("o", "workspace_read_file", json!(["output/main.md"])),
            write("p", &format!("output/{}", "a".repeat(300)), "x"),
        ]
    };
    let mut turns = vec![turn(slips())];
    turns.extend(happy_turns());
    let h = harness(by_turn(turns));
    let run = h.run_to_end(request(None)).await;
    assert_eq!(run.status, tt_domain::run::AgentRunStatus::Completed);
    let results = tool_results(&h.model.requests()[1]);
    let mut text = String::new();
    for (call_id, _, code, content) in results.iter().filter(|result| result.1) {
        assert_clean(call_id, content);
        text.push_str(&format!(
            "{call_id} {}: {content}\n",
            code.as_deref().unwrap_or("-")
        ));
    }
    insta::assert_snapshot!("slip_error_messages", text);

    // A delegated agent calling a tool it was not offered gets the same kind of answer.
    let model = writer_delegating_to_critic(
        "Check the draft.",
        vec![
            turn(vec![call("f", "workspace_finish", json!({}))]),
            task_return("r", "Fine."),
        ],
    );
    let h = harness_with_critic(model);
    let run = h.run_to_end(request(Some("writer"))).await;
    assert_eq!(run.status, tt_domain::run::AgentRunStatus::Completed);
    let critic = last_request_of(&h, "critic");
    let (_, is_error, code, content) = tool_results(&critic).remove(0);
    assert!(is_error);
    assert_eq!(code.as_deref(), Some("model.unknown_tool_call"));
    // `task_return` is the delegated agent's own tool name, not a leaked id.
    assert_clean("critic", &content.replace("task_return", ""));
    insta::assert_snapshot!("slip_error_message_delegated", content);
}

#[tokio::test]
async fn oversized_arguments_error_reads_from_the_agent_point_of_view() {
    let mut turns = vec![turn(vec![write(
        "big",
        "output/main.md",
        &"x".repeat(2000),
    )])];
    turns.extend(happy_turns());
    let h = harness(by_turn(turns));
    h.put_profile(custom_profile("small-args", |p| {
        p.limits.max_tool_argument_bytes = 1000;
    }));
    let run = h.run_to_end(request(Some("small-args"))).await;
    assert_eq!(run.status, tt_domain::run::AgentRunStatus::Completed);
    let (call_id, _, code, content) = tool_results(&h.model.requests()[1]).remove(0);
    assert_eq!(code.as_deref(), Some("model.invalid_tool_call"));
    assert_clean(&call_id, &content);
    insta::assert_snapshot!("oversized_arguments_message", content);
}

/// An agent offered a host tool and two MCP tools (one asking first): what its system prompt
/// says of them, the names and facts of their specs, and that nothing in them leaks.
#[test]
fn outside_tools_in_the_system_prompt_and_specs() {
    use tt_domain::profile::McpToolPermission;
    use tt_domain::tool_model::{ExternalToolFacts, ExternalToolId, SideEffect, ToolPermission};
    use tt_ports::ExternalToolDefinition;
    // An outside tool from its id, title, description, schema and side effect.
    let tool =
        |id: ExternalToolId, title: Option<&str>, description: &str, input_schema, side_effect| {
            ExternalToolDefinition {
                id,
                title: title.map(str::to_owned),
                description: description.to_owned(),
                input_schema,
                facts: ExternalToolFacts {
                    side_effect,
                    idempotent: false,
                    permission: ToolPermission::Allow,
                    server: None,
                    max_inline_result_bytes: ExternalToolFacts::DEFAULT_INLINE_RESULT_BYTES,
                },
            }
        };
    let search = json!({"type": "object", "properties": {"query": {"type": "string"}}});
    let echo = json!({"type": "object", "properties": {"message": {"type": "string"}}});
    let definitions = vec![
        tool(
            ExternalToolId::host("chat.search").unwrap(),
            Some("Search the chat"),
            "Finds messages of this chat that mention a phrase.",
            search,
            SideEffect::ReadsOnly,
        ),
        tool(
            ExternalToolId::mcp("everything", "echo").unwrap(),
            None,
            "Echoes back the input. Useful for tests.",
            echo,
            SideEffect::Outside,
        ),
        tool(
            ExternalToolId::mcp("everything", "get-sum").unwrap(),
            None,
            "Adds two numbers.",
            json!({"type": "object"}),
            SideEffect::ReadsOnly,
        ),
    ];
    let mut definition = default_writer_definition();
    definition.tools.allow.push("host/chat.search".into());
    definition.tools.mcp.insert(
        "everything".into(),
        [
            ("echo".to_owned(), McpToolPermission::Ask),
            ("get-sum".to_owned(), McpToolPermission::Allow),
            ("delete-all".to_owned(), McpToolPermission::Off),
        ]
        .into(),
    );
    let profile = resolve_profile(definition, ProfileSource::built_in()).expect("valid");
    let snapshot = build_tool_snapshot(
        &profile,
        &InvocationId::root(),
        ExitPolicy::RunFinishAllowed,
        Presentation::Foreground,
        &definitions,
    )
    .expect("snapshot");
    let outside: Vec<(String, String, ToolPermission)> = snapshot
        .tools
        .iter()
        .filter_map(|spec| {
            let facts = spec.external.as_ref()?;
            Some((
                spec.name.to_string(),
                spec.model_name.clone(),
                facts.permission,
            ))
        })
        .collect();
    assert_eq!(
        outside,
        [
            (
                "host/chat.search".to_owned(),
                "chat_search".to_owned(),
                ToolPermission::Allow
            ),
            (
                "mcp/everything:echo".to_owned(),
                "mcp__everything__echo".to_owned(),
                ToolPermission::Ask
            ),
            (
                "mcp/everything:get-sum".to_owned(),
                "mcp__everything__get-sum".to_owned(),
                ToolPermission::Allow
            ),
        ]
    );
    let prompt = default_system_prompt(&snapshot);
    assert_clean("system prompt with outside tools", &prompt);
    insta::assert_snapshot!("root_system_prompt_with_outside_tools", prompt);
    for spec in snapshot.tools.iter() {
        assert_clean(&spec.model_name, &spec.description);
    }
    // A profile that lists a tool no source defined cannot start its agent.
    let err = build_tool_snapshot(
        &profile,
        &InvocationId::root(),
        ExitPolicy::RunFinishAllowed,
        Presentation::Foreground,
        &definitions[..1],
    )
    .unwrap_err();
    assert_eq!(err.code(), "agent.tool_unavailable");
}
