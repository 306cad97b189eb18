//! The guest API's TypeScript declarations (`guest-js/*.ts`) name exactly the fields the Rust
//! types serialize: for each answer type, a complete sample (every optional field set) is read
//! into the Rust type and written out again, and every object in what serde writes is held to
//! its TypeScript interface, field for field (a field serde writes that TypeScript does not
//! declare fails, and so does a declared one serde does not write). A Rust field added
//! without a default fails to read the sample; one added with a default is written and fails
//! the comparison; a field renamed or removed fails it too. (An optional field added to both
//! Rust and the sample but not to TypeScript fails; one added to Rust only, skipped when
//! absent, is not seen until a sample sets it.)

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::support::PLUGIN_DIR;

/// Each exported interface's fields, those of the interface it `extends` included: name ->
/// optional (`?`).
fn interfaces() -> BTreeMap<String, BTreeMap<String, bool>> {
    let mut found = BTreeMap::new();
    let mut extended: Vec<(String, String)> = Vec::new();
    for file in ["types.ts", "commands.ts"] {
        let text =
            std::fs::read_to_string(Path::new(PLUGIN_DIR).join("guest-js").join(file)).unwrap();
        let mut current: Option<(String, BTreeMap<String, bool>)> = None;
        let mut depth = 0i32;
        for line in text.lines() {
            let trimmed = line.trim();
            if current.is_none() {
                if let Some(rest) = trimmed.strip_prefix("export interface ") {
                    let name = rest.split([' ', '{', '<']).next().unwrap().to_owned();
                    if let Some((_, base)) = rest.split_once(" extends ") {
                        let base = base.split([' ', '{', '<']).next().unwrap().to_owned();
                        extended.push((name.clone(), base));
                    }
                    current = Some((name, BTreeMap::new()));
                    depth = 1;
                }
                continue;
            }
            let comment =
                trimmed.starts_with("/**") || trimmed.starts_with('*') || trimmed.starts_with("//");
            if !comment && depth == 1 {
                let name: String = trimmed
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let rest = &trimmed[name.len()..];
                if !name.is_empty() && (rest.starts_with(':') || rest.starts_with("?:")) {
                    let fields = &mut current.as_mut().unwrap().1;
                    fields.insert(name, rest.starts_with('?'));
                }
            }
            if !comment {
                depth += trimmed.matches('{').count() as i32;
                depth -= trimmed.matches('}').count() as i32;
            }
            if depth <= 0 {
                let (name, fields) = current.take().unwrap();
                found.insert(name, fields);
            }
        }
    }
    // In declaration order, so a base that extends another has its fields by then.
    for (name, base) in extended {
        let inherited = found
            .get(&base)
            .unwrap_or_else(|| panic!("`{name}` extends `{base}`, which guest-js does not export"))
            .clone();
        found.get_mut(&name).unwrap().extend(inherited);
    }
    found
}

/// `sample` read into `T` and written out again: what serde writes for it.
fn through<T: Serialize + DeserializeOwned>(sample: Value) -> Value {
    let typed: T = serde_json::from_value(sample).expect("the sample reads as the Rust type");
    serde_json::to_value(typed).unwrap()
}

/// Compares the object at `pointer` in `value` with interface `name`; returns the differences.
fn differences(
    interfaces: &BTreeMap<String, BTreeMap<String, bool>>,
    name: &str,
    value: &Value,
    pointer: &str,
) -> Vec<String> {
    let declared = interfaces
        .get(name)
        .unwrap_or_else(|| panic!("no `export interface {name}` in guest-js"));
    let object = value
        .pointer(pointer)
        .and_then(Value::as_object)
        .unwrap_or_else(|| panic!("{pointer} is not an object in {value:#}"));
    let mut differences = Vec::new();
    for key in object.keys() {
        if !declared.contains_key(key) {
            differences.push(format!("{name}: serde writes `{key}`, TypeScript lacks it"));
        }
    }
    for key in declared.keys() {
        if !object.contains_key(key) {
            differences.push(format!(
                "{name}: TypeScript declares `{key}`, serde does not write it"
            ));
        }
    }
    differences
}

fn usage_sample() -> Value {
    let totals = json!({"modelCalls": 2, "toolCalls": 3, "inputTokens": 10, "outputTokens": 5,
        "cachedInputTokens": 1, "cacheWriteTokens": 1, "costUsd": 0.5, "unpricedModelCalls": 0,
        "wallTimeMs": 9, "agentTimeMs": 12});
    json!({
        "modelCalls": 2, "failedModelCalls": 1, "inputTokens": 10, "outputTokens": 5,
        "cachedInputTokens": 1, "cacheWriteTokens": 1, "costUsd": 0.5, "unpricedModelCalls": 0,
        "byInvocation": [{"invocationId": "inv_a", "modelCalls": 2, "failedModelCalls": 1,
            "inputTokens": 10, "outputTokens": 5, "cachedInputTokens": 1, "cacheWriteTokens": 1,
            "costUsd": 0.5, "unpricedModelCalls": 0, "toolCalls": 3, "wallTimeMs": 9,
            "parentInvocationId": "inv_root", "subtree": totals}],
        "inherited": {"runId": "run_a", "seq": 4, "modelCalls": 1, "failedModelCalls": 0,
            "inputTokens": 3, "outputTokens": 2, "cachedInputTokens": 0, "cacheWriteTokens": 0,
            "costUsd": null, "unpricedModelCalls": 1, "toolCalls": 1}
    })
}

