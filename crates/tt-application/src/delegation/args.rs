//! Shape parsing of the agent tools' arguments (`agent.delegate`, `agent.await`,
//! `agent.handoff`, `task.return`). Every problem is a recoverable `tool.invalid_arguments`;
//! policy checks (profiles, budgets against limits, ownership, paths) happen afterwards.

use serde_json::{Map, Value};
use tt_domain::brief::{HandoffBrief, TaskBrief};
use tt_domain::task::AgentTaskBudget;
use tt_domain::task_result::TaskResultStatus;

use crate::error::ToolError;
use crate::tools::args::Args;

/// Longest accepted brief string (`objective`, `title`, ...), in bytes.
pub(crate) const MAX_BRIEF_FIELD_BYTES: usize = 8000;
/// `agent.await` wait when `timeoutMs` is omitted.
pub(crate) const DEFAULT_AWAIT_TIMEOUT_MS: u64 = 120_000;
/// Longest `agent.await` wait.
pub(crate) const MAX_AWAIT_TIMEOUT_MS: u64 = 300_000;
/// The only pending-task policy of `agent.handoff` (also its default).
pub(crate) const PENDING_TASK_POLICY_DENY_IF_PENDING: &str = "denyIfPending";

/// Parsed `agent.delegate` arguments.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DelegateArgs {
    /// As given; its profile-id format is checked by the caller.
    pub agent_id: String,
    /// The `task` brief.
    pub task: TaskBrief,
    pub budget: Option<AgentTaskBudget>,
    /// `timeoutSeconds`: at least 1; its bound is the target's, checked by the caller.
    pub timeout_seconds: Option<u64>,
    /// `mode: "fork"`: the task's agent starts from the caller's conversation so far
    /// (whether the target allows it is checked by the caller). `false`: `"brief"`, the default.
    pub fork: bool,
}

/// Steps 1–2 of the `agent.delegate` validation plus the budget's shape.
pub(crate) fn parse_delegate_args(args: &Value) -> Result<DelegateArgs, ToolError> {
    let parsed = Args::parse(
        args,
        &["agentId", "task", "budget", "timeoutSeconds", "mode"],
    )?;
    let timeout_seconds =
        match parsed.opt_i64("timeoutSeconds").map_err(|_| {
            ToolError::invalid_arguments("`timeoutSeconds` must be a whole number of seconds")
        })? {
            None => None,
            Some(seconds) => Some(u64::try_from(seconds).ok().filter(|s| *s >= 1).ok_or_else(
                || ToolError::invalid_arguments("`timeoutSeconds` must be at least 1"),
            )?),
        };
    let agent_id = parsed.req_str("agentId")?.to_owned();
    let task = required_object(&parsed, "task", "the task brief")?;
    let budget = parsed.raw("budget").map(parse_budget).transpose()?;
    check_required_text(task, "task", "objective")?;
    check_optional_text(task, "task", "title")?;
    let fork = match parsed.opt_str("mode")? {
        None | Some("brief") => false,
        Some("fork") => true,
        Some(_) => {
            return Err(ToolError::invalid_arguments(
                "`mode` must be `brief` or `fork`",
            ));
        }
    };
    Ok(DelegateArgs {
        agent_id,
        task: typed_brief(task, "task")?,
        budget,
        timeout_seconds,
        fork,
    })
}

fn parse_budget(value: &Value) -> Result<AgentTaskBudget, ToolError> {
    let budget = Args::parse(value, &["maxRounds", "maxToolCalls", "maxTokens"])
        .map_err(|err| ToolError::invalid_arguments(format!("`budget`: {}", err.message)))?;
    Ok(AgentTaskBudget {
        max_rounds: positive_u32(&budget, "maxRounds")?,
        max_tool_calls: positive_u32(&budget, "maxToolCalls")?,
        max_tokens: positive_u32(&budget, "maxTokens")?.map(u64::from),
        ..AgentTaskBudget::default()
    })
}

fn positive_u32(budget: &Args<'_>, key: &str) -> Result<Option<u32>, ToolError> {
    let invalid = || {
        ToolError::invalid_arguments(format!(
            "`budget.{key}` must be a whole number of at least 1"
        ))
    };
    match budget.opt_i64(key).map_err(|_| invalid())? {
        None => Ok(None),
        Some(n) if n < 1 => Err(invalid()),
        Some(n) => u32::try_from(n)
            .map(Some)
            .map_err(|_| ToolError::invalid_arguments(format!("`budget.{key}` is far too large"))),
    }
}

