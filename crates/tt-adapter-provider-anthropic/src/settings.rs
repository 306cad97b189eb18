//! Generation settings on the Messages wire: `temperature`, `top_p`, `top_k`, `stop_sequences`
//! and `thinking.budget_tokens`; the sampler fields the API does not have (penalties, `min_p`,
//! `seed`, `reasoningEffort`) and the combinations it refuses with thinking on are refused
//! before anything is sent, with `model.setting_unsupported` (docs/providers.md).

use serde_json::{Map, Value, json};
use tt_domain::generation::GenerationSettings;
use tt_ports::ModelError;

/// Highest `temperature` the API takes (the domain allows up to 2).
const MAX_TEMPERATURE: f64 = 1.0;
/// Lowest `top_p` the API takes while thinking is on.
const MIN_TOP_P_WITH_THINKING: f64 = 0.95;

/// The thinking budget a request runs with: its own setting, else the connection's.
pub(crate) fn thinking_budget(
    settings: &GenerationSettings,
    connection: Option<u32>,
) -> Option<u32> {
    settings.thinking_budget_tokens.or(connection)
}

/// Checks `settings` against what the API takes. `thinking` is the budget the request runs
/// with and `max_tokens` the limit it sends (the API wants the budget below it).
pub(crate) fn check(
    settings: &GenerationSettings,
    thinking: Option<u32>,
    max_tokens: u32,
) -> Result<(), ModelError> {
    let unsupported: Vec<&str> = [
        ("minP", settings.min_p.is_some()),
        ("frequencyPenalty", settings.frequency_penalty.is_some()),
        ("presencePenalty", settings.presence_penalty.is_some()),
        ("repetitionPenalty", settings.repetition_penalty.is_some()),
        ("seed", settings.seed.is_some()),
    ]
    .into_iter()
    .filter_map(|(name, set)| set.then_some(name))
    .collect();
    if !unsupported.is_empty() {
        return refuse(format!(
            "Anthropic's Messages API does not take {}; remove {} from the generation settings",
            unsupported.join(", "),
            if unsupported.len() == 1 { "it" } else { "them" }
        ));
    }
    if settings.reasoning_effort.is_some() {
        return refuse(
            "reasoningEffort is a Chat Completions setting; Anthropic takes thinkingBudgetTokens"
                .to_owned(),
        );
    }
    if let Some(temperature) = settings.temperature
        && temperature > MAX_TEMPERATURE
    {
        return refuse(format!(
            "Anthropic takes a temperature of at most {MAX_TEMPERATURE}, not {temperature}"
        ));
    }
    let Some(budget) = thinking else {
        return Ok(());
    };
    if budget >= max_tokens {
        return refuse(format!(
            "the thinking budget ({budget} tokens) must be below max_tokens ({max_tokens}); \
             raise maxOutputTokens or the connection's max_tokens"
        ));
    }
    if settings.temperature.is_some_and(|t| t != MAX_TEMPERATURE) {
        return refuse("with thinking on, Anthropic takes no temperature but 1".to_owned());
    }
    if settings.top_k.is_some() {
        return refuse("with thinking on, Anthropic takes no topK".to_owned());
    }
    if settings
        .top_p
        .is_some_and(|top_p| top_p < MIN_TOP_P_WITH_THINKING)
    {
        return refuse(format!(
            "with thinking on, Anthropic takes a topP of {MIN_TOP_P_WITH_THINKING} to 1"
        ));
    }
    Ok(())
}

/// Puts the settings (already [`check`]ed) and the thinking block into `body`; `extra` goes in
/// last, so its keys win.
pub(crate) fn apply(
    body: &mut Map<String, Value>,
    settings: &GenerationSettings,
    thinking: Option<u32>,
) {
    let mut set = |key: &str, value: Option<Value>| {
        if let Some(value) = value {
            body.insert(key.to_owned(), value);
        }
    };
    set("temperature", settings.temperature.map(|v| json!(v)));
    set("top_p", settings.top_p.map(|v| json!(v)));
    set("top_k", settings.top_k.map(|v| json!(v)));
    set("stop_sequences", settings.stop.as_ref().map(|v| json!(v)));
    set(
        "thinking",
        thinking.map(|budget| json!({"type": "enabled", "budget_tokens": budget})),
    );
    for (key, value) in &settings.extra {
        body.insert(key.clone(), value.clone());
    }
}

fn refuse(message: String) -> Result<(), ModelError> {
    Err(ModelError::SettingUnsupported { message })
}
