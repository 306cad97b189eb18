//! Generation settings: the sampler and output knobs a model request carries (temperature,
//! top-p, penalties, stop strings, seed, output length, reasoning effort, and server-specific
//! extras passed through unchanged).
//!
//! They come in layers (a connection's defaults, a profile's `model.generation`, the host's
//! prompt assembly `settings`, the run request); [`GenerationSettings::overlay`] puts one layer
//! over another field by field, and [`GenerationSettings::validate`] checks the ranges with the
//! code `agent.generation_settings_invalid`. Which provider accepts which field is the
//! adapters' business (docs/providers.md).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{DomainError, DomainResult};

/// Upper bound of an output limit: a generation setting's and a profile's
/// `model.maxOutputTokens`.
pub const MAX_OUTPUT_TOKENS_LIMIT: u32 = 1_000_000;

/// The code of every out-of-range or malformed setting.
pub const GENERATION_SETTINGS_INVALID: crate::error_codes::Code =
    crate::error_codes::AGENT_GENERATION_SETTINGS_INVALID;

/// Most stop strings one request may carry (OpenAI allows 4, Anthropic more; adapters that
/// take fewer refuse the request with a clear error).
pub const MAX_STOP_STRINGS: usize = 16;

/// Longest stop string, in bytes.
pub const MAX_STOP_STRING_BYTES: usize = 256;

/// Most keys in `extra`.
pub const MAX_EXTRA_KEYS: usize = 32;

/// How hard a reasoning model thinks before it answers (OpenAI `reasoning_effort`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ReasoningEffort {
    Minimal,
    Low,
    Medium,
    High,
}

impl ReasoningEffort {
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::Minimal => "minimal",
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
        }
    }
}

/// Sampler and output settings of model requests. Every field is optional: unset, the next
/// layer down (or the server's default) applies.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GenerationSettings {
    /// 0 to 2.
    pub temperature: Option<f64>,
    /// Above 0, at most 1.
    pub top_p: Option<f64>,
    /// At least 1.
    pub top_k: Option<u32>,
    /// 0 to 1.
    pub min_p: Option<f64>,
    /// -2 to 2.
    pub frequency_penalty: Option<f64>,
    /// -2 to 2.
    pub presence_penalty: Option<f64>,
    /// Above 0, at most 10 (1 is no penalty; llama.cpp's `repeat_penalty`).
    pub repetition_penalty: Option<f64>,
    /// Strings that end the answer; at most [`MAX_STOP_STRINGS`], none empty.
    pub stop: Option<Vec<String>>,
    /// For repeatable sampling where the server supports it.
    pub seed: Option<u64>,
    /// The most tokens one call may generate (1 to 1,000,000).
    pub max_output_tokens: Option<u32>,
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Tokens a model may think for before answering (Anthropic `thinking.budget_tokens`);
    /// at least 1024.
    pub thinking_budget_tokens: Option<u32>,
    /// Server-specific fields put into the request body unchanged (e.g. llama.cpp's
    /// `mirostat`, vLLM's `guided_json`). A key here wins over the same key the adapter sets.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
}

/// Smallest thinking budget (Anthropic refuses less).
pub const MIN_THINKING_BUDGET_TOKENS: u32 = 1024;

impl GenerationSettings {
    /// Whether no field is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// `over` put on top of `self`: each field `over` sets wins; `extra` is merged key by key
    /// (a key set to `null` in `over` removes it).
    #[must_use]
    pub fn overlay(&self, over: &GenerationSettings) -> GenerationSettings {
        let mut extra = self.extra.clone();
        for (key, value) in &over.extra {
            if value.is_null() {
                extra.remove(key);
            } else {
                extra.insert(key.clone(), value.clone());
            }
        }
        GenerationSettings {
            temperature: over.temperature.or(self.temperature),
            top_p: over.top_p.or(self.top_p),
            top_k: over.top_k.or(self.top_k),
            min_p: over.min_p.or(self.min_p),
            frequency_penalty: over.frequency_penalty.or(self.frequency_penalty),
            presence_penalty: over.presence_penalty.or(self.presence_penalty),
            repetition_penalty: over.repetition_penalty.or(self.repetition_penalty),
            stop: over.stop.clone().or_else(|| self.stop.clone()),
            seed: over.seed.or(self.seed),
            max_output_tokens: over.max_output_tokens.or(self.max_output_tokens),
            reasoning_effort: over.reasoning_effort.or(self.reasoning_effort),
            thinking_budget_tokens: over.thinking_budget_tokens.or(self.thinking_budget_tokens),
            extra,
        }
    }

