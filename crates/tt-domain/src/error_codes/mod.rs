//! The one list of error codes: every code the runtime, its adapters and the host HTTP server
//! put on the wire, with its [`ErrorClass`] and a one-line meaning for host developers.
//!
//! Behaviour that depends on a code (is it a model slip, may the user retry) asks the class
//! here instead of comparing strings, so a new code forces one decision in one place.
//! `cargo xtask tidy` checks that every code literal in the crates is listed here, that every
//! entry is used, and that `docs/errors.md` (generated from this list) is current.

mod agent;
mod host;
mod mcp;
mod model;
mod tools;

pub use agent::*;
pub use host::*;
pub use mcp::*;
pub use model::*;
pub use tools::*;

/// What a code means for whoever handles it: who caused it and what happens next.
///
/// Matches on it are exhaustive, so a new class forces a decision wherever codes are handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ErrorClass {
    /// The model's call had the wrong shape (no such tool, arguments that are not one JSON
    /// object, a path that is no workspace path, too many calls at once). It goes back to the
    /// model as a tool error and counts toward `limits.maxConsecutiveSlips`.
    ModelSlip,
    /// A tool refused a well-formed call (file missing, stale read, policy, budget). It goes
    /// back to the model as a tool error; the agent goes on.
    ToolRefusal,
    /// The agent failed because the model left the tool protocol or time ran out; the same
    /// request may well succeed if the user retries.
    UserRetryable,
    /// An agent ended in a way its role does not allow (a delegated agent finishing or handing
    /// off, the root returning a task result); the agent fails.
    RoleViolation,
    /// The model provider failed in a way that may pass (rate limit, transient upstream
    /// failure, unreadable reply): retried per `run.modelRetry`, then the agent fails and the
    /// user may retry.
    ProviderTransient,
    /// The model provider refused the request or cannot answer it; retrying the same request
    /// will not help.
    Provider,
    /// A token, cost or call budget of the run or a task ran out; the agent stops and its
    /// written work is kept.
    Budget,
    /// The host called the API wrongly: an unknown id, an answer to nothing pending, a request
    /// for a run in the wrong state, a malformed argument.
    HostContract,
    /// A profile, model binding or runtime setting is invalid; fix the configuration.
    Configuration,
    /// A host bridge (chat commit, prompt assembly, persistent-state metadata) failed, refused
    /// or went away.
    HostBridge,
    /// The store failed or holds data the runtime cannot use; nothing already written is lost.
    Storage,
    /// The run or the agent was cancelled.
    Cancelled,
    /// A broken invariant inside the runtime: a bug to report.
    Internal,
}

impl ErrorClass {
    /// Every class, in the order `docs/errors.md` lists them.
    pub const ALL: [ErrorClass; 13] = [
        ErrorClass::ModelSlip,
        ErrorClass::ToolRefusal,
        ErrorClass::UserRetryable,
        ErrorClass::RoleViolation,
        ErrorClass::ProviderTransient,
        ErrorClass::Provider,
        ErrorClass::Budget,
        ErrorClass::HostContract,
        ErrorClass::Configuration,
        ErrorClass::HostBridge,
        ErrorClass::Storage,
        ErrorClass::Cancelled,
        ErrorClass::Internal,
    ];

