//! `cargo xtask tidy`: architecture and hygiene checks over `cargo metadata` and the file tree.
//! Reports every violation (file + rule) and fails if there is any; prints `tidy: ok` when clean.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::error_codes;
use crate::file_graph;
use crate::layering::{self, Package};
use crate::manifest;
use crate::module_graph;
use crate::process::cargo_stdout;
use crate::sources;
use crate::violation::Violation;

pub(crate) fn run(root: &Path) -> Result<()> {
    let violations = collect(root)?;
    if violations.is_empty() {
        println!("tidy: ok");
        return Ok(());
    }
    for violation in &violations {
        println!("{violation}");
    }
    bail!("tidy: {} violation(s)", violations.len())
}

fn collect(root: &Path) -> Result<Vec<Violation>> {
    let metadata = cargo_stdout(
        root,
        &[
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ],
    )?;
    let metadata: Value =
        serde_json::from_str(&metadata).context("cargo metadata printed invalid JSON")?;
    let packages = layering::parse_metadata(&metadata)?;

    let mut violations = layering::check(&packages, |package| {
        relative(root, Path::new(&package.manifest_path))
    });
    for package in &packages {
        check_manifest(root, package, &mut violations)?;
        if prints_are_forbidden(&package.name) {
            check_prints(root, package, &mut violations)?;
        }
    }
    for dir in source_roots(root, &packages)? {
        check_headers(root, &dir, &mut violations)?;
        check_crate_files(root, &dir.join("src"), &mut violations)?;
    }
    check_module_cycles(root, &mut violations)?;
    check_error_codes(root, &mut violations)?;
    violations.sort();
    violations.dedup();
    Ok(violations)
}

fn check_manifest(root: &Path, package: &Package, violations: &mut Vec<Violation>) -> Result<()> {
    let path = Path::new(&package.manifest_path);
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    for issue in manifest::check_manifest(&text) {
        violations.push(Violation::new(
            relative(root, path),
            "workspace-deps",
            issue.to_string(),
        ));
    }
    Ok(())
}

/// The error-code table against its uses and its generated doc (xtask/src/error_codes.rs):
/// every code literal in the crates' non-test code is listed, every entry is used, and
/// `docs/errors.md` is current.
fn check_error_codes(root: &Path, violations: &mut Vec<Violation>) -> Result<()> {
    let mut files = Vec::new();
    for dir in read_dir_sorted(&root.join("crates"))? {
        let src = dir.join("src");
        for file in rust_files(&src)? {
            let text = read(&file)?;
            let test_lines = if file_graph::is_test_file(file.strip_prefix(&src).unwrap_or(&file)) {
                vec![true; text.lines().count()]
            } else {
                module_graph::test_code_lines(&text)
            };
            files.push((relative(root, &file), text, test_lines));
        }
    }
    let sources: Vec<error_codes::Source<'_>> = files
        .iter()
        .map(|(path, text, test_lines)| error_codes::Source {
            path,
            text,
            test_lines,
        })
        .collect();
    let entries: Vec<tt_domain::error_codes::ErrorCode> =
        tt_domain::error_codes::all().copied().collect();
    violations.extend(error_codes::unused_entry_violations(&sources, &entries));
    let doc = fs::read_to_string(root.join(error_codes::DOC_PATH)).ok();
    violations.extend(error_codes::doc_violation(
        &error_codes::render(&entries),
        doc.as_deref(),
    ));
    Ok(())
}

/// Library layers never print: they report through events, errors and return values.
fn prints_are_forbidden(package: &str) -> bool {
    matches!(package, "tt-domain" | "tt-ports" | "tt-application")
        || package.starts_with("tt-adapter-")
}

