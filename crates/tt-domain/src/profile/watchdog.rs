//! A profile's `limits.watchdog`: how long one of its agents may go without activity before a
//! warning is journaled, and how long after the warning it is stopped (docs/profiles.md,
//! "Inactivity watchdog").

use serde::{Deserialize, Serialize};

/// Upper bound of each watchdog limit: 7 days, as the other time limits of a profile.
pub const MAX_WATCHDOG_SECONDS: u64 = 7 * 24 * 3600;

/// `limits.watchdog`: an agent with no activity (no model output, no tool result, no event of
/// its own) for `warnAfterSeconds` gets a warning in the journal; with `stopAfterSeconds`, one
/// still without activity that long after the warning fails (`agent.inactivity_timeout`).
/// Time the agent waits for a person or for its delegated tasks does not count.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WatchdogLimits {
    pub warn_after_seconds: u64,
    /// Counted from the warning; unset: the agent is only warned.
    pub stop_after_seconds: Option<u64>,
}

/// Checks `limits.watchdog` (`agent.profile_limit_invalid`): each limit 1 to
/// [`MAX_WATCHDOG_SECONDS`].
pub(super) fn validate_watchdog(watchdog: Option<&WatchdogLimits>) -> crate::DomainResult<()> {
    let Some(watchdog) = watchdog else {
        return Ok(());
    };
    for (name, value) in [
        ("warnAfterSeconds", Some(watchdog.warn_after_seconds)),
        ("stopAfterSeconds", watchdog.stop_after_seconds),
    ] {
        if value.is_some_and(|seconds| seconds == 0 || seconds > MAX_WATCHDOG_SECONDS) {
            return Err(crate::DomainError::new(
                crate::error_codes::AGENT_PROFILE_LIMIT_INVALID,
                format!("limits.watchdog.{name} must be > 0 and <= {MAX_WATCHDOG_SECONDS}"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{AgentProfileDefinition, default_writer_definition, validate_profile};

    fn parsed(watchdog: serde_json::Value) -> Result<AgentProfileDefinition, serde_json::Error> {
        let mut json = serde_json::to_value(default_writer_definition()).unwrap();
        json["limits"]["watchdog"] = watchdog;
        serde_json::from_value(json)
    }

    #[test]
    fn a_profile_file_sets_a_warning_and_a_stop() {
        let profile =
            parsed(serde_json::json!({"warnAfterSeconds": 300, "stopAfterSeconds": 120})).unwrap();
        assert_eq!(validate_profile(&profile).map_err(|e| e.code), Ok(()));
        assert_eq!(
            profile.limits.watchdog,
            Some(WatchdogLimits {
                warn_after_seconds: 300,
                stop_after_seconds: Some(120)
            })
        );
        let warn_only = parsed(serde_json::json!({"warnAfterSeconds": 60})).unwrap();
        assert_eq!(warn_only.limits.watchdog.unwrap().stop_after_seconds, None);
        // Unset, nothing is written (journals of runs without it stay as they were).
        let json = serde_json::to_value(default_writer_definition()).unwrap();
        assert!(json["limits"].get("watchdog").is_none(), "{json}");
    }

    #[test]
    fn limits_out_of_range_are_refused_with_their_code() {
        for bad in [
            serde_json::json!({"warnAfterSeconds": 0}),
            serde_json::json!({"warnAfterSeconds": 10, "stopAfterSeconds": 0}),
            serde_json::json!({"warnAfterSeconds": MAX_WATCHDOG_SECONDS + 1}),
        ] {
            let refused = validate_profile(&parsed(bad.clone()).unwrap()).unwrap_err();
            assert_eq!(refused.code, "agent.profile_limit_invalid", "{bad}");
            assert!(refused.message.contains("limits.watchdog."), "{refused}");
        }
        for bad in [
            serde_json::json!({}),
            serde_json::json!({"warnAfterSeconds": -1}),
            serde_json::json!({"warnAfterSeconds": 5, "idle": 3}),
        ] {
            assert!(parsed(bad.clone()).is_err(), "{bad}");
        }
    }
}
