//! Any JSON value as markdown (result blocks, brief sections, extras), and the joined-text
//! writer the capsule is built with: one string written in order, no string per line.

use serde_json::Value;
use std::borrow::Cow;

/// Shown for `null`.
const NONE: &str = "_None_";
/// Shown for an empty array, object or string.
const NONE_PROVIDED: &str = "_None provided._";

/// Pieces written one after another into one string with `separator` between them: what
/// collecting them and joining them gives, without a string per piece.
pub(super) struct Joined {
    text: String,
    separator: &'static str,
    started: bool,
}

impl Joined {
    pub(super) fn new(separator: &'static str) -> Self {
        Self {
            text: String::new(),
            separator,
            started: false,
        }
    }

    /// Starts the next piece and returns the text to write it into.
    pub(super) fn part(&mut self) -> &mut String {
        if self.started {
            self.text.push_str(self.separator);
        }
        self.started = true;
        &mut self.text
    }

    /// Starts the next piece with `indent` spaces.
    fn indented(&mut self, indent: usize) -> &mut String {
        let text = self.part();
        text.extend(std::iter::repeat_n(' ', indent));
        text
    }

    pub(super) fn into_text(self) -> String {
        self.text
    }
}

/// Renders any JSON value as markdown: strings trimmed, numbers and bools as-is, null as
/// `_None_`, arrays as `- item` lines and objects as `- **key**: value` lines (nested values
/// indented two more spaces), empty containers as `_None provided._`.
pub(crate) fn render_value(value: &Value) -> String {
    match inline(value) {
        Some(text) => text.into_owned(),
        None => {
            let mut lines = Joined::new("\n");
            push_block(value, 0, &mut lines);
            lines.into_text()
        }
    }
}

/// Writes every line of `text` into `out`, `\n` between them, the non-blank ones indented by
/// `indent` spaces (blank ones left empty).
pub(super) fn indent_into(out: &mut String, text: &str, indent: usize) {
    for (index, line) in text.lines().enumerate() {
        if index > 0 {
            out.push('\n');
        }
        if !line.trim().is_empty() {
            out.extend(std::iter::repeat_n(' ', indent));
            out.push_str(line);
        }
    }
}

/// The one-piece rendering of a scalar or an empty container; `None` for a non-empty
/// array or object, which needs a block.
fn inline(value: &Value) -> Option<Cow<'_, str>> {
    match value {
        Value::Null => Some(Cow::Borrowed(NONE)),
        Value::Bool(flag) => Some(Cow::Borrowed(if *flag { "true" } else { "false" })),
        Value::Number(number) => Some(Cow::Owned(number.to_string())),
        Value::String(text) => Some(Cow::Borrowed(match text.trim() {
            "" => NONE_PROVIDED,
            trimmed => trimmed,
        })),
        Value::Array(items) if items.is_empty() => Some(Cow::Borrowed(NONE_PROVIDED)),
        Value::Object(map) if map.is_empty() => Some(Cow::Borrowed(NONE_PROVIDED)),
        Value::Array(_) | Value::Object(_) => None,
    }
}

/// Writes the lines of a non-empty array or object at `indent` spaces.
fn push_block(value: &Value, indent: usize, lines: &mut Joined) {
    match value {
        Value::Array(items) => {
            for item in items {
                match item {
                    // An object in a list reads best as one item: its first key on the dash
                    // line, the others aligned under it.
                    Value::Object(map) if !map.is_empty() => {
                        for (index, (key, inner)) in map.iter().enumerate() {
                            let lead = if index == 0 { "- **" } else { "  **" };
                            push_entry(indent, &[lead, key, "**:"], inner, indent + 4, lines);
                        }
                    }
                    _ => push_entry(indent, &["-"], item, indent + 2, lines),
                }
            }
        }
        Value::Object(map) => {
            for (key, inner) in map {
                push_entry(indent, &["- **", key, "**:"], inner, indent + 2, lines);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {
            if let Some(text) = inline(value) {
                push_item(indent, &[], &text, indent, lines);
            }
        }
    }
}

/// One `marker value` entry at `indent`: the value inline after the marker (its later lines
/// at `inner_indent`), or the marker alone with the value's block at `inner_indent` under it.
fn push_entry(
    indent: usize,
    marker: &[&str],
    inner: &Value,
    inner_indent: usize,
    lines: &mut Joined,
) {
    match inline(inner) {
        Some(text) => push_item(indent, marker, &text, inner_indent, lines),
        None => {
            let line = lines.indented(indent);
            marker.iter().for_each(|piece| line.push_str(piece));
            push_block(inner, inner_indent, lines);
        }
    }
}

/// `marker` and a space (none without a marker) after `indent` spaces, then the first line
/// of `text`; its later lines at `rest_indent` (blank ones left empty).
fn push_item(indent: usize, marker: &[&str], text: &str, rest_indent: usize, lines: &mut Joined) {
    for (index, line) in text.lines().enumerate() {
        if index == 0 {
            let out = lines.indented(indent);
            marker.iter().for_each(|piece| out.push_str(piece));
            if !marker.is_empty() {
                out.push(' ');
            }
            out.push_str(line);
        } else if line.trim().is_empty() {
            lines.part();
        } else {
            lines.indented(rest_indent).push_str(line);
        }
    }
}
