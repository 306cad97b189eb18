//! T12, `glob-export`: the host-facing crate (`tt-runtime`) names what it re-exports. A glob
//! (`pub use x::*;`) would make every public item of the module it names part of the crate's
//! API, including items added later for the crate's own use, so a host's import list could grow
//! or break without anyone choosing to.

use crate::violation::Violation;

/// The source folders whose `pub use` may not end in `*`.
pub(crate) const NAMED_EXPORT_SRC: &[&str] = &["crates/tt-runtime/src"];

/// Each `pub use …::*;` of `text` (non-test code), located at `path:line`.
pub(crate) fn glob_export_violations(
    path: &str,
    text: &str,
    test_lines: &[bool],
) -> Vec<Violation> {
    let mut violations = Vec::new();
    let mut statement = String::new();
    let mut start = 0;
    for (index, line) in text.lines().enumerate() {
        if test_lines.get(index).copied().unwrap_or(false) {
            continue;
        }
        let code = line.split("//").next().unwrap_or_default().trim();
        if statement.is_empty() {
            if !(code.starts_with("pub use ") || code.starts_with("pub(crate) use ")) {
                continue;
            }
            start = index + 1;
        }
        statement.push_str(code);
        if !code.ends_with(';') {
            continue;
        }
        if statement.starts_with("pub use ") && names_a_glob(&statement) {
            violations.push(Violation::new(
                format!("{path}:{start}"),
                "glob-export",
                "a glob re-export from the host-facing crate; name each item it exports".to_owned(),
            ));
        }
        statement.clear();
    }
    violations
}

/// Whether a `use` statement ends a path in `*` (`a::*`, `a::{b, c::*}`).
fn names_a_glob(statement: &str) -> bool {
    statement.contains("::*")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_public_glob_is_named_and_private_or_named_re_exports_pass() {
        let text = "//! M.\npub use a::{B, C};\npub use d::*;\nuse e::*;\npub(crate) use f::*;\npub use g::{\n    H,\n    i::*,\n};\n#[cfg(test)]\nmod tests {\n    pub use j::*;\n}\n";
        let tests = crate::module_graph::test_code_lines(text);
        let shown: Vec<String> =
            glob_export_violations("crates/tt-runtime/src/lib.rs", text, &tests)
                .iter()
                .map(ToString::to_string)
                .collect();
        assert_eq!(
            shown,
            [
                "crates/tt-runtime/src/lib.rs:3: glob-export: a glob re-export from the host-facing crate; name each item it exports",
                "crates/tt-runtime/src/lib.rs:6: glob-export: a glob re-export from the host-facing crate; name each item it exports",
            ]
        );
    }
}
