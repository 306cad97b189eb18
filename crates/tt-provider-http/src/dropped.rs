//! Generation settings a connection drops instead of refusing (`UnsupportedSettings::Drop`):
//! the adapters find what their API does not take, and this leaves it out of a request.

use tt_domain::generation::GenerationSettings;
use tt_ports::{DroppedSetting, ModelError, UnsupportedSettings};

/// `found` (settings the API does not take, with why) as a connection in `mode` answers them:
/// refused with `refusal` (the adapter's message naming them all) or dropped.
pub fn settle(
    found: Vec<DroppedSetting>,
    mode: UnsupportedSettings,
    refusal: impl FnOnce(&[DroppedSetting]) -> String,
) -> Result<Vec<DroppedSetting>, ModelError> {
    match mode {
        _ if found.is_empty() => Ok(found),
        UnsupportedSettings::Refuse => Err(ModelError::SettingUnsupported {
            message: refusal(&found),
        }),
        UnsupportedSettings::Drop => Ok(found),
    }
}

/// A [`DroppedSetting`] for `setting`, `reason` as given.
pub fn dropped(setting: &str, reason: impl Into<String>) -> DroppedSetting {
    DroppedSetting {
        setting: setting.to_owned(),
        reason: reason.into(),
    }
}

/// `settings` without each of `dropped` (by its name in the generation settings).
pub fn without(settings: &GenerationSettings, dropped: &[DroppedSetting]) -> GenerationSettings {
    let mut kept = settings.clone();
    for setting in dropped {
        match setting.setting.as_str() {
            "temperature" => kept.temperature = None,
            "topP" => kept.top_p = None,
            "topK" => kept.top_k = None,
            "minP" => kept.min_p = None,
            "frequencyPenalty" => kept.frequency_penalty = None,
            "presencePenalty" => kept.presence_penalty = None,
            "repetitionPenalty" => kept.repetition_penalty = None,
            "stop" => kept.stop = None,
            "seed" => kept.seed = None,
            "reasoningEffort" => kept.reasoning_effort = None,
            "thinkingBudgetTokens" => kept.thinking_budget_tokens = None,
            _ => {}
        }
    }
    kept
}

/// `seed, topK`: the names of `found`, joined.
pub fn names(found: &[DroppedSetting]) -> String {
    found
        .iter()
        .map(|setting| setting.setting.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropped_settings_leave_the_rest() {
        let settings = GenerationSettings {
            seed: Some(7),
            temperature: Some(0.5),
            top_k: Some(40),
            ..GenerationSettings::default()
        };
        let kept = without(&settings, &[dropped("seed", "x"), dropped("topK", "y")]);
        assert_eq!(
            kept,
            GenerationSettings {
                temperature: Some(0.5),
                ..GenerationSettings::default()
            }
        );
        let refused = settle(
            vec![dropped("seed", "x")],
            UnsupportedSettings::Refuse,
            |found| format!("no {}", names(found)),
        );
        assert!(
            matches!(refused, Err(ModelError::SettingUnsupported { message }) if message == "no seed")
        );
        let kept = settle(
            vec![dropped("seed", "x")],
            UnsupportedSettings::Drop,
            |_| String::new(),
        )
        .unwrap();
        assert_eq!(kept.len(), 1);
    }
}
