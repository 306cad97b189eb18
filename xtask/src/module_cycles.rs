//! The shrink-only list of import cycles among the modules of one folder that tidy's
//! `module-cycle` rule still lets pass (`sibling_cycles.rs`). Cut a cycle rather than add one;
//! when a cycle loses a module, shorten its entry, and remove it once the cycle is gone.

/// `(crate's src folder, folder inside it ("" for src/), the modules of the cycle)`; a module is
/// a file's stem, a folder's name, or `mod.rs`/`lib.rs`/`main.rs` for the folder's own module.
pub const MODULE_CYCLES: &[(&str, &str, &[&str])] = &[
    // The run context reaches into the task table (`context → tasks`), and the task table and
    // every step of a turn reach back into the context: cut by moving what `context` takes
    // from `tasks` below both.
    (
        "crates/tt-application/src",
        "engine",
        &[
            "binding",
            "context",
            "context_fit",
            "fallback",
            "invocation",
            "invocation_setup",
            "model_turn",
            "prompt_assembly",
            "streaming",
            "tasks",
        ],
    ),
    // Profiles name generation settings, costs and skills, and those name profiles, models and
    // runs back (`generation → profile`, `skill → profile`, `tool → run`).
    (
        "crates/tt-domain/src",
        "",
        &[
            "context_window",
            "cost",
            "generation",
            "model",
            "profile",
            "run",
            "skill",
            "tool",
        ],
    ),
];
