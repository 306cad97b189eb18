//! Generation settings on the Messages wire: `temperature`, `top_p`, `top_k`, `stop_sequences`
//! and `thinking.budget_tokens`; the sampler fields the API does not have (penalties, `min_p`,
//! `seed`, `reasoningEffort`) and the combinations it refuses with thinking on are refused
//! before anything is sent, with `model.setting_unsupported` (docs/providers.md), or left out of the
//! request when the connection drops settings it does not take.

use serde_json::{Map, Value, json};
use tt_domain::generation::GenerationSettings;
use tt_ports::{DroppedSetting, ModelError, UnsupportedSettings};
use tt_provider_http::dropped::{dropped, names, settle};

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
/// with and `max_tokens` the limit it sends (the API wants the budget below it). A connection in
/// `mode` [`UnsupportedSettings::Refuse`] refuses a setting the API does not take; one in `Drop`
/// answers the settings it leaves out. A thinking budget that does not fit below `max_tokens` is
/// refused either way.
pub(crate) fn check(
    settings: &GenerationSettings,
    thinking: Option<u32>,
    max_tokens: u32,
    mode: UnsupportedSettings,
) -> Result<Vec<DroppedSetting>, ModelError> {
    if let Some(budget) = thinking
        && budget >= max_tokens
    {
        return Err(ModelError::SettingUnsupported {
            message: format!(
                "the thinking budget ({budget} tokens) must be below max_tokens ({max_tokens}); \
                 raise maxOutputTokens or the connection's max_tokens"
            ),
        });
    }
    settle(not_taken(settings, thinking.is_some()), mode, refusal)
}

/// Why the API has no field for a sampler setting.
const NO_FIELD: &str = "Anthropic's Messages API has no such setting";

/// The settings of `settings` the API does not take (with thinking on, when `thinking`).
fn not_taken(settings: &GenerationSettings, thinking: bool) -> Vec<DroppedSetting> {
    let mut found: Vec<DroppedSetting> = [
        ("minP", settings.min_p.is_some()),
        ("frequencyPenalty", settings.frequency_penalty.is_some()),
        ("presencePenalty", settings.presence_penalty.is_some()),
        ("repetitionPenalty", settings.repetition_penalty.is_some()),
        ("seed", settings.seed.is_some()),
    ]
    .into_iter()
    .filter(|&(_, set)| set)
    .map(|(name, _)| dropped(name, NO_FIELD))
    .collect();
    if settings.reasoning_effort.is_some() {
        found.push(dropped(
            "reasoningEffort",
            "reasoningEffort is a Chat Completions setting; Anthropic takes thinkingBudgetTokens",
        ));
    }
    let temperature = settings.temperature;
    if let Some(temperature) = temperature
        && temperature > MAX_TEMPERATURE
    {
        found.push(dropped(
            "temperature",
            format!(
                "Anthropic takes a temperature of at most {MAX_TEMPERATURE}, not {temperature}"
            ),
        ));
    } else if thinking && temperature.is_some_and(|t| t != MAX_TEMPERATURE) {
        found.push(dropped(
            "temperature",
            "with thinking on, Anthropic takes no temperature but 1",
        ));
    }
    if thinking && settings.top_k.is_some() {
        found.push(dropped("topK", "with thinking on, Anthropic takes no topK"));
    }
    if thinking
        && settings
            .top_p
            .is_some_and(|top_p| top_p < MIN_TOP_P_WITH_THINKING)
    {
        found.push(dropped(
            "topP",
            format!("with thinking on, Anthropic takes a topP of {MIN_TOP_P_WITH_THINKING} to 1"),
        ));
    }
    found
}

/// The refusal of `found`, as a connection that refuses says it: the settings the API has no
/// field for, all at once, else the first other one's reason.
fn refusal(found: &[DroppedSetting]) -> String {
    let no_field: Vec<DroppedSetting> = found
        .iter()
        .filter(|setting| setting.reason == NO_FIELD)
        .cloned()
        .collect();
    if no_field.is_empty() {
        return found
            .first()
            .map(|setting| setting.reason.clone())
            .unwrap_or_default();
    }
    format!(
        "Anthropic's Messages API does not take {}; remove {} from the generation settings",
        names(&no_field),
        if no_field.len() == 1 { "it" } else { "them" }
    )
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
