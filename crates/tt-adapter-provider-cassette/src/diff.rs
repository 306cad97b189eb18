//! A readable difference between a recorded request and the one made now: the paths of the
//! first fields that differ, with a short excerpt of each side.

use serde_json::Value;

/// At most this many differences are named.
const MAX_DIFFERENCES: usize = 3;
/// Characters of context shown around the first differing character of a string.
const EXCERPT: usize = 40;

/// The first differences (at most three) between `recorded` and `now`, one line each:
/// `path: recorded … now …`.
pub fn describe(recorded: &Value, now: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk("", recorded, now, &mut out);
    out
}

fn walk(path: &str, recorded: &Value, now: &Value, out: &mut Vec<String>) {
    if out.len() >= MAX_DIFFERENCES || recorded == now {
        return;
    }
    match (recorded, now) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, left) in a {
                let at = join(path, key);
                match b.get(key) {
                    Some(right) => walk(&at, left, right, out),
                    None => out.push(format!("{at}: recorded {}, now absent", short(left))),
                }
                if out.len() >= MAX_DIFFERENCES {
                    return;
                }
            }
            for (key, right) in b {
                if !a.contains_key(key) && out.len() < MAX_DIFFERENCES {
                    out.push(format!(
                        "{}: not recorded, now {}",
                        join(path, key),
                        short(right)
                    ));
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (index, (left, right)) in a.iter().zip(b).enumerate() {
                walk(&format!("{path}[{index}]"), left, right, out);
                if out.len() >= MAX_DIFFERENCES {
                    return;
                }
            }
            if a.len() != b.len() {
                out.push(format!(
                    "{}: recorded {} items, now {}",
                    display_path(path),
                    a.len(),
                    b.len()
                ));
            }
        }
        (Value::String(a), Value::String(b)) => out.push(format!(
            "{}: {}",
            display_path(path),
            string_difference(a, b)
        )),
        _ => out.push(format!(
            "{}: recorded {}, now {}",
            display_path(path),
            short(recorded),
            short(now)
        )),
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn display_path(path: &str) -> &str {
    if path.is_empty() {
        "(the request)"
    } else {
        path
    }
}

/// Both strings around their first differing character.
fn string_difference(a: &str, b: &str) -> String {
    let common = a
        .char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map_or_else(|| a.len().min(b.len()), |((index, _), _)| index);
    let start = floor_char_boundary(a, common.saturating_sub(EXCERPT / 2));
    let excerpt = |text: &str| {
        if text.chars().count() <= EXCERPT * 2 {
            return format!("\"{text}\"");
        }
        let start = floor_char_boundary(text, start.min(text.len()));
        let end = floor_char_boundary(text, (common + EXCERPT).min(text.len()));
        let prefix = if start > 0 { "…" } else { "" };
        let suffix = if end < text.len() { "…" } else { "" };
        format!("\"{prefix}{}{suffix}\"", &text[start..end])
    };
    format!(
        "differs at character {}: recorded {}, now {}",
        a[..common].chars().count(),
        excerpt(a),
        excerpt(b)
    )
}

fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    while index > 0 && !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= EXCERPT * 2 {
        text
    } else {
        format!("{}…", text.chars().take(EXCERPT * 2).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_the_changed_field_with_both_sides() {
        let recorded =
            json!({"round": 2, "messages": [{"parts": [{"text": "Write a scene about a lamp."}]}]});
        let now =
            json!({"round": 2, "messages": [{"parts": [{"text": "Write a scene about a lake."}]}]});
        assert_eq!(
            describe(&recorded, &now),
            [
                "messages[0].parts[0].text: differs at character 24: recorded \"Write a scene about a lamp.\", now \"Write a scene about a lake.\""
            ]
        );
    }

    #[test]
    fn added_removed_and_resized_fields() {
        let recorded = json!({"a": 1, "list": [1, 2], "gone": true});
        let now = json!({"a": 2, "list": [1, 2, 3], "new": "x"});
        assert_eq!(
            describe(&recorded, &now),
            [
                "a: recorded 1, now 2",
                "list: recorded 2 items, now 3",
                "gone: recorded true, now absent",
            ]
        );
    }

    #[test]
    fn long_strings_show_an_excerpt_around_the_change() {
        let base = "x".repeat(200);
        let recorded = json!(format!("{base}AAA{base}"));
        let now = json!(format!("{base}BBB{base}"));
        let lines = describe(&recorded, &now);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].starts_with("(the request): differs at character 200: recorded \"…"));
        assert!(lines[0].contains("AAA") && lines[0].contains("BBB"));
    }
}
