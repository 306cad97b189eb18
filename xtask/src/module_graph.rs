//! The import graph between the top-level modules of one crate (`crate::x` references, test
//! code left out) and the check that it has no cycle: a module may use another only if that
//! one does not, directly or through others, use it back. Used by `cargo xtask tidy` on
//! tt-application, whose top-level modules must stay layered (docs/ARCHITECTURE.md).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level module → the top-level modules it references.
pub(crate) type ModuleGraph = BTreeMap<String, BTreeSet<String>>;

/// Builds the graph from `(path relative to src/, file text)` pairs.
pub(crate) fn build<'a>(files: impl IntoIterator<Item = (&'a Path, &'a str)>) -> ModuleGraph {
    let mut graph = ModuleGraph::new();
    for (path, text) in files {
        let Some(module) = top_level_module(path) else {
            continue;
        };
        let uses = graph.entry(module.clone()).or_default();
        for used in referenced_modules(&without_test_code(text)) {
            if used != module {
                uses.insert(used);
            }
        }
    }
    graph
}

/// The top-level module a file belongs to: `x.rs`, `x/mod.rs` and `x/y.rs` are `x`; the crate
/// root (`lib.rs`, `main.rs`) and files of test modules (`tests.rs`, `*_tests.rs`) belong to
/// none.
fn top_level_module(path: &Path) -> Option<String> {
    let first = path.components().next()?.as_os_str().to_str()?;
    let name = path.file_name()?.to_str()?;
    if name == "tests.rs" || name.ends_with("_tests.rs") {
        return None;
    }
    let module = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(module, "lib" | "main")).then(|| module.to_owned())
}

/// `text` without the items marked `#[cfg(test)]` (rustfmt layout assumed: an item ends at the
/// `}` line with the indentation it started with, or at its own line when that ends with `;`).
pub(crate) fn without_test_code(text: &str) -> String {
    let mut kept = String::with_capacity(text.len());
    for (line, is_test) in text.lines().zip(test_code_lines(text)) {
        if !is_test {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    kept
}

/// For each line of `text`, whether it belongs to an item marked `#[cfg(test)]` (the attribute
/// included), so a check can skip test code and still report real line numbers.
pub(crate) fn test_code_lines(text: &str) -> Vec<bool> {
    let lines: Vec<&str> = text.lines().collect();
    let mut in_test = vec![false; lines.len()];
    let mut at = 0;
    while at < lines.len() {
        if !is_test_attribute(lines[at]) {
            at += 1;
            continue;
        }
        in_test[at] = true;
        at += 1;
        let Some(item) = lines.get(at) else { break };
        in_test[at] = true;
        at += 1;
        if item.trim_end().ends_with(';') {
            continue;
        }
        let indent = &item[..item.len() - item.trim_start().len()];
        let end = format!("{indent}}}");
        while let Some(rest) = lines.get(at) {
            in_test[at] = true;
            at += 1;
            if rest.trim_end() == end {
                break;
            }
        }
    }
    in_test
}

/// `#[cfg(test)]`, or `#[cfg(all(test, …))]` (test code on some platforms only).
pub(crate) fn is_test_attribute(line: &str) -> bool {
    let line = line.trim();
    line == "#[cfg(test)]" || line.starts_with("#[cfg(all(test,") && line.ends_with(")]")
}

/// The top-level modules named after `crate::` in code (line comments left out), including
/// each item of a `crate::{a::X, b}` group.
fn referenced_modules(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or_default();
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let preceded_by_word = rest[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$');
            rest = &rest[at + "crate::".len()..];
            if preceded_by_word {
                continue;
            }
            if let Some(group) = rest.strip_prefix('{') {
                for item in group_items(group, text, line) {
                    found.insert(item);
                }
            } else if let Some(name) = leading_ident(rest) {
                found.insert(name.to_owned());
            }
        }
    }
    found.retain(|name| name != "self" && name != "super");
    found
}

/// The leading identifiers of the items of a `{…}` group starting at `group` (which may go on
/// over the following lines of `text` after `line`).
fn group_items(group: &str, text: &str, line: &str) -> Vec<String> {
    // `group` is a slice of `line`, which is a slice of `text`: their addresses give offsets.
    let start = (line.as_ptr() as usize - text.as_ptr() as usize)
        + (group.as_ptr() as usize - line.as_ptr() as usize);
    let mut depth = 1;
    let mut items = Vec::new();
    let mut expecting = true;
    let body = &text[start.min(text.len())..];
    for (at, c) in body.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            ',' if depth == 1 => expecting = true,
            c if expecting && depth == 1 && (c.is_alphabetic() || c == '_') => {
                if let Some(name) = leading_ident(&body[at..]) {
                    items.push(name.to_owned());
                }
                expecting = false;
            }
            _ => {}
        }
    }
    items
}

