//! The import graph between the source files of one crate, for `cargo xtask tidy`'s rule that
//! no file takes part in an import cycle. The top-level check in `module_graph` sees only
//! `crate::x`; a knot of files inside one module (`engine/`) is invisible to it, so this one
//! resolves every path (`crate::`, `super::`, `self::`, a child module's name) to the file that
//! defines the item, following `pub use` re-exports.
//!
//! It reads text, not a syntax tree: comments, string literals and `#[cfg(test)]` items are
//! blanked first (rustfmt layout assumed), and a name re-exported by a glob (`pub use x::*`)
//! resolves to the re-exporting file, which can hide an edge but never invents one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::module_graph::{self, ModuleGraph};

/// A module path inside the crate: `[]` is the crate root, `["engine", "context"]` is
/// `engine/context.rs`.
type ModulePath = Vec<String>;

/// One source file of the crate, with its path relative to `src/` and its text.
pub(crate) struct SourceFile<'a> {
    pub path: &'a Path,
    pub text: &'a str,
}

/// File (relative to `src/`, `/`-separated) → the files it uses. Test files and files declared
/// as `#[cfg(test)] mod x;` are left out.
pub(crate) fn build(files: &[SourceFile<'_>]) -> ModuleGraph {
    let parsed: Vec<Parsed> = files
        .iter()
        .filter(|file| !is_test_file(file.path))
        .filter_map(|file| {
            Some(Parsed::new(
                module_path(file.path)?,
                file.path.to_path_buf(),
                file.text,
            ))
        })
        .collect();
    let test_modules: BTreeSet<ModulePath> = parsed
        .iter()
        .flat_map(|file| {
            file.test_children
                .iter()
                .map(|child| child_of(&file.module, child))
        })
        .collect();
    let parsed: Vec<&Parsed> = parsed
        .iter()
        .filter(|file| {
            !test_modules
                .iter()
                .any(|test| file.module.starts_with(test))
        })
        .collect();
    let modules: BTreeMap<&ModulePath, &Parsed> =
        parsed.iter().map(|file| (&file.module, *file)).collect();
    let resolver = Resolver::new(&parsed, &modules);
    let mut graph = ModuleGraph::new();
    for file in &parsed {
        let uses = graph.entry(display(&file.path)).or_default();
        for path in &file.references {
            let Some(absolute) = resolver.absolute(&file.module, path) else {
                continue;
            };
            let Some(target) = resolver.resolve(absolute) else {
                continue;
            };
            if target != file.module
                && let Some(used) = modules.get(&target)
            {
                uses.insert(display(&used.path));
            }
        }
    }
    graph
}

/// The files of one cycle and the edges between them (where to cut).
pub(crate) type Cycle = (Vec<String>, Vec<(String, String)>);

/// Files that take part in a cycle, one group per cycle, and the edges inside each group.
pub(crate) fn cycles(graph: &ModuleGraph) -> Vec<Cycle> {
    module_graph::cycles(graph)
        .into_iter()
        .map(|component| {
            let edges = module_graph::edges_within(graph, &component);
            (component, edges)
        })
        .collect()
}

/// Test-only files: `tests.rs`, `*_tests.rs`, anything under a `tests/` directory.
pub(crate) fn is_test_file(path: &Path) -> bool {
    let name = path
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or_default();
    name == "tests.rs"
        || name.ends_with("_tests.rs")
        || path.components().any(|part| part.as_os_str() == "tests")
}

/// `lib.rs`/`main.rs` → root, `a/mod.rs` and `a.rs` → `a`, `a/b.rs` → `a::b`. Other binaries
/// under `src/bin` are crate roots of their own and are left out.
fn module_path(path: &Path) -> Option<ModulePath> {
    let parts: Vec<String> = path
        .components()
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.first().is_some_and(|first| first == "bin") {
        return None;
    }
    let (last, dirs) = parts.split_last()?;
    let stem = last.strip_suffix(".rs")?;
    let mut module: ModulePath = dirs.to_vec();
    match stem {
        "mod" => {}
        "lib" | "main" if dirs.is_empty() => {}
        _ => module.push(stem.to_owned()),
    }
    Some(module)
}

fn child_of(module: &ModulePath, child: &str) -> ModulePath {
    let mut path = module.clone();
    path.push(child.to_owned());
    path
}

fn display(path: &Path) -> String {
    path.components()
        .map(|part| part.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// What one file declares and references.
struct Parsed {
    module: ModulePath,
    path: PathBuf,
    /// Child modules declared with `mod x;` (for paths that start with a child's name).
    children: BTreeSet<String>,
    /// Child modules declared under `#[cfg(test)]`.
    test_children: BTreeSet<String>,
    /// `use` items: the name they are known by here → the path they name (as written). A
    /// path through this module to that name leads on to the item (a re-export, or a private
    /// import that child modules see).
    imports: BTreeMap<String, Vec<String>>,
    /// Every other path the file names, as written (first segment `crate`, `super`, `self`
    /// or a name that may be a child module).
    references: Vec<Vec<String>>,
}

impl Parsed {
    fn new(module: ModulePath, path: PathBuf, text: &str) -> Self {
        let test_children = test_module_declarations(text);
        let code = blank_comments_and_strings(&module_graph::without_test_code(text));
        let tokens = tokenize(&code);
        let mut parsed = Self {
            module,
            path,
            children: BTreeSet::new(),
            test_children,
            imports: BTreeMap::new(),
            references: Vec::new(),
        };
        parsed.scan(&tokens);
        parsed
    }

    fn scan(&mut self, tokens: &[&str]) {
        let mut at = 0;
        while at < tokens.len() {
            let token = tokens[at];
            if token == "mod"
                && let (Some(name), Some(&";")) = (tokens.get(at + 1), tokens.get(at + 2))
            {
                self.children.insert((*name).to_owned());
                at += 3;
                continue;
            }
            if token == "use" {
                let public = is_public(&tokens[..at]);
                let end = tokens[at..]
                    .iter()
                    .position(|t| *t == ";")
                    .map_or(tokens.len(), |offset| at + offset);
                let mut items = Vec::new();
                parse_use_tree(&tokens[at + 1..end], &mut Vec::new(), &mut items);
                for (path, name) in items {
                    // A re-export is no use of its own: a path through it leads on to the item.
                    if !public {
                        self.references.push(path.clone());
                    }
                    // A glob brings unknown names; they resolve to this file.
                    if let Some(name) = name {
                        self.imports.insert(name, path);
                    }
                }
                at = end + 1;
                continue;
            }
            let starts_path = is_ident(token)
                && tokens.get(at + 1) == Some(&"::")
                && !matches!(
                    at.checked_sub(1).map(|before| tokens[before]),
                    Some("::" | "$")
                );
            if starts_path {
                let mut path = vec![token.to_owned()];
                let mut next = at + 1;
                while tokens.get(next) == Some(&"::")
                    && let Some(segment) = tokens.get(next + 1).filter(|t| is_ident(t))
                {
                    path.push((*segment).to_owned());
                    next += 2;
                }
                self.references.push(path);
                at = next;
                continue;
            }
            at += 1;
        }
    }
}

/// Whether the tokens before a `use` make it `pub` or `pub(crate)`/`pub(super)`/`pub(in …)`.
fn is_public(before: &[&str]) -> bool {
    match before {
        [.., "pub"] => true,
        [.., ")"] => {
            let open = before.iter().rposition(|token| *token == "(");
            open.is_some_and(|open| open > 0 && before[open - 1] == "pub")
        }
        _ => false,
    }
}

/// Expands a use tree into `(path, the name it binds)`; the name is `None` for a glob.
fn parse_use_tree(
    tokens: &[&str],
    prefix: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    let depth = prefix.len();
    let mut at = 0;
    if tokens.first() == Some(&"::") {
        at = 1;
    }
    while at < tokens.len() {
        match tokens[at] {
            "{" => {
                let close = matching_brace(tokens, at);
                for item in split_top_level(&tokens[at + 1..close]) {
                    parse_use_tree(item, prefix, out);
                }
                prefix.truncate(depth);
                return;
            }
            "*" => {
                out.push((prefix.clone(), None));
                prefix.truncate(depth);
                return;
            }
            "::" => at += 1,
            "as" => {
                if let Some(alias) = tokens.get(at + 1) {
                    out.push((prefix.clone(), Some((*alias).to_owned())));
                }
                prefix.truncate(depth);
                return;
            }
            // `{self, …}`: the group's own prefix (bound below, at the end).
            "self" if depth > 0 && prefix.len() == depth => at += 1,
            segment if is_ident(segment) => {
                prefix.push(segment.to_owned());
                at += 1;
            }
            _ => at += 1,
        }
    }
    if prefix.len() > depth || tokens == ["self"] {
        let name = prefix.last().cloned();
        out.push((prefix.clone(), name));
    }
    prefix.truncate(depth);
}

fn matching_brace(tokens: &[&str], open: usize) -> usize {
    let mut depth = 0;
    for (at, token) in tokens.iter().enumerate().skip(open) {
        match *token {
            "{" => depth += 1,
            "}" => {
                depth -= 1;
                if depth == 0 {
                    return at;
                }
            }
            _ => {}
        }
    }
    tokens.len()
}

fn split_top_level<'t, 'a>(tokens: &'t [&'a str]) -> Vec<&'t [&'a str]> {
    let mut items = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (at, token) in tokens.iter().enumerate() {
        match *token {
            "{" => depth += 1,
            "}" => depth -= 1,
            "," if depth == 0 => {
                items.push(&tokens[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    items.push(&tokens[start..]);
    items.retain(|item| !item.is_empty());
    items
}

/// Turns paths as written into paths from the crate root, and those into the file that
/// defines the item.
struct Resolver<'a> {
    modules: &'a BTreeMap<&'a ModulePath, &'a Parsed>,
    /// `(module, name)` → the absolute path a `use` there binds to it, or `None` when that is
    /// another crate's.
    imports: BTreeMap<(ModulePath, String), Option<ModulePath>>,
}

impl<'a> Resolver<'a> {
    fn new(parsed: &[&'a Parsed], modules: &'a BTreeMap<&'a ModulePath, &'a Parsed>) -> Self {
        let mut resolver = Self {
            modules,
            imports: BTreeMap::new(),
        };
        let mut imports = BTreeMap::new();
        for file in parsed {
            for (name, path) in &file.imports {
                let absolute = resolver.absolute(&file.module, path);
                imports.insert((file.module.clone(), name.clone()), absolute);
            }
        }
        resolver.imports = imports;
        resolver
    }

    /// The path from the crate root, or `None` when it names another crate (or a local item
    /// this text scan cannot place).
    fn absolute(&self, from: &ModulePath, path: &[String]) -> Option<ModulePath> {
        let (first, rest) = path.split_first()?;
        let mut base = match first.as_str() {
            "crate" => ModulePath::new(),
            "self" => from.clone(),
            "super" => {
                let mut base = from.clone();
                base.pop()?;
                base
            }
            child if self.modules.get(from)?.children.contains(child) => child_of(from, child),
            _ => return None,
        };
        let mut rest = rest;
        while let Some(("super", tail)) = rest.split_first().map(|(s, t)| (s.as_str(), t)) {
            base.pop()?;
            rest = tail;
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The module whose file defines what `path` names: the deepest file module on the path,
    /// following imports on the way; `None` when it leads to another crate.
    fn resolve(&self, mut path: ModulePath) -> Option<ModulePath> {
        // Imports can chain; a bound keeps an import loop from spinning.
        for _ in 0..16 {
            let mut current = ModulePath::new();
            let mut redirected = None;
            for (index, segment) in path.iter().enumerate() {
                let next = child_of(&current, segment);
                if self.modules.contains_key(&next) {
                    current = next;
                    continue;
                }
                if let Some(target) = self.imports.get(&(current.clone(), segment.clone())) {
                    let mut followed = target.clone()?;
                    followed.extend(path[index + 1..].iter().cloned());
                    redirected = Some(followed);
                }
                break;
            }
            match redirected {
                Some(followed) if followed != path => path = followed,
                _ => return Some(current),
            }
        }
        Some(ModulePath::new())
    }
}

/// Child modules declared as `#[cfg(test)] mod x;` (test-only files with other names).
fn test_module_declarations(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if !module_graph::is_test_attribute(line) {
            continue;
        }
        let Some(item) = lines.next() else { break };
        let words: Vec<&str> = item
            .trim()
            .trim_end_matches(';')
            .split_whitespace()
            .collect();
        if item.trim_end().ends_with(';')
            && let [.., "mod", name] = words.as_slice()
        {
            found.insert((*name).to_owned());
        }
    }
    found
}

fn is_ident(token: &str) -> bool {
    token
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// Identifiers, `::`, and single punctuation characters.
fn tokenize(code: &str) -> Vec<&str> {
    let mut tokens = Vec::new();
    let mut chars = code.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            let mut end = at + c.len_utf8();
            while let Some(&(next, d)) = chars.peek() {
                if d.is_alphanumeric() || d == '_' {
                    end = next + d.len_utf8();
                    chars.next();
                } else {
                    break;
                }
            }
            tokens.push(&code[at..end]);
        } else if c == ':' && chars.peek().is_some_and(|&(_, d)| d == ':') {
            chars.next();
            tokens.push(&code[at..at + 2]);
        } else if !c.is_whitespace() {
            tokens.push(&code[at..at + c.len_utf8()]);
        }
    }
    tokens
}

/// `code` with comments and the insides of string and char literals replaced by spaces, so
/// neither a doc comment nor a message that mentions `crate::x` counts as a use.
fn blank_comments_and_strings(code: &str) -> String {
    let chars: Vec<char> = code.chars().collect();
    let mut out = String::with_capacity(code.len());
    let mut at = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while at < chars.len() {
        let c = chars[at];
        let next = chars.get(at + 1).copied();
        if c == '/' && next == Some('/') {
            while at < chars.len() && chars[at] != '\n' {
                at += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while at < chars.len() {
                if chars[at] == '/' && chars.get(at + 1) == Some(&'*') {
                    depth += 1;
                    at += 2;
                } else if chars[at] == '*' && chars.get(at + 1) == Some(&'/') {
                    depth -= 1;
                    at += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[at]));
                    at += 1;
                }
            }
        } else if c == 'r'
            && matches!(next, Some('"' | '#'))
            && !chars
                .get(at.wrapping_sub(1))
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            // A raw string: r"…", r#"…"#.
            let mut hashes = 0;
            let mut scan = at + 1;
            while chars.get(scan) == Some(&'#') {
                hashes += 1;
                scan += 1;
            }
            if chars.get(scan) != Some(&'"') {
                out.push(c);
                at += 1;
                continue;
            }
            out.push(' ');
            at = scan + 1;
            while at < chars.len() {
                if chars[at] == '"' && (0..hashes).all(|h| chars.get(at + 1 + h) == Some(&'#')) {
                    at += 1 + hashes;
                    break;
                }
                out.push(blank(chars[at]));
                at += 1;
            }
            out.push(' ');
        } else if c == '"' {
            out.push(' ');
            at += 1;
            while at < chars.len() {
                match chars[at] {
                    '\\' => {
                        out.push(' ');
                        at += 1;
                        if at < chars.len() {
                            out.push(blank(chars[at]));
                        }
                    }
                    '"' => break,
                    other => out.push(blank(other)),
                }
                at += 1;
            }
            out.push(' ');
            at += 1;
        } else if c == '\'' {
            // A char literal ('x', '\n', '"'); a lifetime ('a) has no closing quote.
            if next == Some('\\') {
                let close = (at + 2..chars.len()).find(|&i| chars[i] == '\'');
                out.push(' ');
                at = close.map_or(at + 1, |close| close + 1);
            } else if chars.get(at + 2) == Some(&'\'') {
                out.push(' ');
                at += 3;
            } else {
                out.push(c);
                at += 1;
            }
        } else {
            out.push(c);
            at += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(files: &[(&str, &str)]) -> ModuleGraph {
        let files: Vec<SourceFile<'_>> = files
            .iter()
            .map(|(path, text)| SourceFile {
                path: Path::new(*path),
                text,
            })
            .collect();
        build(&files)
    }

    fn uses(graph: &ModuleGraph, file: &str) -> Vec<String> {
        graph[file].iter().cloned().collect()
    }

    #[test]
    fn paths_resolve_to_the_defining_file_through_reexports() {
        let g = graph(&[
            ("lib.rs", "mod engine;\npub use engine::RunContext;\n"),
            (
                "engine/mod.rs",
                "mod context;\nmod dispatch;\npub(crate) use context::RunContext;\nfn f() { dispatch::run(); }\n",
            ),
            ("engine/context.rs", "pub struct RunContext;\n"),
            (
                "engine/dispatch.rs",
                "use crate::RunContext;\nuse super::{context, context::RunContext as R};\n",
            ),
            (
                "engine/tool_loop.rs",
                "fn f() { crate::engine::RunContext::new(); super::super::engine::dispatch::run(); }\n",
            ),
        ]);
        assert_eq!(uses(&g, "engine/dispatch.rs"), ["engine/context.rs"]);
        assert_eq!(uses(&g, "engine/mod.rs"), ["engine/dispatch.rs"]);
        assert_eq!(
            uses(&g, "engine/tool_loop.rs"),
            ["engine/context.rs", "engine/dispatch.rs"]
        );
        assert!(uses(&g, "lib.rs").is_empty());
    }

    #[test]
    fn comments_strings_tests_and_other_crates_are_not_uses() {
        let g = graph(&[
            ("lib.rs", "mod a;\nmod b;\n#[cfg(test)]\nmod support;\n"),
            (
                "a.rs",
                "//! Unlike crate::b::X.\nuse std::fmt;\nfn f() { let s = \"crate::b::X\"; let c = '\"'; g::<'_>(serde_json::json!({})); }\n#[cfg(test)]\nmod tests {\n    use crate::b::X;\n}\n",
            ),
            ("b.rs", "fn f() { Self::g(); self::h(); }\n"),
            ("support.rs", "use crate::a::A;\n"),
            ("b_tests.rs", "use crate::a::A;\n"),
        ]);
        assert!(uses(&g, "a.rs").is_empty());
        assert!(uses(&g, "b.rs").is_empty());
        assert!(!g.contains_key("support.rs"));
        assert!(!g.contains_key("b_tests.rs"));
    }

    #[test]
    fn a_cycle_of_files_inside_one_module_is_found() {
        let g = graph(&[
            ("lib.rs", "mod engine;\n"),
            ("engine/mod.rs", "mod context;\nmod scheduler;\nmod leaf;\n"),
            ("engine/context.rs", "use super::scheduler::Scheduler;\n"),
            (
                "engine/scheduler.rs",
                "use crate::engine::context::RunContext;\n",
            ),
            ("engine/leaf.rs", "use super::context::RunContext;\n"),
        ]);
        assert_eq!(
            cycles(&g),
            [(
                vec![
                    "engine/context.rs".to_owned(),
                    "engine/scheduler.rs".to_owned()
                ],
                vec![
                    (
                        "engine/context.rs".to_owned(),
                        "engine/scheduler.rs".to_owned()
                    ),
                    (
                        "engine/scheduler.rs".to_owned(),
                        "engine/context.rs".to_owned()
                    ),
                ]
            )]
        );
    }
}