/// How `agent.await` decides when to stop waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum AwaitMode {
    /// Stop as soon as any selected task is terminal (the default).
    NextCompleted,
    /// Stop when every selected task is terminal.
    AllCompleted,
    /// Report at once, without waiting.
    StatusOnly,
}

impl AwaitMode {
    pub(crate) const ALL: [AwaitMode; 3] = [
        AwaitMode::NextCompleted,
        AwaitMode::AllCompleted,
        AwaitMode::StatusOnly,
    ];

    /// The camelCase name used in arguments, results and events.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            AwaitMode::NextCompleted => "nextCompleted",
            AwaitMode::AllCompleted => "allCompleted",
            AwaitMode::StatusOnly => "statusOnly",
        }
    }

    pub(crate) fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|mode| mode.as_str() == raw)
    }
}

/// Parsed `agent.await` arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AwaitArgs {
    /// Trimmed, non-empty and distinct, in the order given. `None`: every task of the caller.
    /// `Some(vec![])` is an explicit empty selection (the caller answers `agent.no_child_tasks`).
    pub task_ids: Option<Vec<String>>,
    pub mode: AwaitMode,
    pub timeout_ms: u64,
}

/// Defaults: mode `nextCompleted`, `timeoutMs` 120000 (at most 300000).
pub(crate) fn parse_await_args(args: &Value) -> Result<AwaitArgs, ToolError> {
    let parsed = Args::parse(args, &["taskIds", "mode", "timeoutMs"])?;
    let task_ids = parsed.raw("taskIds").map(parse_task_ids).transpose()?;
    let mode = match parsed.opt_str("mode")? {
        None => AwaitMode::NextCompleted,
        Some(raw) => AwaitMode::parse(raw.trim()).ok_or_else(|| {
            ToolError::invalid_arguments(format!(
                "`mode` must be one of nextCompleted, allCompleted, statusOnly; got `{raw}`"
            ))
        })?,
    };
    let timeout_ms = match parsed.opt_i64("timeoutMs")? {
        None => DEFAULT_AWAIT_TIMEOUT_MS,
        Some(ms) => u64::try_from(ms)
            .ok()
            .filter(|ms| *ms <= MAX_AWAIT_TIMEOUT_MS)
            .ok_or_else(|| {
                ToolError::invalid_arguments(format!(
                    "`timeoutMs` must be between 0 and {MAX_AWAIT_TIMEOUT_MS} (5 minutes); got {ms}"
                ))
            })?,
    };
    Ok(AwaitArgs {
        task_ids,
        mode,
        timeout_ms,
    })
}

fn parse_task_ids(value: &Value) -> Result<Vec<String>, ToolError> {
    let items = value.as_array().ok_or_else(|| {
        ToolError::invalid_arguments("`taskIds` must be a list of task ids from `agent_delegate`")
    })?;
    let mut ids: Vec<String> = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let id = item
            .as_str()
            .ok_or_else(|| {
                ToolError::invalid_arguments(format!("`taskIds[{index}]` must be a string"))
            })?
            .trim();
        if id.is_empty() {
            return Err(ToolError::invalid_arguments(format!(
                "`taskIds[{index}]` is empty; pass task ids exactly as `agent_delegate` returned them, or omit `taskIds`"
            )));
        }
        if ids.iter().any(|seen| seen == id) {
            return Err(ToolError::invalid_arguments(format!(
                "`taskIds` lists `{id}` more than once"
            )));
        }
        ids.push(id.to_owned());
    }
    Ok(ids)
}

/// Longest accepted `agent.cancel_task` reason, in bytes.
pub(crate) const MAX_CANCEL_REASON_BYTES: usize = 1000;

/// Parsed `agent.cancel_task` arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CancelTaskArgs {
    /// Trimmed, never empty.
    pub task_id: String,
    /// Trimmed; `None` when absent or blank.
    pub reason: Option<String>,
}

