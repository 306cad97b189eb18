//! Text checks over Rust source files: the `//!` module header, and printing macros
//! (`println!`, `eprintln!`, `print!`, `eprint!`, `dbg!`) in library code.

/// Whether the file starts, after optional blank lines, with a `//!` module doc comment.
pub fn has_module_header(text: &str) -> bool {
    text.trim_start_matches('\u{feff}')
        .lines()
        .find(|line| !line.trim().is_empty())
        .is_some_and(|line| line.trim_start().starts_with("//!"))
}

/// Longest names first, so `eprintln!` is not also reported as `println!` or `print!`.
const PRINT_MACROS: &[&str] = &["eprintln!", "println!", "eprint!", "print!", "dbg!"];

/// `(1-based line, macro)` for every line that calls a printing macro outside a `//` comment.
pub fn print_macro_lines(text: &str) -> Vec<(usize, &'static str)> {
    text.lines()
        .enumerate()
        .filter_map(|(index, line)| {
            let code = strip_line_comment(line);
            PRINT_MACROS
                .iter()
                .find(|name| calls_macro(code, name))
                .map(|name| (index + 1, *name))
        })
        .collect()
}

/// Finds `name` as a whole identifier (not as the tail of `my_println!` or `eprintln!`).
fn calls_macro(code: &str, name: &str) -> bool {
    code.match_indices(name).any(|(at, _)| {
        code.get(..at)
            .and_then(|before| before.chars().next_back())
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
    })
}

/// Drops a `//` comment, leaving `//` inside a string literal alone.
fn strip_line_comment(line: &str) -> &str {
    let mut in_string = false;
    let mut escaped = false;
    let mut previous_slash = false;
    for (at, c) in line.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '/' if previous_slash => return line.get(..at.saturating_sub(1)).unwrap_or(line),
            _ => {}
        }
        previous_slash = c == '/';
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_must_come_first_but_blank_lines_are_fine() {
        assert!(has_module_header("//! What this is for.\nfn f() {}\n"));
        assert!(has_module_header("\n\n   \n//! Header after blanks.\n"));
        assert!(has_module_header("\u{feff}//! Header after a BOM.\n"));
        assert!(!has_module_header("// A plain comment.\n//! Too late.\n"));
        assert!(!has_module_header("/// An item doc.\nfn f() {}\n"));
        assert!(!has_module_header("use std::fs;\n//! Too late.\n"));
        assert!(!has_module_header("#![allow(dead_code)]\n//! Too late.\n"));
        assert!(!has_module_header(""));
    }

    #[test]
    fn printing_macros_are_found_by_line() {
        let text = "\
//! Module.
fn f() {
    println!(\"a\");
    let x = dbg!(1);
    eprintln!(\"b\"); eprint!(\"c\");
    print!(\"d\");
    writeln!(out, \"fine\")?;
}
";
        assert_eq!(
            print_macro_lines(text),
            vec![
                (3, "println!"),
                (4, "dbg!"),
                (5, "eprintln!"),
                (6, "print!")
            ]
        );
    }

    #[test]
    fn comments_and_lookalike_macros_are_ignored() {
        let text = "\
//! Never println! in library code.
/// Unlike `println!`, this goes through the journal.
fn f() {
    my_println!(\"custom macro\");
    log(\"https://example.invalid\"); // println!(\"commented out\")
}
";
        assert_eq!(print_macro_lines(text), Vec::new());
    }

    #[test]
    fn a_string_with_slashes_does_not_hide_code_after_it() {
        let text = "let url = \"a//b\"; println!(\"{url}\");\n";
        assert_eq!(print_macro_lines(text), vec![(1, "println!")]);
    }
}