    /// The heading of the class in `docs/errors.md`.
    pub fn title(self) -> &'static str {
        match self {
            ErrorClass::ModelSlip => "Model slips",
            ErrorClass::ToolRefusal => "Tool refusals",
            ErrorClass::UserRetryable => "User-retryable failures",
            ErrorClass::RoleViolation => "Role violations",
            ErrorClass::ProviderTransient => "Transient provider failures",
            ErrorClass::Provider => "Provider failures",
            ErrorClass::Budget => "Budgets",
            ErrorClass::HostContract => "Host contract",
            ErrorClass::Configuration => "Configuration",
            ErrorClass::HostBridge => "Host bridges",
            ErrorClass::Storage => "Storage",
            ErrorClass::Cancelled => "Cancellation",
            ErrorClass::Internal => "Internal",
        }
    }

    /// What a host developer should know about every code of the class.
    pub fn meaning(self) -> &'static str {
        match self {
            ErrorClass::ModelSlip => {
                "The model's call had the wrong shape. It goes back to the model as a tool error (`isError`, `errorCode`) and the agent goes on; past `limits.maxConsecutiveSlips` slips in a row the agent fails with the same code."
            }
            ErrorClass::ToolRefusal => {
                "A tool refused a well-formed call. It goes back to the model as a tool error (`isError`, `errorCode`) with a message saying what to do instead; the agent goes on."
            }
            ErrorClass::UserRetryable => {
                "The agent failed because the model left the tool protocol or time ran out. `run_failed.userRetryable` is true: the same request may succeed if sent again."
            }
            ErrorClass::RoleViolation => {
                "An agent ended in a way its role does not allow. The agent fails; its written work is kept."
            }
            ErrorClass::ProviderTransient => {
                "The model provider failed in a way that may pass. The call is retried per `run.modelRetry`; if it still fails the agent fails, with `retryable` and `userRetryable` true."
            }
            ErrorClass::Provider => {
                "The model provider refused the request or cannot answer it. The agent fails; sending the same request again will not help."
            }
            ErrorClass::Budget => {
                "A budget of the run or of a task ran out. The agent stops; what it wrote is kept (a task ends `failed`, its partial work listed)."
            }
            ErrorClass::HostContract => {
                "The host called the API wrongly, or at the wrong time. Nothing changed; fix the call."
            }
            ErrorClass::Configuration => {
                "A profile, model binding or runtime setting is invalid. Fix the configuration; the message names the field."
            }
            ErrorClass::HostBridge => {
                "A host bridge (chat commit, prompt assembly, persistent-state metadata) failed, refused or went away. The agent that waited on it fails."
            }
            ErrorClass::Storage => {
                "The store failed or holds data the runtime cannot use. The operation fails; nothing already written is lost."
            }
            ErrorClass::Cancelled => "The run or the agent was cancelled.",
            ErrorClass::Internal => {
                "A broken invariant inside the runtime. Please report it with the run's journal."
            }
        }
    }

    /// Whether a code of this class goes back to the model as a tool result instead of
    /// failing the agent.
    pub fn goes_back_to_model(self) -> bool {
        self.handling().0
    }

    /// Whether a user may sensibly press "retry" after an agent failed with a code of this
    /// class (`run_failed.userRetryable`).
    pub fn is_user_retryable(self) -> bool {
        self.handling().1
    }

    /// How a code of this class is handled, one decision a class: (goes back to the model,
    /// the user may retry).
    fn handling(self) -> (bool, bool) {
        match self {
            ErrorClass::ModelSlip | ErrorClass::ToolRefusal => (true, false),
            ErrorClass::UserRetryable | ErrorClass::ProviderTransient => (false, true),
            ErrorClass::RoleViolation
            | ErrorClass::Provider
            | ErrorClass::Budget
            | ErrorClass::HostContract
            | ErrorClass::Configuration
            | ErrorClass::HostBridge
            | ErrorClass::Storage
            | ErrorClass::Cancelled
            | ErrorClass::Internal => (false, false),
        }
    }
}

/// A listed code. Only the list's constants make one (its field is private to this module), so
/// an error raised with a code that is not listed does not compile; [`Code::parse`] turns a
/// stored or received string back into one.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Code(&'static str);

impl Code {
    /// The code as it travels on the wire, for example `workspace.path_not_visible`.
    pub const fn as_str(self) -> &'static str {
        self.0
    }

    /// The listed code `text` spells, if it is one (a code read back from a journal or a wire).
    pub fn parse(text: &str) -> Option<Code> {
        lookup(text).map(|entry| Code(entry.code))
    }

    /// The entry of the list this code is.
    pub fn entry(self) -> &'static ErrorCode {
        // Every `Code` comes from the list, so the lookup finds it; the fallback only keeps
        // the function total.
        lookup(self.0).unwrap_or(&INTERNAL_FALLBACK)
    }

    /// The code's class.
    pub fn class(self) -> ErrorClass {
        self.entry().class
    }
}

/// Never reached: what [`Code::entry`] answers if the list and its constants ever disagree.
const INTERNAL_FALLBACK: ErrorCode = ErrorCode {
    code: agent::AGENT_INTERNAL_ERROR.0,
    class: ErrorClass::Internal,
    meaning: "A broken invariant inside the runtime.",
    constant: "AGENT_INTERNAL_ERROR",
};

impl std::fmt::Debug for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.0, f)
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        self.0
    }
}

impl From<Code> for &'static str {
    fn from(code: Code) -> Self {
        code.0
    }
}

impl From<Code> for String {
    fn from(code: Code) -> Self {
        code.0.to_owned()
    }
}

impl PartialEq<str> for Code {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for Code {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<Code> for &str {
    fn eq(&self, other: &Code) -> bool {
        *self == other.0
    }
}

impl PartialEq<Code> for str {
    fn eq(&self, other: &Code) -> bool {
        self == other.0
    }
}

impl PartialEq<String> for Code {
    fn eq(&self, other: &String) -> bool {
        self.0 == other
    }
}

impl PartialEq<Code> for String {
    fn eq(&self, other: &Code) -> bool {
        self == other.0
    }
}

impl serde::Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0)
    }
}

/// One entry of the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorCode {
    /// The code as it travels on the wire, for example `workspace.path_not_visible`.
    pub code: &'static str,
    pub class: ErrorClass,
    /// One line for a host developer: when the code happens.
    pub meaning: &'static str,
    /// The name of the Rust constant holding the code (`WORKSPACE_PATH_NOT_VISIBLE`), so
    /// `cargo xtask tidy` can tell whether an entry is used.
    pub constant: &'static str,
}

