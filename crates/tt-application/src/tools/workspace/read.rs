//! `workspace.read_file {path, start_line?, line_count?, start_char?, max_chars?}`: a whole file
//! or a line/char range as numbered lines under a header, recording what was returned in the
//! agent's read-state (whole-file version, or the exact partial text).

use serde_json::{Value, json};
use tt_domain::error_codes;
use tt_domain::text::{char_count, truncate_chars, word_count};
use tt_domain::workspace::WorkspacePath;

use super::env::{
    MAX_PARTIAL_READ_CHARS, MAX_READ_BYTES, MAX_READ_LINES, StorageOp, WorkspaceToolEnv, file_ref,
    storage_failure,
};
use crate::error::{ToolCallError, ToolError};
use crate::tools::ToolSuccess;
use crate::tools::args::Args;

pub(super) async fn read_file(
    args: &Value,
    env: WorkspaceToolEnv<'_>,
) -> Result<ToolSuccess, ToolCallError> {
    let args = Args::parse(
        args,
        &[
            "path",
            "start_line",
            "line_count",
            "start_char",
            "max_chars",
        ],
    )?;
    let path = WorkspacePath::parse(args.req_str("path")?)?;
    if !env.policy.is_visible(&path) {
        return Err(env.policy.not_visible_error(&path).into());
    }
    let range = parse_range(&args)?;
    let file = env
        .repo
        .read(env.run_id, &path)
        .await
        .map_err(|err| storage_failure(err, &path, StorageOp::Read))?;
    let selection = select(&file.text, range, &path)?;

    if selection.full {
        env.read_state.record_full(&path, &file.sha256);
    } else {
        env.read_state
            .record_partial(&path, &file.sha256, selection.text);
    }
    let content = render(&path, &file.text, &file.sha256, &selection);
    let structured = json!({
        "path": path,
        "sha256": file.sha256,
        "totalLines": selection.total_lines,
        "startLine": selection.start_line,
        "endLine": selection.end_line,
        "startChar": selection.start_char,
        "endChar": selection.end_char,
        "totalChars": selection.total_chars,
        "chars": char_count(selection.text),
        "words": word_count(selection.text),
        "fullRead": selection.full,
    });
    Ok(ToolSuccess::new(content, structured).with_refs(vec![file_ref(&path)]))
}

/// What part of the file to return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReadRange {
    Whole,
    /// 1-based first line; `None` count = up to `MAX_READ_LINES`.
    Lines {
        start: usize,
        count: Option<usize>,
    },
    /// 0-based first char and the most chars to return.
    Chars {
        start: usize,
        max: usize,
    },
}

fn parse_range(args: &Args<'_>) -> Result<ReadRange, ToolError> {
    let start_line = args.opt_i64("start_line")?;
    let line_count = args.opt_i64("line_count")?;
    let start_char = args.opt_i64("start_char")?;
    let max_chars = args.opt_i64("max_chars")?;
    let line_mode = start_line.is_some() || line_count.is_some();
    let char_mode = start_char.is_some() || max_chars.is_some();
    if line_mode && char_mode {
        return Err(ToolError::new(
            error_codes::WORKSPACE_MIXED_READ_RANGE,
            "Use either a line range (`start_line`, `line_count`) or a character range (`start_char`, `max_chars`), not both.",
        ));
    }
    if line_mode {
        let start = start_line.unwrap_or(1);
        if start < 1 {
            return Err(ToolError::new(
                error_codes::WORKSPACE_INVALID_LINE_RANGE,
                format!("`start_line` counts from 1 (got {start})."),
            ));
        }
        let count = match line_count {
            None => None,
            Some(count) if count < 1 => {
                return Err(ToolError::new(
                    error_codes::WORKSPACE_INVALID_LINE_RANGE,
                    format!("`line_count` must be at least 1 (got {count})."),
                ));
            }
            Some(count) if count > MAX_READ_LINES as i64 => {
                return Err(ToolError::new(
                    error_codes::WORKSPACE_READ_LINE_COUNT_TOO_LARGE,
                    format!(
                        "`line_count` can be at most {MAX_READ_LINES} (got {count}). Read the file in several parts."
                    ),
                ));
            }
            Some(count) => Some(to_usize(count)),
        };
        return Ok(ReadRange::Lines {
            start: to_usize(start),
            count,
        });
    }
    if char_mode {
        let start = start_char.unwrap_or(0);
        if start < 0 {
            return Err(ToolError::new(
                error_codes::WORKSPACE_INVALID_CHAR_RANGE,
                format!("`start_char` counts from 0 (got {start})."),
            ));
        }
        let max = max_chars.unwrap_or(MAX_PARTIAL_READ_CHARS as i64);
        if max < 1 {
            return Err(ToolError::new(
                error_codes::WORKSPACE_INVALID_CHAR_RANGE,
                format!("`max_chars` must be at least 1 (got {max})."),
            ));
        }
        if max > MAX_PARTIAL_READ_CHARS as i64 {
            return Err(ToolError::new(
                error_codes::WORKSPACE_READ_CHAR_COUNT_TOO_LARGE,
                format!(
                    "`max_chars` can be at most {MAX_PARTIAL_READ_CHARS} (got {max}). Read the file in several parts."
                ),
            ));
        }
        return Ok(ReadRange::Chars {
            start: to_usize(start),
            max: to_usize(max),
        });
    }
    Ok(ReadRange::Whole)
}