fn check_prints(root: &Path, package: &Package, violations: &mut Vec<Violation>) -> Result<()> {
    let src = package_dir(package).join("src");
    for file in rust_files(&src)? {
        let in_tests_dir = file
            .strip_prefix(&src)
            .unwrap_or(&file)
            .components()
            .any(|part| part.as_os_str() == "tests");
        if in_tests_dir {
            continue;
        }
        let text = read(&file)?;
        for (line, name) in sources::print_macro_lines(&text) {
            violations.push(Violation::new(
                format!("{}:{line}", relative(root, &file)),
                "no-print",
                format!("`{name}` in library code; report through events, errors or return values"),
            ));
        }
    }
    Ok(())
}

/// The crate whose top-level modules must be layered: no import cycle between them, and each
/// uses only modules of lower layers (docs/ARCHITECTURE.md, "The modules of tt-application").
const LAYERED_CRATE_SRC: &str = "crates/tt-application/src";

/// tt-application's top-level modules, bottom layer first. A module may use modules of lower
/// layers only: not its own layer (so one tool family never uses another) and never a higher
/// one (so nothing below the engine can run an agent). A new module joins the layer the module
/// map of docs/ARCHITECTURE.md puts it in.
const APPLICATION_LAYERS: &[&[&str]] = &[
    &[
        "error",
        "services",
        "prompt",
        "prompt_input",
        "replay",
        "journal_read",
    ],
    &["events", "otel", "profiles", "timeline", "usage"],
    &["guidance", "approvals", "spend_limit"],
    // The shared shapes of a tool call (`ToolSuccess`, `ToolEffect`, argument helpers) and the
    // workspace family.
    &["tools"],
    // The other tool families.
    &["skills", "delegation"],
    &["registry"],
    &["engine"],
    &["persist_metadata", "handoff_chain", "resume", "fork"],
    &["run_service"],
    &["start_request"],
];

fn check_module_cycles(root: &Path, violations: &mut Vec<Violation>) -> Result<()> {
    let src = root.join(LAYERED_CRATE_SRC);
    let mut files = Vec::new();
    for file in rust_files(&src)? {
        let text = read(&file)?;
        let path = file.strip_prefix(&src).unwrap_or(&file).to_path_buf();
        files.push((path, text));
    }
    let graph = module_graph::build(
        files
            .iter()
            .map(|(path, text)| (path.as_path(), text.as_str())),
    );
    violations.extend(cycle_violations(&graph));
    violations.extend(layer_violations(&graph, APPLICATION_LAYERS));
    Ok(())
}

/// Every use of a module that is not in a lower layer, every module in no layer, and every
/// layer entry that names no module.
fn layer_violations(graph: &module_graph::ModuleGraph, layers: &[&[&str]]) -> Vec<Violation> {
    let layer_of = |module: &str| layers.iter().position(|layer| layer.contains(&module));
    let violation =
        |detail: String| Violation::new(LAYERED_CRATE_SRC.to_owned(), "module-layer", detail);
    let mut violations = Vec::new();
    for (module, uses) in graph {
        let Some(layer) = layer_of(module) else {
            violations.push(violation(format!(
                "`{module}` is in no layer of APPLICATION_LAYERS (xtask/src/tidy.rs); add it to the layer docs/ARCHITECTURE.md's module map puts it in"
            )));
            continue;
        };
        for used in uses {
            if layer_of(used).is_some_and(|used_layer| used_layer >= layer) {
                violations.push(violation(format!(
                    "`{module}` uses `{used}`, which is not in a lower layer (APPLICATION_LAYERS in xtask/src/tidy.rs); a module may use only modules below it"
                )));
            }
        }
    }
    for module in layers.iter().flat_map(|layer| layer.iter()) {
        if !graph.contains_key(*module) {
            violations.push(violation(format!(
                "APPLICATION_LAYERS names `{module}`, which is no module of the crate; remove it"
            )));
        }
    }
    violations
}