/// Declares one constant per code and the slice of entries of one file of the list.
macro_rules! error_codes {
    ($($name:ident = $code:literal, $class:ident, $meaning:literal;)*) => {
        $(
            #[doc = $meaning]
            pub const $name: super::Code = super::Code($code);
        )*

        pub(super) const CODES: &[super::ErrorCode] = &[$(super::ErrorCode {
            code: $name.0,
            class: super::ErrorClass::$class,
            meaning: $meaning,
            constant: stringify!($name),
        },)*];
    };
}
use error_codes;

/// Every code, grouped by the file that lists it.
pub fn all() -> impl Iterator<Item = &'static ErrorCode> {
    agent::CODES
        .iter()
        .chain(tools::CODES)
        .chain(model::CODES)
        .chain(host::CODES)
        .chain(mcp::CODES)
}

/// The entry of `code`, if it is one.
pub fn lookup(code: &str) -> Option<&'static ErrorCode> {
    all().find(|entry| entry.code == code)
}

/// The class of `code`; `None` for a string that is no listed code.
pub fn class_of(code: &str) -> Option<ErrorClass> {
    lookup(code).map(|entry| entry.class)
}

/// Whether `code` is a model slip (counts toward `limits.maxConsecutiveSlips`).
pub fn is_model_slip(code: &str) -> bool {
    class_of(code) == Some(ErrorClass::ModelSlip)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_code_is_listed_once_under_its_own_constant_name() {
        let mut seen = BTreeSet::new();
        for entry in all() {
            assert!(seen.insert(entry.code), "{} is listed twice", entry.code);
            let expected = entry.code.replace('.', "_").to_uppercase();
            assert_eq!(entry.constant, expected, "{}", entry.code);
        }
    }

    #[test]
    fn codes_are_dotted_snake_case_and_meanings_are_one_sentence_line() {
        for entry in all() {
            let (prefix, name) = entry.code.split_once('.').unwrap_or_default();
            let snake = |part: &str| {
                !part.is_empty() && part.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
            };
            assert!(snake(prefix) && snake(name), "{}", entry.code);
            assert!(entry.meaning.ends_with('.'), "{}", entry.code);
            assert!(!entry.meaning.contains('\n'), "{}", entry.code);
            assert!(entry.meaning.len() <= 200, "{}", entry.code);
        }
    }

    #[test]
    fn every_class_has_codes() {
        for class in ErrorClass::ALL {
            assert!(all().any(|entry| entry.class == class), "{class:?}");
        }
    }

    /// These classes decide behaviour (slip counting, `userRetryable`, provider retries): moving
    /// a code into or out of one changes what the runtime does, so it must change this test too.
    #[test]
    fn the_classes_behaviour_depends_on_hold_exactly_these_codes() {
        let of = |class: ErrorClass| {
            let mut codes: Vec<&str> = all()
                .filter(|entry| entry.class == class)
                .map(|entry| entry.code)
                .collect();
            codes.sort_unstable();
            codes
        };
        assert_eq!(
            of(ErrorClass::ModelSlip),
            [
                "model.invalid_tool_call",
                "model.too_many_tool_calls",
                "model.unknown_tool_call",
                "workspace.invalid_path",
            ]
        );
        assert_eq!(
            of(ErrorClass::UserRetryable),
            [
                "agent.inactivity_timeout",
                "agent.invocation_deadline_exceeded",
                "agent.max_tool_rounds_exceeded",
                "agent.return_rejected",
                "agent.return_revisions_spent",
                "agent.run_deadline_exceeded",
                "agent.tool_after_finish",
                "model.tool_call_required",
            ]
        );
        assert_eq!(
            of(ErrorClass::ProviderTransient),
            [
                "agent.rate_limited",
                "agent.transient",
                "model.fallbacks_exhausted",
                "model.provider_rate_limited",
                "model.timeout",
                "model.transient",
                "model.upstream_invalid_response",
            ]
        );
    }

    #[test]
    fn lookups_find_listed_codes_only() {
        assert_eq!(
            class_of(MODEL_UNKNOWN_TOOL_CALL.as_str()),
            Some(ErrorClass::ModelSlip)
        );
        assert_eq!(class_of("agent.no_such_code"), None);
        assert!(is_model_slip(WORKSPACE_INVALID_PATH.as_str()));
        assert!(!is_model_slip(WORKSPACE_PATH_NOT_VISIBLE.as_str()));
        assert!(!is_model_slip("agent.list"));
        assert_eq!(
            lookup(AGENT_NOT_FOUND.as_str()).map(|entry| entry.constant),
            Some("AGENT_NOT_FOUND")
        );
    }
}