fn conversation_sample() -> Value {
    let usage = json!({"inputTokens": 10, "outputTokens": 5, "cachedInputTokens": 1,
        "cacheWriteTokens": 1});
    json!({
        "runId": "run_a", "invocationId": "inv_a", "profileId": "writer", "kind": "subagent",
        "status": "running", "parentInvocationId": "inv_root", "modelCalls": 1,
        "usage": usage, "costUsd": 0.1,
        "inherited": {"seq": 3, "modelCalls": 1, "usage": usage, "costUsd": null},
        "entries": [
            {"kind": "system", "text": "s"},
            {"kind": "brief", "text": "b"},
            {"kind": "history", "role": "user", "text": "h"},
            {"kind": "guidance", "round": 1, "text": "g"},
            {"kind": "requested", "round": 1, "messageCount": 3},
            {"kind": "modelError", "round": 1, "code": "c", "message": "m", "willRetry": true},
            {"kind": "assistant", "round": 1, "text": "t", "reasoning": "r",
                "toolCalls": [{"callId": "call_1", "name": "workspace_write_file", "arguments": {}}],
                "usage": usage, "costUsd": 0.1, "model": "m"},
            {"kind": "toolResult", "round": 1, "callId": "call_1", "tool": "workspace.write_file",
                "text": "ok", "isError": true, "errorCode": "x"},
            {"kind": "injectedResults", "round": 1, "tasks": [{"taskId": "task_1",
                "profileId": "p", "status": "completed", "summary": "s"}]},
            {"kind": "reminder", "round": 1, "attempt": 1, "reasonCode": "r", "text": "t"},
            {"kind": "context", "round": 2, "text": "c"},
            {"kind": "result", "status": "completed", "result": {}}
        ]
    })
}

fn task_sample() -> Value {
    json!({
        "id": "task_1", "runId": "run_a", "parentInvocationId": "inv_root",
        "childInvocationId": "inv_a", "targetProfileId": "writer", "workspaceKey": "writer",
        "continuation": "return_to_parent", "status": "cancelled",
        "task": {"objective": "Write."},
        "budget": {"maxRounds": 1, "maxToolCalls": 2, "timeoutSeconds": 3,
            "idleTimeoutSeconds": 4, "maxTokens": 5},
        "createdByToolCallId": "call_1", "resultRef": "agent-results/inv_a.json",
        "error": "cancelled", "creationSeq": 1,
        "createdAt": "2026-01-01T00:00:00.000Z", "updatedAt": "2026-01-01T00:00:00.000Z"
    })
}

fn timeline_sample() -> Value {
    let binding =
        |model: &str| json!({"connectionRef": "spare", "modelId": model, "provider": "fake"});
    json!({
        "foregroundInvocationIds": ["inv_root"],
        "invocations": [{"invocationId": "inv_root", "parentInvocationId": null,
            "profileId": "writer", "kind": "root", "status": "completed",
            "exitPolicy": "run_finish_allowed",
            "createdAt": "2026-01-01T00:00:00.000Z", "updatedAt": "2026-01-01T00:00:00.000Z",
            "modelSwitches": [{"seq": 9, "round": 1, "fallbackIndex": 1,
                "from": binding("big"), "to": binding("small"),
                "reason": "rate_limited", "code": "model.provider_rate_limited"}]}],
        "delegationEdges": []
    })
}

fn assembly_sample() -> Value {
    json!({
        "schemaVersion": 1, "kind": "tauritavern.agentPromptAssemblyRequest",
        "assemblyId": "asm_1",
        "scope": {"runId": "run_a", "invocationId": "inv_a", "invocationKind": "subagent",
            "parentInvocationId": "inv_root", "taskId": "task_1",
            "exitPolicy": "taskReturnRequired"},
        "profileId": "writer", "generationType": "normal", "frozenRunInputSnapshot": {},
        "settings": {}, "modelId": "m", "presetRef": {}, "agentContextPolicy": {},
        "agentSystemPrompt": "s", "agentTaskPrompt": "t",
        "requiredAgentPromptComponents": ["agentSystemPrompt"], "jsonSchema": null,
        "fingerprint": {"presetSha256": "a", "frozenRunInputSnapshotSha256": "b",
            "agentTaskPromptSha256": "c"}
    })
}

fn pending_sample() -> Value {
    json!({
        "commits": [],
        "metadataUpdates": [{"updateId": "u", "runId": "run_a", "workspaceId": "w",
            "stableChatId": "c", "chatRef": {}, "generationType": "normal", "profileId": "p",
            "messageId": "7", "stateId": "s", "baseStateId": null, "changeCount": 1,
            "changes": []}],
        "promptAssemblies": [assembly_sample()],
        "approvals": [],
        "hostToolCalls": [],
        "spendLimit": {"spentUsd": 1.0125, "limitUsd": 1.0}
    })
}