/// Non-negative i64 to usize; values beyond the platform's range saturate (they are past any
/// file's end anyway).
fn to_usize(value: i64) -> usize {
    usize::try_from(value).unwrap_or(usize::MAX)
}

/// The returned part of a file, with its position. Lines are 1-based and inclusive (0-0 for an
/// empty file); chars are 0-based with an exclusive end.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Selection<'t> {
    text: &'t str,
    start_line: usize,
    end_line: usize,
    total_lines: usize,
    start_char: usize,
    end_char: usize,
    total_chars: usize,
    full: bool,
    char_mode: bool,
}

/// Byte offsets where each line starts. A trailing newline does not start a new line.
fn line_starts(text: &str) -> Vec<usize> {
    let mut starts = vec![0];
    for (index, byte) in text.bytes().enumerate() {
        if byte == b'\n' && index + 1 < text.len() {
            starts.push(index + 1);
        }
    }
    starts
}

/// Number of lines `text` spans, 0 for empty text.
fn count_lines(text: &str) -> usize {
    if text.is_empty() {
        0
    } else {
        line_starts(text).len()
    }
}

fn select<'t>(
    text: &'t str,
    range: ReadRange,
    path: &WorkspacePath,
) -> Result<Selection<'t>, ToolError> {
    let starts = line_starts(text);
    let total_lines = if text.is_empty() { 0 } else { starts.len() };
    let total_chars = char_count(text);
    let (byte_start, byte_end, char_mode) = match range {
        ReadRange::Whole => {
            if text.len() > MAX_READ_BYTES || total_lines > MAX_READ_LINES {
                return Err(ToolError::new(
                    error_codes::WORKSPACE_READ_TOO_LARGE,
                    format!(
                        "`{path}` is too large to read at once ({total_lines} lines, {} KiB; the limit is {MAX_READ_LINES} lines and {} KiB). Read part of it with `start_line` and `line_count`, or with `start_char` and `max_chars`.",
                        text.len().div_ceil(1024),
                        MAX_READ_BYTES / 1024
                    ),
                ));
            }
            (0, text.len(), false)
        }
        ReadRange::Lines { start, count } => {
            if total_lines == 0 && start == 1 {
                (0, 0, false)
            } else if start > total_lines {
                return Err(ToolError::new(
                    error_codes::WORKSPACE_INVALID_LINE_RANGE,
                    format!(
                        "`start_line` {start} is past the end of `{path}`, which has {total_lines} lines."
                    ),
                ));
            } else {
                let count = count.unwrap_or(MAX_READ_LINES);
                let end_line = total_lines.min(start.saturating_add(count.saturating_sub(1)));
                let byte_start = starts
                    .get(start.saturating_sub(1))
                    .copied()
                    .unwrap_or(text.len());
                let byte_end = starts.get(end_line).copied().unwrap_or(text.len());
                let chars = text.get(byte_start..byte_end).map_or(0, char_count);
                if chars > MAX_PARTIAL_READ_CHARS {
                    return Err(ToolError::new(
                        error_codes::WORKSPACE_READ_TOO_LARGE,
                        format!(
                            "Lines {start}-{end_line} of `{path}` hold {chars} characters, more than the {MAX_PARTIAL_READ_CHARS} a partial read returns. Ask for fewer lines, or use `start_char` and `max_chars`."
                        ),
                    ));
                }
                (byte_start, byte_end, false)
            }
        }
        ReadRange::Chars { start, max } => {
            if start > total_chars || (start == total_chars && total_chars > 0) {
                return Err(ToolError::new(
                    error_codes::WORKSPACE_INVALID_CHAR_RANGE,
                    format!(
                        "`start_char` {start} is past the end of `{path}`, which has {total_chars} characters."
                    ),
                ));
            }
            let byte_start = text
                .char_indices()
                .nth(start)
                .map_or(text.len(), |(index, _)| index);
            let rest = text.get(byte_start..).unwrap_or("");
            let (slice, _) = truncate_chars(rest, max);
            (byte_start, byte_start + slice.len(), true)
        }
    };
    let before = text.get(..byte_start).unwrap_or("");
    let slice = text.get(byte_start..byte_end).unwrap_or("");
    let (start_line, end_line) = if slice.is_empty() {
        (0, 0)
    } else {
        let start_line = 1 + before.matches('\n').count();
        (start_line, start_line + count_lines(slice) - 1)
    };
    let start_char = char_count(before);
    Ok(Selection {
        text: slice,
        start_line,
        end_line,
        total_lines,
        start_char,
        end_char: start_char + char_count(slice),
        total_chars,
        full: byte_start == 0 && byte_end == text.len(),
        char_mode,
    })
}