/// `{taskId, reason?}`; ownership and status are checked by the caller.
pub(crate) fn parse_cancel_task_args(args: &Value) -> Result<CancelTaskArgs, ToolError> {
    let parsed = Args::parse(args, &["taskId", "reason"])?;
    let task_id = parsed.req_str("taskId")?.trim();
    if task_id.is_empty() {
        return Err(ToolError::invalid_arguments(
            "`taskId` is empty; pass a task id exactly as `agent_delegate` returned it",
        ));
    }
    let reason = parsed
        .opt_str("reason")?
        .map(str::trim)
        .filter(|reason| !reason.is_empty());
    if let Some(reason) = reason
        && reason.len() > MAX_CANCEL_REASON_BYTES
    {
        return Err(ToolError::invalid_arguments(format!(
            "`reason` is {} bytes; keep it under {MAX_CANCEL_REASON_BYTES}",
            reason.len()
        )));
    }
    Ok(CancelTaskArgs {
        task_id: task_id.to_owned(),
        reason: reason.map(str::to_owned),
    })
}

/// Parsed `agent.handoff` arguments. `pendingTaskPolicy`, when given, is always
/// [`PENDING_TASK_POLICY_DENY_IF_PENDING`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HandoffArgs {
    /// As given; its profile-id format is checked by the caller.
    pub agent_id: String,
    /// The `handoff` brief.
    pub handoff: HandoffBrief,
}

/// Steps 1–3 of the `agent.handoff` flow.
pub(crate) fn parse_handoff_args(args: &Value) -> Result<HandoffArgs, ToolError> {
    let parsed = Args::parse(args, &["agentId", "handoff", "pendingTaskPolicy"])?;
    let agent_id = parsed.req_str("agentId")?.to_owned();
    let handoff = required_object(&parsed, "handoff", "the handoff brief")?;
    if let Some(policy) = parsed.opt_str("pendingTaskPolicy")?
        && policy != PENDING_TASK_POLICY_DENY_IF_PENDING
    {
        return Err(ToolError::invalid_arguments(format!(
            "`pendingTaskPolicy` can only be `{PENDING_TASK_POLICY_DENY_IF_PENDING}`; got `{policy}`"
        )));
    }
    check_required_text(handoff, "handoff", "objective")?;
    for key in ["title", "reason", "contextSummary"] {
        check_optional_text(handoff, "handoff", key)?;
    }
    Ok(HandoffArgs {
        agent_id,
        handoff: typed_brief(handoff, "handoff")?,
    })
}

/// Parsed `task.return` arguments.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TaskReturnArgs {
    pub status: TaskResultStatus,
    /// Trimmed, never empty.
    pub summary: String,
    /// In the order given; paths are raw (the caller parses and checks them).
    pub artifacts: Vec<ReturnedArtifact>,
    /// The argument object with `status` filled in (`"completed"`/`"failed"`) and `summary`
    /// trimmed; the caller rewrites `artifacts[i].path` to normalized paths.
    pub normalized: Value,
}

/// One `artifacts` item of `task.return`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReturnedArtifact {
    pub path: String,
    pub kind: String,
    pub role: String,
}

/// The keys `task.return` takes, in the order its schema lists them.
pub(crate) const TASK_RETURN_KEYS: [&str; 8] = [
    "summary",
    "status",
    "confidence",
    "artifacts",
    "findings",
    "warnings",
    "suggestedNextActions",
    "questionsForCaller",
];

/// Steps 2, 3 and the shape part of step 6 of `task.return`.
pub(crate) fn parse_task_return_args(args: &Value) -> Result<TaskReturnArgs, ToolError> {
    let parsed = Args::parse(args, &TASK_RETURN_KEYS)?;
    let summary = parsed
        .opt_str("summary")?
        .map(str::trim)
        .filter(|summary| !summary.is_empty())
        .ok_or_else(|| {
            ToolError::invalid_arguments(
                "`summary` is required: describe your result in a few sentences",
            )
        })?
        .to_owned();
    let status = match parsed.opt_str("status")?.map(str::trim) {
        None | Some("" | "completed") => TaskResultStatus::Completed,
        Some("failed") => TaskResultStatus::Failed,
        Some(other) => {
            return Err(ToolError::invalid_arguments(format!(
                "`status` must be `completed` or `failed`; got `{other}`"
            )));
        }
    };
    let artifacts = match parsed.raw("artifacts") {
        None => Vec::new(),
        Some(value) => parse_artifacts(value)?,
    };
    let mut normalized: Map<String, Value> = args.as_object().cloned().unwrap_or_default();
    normalized.insert("summary".to_owned(), Value::String(summary.clone()));
    normalized.insert(
        "status".to_owned(),
        Value::String(status.as_str().to_owned()),
    );
    Ok(TaskReturnArgs {
        status,
        summary,
        artifacts,
        normalized: Value::Object(normalized),
    })
}

