//! The script file format (`schemaVersion` 1) and its parsing into per-agent turns, with
//! errors that name the agent and entry at fault.

use std::collections::BTreeMap;
use std::path::Path;
use tt_domain::error_codes;

use serde::Deserialize;
use serde_json::Value;
use tt_domain::ids::is_valid_profile_id;
use tt_ports::ModelError;

/// The only script schema version understood.
pub const SCRIPT_SCHEMA_VERSION: u32 = 1;

/// Why a script could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScriptError {
    /// The text is not JSON at all.
    #[error(
        "{}: the script is not valid JSON (line {line}, column {column}): {message}",
        error_codes::MODEL_SCRIPT_INVALID
    )]
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    /// The JSON does not follow the script format; `location` is e.g. `agents.critic[2]`.
    #[error("{listed_code}: {location}: {message}", listed_code = error_codes::MODEL_SCRIPT_INVALID)]
    Invalid { location: String, message: String },
    #[error("{listed_code}: cannot read {path}: {message}", listed_code = error_codes::MODEL_SCRIPT_UNREADABLE)]
    Io { path: String, message: String },
}

impl ScriptError {
    pub fn code(&self) -> tt_domain::error_codes::Code {
        match self {
            ScriptError::Syntax { .. } | ScriptError::Invalid { .. } => {
                error_codes::MODEL_SCRIPT_INVALID
            }
            ScriptError::Io { .. } => error_codes::MODEL_SCRIPT_UNREADABLE,
        }
    }