fn mcp_sample() -> Value {
    json!({
        "config": {"name": "files", "transport": {"type": "http", "url": "http://127.0.0.1:1/mcp"},
            "callTimeoutMs": 1000},
        "catalog": {"server": "files", "fetchedAtMs": 1, "tools": [{"name": "read",
            "title": "Read", "description": "d", "inputSchema": {"type": "object"},
            "readOnlyHint": true, "idempotentHint": true, "destructiveHint": false}]}
    })
}

#[test]
fn the_typescript_answer_types_name_the_fields_serde_writes() {
    let interfaces = interfaces();
    let mut problems = Vec::new();
    let mut check = |name: &str, value: &Value, pointer: &str| {
        problems.extend(differences(&interfaces, name, value, pointer));
    };

    let usage = through::<tt_runtime::RunUsage>(usage_sample());
    check("RunUsage", &usage, "");
    check("InvocationUsage", &usage, "/byInvocation/0");
    check("UsageTotals", &usage, "/byInvocation/0/subtree");
    check("InheritedUsage", &usage, "/inherited");

    let conversation = through::<tt_runtime::AgentConversation>(conversation_sample());
    check("AgentConversation", &conversation, "");
    check("ModelUsage", &conversation, "/usage");
    check("InheritedAnswers", &conversation, "/inherited");
    let entries = conversation["entries"].as_array().unwrap();
    for (at, entry) in entries.iter().enumerate() {
        let kind = entry["kind"].as_str().unwrap();
        let interface = format!("Conversation{}{}", kind[..1].to_uppercase(), &kind[1..]);
        check(&interface, &conversation, &format!("/entries/{at}"));
    }
    let assistant = entries
        .iter()
        .position(|e| e["kind"] == "assistant")
        .unwrap();
    check(
        "ConversationToolCall",
        &conversation,
        &format!("/entries/{assistant}/toolCalls/0"),
    );
    let injected = entries
        .iter()
        .position(|e| e["kind"] == "injectedResults")
        .unwrap();
    check(
        "InjectedTaskResult",
        &conversation,
        &format!("/entries/{injected}/tasks/0"),
    );

    let task = through::<tt_runtime::AgentTaskRecord>(task_sample());
    check("AgentTaskRecord", &task, "");
    check("AgentTaskBudget", &task, "/budget");

    let pending = through::<tt_runtime::PendingHostRequests>(pending_sample());
    check("PendingHostRequests", &pending, "");
    check(
        "PersistentStateMetadataUpdate",
        &pending,
        "/metadataUpdates/0",
    );
    check("PromptAssemblyRequest", &pending, "/promptAssemblies/0");
    check("PendingSpendLimit", &pending, "/spendLimit");
    let receipt = through::<tt_runtime::SpendLimitReceipt>(
        json!({"decision": "raise", "limitUsd": 2.0, "spentUsd": 1.0125, "decidedBy": "page"}),
    );
    check("SpendLimitReceipt", &receipt, "");
    let assembly = through::<tt_runtime::PromptAssemblyRequest>(assembly_sample());
    check("PromptAssemblyRequest", &assembly, "");
    check("PromptAssemblyScope", &assembly, "/scope");
    check("PromptAssemblyFingerprint", &assembly, "/fingerprint");

    let timeline = through::<tt_runtime::TimelineProjection>(timeline_sample());
    check("TimelineInvocation", &timeline, "/invocations/0");
    check(
        "TimelineModelSwitch",
        &timeline,
        "/invocations/0/modelSwitches/0",
    );
    check(
        "BindingRef",
        &timeline,
        "/invocations/0/modelSwitches/0/from",
    );

    let entry = through::<tt_runtime::McpServerEntry>(mcp_sample());
    check("McpServerEntry", &entry, "");
    check("McpServerConfig", &entry, "/config");
    check("McpCatalog", &entry, "/catalog");
    check("McpToolInfo", &entry, "/catalog/tools/0");
    let output = through::<tt_runtime::McpCallOutput>(
        json!({"text": "t", "structured": {"a": 1}, "isError": false}),
    );
    check("McpCallOutput", &output, "");

    assert!(problems.is_empty(), "{problems:#?}");
}

/// The parser the check relies on finds the interfaces and their optional fields.
#[test]
fn the_interfaces_are_read_with_their_optional_fields() {
    let interfaces = interfaces();
    let assistant = &interfaces["ConversationAssistant"];
    assert_eq!(assistant.get("reasoning"), Some(&true));
    assert_eq!(assistant.get("toolCalls"), Some(&false));
    assert!(!assistant.contains_key("field"), "{assistant:?}");
    // A nested object literal's fields are not the interface's.
    let request = &interfaces["StartRunRequest"];
    assert!(request.contains_key("skillScopeRefs"));
    assert!(!request.contains_key("preset"), "{request:?}");
}