fn parse_artifacts(value: &Value) -> Result<Vec<ReturnedArtifact>, ToolError> {
    let items = value.as_array().ok_or_else(|| {
        ToolError::invalid_arguments("`artifacts` must be a list of {path, kind, role} objects")
    })?;
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let fields = Args::parse(item, &["path", "kind", "role"]).map_err(|err| {
                ToolError::invalid_arguments(format!(
                    "`artifacts[{index}]`: {}; each item is {{path, kind, role}}",
                    err.message
                ))
            })?;
            let field = |key: &str| {
                fields.req_str(key).map(str::to_owned).map_err(|_| {
                    ToolError::invalid_arguments(format!(
                        "`artifacts[{index}].{key}` is required and must be a string"
                    ))
                })
            };
            Ok(ReturnedArtifact {
                path: field("path")?,
                kind: field("kind")?,
                role: field("role")?,
            })
        })
        .collect()
}

/// The object under `key`; missing, null or any other type is refused.
/// The checked brief object as its type (the checks above make this succeed).
fn typed_brief<T: serde::de::DeserializeOwned>(
    object: &Map<String, Value>,
    key: &str,
) -> Result<T, ToolError> {
    serde_json::from_value(Value::Object(object.clone()))
        .map_err(|err| ToolError::invalid_arguments(format!("`{key}`: {err}")))
}

fn required_object<'a>(
    parsed: &Args<'a>,
    key: &str,
    what: &str,
) -> Result<&'a Map<String, Value>, ToolError> {
    match parsed.raw(key) {
        None => Err(ToolError::invalid_arguments(format!(
            "`{key}` is required: an object with {what}"
        ))),
        Some(Value::Object(map)) => Ok(map),
        Some(_) => Err(ToolError::invalid_arguments(format!(
            "`{key}` must be an object with {what}"
        ))),
    }
}

/// A string that must be present, non-blank and at most [`MAX_BRIEF_FIELD_BYTES`].
fn check_required_text(
    object: &Map<String, Value>,
    object_key: &str,
    key: &str,
) -> Result<(), ToolError> {
    match object.get(key) {
        Some(Value::String(text)) if text.trim().is_empty() => Err(ToolError::invalid_arguments(
            format!("`{object_key}.{key}` is empty; say what should be achieved"),
        )),
        None | Some(Value::Null) => Err(ToolError::invalid_arguments(format!(
            "`{object_key}.{key}` is required; say what should be achieved"
        ))),
        // Present and not blank: what an optional text must be.
        Some(_) => check_optional_text(object, object_key, key),
    }
}

/// A string that may be absent or null; otherwise at most [`MAX_BRIEF_FIELD_BYTES`].
fn check_optional_text(
    object: &Map<String, Value>,
    object_key: &str,
    key: &str,
) -> Result<(), ToolError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(text)) => check_length(object_key, key, text),
        Some(_) => Err(ToolError::invalid_arguments(format!(
            "`{object_key}.{key}` must be a string"
        ))),
    }
}

