//! Import cycles between the modules of one folder, for `cargo xtask tidy`'s `module-cycle`
//! rule in every crate. The file graph (`file_graph`) resolves a path to the file that defines
//! the item, so a loop of modules can hide in it: `invocation.rs` using
//! `context_fit::WindowState` is an edge to `context_fit/window_state.rs`, while
//! `context_fit/mod.rs` uses `model_turn.rs`, which uses `invocation.rs`. No two files use each
//! other, yet the modules `context_fit`, `model_turn` and `invocation` do.
//!
//! Here every file edge is lifted to the folder both files share: the edge `a/b/x.rs → a/c.rs`
//! becomes `a/b → a/c` among the modules of `a/`. A folder's own `mod.rs` (the crate root's
//! `lib.rs`/`main.rs`) is a node of that folder too, since its items are the parent module's:
//! a child that uses them while the parent uses the child is a loop through the parent.

use std::collections::BTreeMap;

use crate::module_graph::{self, ModuleGraph};

/// A cycle among the modules of one folder: the folder (`""` for `src/`), its modules (sorted)
/// and the edges inside it (where to cut).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ModuleCycle {
    pub folder: String,
    pub modules: Vec<String>,
    pub edges: Vec<(String, String)>,
}

/// Every cycle among sibling modules of `files` (the file graph of one crate: paths relative to
/// `src/`, `/`-separated).
pub(crate) fn cycles(files: &ModuleGraph) -> Vec<ModuleCycle> {
    let mut folders: BTreeMap<String, ModuleGraph> = BTreeMap::new();
    for (from, used) in files {
        for to in used {
            if let Some((folder, a, b)) = sibling_edge(from, to) {
                folders
                    .entry(folder)
                    .or_default()
                    .entry(a)
                    .or_default()
                    .insert(b);
            }
        }
    }
    let mut found = Vec::new();
    for (folder, graph) in &folders {
        for modules in module_graph::cycles(graph) {
            let edges = module_graph::edges_within(graph, &modules);
            found.push(ModuleCycle {
                folder: folder.clone(),
                modules,
                edges,
            });
        }
    }
    found
}

/// The folder two files share and the module of each directly under it, or `None` when both
/// are in the same module of that folder.
fn sibling_edge(from: &str, to: &str) -> Option<(String, String, String)> {
    let from_parts: Vec<&str> = from.split('/').collect();
    let to_parts: Vec<&str> = to.split('/').collect();
    // The folders each file sits in (all parts but the file name).
    let from_dirs = &from_parts[..from_parts.len() - 1];
    let to_dirs = &to_parts[..to_parts.len() - 1];
    let shared = from_dirs
        .iter()
        .zip(to_dirs)
        .take_while(|(a, b)| a == b)
        .count();
    let folder = from_dirs[..shared].join("/");
    let a = node_in(&from_parts, shared);
    let b = node_in(&to_parts, shared);
    (a != b).then_some((folder, a, b))
}

/// The node of `parts` among the modules of the folder made of its first `depth` parts: the
/// child module it is in (`x` for `x.rs` and for anything under `x/`), or `mod.rs`/`lib.rs`/
/// `main.rs` for the folder's own file, which stands for the folder's module itself.
fn node_in(parts: &[&str], depth: usize) -> String {
    let next = parts[depth];
    if depth + 1 < parts.len() {
        return next.to_owned();
    }
    match next {
        "mod.rs" | "lib.rs" | "main.rs" => next.to_owned(),
        file => file.strip_suffix(".rs").unwrap_or(file).to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(edges: &[(&str, &str)]) -> ModuleGraph {
        let mut graph = ModuleGraph::new();
        for (from, to) in edges {
            graph
                .entry((*from).to_owned())
                .or_default()
                .insert((*to).to_owned());
            graph.entry((*to).to_owned()).or_default();
        }
        graph
    }

    #[test]
    fn a_loop_of_modules_no_two_files_close_is_found() {
        // The shape the file check cannot see: the use of a re-exported type goes to the file
        // that defines it, not to the module that re-exports it.
        let files = graph(&[
            ("engine/context_fit/mod.rs", "engine/model_turn.rs"),
            ("engine/model_turn.rs", "engine/invocation.rs"),
            ("engine/invocation.rs", "engine/context_fit/window_state.rs"),
        ]);
        assert_eq!(
            cycles(&files),
            vec![ModuleCycle {
                folder: "engine".to_owned(),
                modules: vec![
                    "context_fit".to_owned(),
                    "invocation".to_owned(),
                    "model_turn".to_owned()
                ],
                edges: vec![
                    ("context_fit".to_owned(), "model_turn".to_owned()),
                    ("invocation".to_owned(), "context_fit".to_owned()),
                    ("model_turn".to_owned(), "invocation".to_owned()),
                ],
            }]
        );
    }

    #[test]
    fn layered_modules_and_uses_inside_one_module_pass() {
        let files = graph(&[
            (
                "engine/context_fit/mod.rs",
                "engine/context_fit/window_state.rs",
            ),
            (
                "engine/context_fit/trim.rs",
                "engine/context_fit/window_state.rs",
            ),
            ("engine/tool_loop.rs", "engine/context_fit/mod.rs"),
            ("engine/tool_loop.rs", "events.rs"),
            ("engine/mod.rs", "engine/tool_loop.rs"),
        ]);
        assert_eq!(cycles(&files), Vec::new());
    }

    #[test]
    fn a_child_that_uses_its_parent_which_uses_it_is_a_loop_through_the_parent() {
        let files = graph(&[
            ("tools/mod.rs", "tools/workspace.rs"),
            ("tools/workspace.rs", "tools/mod.rs"),
        ]);
        let found = cycles(&files);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].folder, "tools");
        assert_eq!(found[0].modules, ["mod.rs", "workspace"]);
    }

    #[test]
    fn modules_of_the_crate_root_loop_through_lib() {
        let files = graph(&[
            ("host.rs", "run_handle.rs"),
            ("run_handle/x.rs", "host/y.rs"),
        ]);
        let found = cycles(&files);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].folder, "");
        assert_eq!(found[0].modules, ["host", "run_handle"]);
    }
}
