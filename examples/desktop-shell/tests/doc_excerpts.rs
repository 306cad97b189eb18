//! Every Rust snippet in `docs/*.md` and `README.md` is an excerpt of compiled code: the block
//! follows an `<!-- excerpt: <path>#<anchor> -->` line and equals the lines between
//! `// ANCHOR: <anchor>` and `// ANCHOR_END: <anchor>` of that file (indentation removed).
//! So the docs can only show code that builds and that the example runs in CI.

// Test helpers outside #[test] functions may unwrap: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .unwrap()
        .to_path_buf()
}

/// A fenced ```rust block: the line it starts on, the marker before it, and its text.
#[derive(Debug)]
struct Snippet {
    line: usize,
    marker: Option<String>,
    text: String,
}

fn rust_snippets(markdown: &str) -> Vec<Snippet> {
    let lines: Vec<&str> = markdown.lines().collect();
    let mut snippets = Vec::new();
    let mut index = 0;
    while index < lines.len() {
        if lines[index].trim_start().starts_with("```rust") {
            let start = index;
            let marker = lines[..start]
                .iter()
                .rev()
                .find(|line| !line.trim().is_empty())
                .and_then(|line| {
                    line.trim()
                        .strip_prefix("<!-- excerpt:")
                        .and_then(|rest| rest.strip_suffix("-->"))
                        .map(|reference| reference.trim().to_owned())
                });
            let mut body = Vec::new();
            index += 1;
            while index < lines.len() && !lines[index].trim_start().starts_with("```") {
                body.push(lines[index]);
                index += 1;
            }
            snippets.push(Snippet {
                line: start + 1,
                marker,
                text: body.join("\n"),
            });
        }
        index += 1;
    }
    snippets
}

/// The lines between the anchor comments, with their common indentation removed.
fn anchored(source: &str, anchor: &str) -> Option<String> {
    let begin = format!("// ANCHOR: {anchor}");
    let end = format!("// ANCHOR_END: {anchor}");
    let lines: Vec<&str> = source.lines().collect();
    let start = lines.iter().position(|line| line.trim() == begin)?;
    let stop = start + lines[start..].iter().position(|line| line.trim() == end)?;
    let body = &lines[start + 1..stop];
    let indent = body
        .iter()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.len() - line.trim_start().len())
        .min()
        .unwrap_or(0);
    Some(
        body.iter()
            .map(|line| line.get(indent..).unwrap_or("").trim_end())
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

fn documents(root: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    files.push(root.join("README.md"));
    files.sort();
    files
}

#[test]
fn every_rust_snippet_in_the_docs_is_an_excerpt_of_compiled_code() {
    let root = workspace_root();
    let mut problems = Vec::new();
    let mut checked = 0;
    for document in documents(&root) {
        let markdown = std::fs::read_to_string(&document).unwrap();
        let name = document.strip_prefix(&root).unwrap().display().to_string();
        for snippet in rust_snippets(&markdown) {
            let at = format!("{name}:{}", snippet.line);
            let Some(marker) = snippet.marker else {
                problems.push(format!(
                    "{at}: a ```rust block without an `<!-- excerpt: path#anchor -->` line"
                ));
                continue;
            };
            let Some((path, anchor)) = marker.split_once('#') else {
                problems.push(format!("{at}: `{marker}` is not `path#anchor`"));
                continue;
            };
            let Ok(source) = std::fs::read_to_string(root.join(path)) else {
                problems.push(format!("{at}: cannot read `{path}`"));
                continue;
            };
            match anchored(&source, anchor) {
                None => problems.push(format!("{at}: `{path}` has no anchor `{anchor}`")),
                Some(code) if code != snippet.text.trim_end() => problems.push(format!(
                    "{at}: the snippet differs from `{path}#{anchor}`; it should read:\n{code}"
                )),
                Some(_) => checked += 1,
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
    assert!(checked >= 5, "only {checked} excerpts found in the docs");
}

#[test]
fn snippets_and_anchors_are_found_as_written() {
    let markdown =
        "text\n<!-- excerpt: a.rs#one -->\n```rust\nfn a() {}\n```\n\n```rust\nlet x = 1;\n```\n";
    let snippets = rust_snippets(markdown);
    assert_eq!(snippets.len(), 2);
    assert_eq!(snippets[0].marker.as_deref(), Some("a.rs#one"));
    assert_eq!(snippets[0].text, "fn a() {}");
    assert_eq!(snippets[1].marker, None);
    let source = "mod m {\n    // ANCHOR: one\n    fn a() {\n        b();\n    }\n    // ANCHOR_END: one\n}\n";
    assert_eq!(
        anchored(source, "one").as_deref(),
        Some("fn a() {\n    b();\n}")
    );
    assert_eq!(anchored(source, "two"), None);
}