    fn invalid(location: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid {
            location: location.into(),
            message: message.into(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ScriptFile {
    schema_version: u32,
    /// Free text for whoever reads the script; ignored.
    #[serde(default, rename = "description")]
    _description: Option<String>,
    agents: BTreeMap<String, Vec<Value>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct EntrySpec {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallSpec>>,
    #[serde(default)]
    error: Option<ScriptedFailure>,
    #[serde(default)]
    delay_ms: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ToolCallSpec {
    id: String,
    name: String,
    #[serde(default = "empty_object")]
    arguments: Value,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// An injected provider failure.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum ScriptedFailure {
    /// `ModelError::RateLimited`.
    RateLimited {
        #[serde(default)]
        message: Option<String>,
        #[serde(default)]
        retry_after_ms: Option<u64>,
    },
    /// `ModelError::Transient`.
    Transient {
        #[serde(default)]
        message: Option<String>,
    },
    /// `ModelError::Rejected`.
    Rejected {
        #[serde(default)]
        message: Option<String>,
        #[serde(default)]
        status: Option<u16>,
    },
    /// `ModelError::InvalidResponse` with code `model.upstream_invalid_response`.
    InvalidResponse {
        #[serde(default)]
        message: Option<String>,
    },
}

impl ScriptedFailure {
    pub fn to_model_error(&self) -> ModelError {
        let text = |message: &Option<String>, fallback: &str| {
            message.clone().unwrap_or_else(|| fallback.to_owned())
        };
        match self {
            ScriptedFailure::RateLimited {
                message,
                retry_after_ms,
            } => ModelError::RateLimited {
                message: text(message, "scripted rate limit"),
                retry_after_ms: *retry_after_ms,
            },
            ScriptedFailure::Transient { message } => ModelError::Transient {
                message: text(message, "scripted transient failure"),
            },
            ScriptedFailure::Rejected { message, status } => ModelError::Rejected {
                status: *status,
                message: text(message, "scripted rejection"),
            },
            ScriptedFailure::InvalidResponse { message } => ModelError::InvalidResponse {
                code: error_codes::MODEL_UPSTREAM_INVALID_RESPONSE,
                message: text(message, "scripted invalid response"),
            },
        }
    }
}

/// One tool call a scripted turn makes; the id is sent verbatim.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptedToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

/// An assistant answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptedResponse {
    pub text: String,
    pub tool_calls: Vec<ScriptedToolCall>,
    pub delay_ms: Option<u64>,
    /// The script entry as written, kept as the response's `raw_response`.
    pub raw: Value,
}

/// An injected failure entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptedErrorEntry {
    pub failure: ScriptedFailure,
    pub delay_ms: Option<u64>,
}

/// One assistant turn: the failures injected before it, then its answer (`None` when the
/// script ends with failures only).
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptedTurn {
    pub errors_before: Vec<ScriptedErrorEntry>,
    pub response: Option<ScriptedResponse>,
}

/// A parsed script: the turns of each agent, keyed by profile id.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    pub agents: BTreeMap<String, Vec<ScriptedTurn>>,
}

impl Script {
    pub fn from_json_str(text: &str) -> Result<Self, ScriptError> {
        let value: Value = serde_json::from_str(text).map_err(|err| ScriptError::Syntax {
            line: err.line(),
            column: err.column(),
            message: err.to_string(),
        })?;
        let file: ScriptFile = serde_json::from_value(value)
            .map_err(|err| ScriptError::invalid("script", err.to_string()))?;
        if file.schema_version != SCRIPT_SCHEMA_VERSION {
            return Err(ScriptError::invalid(
                "schemaVersion",
                format!(
                    "unsupported schema version {}; this provider reads version {SCRIPT_SCHEMA_VERSION}",
                    file.schema_version
                ),
            ));
        }
        let mut agents = BTreeMap::new();
        for (agent, entries) in file.agents {
            if !is_valid_profile_id(&agent) {
                return Err(ScriptError::invalid(
                    format!("agents.{agent}"),
                    "agent keys are profile ids: lowercase letters, digits, `-` or `_`",
                ));
            }
            let turns = parse_agent(&agent, entries)?;
            agents.insert(agent, turns);
        }
        Ok(Self { agents })
    }

    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ScriptError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|err| ScriptError::Io {
            path: path.display().to_string(),
            message: err.to_string(),
        })?;
        Self::from_json_str(&text)
    }
}

enum Entry {
    Respond(ScriptedResponse),
    Fail(ScriptedErrorEntry),
}

fn parse_agent(agent: &str, entries: Vec<Value>) -> Result<Vec<ScriptedTurn>, ScriptError> {
    let mut turns = Vec::new();
    let mut pending_errors = Vec::new();
    for (index, raw) in entries.into_iter().enumerate() {
        let location = format!("agents.{agent}[{index}]");
        match parse_entry(&location, raw)? {
            Entry::Fail(error) => pending_errors.push(error),
            Entry::Respond(response) => turns.push(ScriptedTurn {
                errors_before: std::mem::take(&mut pending_errors),
                response: Some(response),
            }),
        }
    }
    if !pending_errors.is_empty() {
        turns.push(ScriptedTurn {
            errors_before: pending_errors,
            response: None,
        });
    }
    Ok(turns)
}

fn parse_entry(location: &str, raw: Value) -> Result<Entry, ScriptError> {
    let spec: EntrySpec = serde_json::from_value(raw.clone())
        .map_err(|err| ScriptError::invalid(location, err.to_string()))?;
    if let Some(failure) = spec.error {
        if spec.text.is_some() || spec.tool_calls.is_some() {
            return Err(ScriptError::invalid(
                location,
                "an `error` entry cannot also have `text` or `toolCalls`",
            ));
        }
        return Ok(Entry::Fail(ScriptedErrorEntry {
            failure,
            delay_ms: spec.delay_ms,
        }));
    }
    if spec.text.is_none() && spec.tool_calls.is_none() {
        return Err(ScriptError::invalid(
            location,
            "an entry needs `text`, `toolCalls` or `error` (use \"text\": \"\" for an empty answer)",
        ));
    }
    let mut tool_calls: Vec<ScriptedToolCall> = Vec::new();
    for (call_index, call) in spec.tool_calls.unwrap_or_default().into_iter().enumerate() {
        let call_location = format!("{location}.toolCalls[{call_index}]");
        if call.id.trim().is_empty() {
            return Err(ScriptError::invalid(
                call_location,
                "`id` must not be empty",
            ));
        }
        if call.name.trim().is_empty() {
            return Err(ScriptError::invalid(
                call_location,
                "`name` must not be empty",
            ));
        }
        if tool_calls.iter().any(|earlier| earlier.id == call.id) {
            return Err(ScriptError::invalid(
                call_location,
                format!("tool call id `{}` is used twice in one turn", call.id),
            ));
        }
        tool_calls.push(ScriptedToolCall {
            id: call.id,
            name: call.name,
            arguments: call.arguments,
        });
    }
    Ok(Entry::Respond(ScriptedResponse {
        text: spec.text.unwrap_or_default(),
        tool_calls,
        delay_ms: spec.delay_ms,
        raw,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_attach_to_the_following_turn() {
        let script = Script::from_json_str(
            r#"{"schemaVersion":1,"agents":{"writer":[
                {"text":"a"},
                {"error":{"kind":"transient","message":"502"}},
                {"error":{"kind":"rateLimited","retryAfterMs":10}},
                {"toolCalls":[{"id":"c1","name":"workspace_finish"}]},
                {"error":{"kind":"rejected","status":400}}
            ]}}"#,
        )
        .unwrap();
        let turns = &script.agents["writer"];
        assert_eq!(turns.len(), 3);
        assert!(turns[0].errors_before.is_empty());
        assert_eq!(turns[1].errors_before.len(), 2);
        let call = &turns[1].response.as_ref().unwrap().tool_calls[0];
        assert_eq!(call.arguments, serde_json::json!({}));
        assert_eq!(turns[2].response, None);
        assert_eq!(
            turns[1].errors_before[1].failure.to_model_error(),
            ModelError::RateLimited {
                message: "scripted rate limit".into(),
                retry_after_ms: Some(10)
            }
        );
    }

    #[test]
    fn bad_scripts_name_what_is_wrong() {
        let err = Script::from_json_str("{\"schemaVersion\": 1,\n \"agents\": [").unwrap_err();
        assert!(matches!(err, ScriptError::Syntax { line: 2, .. }), "{err}");
        assert_eq!(err.code(), "model.script_invalid");

        let cases = [
            (r#"{"schemaVersion":2,"agents":{}}"#, "schemaVersion"),
            (
                r#"{"schemaVersion":1,"agents":{"Writer":[]}}"#,
                "agents.Writer",
            ),
            (
                r#"{"schemaVersion":1,"agents":{"w":[{"text":"x"},{"txt":"y"}]}}"#,
                "agents.w[1]",
            ),
            (
                r#"{"schemaVersion":1,"agents":{"w":[{"text":"x","error":{"kind":"transient"}}]}}"#,
                "agents.w[0]",
            ),
            (
                r#"{"schemaVersion":1,"agents":{"w":[{"error":{"kind":"teapot"}}]}}"#,
                "agents.w[0]",
            ),
            (r#"{"schemaVersion":1,"agents":{"w":[{}]}}"#, "agents.w[0]"),
            (
                r#"{"schemaVersion":1,"agents":{"w":[{"error":{"kind":"transient","retryAfter":1}}]}}"#,
                "agents.w[0]",
            ),
            (
                r#"{"schemaVersion":1,"agents":{"w":[{"toolCalls":[{"id":"a","name":"x","args":{}}]}]}}"#,
                "agents.w[0]",
            ),
            (
                r#"{"schemaVersion":1,"agents":{"w":[{"toolCalls":[{"id":"","name":"x"}]}]}}"#,
                "agents.w[0].toolCalls[0]",
            ),
            (
                r#"{"schemaVersion":1,"agents":{"w":[{"toolCalls":[{"id":"a","name":"x"},{"id":"a","name":"y"}]}]}}"#,
                "agents.w[0].toolCalls[1]",
            ),
            (r#"{"schemaVersion":1,"agentz":{}}"#, "script"),
        ];
        for (text, expected_location) in cases {
            match Script::from_json_str(text) {
                Err(ScriptError::Invalid { location, message }) => {
                    assert_eq!(location, expected_location, "{message}");
                    assert!(!message.is_empty());
                }
                other => panic!("{text}: expected an invalid-script error, got {other:?}"),
            }
        }
    }

    #[test]
    fn missing_files_are_unreadable() {
        let err = Script::from_file("/definitely/not/here.json").unwrap_err();
        assert_eq!(err.code(), "model.script_unreadable");
    }
}