    /// Checks every set field's range; `origin` names where the settings came from (e.g.
    /// `model.generation` of a profile) in the message.
    pub fn validate(&self, origin: &str) -> DomainResult<()> {
        let range = |name: &str, value: Option<f64>, low: f64, high: f64, open_low: bool| {
            let Some(value) = value else { return Ok(()) };
            let above_low = if open_low { value > low } else { value >= low };
            if value.is_finite() && above_low && value <= high {
                return Ok(());
            }
            let bound = if open_low { "above" } else { "at least" };
            Err(invalid(
                origin,
                format!("{name} is {value}; it must be {bound} {low} and at most {high}"),
            ))
        };
        range("temperature", self.temperature, 0.0, 2.0, false)?;
        range("topP", self.top_p, 0.0, 1.0, true)?;
        range("minP", self.min_p, 0.0, 1.0, false)?;
        range("frequencyPenalty", self.frequency_penalty, -2.0, 2.0, false)?;
        range("presencePenalty", self.presence_penalty, -2.0, 2.0, false)?;
        range(
            "repetitionPenalty",
            self.repetition_penalty,
            0.0,
            10.0,
            true,
        )?;
        if self.top_k == Some(0) {
            return Err(invalid(origin, "topK must be at least 1".to_owned()));
        }
        if self
            .max_output_tokens
            .is_some_and(|tokens| tokens == 0 || tokens > MAX_OUTPUT_TOKENS_LIMIT)
        {
            return Err(invalid(
                origin,
                format!("maxOutputTokens must be at least 1 and at most {MAX_OUTPUT_TOKENS_LIMIT}"),
            ));
        }
        if self
            .thinking_budget_tokens
            .is_some_and(|tokens| tokens < MIN_THINKING_BUDGET_TOKENS)
        {
            return Err(invalid(
                origin,
                format!("thinkingBudgetTokens must be at least {MIN_THINKING_BUDGET_TOKENS}"),
            ));
        }
        if let Some(stop) = &self.stop {
            if stop.len() > MAX_STOP_STRINGS {
                return Err(invalid(
                    origin,
                    format!(
                        "stop has {} strings; at most {MAX_STOP_STRINGS}",
                        stop.len()
                    ),
                ));
            }
            if let Some(bad) = stop
                .iter()
                .find(|text| text.is_empty() || text.len() > MAX_STOP_STRING_BYTES)
            {
                return Err(invalid(
                    origin,
                    format!(
                        "stop strings must be 1 to {MAX_STOP_STRING_BYTES} bytes long (got {} bytes)",
                        bad.len()
                    ),
                ));
            }
        }
        if self.extra.len() > MAX_EXTRA_KEYS {
            return Err(invalid(
                origin,
                format!(
                    "extra has {} keys; at most {MAX_EXTRA_KEYS}",
                    self.extra.len()
                ),
            ));
        }
        if let Some(key) = self.extra.keys().find(|key| !is_wire_key(key)) {
            return Err(invalid(
                origin,
                format!(
                    "extra key `{key}` is not a request field name (letters, digits, `_`, `-`, `.`)"
                ),
            ));
        }
        Ok(())
    }
}

