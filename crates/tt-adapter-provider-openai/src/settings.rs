//! Generation settings and prompt-cache hints on the Chat Completions wire.
//!
//! OpenAI's own API (`api.openai.com`) takes `temperature`, `top_p`, `frequency_penalty`,
//! `presence_penalty`, `stop` (at most 4), `seed`, `reasoning_effort` and `prompt_cache_key`, and
//! refuses unknown fields, so `topK`, `minP`, `repetitionPenalty` and `thinkingBudgetTokens` are
//! refused here before anything is sent. Compatible servers (llama.cpp, vLLM, Ollama, …) also
//! get `top_k`, `min_p` and `repeat_penalty` (llama.cpp's name; vLLM users set
//! `extra.repetition_penalty`), and `cache_prompt: true`, which keeps llama.cpp's KV cache for the
//! unchanged prefix. `extra` goes in last, unchanged, and wins over any field set here. A connection that drops
//! settings it does not take (`UnsupportedSettings::Drop`) leaves them out instead of refusing.

use serde_json::{Map, Value, json};
use tt_domain::generation::GenerationSettings;
use tt_domain::model::AgentModelRequest;
use tt_ports::{DroppedSetting, ModelError, UnsupportedSettings};
use tt_provider_http::dropped::{dropped, names, settle, without};

use crate::config::Dialect;

/// Most stop strings OpenAI's own API accepts.
const OPENAI_MAX_STOP: usize = 4;

/// Puts `request.generation` and the cache hints into `body`.
pub(crate) fn apply(
    body: &mut Map<String, Value>,
    request: &AgentModelRequest,
    dialect: Dialect,
    mode: UnsupportedSettings,
) -> Result<(), ModelError> {
    let dropped = check(&request.generation, dialect, mode)?;
    let kept = without(&request.generation, &dropped);
    let settings = &kept;
    let mut set = |key: &str, value: Option<Value>| {
        if let Some(value) = value {
            body.insert(key.to_owned(), value);
        }
    };
    set("temperature", settings.temperature.map(|v| json!(v)));
    set("top_p", settings.top_p.map(|v| json!(v)));
    set(
        "frequency_penalty",
        settings.frequency_penalty.map(|v| json!(v)),
    );
    set(
        "presence_penalty",
        settings.presence_penalty.map(|v| json!(v)),
    );
    set("stop", settings.stop.as_ref().map(|v| json!(v)));
    set("seed", settings.seed.map(|v| json!(v)));
    set(
        "reasoning_effort",
        settings.reasoning_effort.map(|v| json!(v.as_str())),
    );
    match dialect {
        Dialect::OpenAi => {
            // Requests of one profile in one run share their system prompt and tool schemas:
            // one key routes them to the same cache.
            set(
                "prompt_cache_key",
                Some(json!(format!(
                    "{}:{}",
                    request.session.run_id, request.agent_profile_id
                ))),
            );
        }
        Dialect::Compatible => {
            set("top_k", settings.top_k.map(|v| json!(v)));
            set("min_p", settings.min_p.map(|v| json!(v)));
            set(
                "repeat_penalty",
                settings.repetition_penalty.map(|v| json!(v)),
            );
            set("cache_prompt", Some(json!(true)));
        }
    }
    for (key, value) in &settings.extra {
        body.insert(key.clone(), value.clone());
    }
    Ok(())
}

/// Checks `settings` against what the server takes: a connection in `mode`
/// [`UnsupportedSettings::Refuse`] refuses a setting it does not take, one in `Drop` answers
/// the settings it leaves out. More stop strings than OpenAI takes are refused either way.
pub(crate) fn check(
    settings: &GenerationSettings,
    dialect: Dialect,
    mode: UnsupportedSettings,
) -> Result<Vec<DroppedSetting>, ModelError> {
    let dropped = settle(not_taken(settings, dialect), mode, refusal)?;
    if dialect == Dialect::OpenAi
        && let Some(stop) = &settings.stop
        && stop.len() > OPENAI_MAX_STOP
    {
        return Err(ModelError::SettingUnsupported {
            message: format!(
                "OpenAI's API takes at most {OPENAI_MAX_STOP} stop strings, not {}",
                stop.len()
            ),
        });
    }
    Ok(dropped)
}

/// The settings of `settings` the server has no field for, each with why.
fn not_taken(settings: &GenerationSettings, dialect: Dialect) -> Vec<DroppedSetting> {
    let mut found = Vec::new();
    if settings.thinking_budget_tokens.is_some() {
        found.push(dropped(
            "thinkingBudgetTokens",
            "an Anthropic setting; Chat Completions servers take reasoningEffort",
        ));
    }
    if dialect == Dialect::OpenAi {
        for (name, set) in [
            ("topK", settings.top_k.is_some()),
            ("minP", settings.min_p.is_some()),
            ("repetitionPenalty", settings.repetition_penalty.is_some()),
        ] {
            if set {
                found.push(dropped(name, "OpenAI's API does not take it"));
            }
        }
    }
    found
}

/// The refusal of `found`, as a connection that refuses says it.
fn refusal(found: &[DroppedSetting]) -> String {
    if found.iter().any(|s| s.setting == "thinkingBudgetTokens") {
        return "thinkingBudgetTokens is an Anthropic setting; Chat Completions servers take reasoningEffort"
            .to_owned();
    }
    format!(
        "OpenAI's API does not take {}; remove {} from the generation settings (or let the \
         connection drop settings it does not take)",
        names(found),
        if found.len() == 1 { "it" } else { "them" }
    )
}
