//! A profile's `model.cache`: how long the provider keeps the agent's prompt cache
//! (docs/profiles.md, "Prompt cache lifetime").

use serde::{Deserialize, Serialize};

use crate::model::CacheTtl;

/// A profile's `model.cache`. Absent: the provider's default lifetime.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelCachePolicy {
    /// `default` (the provider's own lifetime) or `1h`. Kept as a string so validation can
    /// report a bad value with its code (`agent.profile_model_cache_invalid`).
    pub ttl: Option<String>,
}

impl ModelCachePolicy {
    /// Nothing set: the section is left out of a written profile.
    pub fn is_default(&self) -> bool {
        self.ttl.is_none()
    }

    /// The lifetime the profile asks for; the provider's default when absent (or, before
    /// validation, invalid).
    pub fn ttl(&self) -> CacheTtl {
        self.ttl
            .as_deref()
            .and_then(CacheTtl::parse)
            .unwrap_or_default()
    }
}

/// Checks `model.cache` (`agent.profile_model_cache_invalid`).
pub(super) fn validate_cache(cache: &ModelCachePolicy) -> crate::DomainResult<()> {
    match cache.ttl.as_deref() {
        Some(ttl) if CacheTtl::parse(ttl).is_none() => Err(crate::DomainError::new(
            crate::error_codes::AGENT_PROFILE_MODEL_CACHE_INVALID,
            format!("model.cache.ttl must be `default` or `1h`, not `{ttl}`"),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{default_writer_definition, validate_profile};

    fn with_cache(cache: serde_json::Value) -> serde_json::Value {
        let mut json = serde_json::to_value(default_writer_definition()).unwrap();
        json["model"]["cache"] = cache;
        json
    }

    #[test]
    fn a_profile_file_sets_an_hour_or_the_default() {
        for (cache, ttl) in [
            (serde_json::json!({"ttl": "1h"}), CacheTtl::OneHour),
            (
                serde_json::json!({"ttl": "default"}),
                CacheTtl::ProviderDefault,
            ),
            (serde_json::json!({}), CacheTtl::ProviderDefault),
        ] {
            let parsed: crate::profile::AgentProfileDefinition =
                serde_json::from_value(with_cache(cache.clone())).unwrap();
            assert_eq!(validate_profile(&parsed).map_err(|e| e.code), Ok(()));
            assert_eq!(parsed.model.cache.ttl(), ttl, "{cache}");
        }
        assert_eq!(CacheTtl::OneHour.requested(), Some(CacheTtl::OneHour));
        assert_eq!(CacheTtl::ProviderDefault.requested(), None);
        // Unset, the section is left out of a written profile (journals stay as they were).
        let json = serde_json::to_value(default_writer_definition()).unwrap();
        assert!(json["model"].get("cache").is_none(), "{json}");
        let parsed: crate::profile::AgentProfileDefinition =
            serde_json::from_value(with_cache(serde_json::json!({"ttl": "1h"}))).unwrap();
        assert_eq!(
            serde_json::to_value(&parsed).unwrap()["model"]["cache"],
            serde_json::json!({"ttl": "1h"})
        );
    }

    #[test]
    fn a_bad_lifetime_is_refused_with_its_code() {
        for bad in ["5m", "1H", "", "3600"] {
            let parsed: crate::profile::AgentProfileDefinition =
                serde_json::from_value(with_cache(serde_json::json!({"ttl": bad}))).unwrap();
            let refused = validate_profile(&parsed).unwrap_err();
            assert_eq!(refused.code, "agent.profile_model_cache_invalid", "{bad}");
            assert!(refused.message.contains("model.cache.ttl"), "{refused}");
        }
        // Unknown fields and a ttl that is not a string do not parse at all.
        for bad in [
            serde_json::json!({"ttl": "1h", "mode": "x"}),
            serde_json::json!({"ttl": 3600}),
        ] {
            assert!(
                serde_json::from_value::<crate::profile::AgentProfileDefinition>(with_cache(
                    bad.clone()
                ))
                .is_err(),
                "{bad}"
            );
        }
    }
}
