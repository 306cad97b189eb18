//! Everything the model reads is snapshot-tested and scanned for leaks of runtime terms.

use serde_json::json;
use tt_application::prompt::default_system_prompt;
use tt_application::registry::build_tool_snapshot;
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
    )
    .unwrap();
    assert_eq!(
        tt_application::prompt::agent_system_prompt(&profile, &snapshot),
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

/// Words and fragments that must never reach a model in runtime-authored text.
const FORBIDDEN: &[&str] = &[
    "inv_",
    "run_",
    "task_",
    "handoff_",
    "evt_",
    "/tmp",
    ".tt-agent",
    "parent",
    "child",
    "invocation",
    "visibleRoots",
    "writableRoots",
    "maxRounds",
    "maxCallsPerRun",
];

fn assert_clean(origin: &str, text: &str) {
    let lower = text.to_lowercase();
    for word in FORBIDDEN {
        assert!(
            !lower.contains(&word.to_lowercase()),
            "{origin} leaks `{word}`:\n{text}"
        );
    }
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
    for spec in &last.tools {
        assert_clean(&spec.model_name, &spec.description);
        assert_clean(&spec.model_name, &spec.input_schema.to_string());
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
