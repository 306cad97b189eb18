//! A profile's `model.fallbacks`: the bindings its agents move to, in order, when their model
//! fails in a way retrying does not fix (docs/profiles.md, "Fallback models").

use serde::{Deserialize, Serialize};

/// One entry of `model.fallbacks`: a named connection and a model on it, as the profile's own
/// `connectionRef` binding names them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FallbackBinding {
    pub connection_ref: String,
    pub model_id: String,
}

/// Most entries of `model.fallbacks`.
pub const MAX_MODEL_FALLBACKS: usize = 8;

/// Checks `model.fallbacks` and `model.fallbackOnRateLimitAfterSeconds` of a profile whose
/// model `can_run` (`agent.profile_model_fallback_invalid`).
pub(super) fn validate_fallbacks(
    fallbacks: &[FallbackBinding],
    rate_limit_bound: Option<u64>,
    can_run: bool,
) -> crate::DomainResult<()> {
    let refuse = |message: String| {
        Err(crate::DomainError::new(
            crate::error_codes::AGENT_PROFILE_MODEL_FALLBACK_INVALID,
            message,
        ))
    };
    if fallbacks.len() > MAX_MODEL_FALLBACKS {
        return refuse(format!(
            "model.fallbacks may name at most {MAX_MODEL_FALLBACKS} bindings"
        ));
    }
    if !can_run && !fallbacks.is_empty() {
        return refuse("model.fallbacks needs a model to fall back from".to_owned());
    }
    for (index, fallback) in fallbacks.iter().enumerate() {
        if fallback.connection_ref.trim().is_empty() || fallback.model_id.trim().is_empty() {
            return refuse(format!(
                "model.fallbacks[{index}] needs both connectionRef and modelId"
            ));
        }
    }
    match rate_limit_bound {
        Some(0) => refuse("model.fallbackOnRateLimitAfterSeconds must be at least 1".to_owned()),
        Some(_) if fallbacks.is_empty() => {
            refuse("model.fallbackOnRateLimitAfterSeconds needs model.fallbacks".to_owned())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use crate::profile::{AgentProfileDefinition, default_writer_definition, validate_profile};

    fn parsed(model: serde_json::Value) -> Result<AgentProfileDefinition, serde_json::Error> {
        let mut json = serde_json::to_value(default_writer_definition()).unwrap();
        for (key, value) in model.as_object().unwrap() {
            json["model"][key] = value.clone();
        }
        serde_json::from_value(json)
    }

    fn code(model: serde_json::Value) -> Option<&'static str> {
        validate_profile(&parsed(model).unwrap())
            .err()
            .map(|e| e.code.as_str())
    }

    #[test]
    fn a_profile_file_names_fallbacks_in_order() {
        let profile = parsed(serde_json::json!({
            "fallbacks": [
                {"connectionRef": "claude", "modelId": "claude-haiku"},
                {"connectionRef": "local", "modelId": "qwen3"},
            ],
            "fallbackOnRateLimitAfterSeconds": 30,
        }))
        .unwrap();
        assert_eq!(validate_profile(&profile).map_err(|e| e.code), Ok(()));
        let names: Vec<(&str, &str)> = profile
            .model
            .fallbacks
            .iter()
            .map(|f| (f.connection_ref.as_str(), f.model_id.as_str()))
            .collect();
        assert_eq!(names, [("claude", "claude-haiku"), ("local", "qwen3")]);
        assert_eq!(profile.model.fallback_on_rate_limit_after_seconds, Some(30));
        // None set: nothing is written.
        let json = serde_json::to_value(default_writer_definition()).unwrap();
        assert!(json["model"].get("fallbacks").is_none(), "{json}");
    }

    #[test]
    fn bad_fallbacks_are_refused_with_their_code() {
        let many: Vec<_> = (0..9)
            .map(|n| serde_json::json!({"connectionRef": format!("c{n}"), "modelId": "m"}))
            .collect();
        for bad in [
            serde_json::json!({"fallbacks": [{"connectionRef": " ", "modelId": "m"}]}),
            serde_json::json!({"fallbacks": [{"connectionRef": "c", "modelId": ""}]}),
            serde_json::json!({"fallbacks": many}),
            serde_json::json!({"fallbackOnRateLimitAfterSeconds": 10}),
            serde_json::json!({"fallbacks": [{"connectionRef": "c", "modelId": "m"}], "fallbackOnRateLimitAfterSeconds": 0}),
            serde_json::json!({"mode": "requiresConfiguration", "fallbacks": [{"connectionRef": "c", "modelId": "m"}]}),
        ] {
            assert_eq!(
                code(bad.clone()),
                Some("agent.profile_model_fallback_invalid"),
                "{bad}"
            );
        }
        for bad in [
            serde_json::json!({"fallbacks": [{"connectionRef": "c"}]}),
            serde_json::json!({"fallbacks": [{"connectionRef": "c", "modelId": "m", "x": 1}]}),
        ] {
            assert!(parsed(bad.clone()).is_err(), "{bad}");
        }
    }
}