fn render(path: &WorkspacePath, whole: &str, sha256: &str, selection: &Selection<'_>) -> String {
    let scope = if selection.full {
        "whole file"
    } else {
        "part of the file"
    };
    let lines = if selection.total_lines == 0 {
        "Lines: 0 of 0".to_owned()
    } else {
        format!(
            "Lines: {}-{} of {}",
            selection.start_line, selection.end_line, selection.total_lines
        )
    };
    let mut out = format!(
        "File: {path} ({scope})\n{lines} · Chars: {}-{} of {} · Words: {} of {}\nsha256: {sha256}\n\n",
        selection.start_char,
        selection.end_char,
        selection.total_chars,
        word_count(selection.text),
        word_count(whole),
    );
    if selection.text.is_empty() {
        out.push_str("(The file is empty.)");
    } else {
        out.push_str(&number_lines(selection.text, selection.start_line));
    }
    if !selection.full {
        if selection.end_char < selection.total_chars {
            if selection.char_mode {
                out.push_str(&format!(
                    "\n\n(The file continues: read on with start_char={}.)",
                    selection.end_char
                ));
            } else {
                out.push_str(&format!(
                    "\n\n(The file continues: read on with start_line={}.)",
                    selection.end_line + 1
                ));
            }
        } else {
            out.push_str("\n\n(This is the end of the file.)");
        }
        out.push_str(
            "\nTo patch after this partial read, copy `old_string` from the text shown here; `replace_all` needs a whole-file read.",
        );
    }
    out
}