/// One violation per cycle of `graph`, naming its modules and the edges inside it (where to
/// cut).
fn cycle_violations(graph: &module_graph::ModuleGraph) -> Vec<Violation> {
    module_graph::cycles(graph)
        .into_iter()
        .map(|component| {
            let edges: Vec<String> = module_graph::edges_within(graph, &component)
                .into_iter()
                .map(|(from, to)| format!("{from} → {to}"))
                .collect();
            Violation::new(
                LAYERED_CRATE_SRC.to_owned(),
                "module-cycle",
                format!(
                    "modules {} use one another in a cycle ({}); a module may use another only if that one does not use it back",
                    component.join(", "),
                    edges.join(", ")
                ),
            )
        })
        .collect()
}

/// Longest a non-test source file may be, counting its lines outside `#[cfg(test)]` items: past
/// this a file usually does more than one job, and a reader can no longer hold it.
const MAX_FILE_LINES: usize = 800;

/// Files allowed past `MAX_FILE_LINES`, each with the reason. Keep it short: split the file
/// rather than add to it. Empty since the file store's `owned.rs` shed its workspace-key search
/// (the engine hands keys out: `engine/tasks/workspace_keys.rs`).
const LONG_FILES: &[(&str, &str)] = &[];

/// Folders whose files may still use one another in a cycle, each with the reason: a cycle
/// passes only when all its files are under one entry. Keep it short, empty if possible.
/// Empty since the engine's knot was cut (issue #23).
const CYCLE_BASELINE: &[(&str, &str)] = &[];

/// Every crate's files: none in an import cycle, none too long.
fn check_crate_files(root: &Path, src: &Path, violations: &mut Vec<Violation>) -> Result<()> {
    let mut files = Vec::new();
    for file in rust_files(src)? {
        let text = read(&file)?;
        let path = file.strip_prefix(src).unwrap_or(&file).to_path_buf();
        files.push((path, text));
    }
    let location = relative(root, src);
    let sources: Vec<file_graph::SourceFile<'_>> = files
        .iter()
        .map(|(path, text)| file_graph::SourceFile { path, text })
        .collect();
    let graph = file_graph::build(&sources);
    violations.extend(file_cycle_violations(&location, &graph, CYCLE_BASELINE));
    violations.extend(sibling_cycle_violations(
        &location,
        &graph,
        crate::module_cycles::MODULE_CYCLES,
    ));
    violations.extend(long_file_violations(&location, &sources, LONG_FILES));
    violations.extend(long_function_violations(
        &location,
        &sources,
        crate::long_functions::LONG_FUNCTIONS,
    ));
    if crate::glob_exports::NAMED_EXPORT_SRC.contains(&location.as_str()) {
        for (path, text) in &files {
            let tests = module_graph::test_code_lines(text);
            let path = format!("{location}/{}", path.display());
            violations.extend(crate::glob_exports::glob_export_violations(
                &path, text, &tests,
            ));
        }
    }
    Ok(())
}

/// Longest a function of non-test code may be, from its `fn` to its closing brace: past this
/// it usually does several steps that read better as functions of their own.
const MAX_FUNCTION_LINES: usize = 100;

