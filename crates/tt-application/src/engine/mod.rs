//! The engine: the only place agents run. Run-scoped state (`context`), one agent's loop
//! state (`invocation`), invocation setup for
//! delegated and handoff agents (`invocation_setup`, `binding`, `prompt_assembly`), the tool
//! loop (`tool_loop`) and fitting its requests into the model's window (`context_fit`), tool
//! dispatch (`dispatch`), model turns (`model_turn`, `streaming`), chat commits (`commit`), the
//! agent tools' work on the run's tasks (`tasks`), fork mode (`fork_mode`, `fork_prefix`), the return gate (`return_gate`), what a delegation is expected to cost (`delegation_estimate`), the task
//! scheduler (`scheduler`) and the delegated worker (`child`).
//!
//! The loop → dispatch → tasks → scheduler → worker → loop recursion stays inside this
//! module, and no file of it imports another that imports it back: the scheduler sits at the
//! bottom, holds the run it serves and reaches it and the worker only through
//! `scheduler::TaskHost`, which the run context implements (`child`). It may use the modules below it (the tool families `tools`, `skills` and
//! `delegation`, the registry, events, guidance, profiles, services, error); none of them uses
//! it back. The service facade (`run_service`, `resume`, `handoff_chain`, `persist_metadata`)
//! sits above it. docs/ARCHITECTURE.md has the module map; `cargo xtask tidy` checks it.

pub(crate) mod approval_gate;
pub(crate) mod binding;
pub(crate) mod call_checks;
pub(crate) mod call_journal;
pub(crate) mod child;
pub(crate) mod commit;
pub(crate) mod context;
pub(crate) mod context_fit;
pub(crate) mod delegation_estimate;
pub(crate) mod dispatch;
pub(crate) mod dispatch_replay;
pub(crate) mod fallback;
pub(crate) mod fork_mode;
pub(crate) mod fork_prefix;
pub(crate) mod held_writes;
pub(crate) mod invocation;
pub(crate) mod invocation_setup;
pub(crate) mod model_turn;
pub(crate) mod oversized_reply;
pub(crate) mod prompt_assembly;
pub(crate) mod records;
pub(crate) mod reply_targets;
pub(crate) mod return_gate;
pub(crate) mod scheduler;
pub(crate) mod spend_gate;
pub(crate) mod streaming;
pub(crate) mod tasks;
pub(crate) mod tool_loop;
pub(crate) mod watchdog;
pub(crate) mod window_state;
pub(crate) mod workspace_keys;
