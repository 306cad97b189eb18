//! `Violation`: one broken rule found by `cargo xtask tidy`, as `location: rule: detail`. Its
//! own module so that every check (layering, manifests, files) can build one without using
//! tidy back.

use std::fmt;

/// One broken rule, located at a file (relative to the workspace root) or a crate.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Violation {
    pub location: String,
    pub rule: &'static str,
    pub detail: String,
}

impl Violation {
    pub(crate) fn new(location: String, rule: &'static str, detail: String) -> Self {
        Self {
            location,
            rule,
            detail,
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {}", self.location, self.rule, self.detail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn violations_print_location_rule_and_detail() {
        let violation = Violation::new(
            "crates/x/src/lib.rs".to_owned(),
            "module-header",
            "missing".to_owned(),
        );
        assert_eq!(
            violation.to_string(),
            "crates/x/src/lib.rs: module-header: missing"
        );
    }
}