/// `"{n:>w} | line"` for each line of `text`, numbered from `first`.
pub(super) fn number_lines(text: &str, first: usize) -> String {
    let mut lines: Vec<&str> = text.split('\n').collect();
    if text.ends_with('\n') {
        lines.pop();
    }
    let last = first + lines.len().saturating_sub(1);
    let width = last.to_string().len();
    lines
        .iter()
        .enumerate()
        .map(|(offset, line)| {
            let line = line.strip_suffix('\r').unwrap_or(line);
            format!("{:>width$} | {line}", first + offset)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn path() -> WorkspacePath {
        WorkspacePath::parse("output/a.md").unwrap()
    }

    fn range(value: Value) -> Result<ReadRange, &'static str> {
        let args = Args::parse(
            &value,
            &[
                "path",
                "start_line",
                "line_count",
                "start_char",
                "max_chars",
            ],
        )
        .unwrap();
        parse_range(&args).map_err(|err| err.code.as_str())
    }

    fn lines(start: usize, count: Option<usize>) -> ReadRange {
        ReadRange::Lines { start, count }
    }

    fn sel(text: &str, range: ReadRange) -> Result<Selection<'_>, &'static str> {
        select(text, range, &path()).map_err(|err| err.code.as_str())
    }

    #[test]
    fn range_arguments_are_validated_with_contract_codes() {
        assert_eq!(range(json!({})), Ok(ReadRange::Whole));
        assert_eq!(range(json!({"start_line": 3})), Ok(lines(3, None)));
        assert_eq!(range(json!({"line_count": 2})), Ok(lines(1, Some(2))));
        assert_eq!(
            range(json!({"start_char": 5})),
            Ok(ReadRange::Chars {
                start: 5,
                max: 80_000
            })
        );
        assert_eq!(
            range(json!({"max_chars": 10})),
            Ok(ReadRange::Chars { start: 0, max: 10 })
        );
        assert_eq!(range(json!({"line_count": 1200})).map(|_| ()), Ok(()));
        let refused = [
            (
                json!({"start_line": 1, "max_chars": 5}),
                "workspace.mixed_read_range",
            ),
            (json!({"start_line": 0}), "workspace.invalid_line_range"),
            (json!({"line_count": 0}), "workspace.invalid_line_range"),
            (
                json!({"line_count": 1201}),
                "workspace.read_line_count_too_large",
            ),
            (json!({"start_char": -1}), "workspace.invalid_char_range"),
            (json!({"max_chars": 0}), "workspace.invalid_char_range"),
            (
                json!({"max_chars": 80_001}),
                "workspace.read_char_count_too_large",
            ),
            (json!({"start_line": "2"}), "tool.invalid_arguments"),
        ];
        for (arguments, code) in refused {
            assert_eq!(range(arguments.clone()), Err(code), "{arguments}");
        }
    }

    #[test]
    fn whole_reads_cover_everything_and_respect_limits() {
        let s = sel("a\nb\n", ReadRange::Whole).unwrap();
        assert_eq!((s.start_line, s.end_line, s.total_lines), (1, 2, 2));
        assert_eq!((s.start_char, s.end_char, s.total_chars), (0, 4, 4));
        assert!(s.full);

        let empty = sel("", ReadRange::Whole).unwrap();
        assert_eq!(
            (empty.start_line, empty.end_line, empty.total_lines),
            (0, 0, 0)
        );
        assert!(empty.full);

        let many_lines = "x\n".repeat(1201);
        assert_eq!(
            sel(&many_lines, ReadRange::Whole),
            Err("workspace.read_too_large")
        );
        let at_limit = "x\n".repeat(1200);
        assert!(sel(&at_limit, ReadRange::Whole).is_ok());
        let big = "y".repeat(MAX_READ_BYTES + 1);
        assert_eq!(sel(&big, ReadRange::Whole), Err("workspace.read_too_large"));
    }

    #[test]
    fn line_ranges_select_whole_lines() {
        let text = "one\ntwo\nthree\nfour";
        let s = sel(text, lines(2, Some(2))).unwrap();
        assert_eq!(s.text, "two\nthree\n");
        assert_eq!((s.start_line, s.end_line, s.total_lines), (2, 3, 4));
        assert_eq!((s.start_char, s.end_char), (4, 14));
        assert!(!s.full);

        let tail = sel(text, lines(3, Some(100))).unwrap();
        assert_eq!(tail.text, "three\nfour");
        assert_eq!(tail.end_line, 4);

        let all = sel(text, lines(1, None)).unwrap();
        assert!(all.full, "a range that covers the file is a whole read");

        assert_eq!(
            sel(text, lines(5, None)),
            Err("workspace.invalid_line_range")
        );
        let empty = sel("", lines(1, None)).unwrap();
        assert!(empty.full && empty.text.is_empty());
    }

    #[test]
    fn line_ranges_over_the_partial_char_limit_are_refused() {
        let long_line = "z".repeat(MAX_PARTIAL_READ_CHARS + 1);
        let text = format!("short\n{long_line}\n");
        assert_eq!(
            sel(&text, lines(2, Some(1))),
            Err("workspace.read_too_large")
        );
        assert!(sel(&text, lines(1, Some(1))).is_ok());
    }

    #[test]
    fn char_ranges_count_unicode_scalars() {
        let text = "héllo\nwörld\n";
        let s = sel(text, ReadRange::Chars { start: 3, max: 5 }).unwrap();
        assert_eq!(s.text, "lo\nwö");
        assert_eq!((s.start_char, s.end_char, s.total_chars), (3, 8, 12));
        assert_eq!((s.start_line, s.end_line), (1, 2));
        assert!(!s.full);

        let end = sel(text, ReadRange::Chars { start: 6, max: 100 }).unwrap();
        assert_eq!(end.text, "wörld\n");
        assert_eq!((end.start_line, end.end_line), (2, 2));

        assert_eq!(
            sel(text, ReadRange::Chars { start: 12, max: 1 }),
            Err("workspace.invalid_char_range")
        );
        let whole = sel(text, ReadRange::Chars { start: 0, max: 12 }).unwrap();
        assert!(whole.full);
        let empty = sel("", ReadRange::Chars { start: 0, max: 5 }).unwrap();
        assert!(empty.full);
    }

    #[test]
    fn numbered_lines_are_right_aligned() {
        assert_eq!(number_lines("a\nb\n", 9), " 9 | a\n10 | b");
        assert_eq!(number_lines("x\r\ny", 1), "1 | x\n2 | y");
    }

    #[test]
    fn render_shows_header_and_continuation() {
        let text = "alpha beta\ngamma\ndelta\n";
        let s = sel(text, lines(1, Some(2))).unwrap();
        insta::assert_snapshot!(render(&path(), text, "abc123", &s));
        let whole = sel(text, ReadRange::Whole).unwrap();
        insta::assert_snapshot!(render(&path(), text, "abc123", &whole));
    }
}
