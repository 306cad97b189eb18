//! Generation settings and prompt-cache hints on the Chat Completions wire.
//!
//! OpenAI's own API (`api.openai.com`) takes `temperature`, `top_p`, `frequency_penalty`,
//! `presence_penalty`, `stop` (at most 4), `seed`, `reasoning_effort` and `prompt_cache_key`, and
//! refuses unknown fields, so `topK`, `minP`, `repetitionPenalty` and `thinkingBudgetTokens` are
//! refused here before anything is sent. Compatible servers (llama.cpp, vLLM, Ollama, …) also
//! get `top_k`, `min_p` and `repeat_penalty` (llama.cpp's name; vLLM users set
//! `extra.repetition_penalty`), and `cache_prompt: true`, which keeps llama.cpp's KV cache for the
//! unchanged prefix. `extra` goes in last, unchanged, and wins over any field set here.

use serde_json::{Map, Value, json};
use tt_domain::generation::GenerationSettings;
use tt_domain::model::AgentModelRequest;
use tt_ports::ModelError;

use crate::config::Dialect;

/// Most stop strings OpenAI's own API accepts.
const OPENAI_MAX_STOP: usize = 4;

/// Puts `request.generation` and the cache hints into `body`.
pub(crate) fn apply(
    body: &mut Map<String, Value>,
    request: &AgentModelRequest,
    dialect: Dialect,
) -> Result<(), ModelError> {
    let settings = &request.generation;
    refuse_unsupported(settings, dialect)?;
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

fn refuse_unsupported(settings: &GenerationSettings, dialect: Dialect) -> Result<(), ModelError> {
    let refuse = |message: String| Err(ModelError::SettingUnsupported { message });
    if settings.thinking_budget_tokens.is_some() {
        return refuse(
            "thinkingBudgetTokens is an Anthropic setting; Chat Completions servers take reasoningEffort"
                .to_owned(),
        );
    }
    if dialect == Dialect::Compatible {
        return Ok(());
    }
    let unsupported: Vec<&str> = [
        ("topK", settings.top_k.is_some()),
        ("minP", settings.min_p.is_some()),
        ("repetitionPenalty", settings.repetition_penalty.is_some()),
    ]
    .into_iter()
    .filter_map(|(name, set)| set.then_some(name))
    .collect();
    if !unsupported.is_empty() {
        return refuse(format!(
            "OpenAI's API does not take {}; remove {} from the generation settings",
            unsupported.join(", "),
            if unsupported.len() == 1 { "it" } else { "them" }
        ));
    }
    if let Some(stop) = &settings.stop
        && stop.len() > OPENAI_MAX_STOP
    {
        return refuse(format!(
            "OpenAI's API takes at most {OPENAI_MAX_STOP} stop strings, not {}",
            stop.len()
        ));
    }
    Ok(())
}