/// A key a request body could carry: 1 to 64 ASCII letters, digits, `_`, `-` or `.`.
fn is_wire_key(key: &str) -> bool {
    (1..=64).contains(&key.len())
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

fn invalid(origin: &str, detail: String) -> DomainError {
    DomainError::new(GENERATION_SETTINGS_INVALID, format!("{origin}: {detail}"))
}

/// Parses a `key=value` setting as the command line takes it (`--set topK=40`): a known
/// field by its camelCase name, anything else into `extra`. The value is read as JSON when it
/// parses (`40`, `0.5`, `true`, `["\n\n"]`), else as a string.
pub fn parse_assignment(text: &str) -> DomainResult<GenerationSettings> {
    let Some((key, raw)) = text.split_once('=') else {
        return Err(invalid(
            "--set",
            format!("`{text}` is not key=value (e.g. topK=40)"),
        ));
    };
    let key = key.trim();
    let value: Value =
        serde_json::from_str(raw.trim()).unwrap_or_else(|_| Value::String(raw.to_owned()));
    let known = [
        "temperature",
        "topP",
        "topK",
        "minP",
        "frequencyPenalty",
        "presencePenalty",
        "repetitionPenalty",
        "stop",
        "seed",
        "maxOutputTokens",
        "reasoningEffort",
        "thinkingBudgetTokens",
    ];
    let object = if known.contains(&key) {
        // A single stop string may be given bare: `--set stop=END`.
        let value = match (key, value) {
            ("stop", Value::String(text)) => Value::Array(vec![Value::String(text)]),
            (_, value) => value,
        };
        serde_json::json!({ key: value })
    } else {
        serde_json::json!({ "extra": { key: value } })
    };
    let settings: GenerationSettings = serde_json::from_value(object)
        .map_err(|err| invalid("--set", format!("`{text}`: {err}")))?;
    settings.validate("--set")?;
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn settings(value: Value) -> GenerationSettings {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn camel_case_fields_round_trip_and_unknown_ones_are_refused() {
        let parsed = settings(json!({
            "temperature": 0.7, "topP": 0.9, "topK": 40, "minP": 0.05,
            "frequencyPenalty": 0.1, "presencePenalty": -0.1, "repetitionPenalty": 1.1,
            "stop": ["\n\n"], "seed": 7, "maxOutputTokens": 512, "reasoningEffort": "low",
            "thinkingBudgetTokens": 2048, "extra": {"mirostat": 2}
        }));
        assert_eq!(parsed.top_k, Some(40));
        assert_eq!(parsed.reasoning_effort, Some(ReasoningEffort::Low));
        parsed.validate("test").unwrap();
        let back = serde_json::to_value(&parsed).unwrap();
        assert_eq!(back["repetitionPenalty"], json!(1.1));
        assert!(
            serde_json::from_value::<GenerationSettings>(json!({"temprature": 1})).is_err(),
            "a misspelt field must not pass in silence"
        );
        assert_eq!(
            serde_json::to_value(GenerationSettings::default()).unwrap(),
            json!({})
        );
    }

    #[test]
    fn out_of_range_values_are_refused_with_the_field_named() {
        let cases = [
            (json!({"temperature": 2.5}), "temperature is 2.5"),
            (json!({"temperature": -0.1}), "temperature"),
            (json!({"topP": 0.0}), "topP"),
            (json!({"topP": 1.5}), "topP"),
            (json!({"topK": 0}), "topK"),
            (json!({"minP": 1.2}), "minP"),
            (json!({"frequencyPenalty": 3}), "frequencyPenalty"),
            (json!({"presencePenalty": -2.5}), "presencePenalty"),
            (json!({"repetitionPenalty": 0}), "repetitionPenalty"),
            (json!({"maxOutputTokens": 0}), "maxOutputTokens"),
            (json!({"thinkingBudgetTokens": 100}), "thinkingBudgetTokens"),
            (json!({"stop": [""]}), "stop strings"),
            (json!({"stop": vec!["x"; 17]}), "stop has 17"),
            (json!({"extra": {"bad key": 1}}), "extra key `bad key`"),
        ];
        for (value, expected) in cases {
            let error = settings(value.clone())
                .validate("profile `p` model.generation")
                .unwrap_err();
            assert_eq!(error.code, GENERATION_SETTINGS_INVALID, "{value}");
            assert!(
                error.message.starts_with("profile `p` model.generation: "),
                "{error}"
            );
            assert!(error.message.contains(expected), "{value}: {error}");
        }
    }

    #[test]
    fn an_upper_layer_wins_field_by_field_and_extra_merges_by_key() {
        let connection =
            settings(json!({"temperature": 0.8, "topP": 0.95, "extra": {"a": 1, "b": 2}}));
        let profile =
            settings(json!({"temperature": 0.2, "seed": 3, "extra": {"b": null, "c": 3}}));
        let merged = connection.overlay(&profile);
        assert_eq!(merged.temperature, Some(0.2));
        assert_eq!(merged.top_p, Some(0.95));
        assert_eq!(merged.seed, Some(3));
        assert_eq!(Value::Object(merged.extra), json!({"a": 1, "c": 3}));
        assert!(GenerationSettings::default().is_empty());
        assert!(!connection.is_empty());
    }

    #[test]
    fn command_line_assignments_parse_known_fields_and_extras() {
        assert_eq!(parse_assignment("topK=40").unwrap().top_k, Some(40));
        assert_eq!(
            parse_assignment("stop=END").unwrap().stop,
            Some(vec!["END".to_owned()])
        );
        assert_eq!(
            parse_assignment("reasoningEffort=high")
                .unwrap()
                .reasoning_effort,
            Some(ReasoningEffort::High)
        );
        assert_eq!(
            Value::Object(parse_assignment("mirostat=2").unwrap().extra),
            json!({"mirostat": 2})
        );
        assert_eq!(
            Value::Object(parse_assignment("grammar=root ::= x").unwrap().extra),
            json!({"grammar": "root ::= x"})
        );
        for bad in [
            "topK",
            "topK=-1",
            "temperature=9",
            "reasoningEffort=max",
            "a b=1",
        ] {
            let error = parse_assignment(bad).unwrap_err();
            assert_eq!(error.code, GENERATION_SETTINGS_INVALID, "{bad}");
        }
    }
}
