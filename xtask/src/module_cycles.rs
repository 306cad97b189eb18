//! The shrink-only list of import cycles among the modules of one folder that tidy's
//! `module-cycle` rule still lets pass (`sibling_cycles.rs`). Cut a cycle rather than add one;
//! when a cycle loses a module, shorten its entry, and remove it once the cycle is gone.

/// `(crate's src folder, folder inside it ("" for src/), the modules of the cycle)`; a module is
/// a file's stem, a folder's name, or `mod.rs`/`lib.rs`/`main.rs` for the folder's own module.
/// Empty: the three cycles there were when the rule came (the engine's turn modules,
/// tt-domain's modules around `profile`, tt-runtime's `host` and `run_handle`) are cut.
pub(crate) const MODULE_CYCLES: &[(&str, &str, &[&str])] = &[];