/// Every non-test function over `MAX_FUNCTION_LINES` that neither a `// Long:` comment at its
/// top explains nor `allowed` names at a length it has not outgrown, and every `allowed` entry
/// of this crate that is stale (gone, within the limit, or shorter than listed: lower it).
fn long_function_violations(
    location: &str,
    files: &[file_graph::SourceFile<'_>],
    allowed: &[(&str, &str, usize)],
) -> Vec<Violation> {
    let mut violations = Vec::new();
    let mut seen = BTreeSet::new();
    for file in files {
        if file_graph::is_test_file(file.path) {
            continue;
        }
        let shown = format!("{location}/{}", relative(Path::new(""), file.path));
        for function in crate::fn_length::functions(file.text) {
            let listed = allowed
                .iter()
                .find(|(path, name, _)| *path == shown && *name == function.name);
            if let Some((_, _, listed_lines)) = listed {
                seen.insert((shown.clone(), function.name.clone()));
                if function.lines > *listed_lines {
                    violations.push(Violation::new(
                        format!("{shown}:{}", function.line),
                        "function-length",
                        format!(
                            "`{}` grew to {} lines, past the {listed_lines} it is listed with in xtask/src/long_functions.rs; split it (the list only shrinks)",
                            function.name, function.lines
                        ),
                    ));
                } else if function.lines < *listed_lines {
                    violations.push(Violation::new(
                        format!("{shown}:{}", function.line),
                        "function-length",
                        format!(
                            "`{}` is {} lines, shorter than the {listed_lines} it is listed with; lower the entry in xtask/src/long_functions.rs (or remove it if within {MAX_FUNCTION_LINES})",
                            function.name, function.lines
                        ),
                    ));
                }
                continue;
            }
            if function.lines > MAX_FUNCTION_LINES && !function.explained {
                violations.push(Violation::new(
                    format!("{shown}:{}", function.line),
                    "function-length",
                    format!(
                        "`{}` is {} lines, over {MAX_FUNCTION_LINES}; split it by step, or say why at its top with `{}`",
                        function.name,
                        function.lines,
                        crate::fn_length::EXPLAINED_MARKER
                    ),
                ));
            }
        }
    }
    let prefix = format!("{location}/");
    for (path, name, _) in allowed {
        if path.starts_with(&prefix) && !seen.contains(&((*path).to_owned(), (*name).to_owned())) {
            violations.push(Violation::new(
                (*path).to_owned(),
                "function-length",
                format!("`{name}` is listed in xtask/src/long_functions.rs but not found; remove the entry"),
            ));
        }
    }
    violations
}

/// One violation per cycle of files, naming the files and the edges inside it (where to cut);
/// a cycle whose files are all in `baseline` passes.
fn file_cycle_violations(
    location: &str,
    graph: &module_graph::ModuleGraph,
    baseline: &[(&str, &str)],
) -> Vec<Violation> {
    let under = |folder: &str, file: &String| format!("{location}/{file}").starts_with(folder);
    let allowed = |files: &[String]| {
        baseline
            .iter()
            .any(|(folder, _)| files.iter().all(|file| under(folder, file)))
    };
    file_graph::cycles(graph)
        .into_iter()
        .filter(|(files, _)| !allowed(files))
        .map(|(files, edges)| {
            let edges: Vec<String> = edges
                .into_iter()
                .map(|(from, to)| format!("{from} → {to}"))
                .collect();
            Violation::new(
                location.to_owned(),
                "file-cycle",
                format!(
                    "files {} use one another in a cycle ({}); a file may use another only if that one does not use it back",
                    files.join(", "),
                    edges.join(", ")
                ),
            )
        })
        .collect()
}

/// One violation per cycle among the modules of a folder that `allowed` does not list (a cycle
/// passes when a listed one of the same folder holds all its modules), and one per listed cycle
/// of this crate that is gone or smaller than listed (the list only shrinks).
fn sibling_cycle_violations(
    location: &str,
    graph: &module_graph::ModuleGraph,
    allowed: &[(&str, &str, &[&str])],
) -> Vec<Violation> {
    let found = crate::sibling_cycles::cycles(graph);
    let shown = |folder: &str| {
        if folder.is_empty() {
            format!("{location}/")
        } else {
            format!("{location}/{folder}/")
        }
    };
    let mut violations = Vec::new();
    for cycle in &found {
        let listed = allowed.iter().any(|(path, folder, modules)| {
            *path == location
                && *folder == cycle.folder
                && cycle
                    .modules
                    .iter()
                    .all(|module| modules.contains(&module.as_str()))
        });
        if listed {
            continue;
        }
        let edges: Vec<String> = cycle
            .edges
            .iter()
            .map(|(from, to)| format!("{from} → {to}"))
            .collect();
        violations.push(Violation::new(
            shown(&cycle.folder),
            "module-cycle",
            format!(
                "modules {} use one another in a cycle ({}), counting each use at the module it goes into; a module may use another only if that one does not use it back",
                cycle.modules.join(", "),
                edges.join(", ")
            ),
        ));
    }
    for (path, folder, modules) in allowed.iter().filter(|(path, ..)| *path == location) {
        let still = found.iter().any(|cycle| {
            cycle.folder == *folder
                && cycle.modules.len() == modules.len()
                && cycle
                    .modules
                    .iter()
                    .all(|module| modules.contains(&module.as_str()))
        });
        if !still {
            violations.push(Violation::new(
                format!("{path}/{folder}"),
                "module-cycle",
                format!(
                    "the cycle of {} listed in xtask/src/module_cycles.rs is gone or smaller; update or remove the entry (the list only shrinks)",
                    modules.join(", ")
                ),
            ));
        }
    }
    violations
}

/// Every non-test file over `MAX_FILE_LINES` lines of non-test code that `allowed` does not
/// name, and every `allowed` entry of this crate that is no longer needed.
fn long_file_violations(
    location: &str,
    files: &[file_graph::SourceFile<'_>],
    allowed: &[(&str, &str)],
) -> Vec<Violation> {
    let mut violations = Vec::new();
    let mut needed = BTreeSet::new();
    for file in files {
        if file_graph::is_test_file(file.path) {
            continue;
        }
        let shown = format!("{location}/{}", relative(Path::new(""), file.path));
        let lines = module_graph::without_test_code(file.text).lines().count();
        if lines <= MAX_FILE_LINES {
            continue;
        }
        if allowed.iter().any(|(path, _)| *path == shown) {
            needed.insert(shown);
            continue;
        }
        violations.push(Violation::new(
            shown,
            "file-length",
            format!(
                "{lines} lines of non-test code, over {MAX_FILE_LINES}; split it by job (or name it with a reason in LONG_FILES, xtask/src/tidy.rs)"
            ),
        ));
    }
    let prefix = format!("{location}/");
    for (path, _) in allowed {
        if path.starts_with(&prefix) && !needed.contains(*path) {
            violations.push(Violation::new(
                (*path).to_owned(),
                "file-length",
                format!("named in LONG_FILES but within {MAX_FILE_LINES} lines; remove the entry"),
            ));
        }
    }
    violations
}

fn check_headers(root: &Path, dir: &Path, violations: &mut Vec<Violation>) -> Result<()> {
    for file in rust_files(dir)? {
        if !sources::has_module_header(&read(&file)?) {
            violations.push(Violation::new(
                relative(root, &file),
                "module-header",
                "the file must start with a `//!` comment saying what the module is for".to_owned(),
            ));
        }
    }
    Ok(())
}

/// Every member's package directory, plus every directory under `crates/` (so a crate that is
/// not yet a workspace member is checked too).
fn source_roots(root: &Path, packages: &[Package]) -> Result<BTreeSet<PathBuf>> {
    let mut dirs: BTreeSet<PathBuf> = packages.iter().map(package_dir).collect();
    let crates = root.join("crates");
    if crates.is_dir() {
        for entry in read_dir_sorted(&crates)? {
            if entry.is_dir() {
                dirs.insert(entry);
            }
        }
    }
    Ok(dirs)
}

fn package_dir(package: &Package) -> PathBuf {
    let manifest = Path::new(&package.manifest_path);
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// All `.rs` files under `dir`, sorted, skipping build output, hidden directories and nested
/// packages (those are checked as packages of their own).
fn rust_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    if dir.is_dir() {
        collect_rust_files(dir, &mut files)?;
    }
    Ok(files)
}

fn collect_rust_files(dir: &Path, files: &mut Vec<PathBuf>) -> Result<()> {
    for path in read_dir_sorted(dir)? {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if path.is_dir() {
            let skip =
                name == "target" || name.starts_with('.') || path.join("Cargo.toml").exists();
            if !skip {
                collect_rust_files(&path, files)?;
            }
        } else if name.ends_with(".rs") {
            files.push(path);
        }
    }
    Ok(())
}

fn read_dir_sorted(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut entries = fs::read_dir(dir)
        .with_context(|| format!("listing {}", dir.display()))?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<std::io::Result<Vec<_>>>()
        .with_context(|| format!("listing {}", dir.display()))?;
    entries.sort();
    Ok(entries)
}

fn read(path: &Path) -> Result<String> {
    fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// `path` relative to the workspace root, with `/` separators, for stable output.
fn relative(root: &Path, path: &Path) -> String {
    let Ok(shown) = path.strip_prefix(root) else {
        return path.display().to_string();
    };
    shown
        .components()
        .map(|part| part.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_uses_of_lower_layers_pass() {
        let layers: &[&[&str]] = &[&["error"], &["tools", "skills"], &["engine"]];
        let graph = |list: &[(&'static str, &'static str)]| {
            module_graph::build(list.iter().map(|(path, text)| (Path::new(*path), *text)))
        };
        let details = |graph: &module_graph::ModuleGraph| -> Vec<String> {
            layer_violations(graph, layers)
                .into_iter()
                .map(|violation| violation.detail)
                .collect()
        };
        let layered = graph(&[
            (
                "engine/mod.rs",
                "use crate::tools::X;\nuse crate::error::E;",
            ),
            ("tools/mod.rs", "use crate::error::E;"),
            ("skills/mod.rs", "use crate::error::E;"),
            ("error.rs", ""),
        ]);
        assert!(details(&layered).is_empty());
        let crossing = graph(&[
            ("engine/mod.rs", ""),
            ("tools/mod.rs", "use crate::skills::S;"),
            ("skills/mod.rs", "fn f() { crate::engine::run(); }"),
            ("error.rs", ""),
            ("extra.rs", ""),
        ]);
        assert_eq!(
            details(&crossing),
            [
                "`extra` is in no layer of APPLICATION_LAYERS (xtask/src/tidy.rs); add it to the layer docs/ARCHITECTURE.md's module map puts it in",
                "`skills` uses `engine`, which is not in a lower layer (APPLICATION_LAYERS in xtask/src/tidy.rs); a module may use only modules below it",
                "`tools` uses `skills`, which is not in a lower layer (APPLICATION_LAYERS in xtask/src/tidy.rs); a module may use only modules below it",
            ]
        );
        let gone = graph(&[
            ("engine/mod.rs", ""),
            ("tools/mod.rs", ""),
            ("skills/mod.rs", ""),
        ]);
        assert_eq!(
            details(&gone),
            ["APPLICATION_LAYERS names `error`, which is no module of the crate; remove it"]
        );
    }

    #[test]
    fn a_module_cycle_is_a_violation_and_a_layered_crate_has_none() {
        let files = |list: &[(&'static str, &'static str)]| {
            module_graph::build(list.iter().map(|(path, text)| (Path::new(*path), *text)))
        };
        let layered = files(&[
            (
                "engine/mod.rs",
                "use crate::tools::X;\nuse crate::events::E;",
            ),
            ("tools/mod.rs", "use crate::error::E;"),
            ("run_service.rs", "use crate::engine::context::RunContext;"),
        ]);
        assert!(cycle_violations(&layered).is_empty());
        let cyclic = files(&[
            ("engine/mod.rs", "use crate::tools::X;"),
            ("tools/mod.rs", "fn f() { crate::engine::context::g(); }"),
            ("error.rs", ""),
        ]);
        let found: Vec<String> = cycle_violations(&cyclic)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            found,
            [
                "crates/tt-application/src: module-cycle: modules engine, tools use one another in a cycle (engine → tools, tools → engine); a module may use another only if that one does not use it back"
            ]
        );
    }

    fn fixture(files: &[(&'static str, &'static str)]) -> Vec<file_graph::SourceFile<'static>> {
        files
            .iter()
            .map(|(path, text)| file_graph::SourceFile {
                path: Path::new(*path),
                text,
            })
            .collect()
    }

    #[test]
    fn a_file_cycle_is_named_with_its_edges_unless_its_folder_is_baselined() {
        let tree = fixture(&[
            ("lib.rs", "mod engine;\nmod tools;\n"),
            ("engine/mod.rs", "mod context;\nmod scheduler;\n"),
            ("engine/context.rs", "use super::scheduler::Scheduler;\n"),
            (
                "engine/scheduler.rs",
                "use crate::engine::context::RunContext;\n",
            ),
            ("tools.rs", "use crate::engine::context::RunContext;\n"),
        ]);
        let graph = file_graph::build(&tree);
        let found: Vec<String> = file_cycle_violations("crates/x/src", &graph, &[])
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            found,
            [
                "crates/x/src: file-cycle: files engine/context.rs, engine/scheduler.rs use one another in a cycle (engine/context.rs → engine/scheduler.rs, engine/scheduler.rs → engine/context.rs); a file may use another only if that one does not use it back"
            ]
        );
        let baseline: &[(&str, &str)] = &[("crates/x/src/engine/", "being cut")];
        assert!(file_cycle_violations("crates/x/src", &graph, baseline).is_empty());
        let acyclic = file_graph::build(&fixture(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            ("a.rs", "use crate::b::B;\n"),
            ("b.rs", "pub struct B;\n"),
        ]));
        assert!(file_cycle_violations("crates/x/src", &acyclic, &[]).is_empty());
    }

    #[test]
    fn a_long_non_test_file_fails_unless_allowed_and_a_stale_allowance_fails() {
        let long = "fn f() {}\n".repeat(MAX_FILE_LINES + 1);
        let long: &'static str = Box::leak(long.into_boxed_str());
        let with_tests = format!(
            "{}#[cfg(test)]\nmod tests {{\n{}}}\n",
            "fn f() {}\n".repeat(MAX_FILE_LINES),
            "    fn t() {}\n".repeat(50)
        );
        let with_tests: &'static str = Box::leak(with_tests.into_boxed_str());
        let tree = fixture(&[
            ("lib.rs", "mod big;\n"),
            ("big.rs", long),
            ("tested.rs", with_tests),
            ("big_tests.rs", long),
        ]);
        let found: Vec<String> = long_file_violations("crates/x/src", &tree, &[])
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            found,
            [format!(
                "crates/x/src/big.rs: file-length: {} lines of non-test code, over {MAX_FILE_LINES}; split it by job (or name it with a reason in LONG_FILES, xtask/src/tidy.rs)",
                MAX_FILE_LINES + 1
            )]
        );
        let allowed: &[(&str, &str)] = &[
            ("crates/x/src/big.rs", "a catalogue"),
            ("crates/x/src/tested.rs", "no longer long"),
            ("crates/y/src/other.rs", "another crate's"),
        ];
        let found: Vec<String> = long_file_violations("crates/x/src", &tree, allowed)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            found,
            [format!(
                "crates/x/src/tested.rs: file-length: named in LONG_FILES but within {MAX_FILE_LINES} lines; remove the entry"
            )]
        );
    }

    /// A function `name` spanning `lines` lines, optionally explained by a `// Long:` comment.
    fn function_of(name: &str, lines: usize, explained: bool) -> String {
        let marker = if explained { "// Long: a table.\n" } else { "" };
        let body: String = (2..lines)
            .map(|i| format!("    let _x{i} = {i};\n"))
            .collect();
        format!("{marker}fn {name}() {{\n{body}}}\n")
    }

    #[test]
    fn a_long_function_fails_unless_explained_or_listed_and_the_list_only_shrinks() {
        let limit = MAX_FUNCTION_LINES;
        let text = [
            function_of("new_long", limit + 1, false),
            function_of("explained", limit + 5, true),
            function_of("short", limit, false),
            function_of("listed_same", limit + 10, false),
            function_of("listed_grew", limit + 11, false),
            function_of("listed_shrank", limit + 9, false),
        ]
        .concat();
        let text: &'static str = Box::leak(text.into_boxed_str());
        let tree = fixture(&[("lib.rs", text), ("lib_tests.rs", text)]);
        let allowed: &[(&str, &str, usize)] = &[
            ("crates/x/src/lib.rs", "listed_same", limit + 10),
            ("crates/x/src/lib.rs", "listed_grew", limit + 10),
            ("crates/x/src/lib.rs", "listed_shrank", limit + 10),
            ("crates/x/src/lib.rs", "gone", limit + 10),
            ("crates/y/src/lib.rs", "another_crates", limit + 10),
        ];
        let found: Vec<String> = long_function_violations("crates/x/src", &tree, allowed)
            .iter()
            .map(|violation| {
                let text = violation.to_string();
                text[..text.find(" lines").unwrap_or(text.len())].to_owned()
            })
            .collect();
        assert_eq!(found.len(), 4, "{found:#?}");
        assert!(found[0].contains("`new_long` is 101"), "{found:#?}");
        assert!(found[1].contains("`listed_grew` grew to 111"), "{found:#?}");
        assert!(found[2].contains("`listed_shrank` is 109"), "{found:#?}");
        assert!(found[3].contains("`gone` is listed"), "{found:#?}");
    }

    #[test]
    fn a_module_cycle_fails_unless_listed_and_the_list_only_shrinks() {
        let mut graph = module_graph::ModuleGraph::new();
        let mut edge = |from: &str, to: &str| {
            graph
                .entry(from.to_owned())
                .or_default()
                .insert(to.to_owned());
        };
        // A listed loop of three that lost nothing, a listed one that lost a module, a new one.
        edge("engine/a.rs", "engine/b/x.rs");
        edge("engine/b/mod.rs", "engine/c.rs");
        edge("engine/c.rs", "engine/a.rs");
        edge("tools/p.rs", "tools/q.rs");
        edge("tools/q.rs", "tools/p.rs");
        edge("host.rs", "run_handle/mod.rs");
        edge("run_handle/reads.rs", "host/fork.rs");
        let allowed: &[(&str, &str, &[&str])] = &[
            ("crates/x/src", "engine", &["a", "b", "c"]),
            ("crates/x/src", "tools", &["p", "q", "r"]),
            ("crates/y/src", "", &["host", "run_handle"]),
        ];
        let found: Vec<String> = sibling_cycle_violations("crates/x/src", &graph, allowed)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(
            found[0].contains("modules host, run_handle use one another"),
            "{found:#?}"
        );
        assert!(found[1].contains("cycle of p, q, r listed"), "{found:#?}");
    }

    #[test]
    fn paths_are_shown_relative_to_the_root() {
        let root = Path::new("/ws");
        assert_eq!(
            relative(root, Path::new("/ws/crates/tt-cli/Cargo.toml")),
            "crates/tt-cli/Cargo.toml"
        );
        assert_eq!(
            relative(root, Path::new("/elsewhere/x.rs")),
            "/elsewhere/x.rs"
        );
    }

    #[test]
    fn library_layers_may_not_print_but_the_edges_may() {
        for quiet in [
            "tt-domain",
            "tt-ports",
            "tt-application",
            "tt-adapter-provider-openai",
        ] {
            assert!(prints_are_forbidden(quiet), "{quiet}");
        }
        for loud in ["tt-runtime", "tt-cli", "tt-testkit", "tt-e2e", "xtask"] {
            assert!(!prints_are_forbidden(loud), "{loud}");
        }
    }
}
