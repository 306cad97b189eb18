//! Text checks over Rust source files: the `//!` module header, printing macros
//! (`println!`, `eprintln!`, `print!`, `eprint!`, `dbg!`) in library code, and the string
//! literals of a file (for the error-code checks).

/// Whether the file starts, after optional blank lines, with a `//!` module doc comment.
pub(crate) fn has_module_header(text: &str) -> bool {
    text.trim_start_matches('\u{feff}')
        .lines()
        .find(|line| !line.trim().is_empty())
        .is_some_and(|line| line.trim_start().starts_with("//!"))
}

/// Longest names first, so `eprintln!` is not also reported as `println!` or `print!`.
const PRINT_MACROS: &[&str] = &["eprintln!", "println!", "eprint!", "print!", "dbg!"];

/// `(1-based line, macro)` for every line that calls a printing macro outside a `//` comment.
pub(crate) fn print_macro_lines(text: &str) -> Vec<(usize, &'static str)> {
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

/// `(1-based line, contents)` of every string literal of `text` outside comments, raw strings
/// included, escapes left as written. A lexer this small is enough because the literals it
/// looks for (error codes) never contain quotes or escapes; it only has to not be fooled by
/// comments, char literals such as `'"'` and lifetimes.
pub(crate) fn string_literals(text: &str) -> Vec<(usize, String)> {
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    let mut line = 1;
    let mut at = 0;
    // Advances over `chars[from..to]`, counting the newlines passed.
    let lines_in = |from: usize, to: usize| {
        chars
            .get(from..to)
            .map_or(0, |part| part.iter().filter(|c| **c == '\n').count())
    };
    while let Some(&c) = chars.get(at) {
        let next = chars.get(at + 1).copied();
        let end = match c {
            '/' if next == Some('/') => chars[at..]
                .iter()
                .position(|c| *c == '\n')
                .map_or(chars.len(), |offset| at + offset),
            '/' if next == Some('*') => block_comment_end(&chars, at),
            '\'' => char_literal_end(&chars, at),
            'r' if starts_raw_string(&chars, at) => {
                let hashes = chars[at + 1..].iter().take_while(|c| **c == '#').count();
                let open = at + 1 + hashes;
                let close = raw_string_close(&chars, open + 1, hashes);
                let contents: String = chars
                    .get(open + 1..close)
                    .unwrap_or_default()
                    .iter()
                    .collect();
                found.push((line, contents));
                (close + 1 + hashes).min(chars.len())
            }
            '"' => {
                let close = string_close(&chars, at + 1);
                let contents: String = chars
                    .get(at + 1..close)
                    .unwrap_or_default()
                    .iter()
                    .collect();
                found.push((line, contents));
                (close + 1).min(chars.len())
            }
            _ => at + 1,
        };
        let end = end.max(at + 1);
        line += lines_in(at, end);
        at = end;
    }
    found
}

/// Whether the `r` at `at` opens a raw string (`r"`, `r#"`, also after `b`), not an identifier.
fn starts_raw_string(chars: &[char], at: usize) -> bool {
    let before = at
        .checked_sub(1)
        .and_then(|i| chars.get(i))
        .copied()
        .unwrap_or(' ');
    let word_before = (before.is_alphanumeric() || before == '_') && before != 'b';
    let after = chars[at + 1..].iter().find(|c| **c != '#');
    !word_before && after == Some(&'"')
}

/// The index of the `"` closing a string whose contents start at `from` (or the end).
fn string_close(chars: &[char], from: usize) -> usize {
    let mut at = from;
    while let Some(&c) = chars.get(at) {
        match c {
            '\\' => at += 2,
            '"' => return at,
            _ => at += 1,
        }
    }
    chars.len()
}

/// The index of the `"` followed by `hashes` `#`s that closes a raw string (or the end).
fn raw_string_close(chars: &[char], from: usize, hashes: usize) -> usize {
    (from..chars.len())
        .find(|&at| {
            chars[at] == '"'
                && chars
                    .get(at + 1..at + 1 + hashes)
                    .is_some_and(|tail| tail.iter().all(|c| *c == '#'))
        })
        .unwrap_or(chars.len())
}

/// Just past the `*/` closing the (possibly nested) block comment opened at `at`.
fn block_comment_end(chars: &[char], at: usize) -> usize {
    let mut depth = 0usize;
    let mut i = at;
    while i + 1 < chars.len() {
        match (chars[i], chars[i + 1]) {
            ('/', '*') => {
                depth += 1;
                i += 2;
            }
            ('*', '/') => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return i;
                }
            }
            _ => i += 1,
        }
    }
    chars.len()
}

/// Just past a char literal opened at `at` (`'x'`, `'\n'`, `'"'`), or just past the `'` of a
/// lifetime or label.
fn char_literal_end(chars: &[char], at: usize) -> usize {
    match (chars.get(at + 1), chars.get(at + 2)) {
        (Some('\\'), _) => chars[at + 2..]
            .iter()
            .skip(1)
            .position(|c| *c == '\'')
            .map_or(chars.len(), |offset| at + 3 + offset + 1),
        (Some(_), Some('\'')) => at + 3,
        _ => at + 1,
    }
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

    #[test]
    fn string_literals_are_found_by_line_outside_comments_and_char_literals() {
        let text = r##"//! Header with "not a literal".
fn f<'a>(x: &'a str) -> char {
    let quote = '"'; let escaped = '\''; // "commented"
    /* "block" /* "nested" */ "still comment" */
    g("agent.not_found", r#"raw "quoted""#, b"bytes");
    let multi = "one
two"; h("model.transient")
}
"##;
        assert_eq!(
            string_literals(text),
            vec![
                (5, "agent.not_found".to_owned()),
                (5, "raw \"quoted\"".to_owned()),
                (5, "bytes".to_owned()),
                (6, "one\ntwo".to_owned()),
                (7, "model.transient".to_owned()),
            ]
        );
    }
}
