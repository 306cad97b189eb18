//! The domain's error type: every rule violation carries a reference-contract code.
//!
//! Codes are dotted identifiers such as `workspace.invalid_path`; the message says what the caller
//! can change. Display renders `"<code>: <message>"`, the contract's error string form.

use std::fmt;

use crate::error_codes::Code;

/// A coded domain error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct DomainError {
    /// Reference-contract error code, for example `workspace.invalid_path`.
    pub code: Code,
    /// Human readable detail, written for whoever supplied the bad input.
    pub message: String,
}

impl DomainError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

impl fmt::Display for DomainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

pub type DomainResult<T> = Result<T, DomainError>;

/// Splits a contract error string `"<code>: <detail>"` into code and detail when the prefix looks
/// like a code (lowercase ASCII, digits, `.`, `_`, `-`, with at least one `.`).
pub fn split_error_code(text: &str) -> Option<(&str, &str)> {
    let (prefix, rest) = text.split_once(':')?;
    let looks_like_code = prefix.contains('.')
        && !prefix.is_empty()
        && prefix.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'_' || b == b'-'
        });
    looks_like_code.then(|| (prefix, rest.trim_start()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_codes_only_when_prefix_is_code_like() {
        assert_eq!(
            split_error_code("agent.tool_after_finish: late call"),
            Some(("agent.tool_after_finish", "late call"))
        );
        assert_eq!(split_error_code("Plain message: with colon"), None);
        assert_eq!(split_error_code("nodot: x"), None);
    }

    #[test]
    fn display_uses_code_prefix() {
        let err = DomainError::new(crate::error_codes::WORKSPACE_INVALID_PATH, "path is empty");
        assert_eq!(err.to_string(), "workspace.invalid_path: path is empty");
    }
}