fn check_length(object_key: &str, key: &str, text: &str) -> Result<(), ToolError> {
    if text.len() > MAX_BRIEF_FIELD_BYTES {
        return Err(ToolError::invalid_arguments(format!(
            "`{object_key}.{key}` is {} bytes; keep it under {MAX_BRIEF_FIELD_BYTES} and put longer material in a workspace file you name in the brief",
            text.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn invalid<T: std::fmt::Debug>(result: Result<T, ToolError>) -> String {
        let err = result.unwrap_err();
        assert_eq!(err.code, "tool.invalid_arguments", "{err:?}");
        err.message
    }

    #[test]
    fn delegate_takes_an_optional_timeout_in_whole_seconds() {
        let task = json!({"objective": "x"});
        let parsed =
            parse_delegate_args(&json!({"agentId": "a", "task": task, "timeoutSeconds": 90}))
                .unwrap();
        assert_eq!(parsed.timeout_seconds, Some(90));
        assert_eq!(
            parse_delegate_args(&json!({"agentId": "a", "task": task}))
                .unwrap()
                .timeout_seconds,
            None
        );
        for bad in [json!(0), json!(-5), json!("90"), json!(1.5)] {
            invalid(parse_delegate_args(
                &json!({"agentId": "a", "task": task, "timeoutSeconds": bad}),
            ));
        }
    }

    // ---- agent.cancel_task ----------------------------------------------------------------

    #[test]
    fn cancel_task_takes_an_id_and_an_optional_reason() {
        let parsed =
            parse_cancel_task_args(&json!({"taskId": " task_1 ", "reason": "  off track "}))
                .unwrap();
        assert_eq!(parsed.task_id, "task_1");
        assert_eq!(parsed.reason.as_deref(), Some("off track"));
        let bare = parse_cancel_task_args(&json!({"taskId": "task_1", "reason": " "})).unwrap();
        assert_eq!(bare.reason, None);
        assert!(invalid(parse_cancel_task_args(&json!({}))).contains("taskId"));
        assert!(invalid(parse_cancel_task_args(&json!({"taskId": "  "}))).contains("empty"));
        assert!(
            invalid(parse_cancel_task_args(
                &json!({"taskId": "t", "reason": "x".repeat(MAX_CANCEL_REASON_BYTES + 1)})
            ))
            .contains("keep it under")
        );
        invalid(parse_cancel_task_args(
            &json!({"taskId": "t", "force": true}),
        ));
        invalid(parse_cancel_task_args(&json!({"taskId": 7})));
    }

    // ---- agent.delegate -------------------------------------------------------------------

    #[test]
    fn delegate_accepts_the_minimal_and_the_full_shape() {
        let minimal = parse_delegate_args(
            &json!({"agentId": "scene-critic", "task": {"objective": "Find continuity breaks."}}),
        )
        .unwrap();
        assert_eq!(minimal.agent_id, "scene-critic");
        assert_eq!(minimal.task.objective, "Find continuity breaks.");
        assert!(minimal.task.extra.is_empty());
        assert_eq!(minimal.budget, None);

        let full = parse_delegate_args(&json!({
            "agentId": "scene-critic",
            "task": {"title": null, "objective": "x", "context": {"a": 1}, "tone": "dry"},
            "budget": {"maxRounds": 4, "maxToolCalls": 10.0}
        }))
        .unwrap();
        assert_eq!(full.task.title, None);
        assert_eq!(full.task.context, Some(json!({"a": 1})));
        assert_eq!(full.task.extra["tone"], json!("dry"));
        assert_eq!(
            full.budget,
            Some(AgentTaskBudget {
                max_rounds: Some(4),
                max_tool_calls: Some(10),
                ..AgentTaskBudget::default()
            })
        );
        let null_budget = parse_delegate_args(
            &json!({"agentId": "a", "task": {"objective": "x"}, "budget": null}),
        )
        .unwrap();
        assert_eq!(null_budget.budget, None);
        let empty_budget =
            parse_delegate_args(&json!({"agentId": "a", "task": {"objective": "x"}, "budget": {}}))
                .unwrap();
        assert_eq!(empty_budget.budget, Some(AgentTaskBudget::default()));
    }

    #[test]
    fn delegate_rejects_unknown_top_level_keys() {
        for extra in ["execution", "continuation", "invocationId"] {
            let mut args = json!({"agentId": "a", "task": {"objective": "x"}});
            args[extra] = json!("x");
            assert!(invalid(parse_delegate_args(&args)).contains(extra));
        }
        invalid(parse_delegate_args(&json!("not an object")));
    }

    #[test]
    fn delegate_requires_a_string_agent_id() {
        invalid(parse_delegate_args(&json!({"task": {"objective": "x"}})));
        invalid(parse_delegate_args(
            &json!({"agentId": 7, "task": {"objective": "x"}}),
        ));
        invalid(parse_delegate_args(
            &json!({"agentId": null, "task": {"objective": "x"}}),
        ));
        // The profile-id format is the caller's check.
        assert_eq!(
            parse_delegate_args(&json!({"agentId": "Not An Id", "task": {"objective": "x"}}))
                .unwrap()
                .agent_id,
            "Not An Id"
        );
    }

    #[test]
    fn delegate_task_must_be_an_object() {
        invalid(parse_delegate_args(&json!({"agentId": "a"})));
        invalid(parse_delegate_args(&json!({"agentId": "a", "task": null})));
        invalid(parse_delegate_args(
            &json!({"agentId": "a", "task": "do it"}),
        ));
        invalid(parse_delegate_args(&json!({"agentId": "a", "task": ["x"]})));
    }

    #[test]
    fn delegate_task_packet_requires_a_non_blank_string_objective() {
        for task in [
            json!({}),
            json!({"objective": null}),
            json!({"objective": ""}),
            json!({"objective": "  \n "}),
            json!({"objective": 3}),
            json!({"objective": {"text": "x"}}),
            json!({"title": "Only a title"}),
        ] {
            let message = invalid(parse_delegate_args(&json!({"agentId": "a", "task": task})));
            assert!(message.contains("task.objective"), "{message}");
        }
    }

    #[test]
    fn delegate_task_packet_title_is_optional_but_must_be_a_string() {
        parse_delegate_args(&json!({"agentId": "a", "task": {"objective": "x", "title": "T"}}))
            .unwrap();
        parse_delegate_args(&json!({"agentId": "a", "task": {"objective": "x", "title": null}}))
            .unwrap();
        let message = invalid(parse_delegate_args(
            &json!({"agentId": "a", "task": {"objective": "x", "title": 5}}),
        ));
        assert!(message.contains("task.title"));
    }

    #[test]
    fn delegate_task_packet_limits_checked_strings_to_8000_bytes() {
        let at_limit = "a".repeat(8000);
        parse_delegate_args(
            &json!({"agentId": "a", "task": {"objective": at_limit, "title": at_limit}}),
        )
        .unwrap();
        let over = "a".repeat(8001);
        let message = invalid(parse_delegate_args(
            &json!({"agentId": "a", "task": {"objective": over}}),
        ));
        assert!(message.contains("8001 bytes"), "{message}");
        invalid(parse_delegate_args(
            &json!({"agentId": "a", "task": {"objective": "x", "title": over}}),
        ));
        // Bytes, not chars: 2667 three-byte chars are 8001 bytes.
        let wide = "好".repeat(2667);
        invalid(parse_delegate_args(
            &json!({"agentId": "a", "task": {"objective": wide}}),
        ));
        // Other keys are not length-checked.
        parse_delegate_args(&json!({"agentId": "a", "task": {"objective": "x", "notes": over}}))
            .unwrap();
    }

    #[test]
    fn delegate_budget_must_be_strict_positive_integers() {
        let budget = |budget: Value| {
            parse_delegate_args(
                &json!({"agentId": "a", "task": {"objective": "x"}, "budget": budget}),
            )
        };
        assert!(invalid(budget(json!({"maxRounds": 2, "maxTurns": 3}))).contains("maxTurns"));
        assert!(invalid(budget(json!({"maxRounds": 0}))).contains("budget.maxRounds"));
        assert!(invalid(budget(json!({"maxToolCalls": -1}))).contains("budget.maxToolCalls"));
        invalid(budget(json!({"maxRounds": 1.5})));
        invalid(budget(json!({"maxRounds": "3"})));
        invalid(budget(json!({"maxRounds": 5_000_000_000_i64})));
        invalid(budget(json!(3)));
        invalid(budget(json!([1])));
        assert_eq!(
            budget(json!({"maxRounds": null, "maxToolCalls": 1}))
                .unwrap()
                .budget,
            Some(AgentTaskBudget {
                max_rounds: None,
                max_tool_calls: Some(1),
                ..AgentTaskBudget::default()
            })
        );
    }

    // ---- agent.await ----------------------------------------------------------------------

    #[test]
    fn await_defaults() {
        let args = parse_await_args(&json!({})).unwrap();
        assert_eq!(
            args,
            AwaitArgs {
                task_ids: None,
                mode: AwaitMode::NextCompleted,
                timeout_ms: 120_000
            }
        );
        assert_eq!(
            parse_await_args(&json!({"taskIds": null, "mode": null, "timeoutMs": null})).unwrap(),
            args
        );
    }

    #[test]
    fn await_modes_round_trip_in_camel_case() {
        for mode in AwaitMode::ALL {
            let args = parse_await_args(&json!({"mode": mode.as_str()})).unwrap();
            assert_eq!(args.mode, mode);
        }
        assert_eq!(AwaitMode::AllCompleted.as_str(), "allCompleted");
        assert_eq!(AwaitMode::StatusOnly.as_str(), "statusOnly");
        invalid(parse_await_args(&json!({"mode": "next_completed"})));
        invalid(parse_await_args(&json!({"mode": ""})));
        invalid(parse_await_args(&json!({"mode": 1})));
    }

    #[test]
    fn await_timeout_is_bounded() {
        assert_eq!(
            parse_await_args(&json!({"timeoutMs": 0}))
                .unwrap()
                .timeout_ms,
            0
        );
        assert_eq!(
            parse_await_args(&json!({"timeoutMs": 300_000}))
                .unwrap()
                .timeout_ms,
            300_000
        );
        assert!(invalid(parse_await_args(&json!({"timeoutMs": 300_001}))).contains("timeoutMs"));
        invalid(parse_await_args(&json!({"timeoutMs": -1})));
        invalid(parse_await_args(&json!({"timeoutMs": 10.5})));
        invalid(parse_await_args(&json!({"timeoutMs": "1000"})));
    }

    #[test]
    fn await_task_ids_are_trimmed_non_empty_and_distinct() {
        let args = parse_await_args(&json!({"taskIds": [" task_b ", "task_a"]})).unwrap();
        assert_eq!(
            args.task_ids,
            Some(vec!["task_b".to_owned(), "task_a".to_owned()])
        );
        assert!(invalid(parse_await_args(&json!({"taskIds": ["task_a", "  "]}))).contains("[1]"));
        assert!(
            invalid(parse_await_args(&json!({"taskIds": ["task_a", " task_a"]})))
                .contains("more than once")
        );
        invalid(parse_await_args(&json!({"taskIds": "task_a"})));
        invalid(parse_await_args(&json!({"taskIds": [1]})));
        assert_eq!(
            parse_await_args(&json!({"taskIds": []})).unwrap().task_ids,
            Some(vec![])
        );
    }

    #[test]
    fn await_rejects_unknown_keys() {
        assert!(invalid(parse_await_args(&json!({"wait": true}))).contains("wait"));
    }

    // ---- agent.handoff --------------------------------------------------------------------

    #[test]
    fn handoff_accepts_the_full_shape() {
        let args = parse_handoff_args(&json!({
            "agentId": "editor",
            "handoff": {
                "title": "Polish", "reason": "Draft done", "objective": "Polish the draft",
                "contextSummary": "All scenes drafted", "workspaceRefs": ["output/main.md"],
                "mustPreserve": ["names"], "completionCriteria": ["published"], "mood": "calm"
            },
            "pendingTaskPolicy": "denyIfPending"
        }))
        .unwrap();
        assert_eq!(args.agent_id, "editor");
        assert_eq!(args.handoff.extra["mood"], json!("calm"));
        parse_handoff_args(
            &json!({"agentId": "e", "handoff": {"objective": "x"}, "pendingTaskPolicy": null}),
        )
        .unwrap();
    }

    #[test]
    fn handoff_rejects_bad_shapes() {
        assert!(
            invalid(parse_handoff_args(
                &json!({"agentId": "e", "handoff": {"objective": "x"}, "mode": "fast"})
            ))
            .contains("mode")
        );
        invalid(parse_handoff_args(&json!({"handoff": {"objective": "x"}})));
        invalid(parse_handoff_args(
            &json!({"agentId": 1, "handoff": {"objective": "x"}}),
        ));
        invalid(parse_handoff_args(&json!({"agentId": "e"})));
        invalid(parse_handoff_args(
            &json!({"agentId": "e", "handoff": "go"}),
        ));
        assert!(
            invalid(parse_handoff_args(
                &json!({"agentId": "e", "handoff": {"objective": "x"}, "pendingTaskPolicy": "transfer"})
            ))
            .contains("pendingTaskPolicy")
        );
    }

    #[test]
    fn handoff_objective_is_required_and_text_fields_are_checked() {
        for handoff in [
            json!({}),
            json!({"objective": " "}),
            json!({"objective": 1}),
        ] {
            let message = invalid(parse_handoff_args(
                &json!({"agentId": "e", "handoff": handoff}),
            ));
            assert!(message.contains("handoff.objective"), "{message}");
        }
        for key in ["title", "reason", "contextSummary"] {
            let mut handoff = json!({"objective": "x"});
            handoff[key] = json!(["not", "text"]);
            let message = invalid(parse_handoff_args(
                &json!({"agentId": "e", "handoff": handoff}),
            ));
            assert!(message.contains(key), "{message}");
        }
        // The array fields are not type-checked.
        parse_handoff_args(&json!({"agentId": "e", "handoff": {"objective": "x", "workspaceRefs": "output/main.md"}}))
            .unwrap();
    }

    #[test]
    fn handoff_packet_accepts_8000_byte_fields_and_rejects_longer() {
        let at_limit = "a".repeat(8000);
        parse_handoff_args(&json!({"agentId": "e", "handoff": {
            "objective": at_limit, "title": at_limit, "reason": at_limit, "contextSummary": at_limit
        }}))
        .unwrap();
        let over = "a".repeat(8001);
        for key in ["objective", "title", "reason", "contextSummary"] {
            let mut handoff = json!({"objective": "x"});
            handoff[key] = json!(over);
            invalid(parse_handoff_args(
                &json!({"agentId": "e", "handoff": handoff}),
            ));
        }
    }

    // ---- task.return ----------------------------------------------------------------------

    #[test]
    fn task_return_fills_status_and_keeps_the_rest() {
        let args = json!({
            "summary": "  Found two breaks.  ",
            "confidence": "high",
            "artifacts": [{"path": "scratch/notes.md", "kind": "markdown", "role": "evidence"}],
            "findings": [{"issue": "x"}],
            "warnings": ["w"],
            "suggestedNextActions": ["s"],
            "questionsForCaller": ["q"]
        });
        let parsed = parse_task_return_args(&args).unwrap();
        assert_eq!(parsed.status, TaskResultStatus::Completed);
        assert_eq!(parsed.summary, "Found two breaks.");
        assert_eq!(
            parsed.artifacts,
            vec![ReturnedArtifact {
                path: "scratch/notes.md".into(),
                kind: "markdown".into(),
                role: "evidence".into()
            }]
        );
        let mut expected = args.clone();
        expected["summary"] = json!("Found two breaks.");
        expected["status"] = json!("completed");
        assert_eq!(parsed.normalized, expected);
    }

    #[test]
    fn task_return_status_mapping() {
        for (status, expected) in [
            (json!(null), TaskResultStatus::Completed),
            (json!(""), TaskResultStatus::Completed),
            (json!("completed"), TaskResultStatus::Completed),
            (json!("failed"), TaskResultStatus::Failed),
        ] {
            let parsed =
                parse_task_return_args(&json!({"summary": "s", "status": status})).unwrap();
            assert_eq!(parsed.status, expected);
            assert_eq!(parsed.normalized["status"], json!(expected.as_str()));
        }
        let missing = parse_task_return_args(&json!({"summary": "s"})).unwrap();
        assert_eq!(missing.normalized["status"], json!("completed"));
        assert!(
            parse_task_return_args(&json!({"summary": "s"}))
                .unwrap()
                .artifacts
                .is_empty()
        );
        for bad in [json!("done"), json!("cancelled"), json!(true)] {
            invalid(parse_task_return_args(
                &json!({"summary": "s", "status": bad}),
            ));
        }
    }

    #[test]
    fn task_return_requires_an_object_with_a_summary() {
        invalid(parse_task_return_args(&json!("done")));
        invalid(parse_task_return_args(&json!(null)));
        for summary in [json!(null), json!(""), json!("   "), json!(4)] {
            invalid(parse_task_return_args(&json!({"summary": summary})));
        }
        assert!(invalid(parse_task_return_args(&json!({}))).contains("summary"));
        assert!(
            invalid(parse_task_return_args(
                &json!({"summary": "s", "notes": "x"})
            ))
            .contains("notes")
        );
    }

    #[test]
    fn task_return_artifact_shapes() {
        let with = |artifacts: Value| {
            parse_task_return_args(&json!({"summary": "s", "artifacts": artifacts}))
        };
        assert!(with(json!(null)).unwrap().artifacts.is_empty());
        assert!(with(json!([])).unwrap().artifacts.is_empty());
        invalid(with(json!("output/main.md")));
        invalid(with(json!({"path": "output/main.md"})));
        assert!(invalid(with(json!(["output/main.md"]))).contains("artifacts[0]"));
        assert!(
            invalid(with(json!([{"kind": "markdown", "role": "draft"}])))
                .contains("artifacts[0].path")
        );
        invalid(with(
            json!([{"path": 3, "kind": "markdown", "role": "draft"}]),
        ));
        assert!(
            invalid(with(json!([{"path": "a", "role": "draft"}]))).contains("artifacts[0].kind")
        );
        assert!(
            invalid(with(json!([{"path": "a", "kind": "text"}]))).contains("artifacts[0].role")
        );
        let message = invalid(with(json!([
            {"path": "a", "kind": "text", "role": "draft"},
            {"path": "b", "kind": "text", "role": "draft", "sha256": "x"}
        ])));
        assert!(
            message.contains("artifacts[1]") && message.contains("sha256"),
            "{message}"
        );
        // Paths stay raw: normalizing them is the caller's step.
        assert_eq!(
            with(json!([{"path": "./output//main.md", "kind": "markdown", "role": "draft"}]))
                .unwrap()
                .artifacts[0]
                .path,
            "./output//main.md"
        );
    }
}