fn leading_ident(text: &str) -> Option<&str> {
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    (end > 0).then(|| &text[..end])
}

/// The modules on cycles, as strongly connected components of two or more modules, each
/// sorted, in sorted order.
pub(crate) fn cycles(graph: &ModuleGraph) -> Vec<Vec<String>> {
    let nodes: Vec<&String> = graph.keys().collect();
    let reaches = |from: &String| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&String> = vec![from];
        while let Some(node) = stack.pop() {
            for next in graph.get(node).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next);
                }
            }
        }
        seen
    };
    let reach: BTreeMap<&String, BTreeSet<String>> =
        nodes.iter().map(|node| (*node, reaches(node))).collect();
    let mut components: BTreeSet<Vec<String>> = BTreeSet::new();
    for node in &nodes {
        let mut component: Vec<String> = nodes
            .iter()
            .filter(|other| {
                *other == node || (reach[node].contains(**other) && reach[*other].contains(*node))
            })
            .map(|other| (*other).clone())
            .collect();
        component.sort();
        if component.len() > 1 {
            components.insert(component);
        }
    }
    components.into_iter().collect()
}

/// One edge of each cycle that closes it, to show where to cut: for each component, its
/// edges inside the component.
pub(crate) fn edges_within(graph: &ModuleGraph, component: &[String]) -> Vec<(String, String)> {
    let members: BTreeSet<&String> = component.iter().collect();
    let mut edges = Vec::new();
    for from in component {
        for to in graph.get(from).into_iter().flatten() {
            if members.contains(to) {
                edges.push((from.clone(), to.clone()));
            }
        }
    }
    edges
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(files: &[(&str, &str)]) -> ModuleGraph {
        build(files.iter().map(|(path, text)| (Path::new(*path), *text)))
    }

    #[test]
    fn references_single_grouped_and_nested_paths() {
        let text = "use crate::events::EventSink;\nuse crate::{context::RunContext, error::{A, B},\n    tools,\n};\nfn f() { crate::dispatch::run(); }\n// crate::commented::Out\nlet s = \"my_crate::not\";\n";
        assert_eq!(
            referenced_modules(text),
            ["context", "dispatch", "error", "events", "tools"]
                .into_iter()
                .map(str::to_owned)
                .collect()
        );
    }

    #[test]
    fn test_code_is_left_out() {
        let text = "use crate::a::X;\n#[cfg(test)]\nuse crate::b::Y;\n#[cfg(test)]\npub(crate) fn helper() {\n    crate::c::z();\n}\nfn kept() { crate::d::w(); }\n#[cfg(test)]\nmod tests {\n    use crate::e::V;\n}\n";
        assert_eq!(
            referenced_modules(&without_test_code(text)),
            ["a", "d"].into_iter().map(str::to_owned).collect()
        );
    }

    #[test]
    fn files_map_to_their_top_level_module() {
        assert_eq!(
            top_level_module(Path::new("dispatch.rs")).as_deref(),
            Some("dispatch")
        );
        assert_eq!(
            top_level_module(Path::new("delegation/scheduler.rs")).as_deref(),
            Some("delegation")
        );
        assert_eq!(top_level_module(Path::new("lib.rs")), None);
        assert_eq!(
            top_level_module(Path::new("skills/behaviour_tests.rs")),
            None
        );
    }

    #[test]
    fn a_cycle_is_found_and_a_layered_graph_passes() {
        let layered = graph(&[
            ("engine.rs", "use crate::tools::X;\nuse crate::journal::J;"),
            ("tools/mod.rs", "use crate::journal::J;"),
            ("journal.rs", ""),
        ]);
        assert!(cycles(&layered).is_empty());
        let cyclic = graph(&[
            ("engine.rs", "use crate::tools::X;"),
            ("tools/mod.rs", "use crate::journal::J;"),
            ("journal.rs", "use crate::engine::E;"),
            ("leaf.rs", "use crate::engine::E;"),
        ]);
        let found = cycles(&cyclic);
        assert_eq!(found, [vec!["engine", "journal", "tools"]]);
        assert_eq!(
            edges_within(&cyclic, &found[0]),
            [
                ("engine".to_owned(), "tools".to_owned()),
                ("journal".to_owned(), "engine".to_owned()),
                ("tools".to_owned(), "journal".to_owned()),
            ]
        );
    }
}
