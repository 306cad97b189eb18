//! Agent profiles: what an agent is (prompt, model binding, tools, budgets, workspace roots,
//! delegation rights, output artifacts), their validation, and the built-in `default-writer`.

mod builtin;
mod definition;
mod model_cache;
mod model_fallbacks;
mod validation;
mod watchdog;

pub use crate::model::CacheTtl;
pub use builtin::{
    DEFAULT_PROFILE_ID, DEFAULT_WRITER_TOOLS, built_in_profiles, default_writer_definition,
};
pub use definition::*;
pub use model_cache::ModelCachePolicy;
pub use model_fallbacks::{FallbackBinding, MAX_MODEL_FALLBACKS};
pub use validation::{
    MAX_CONTEXT_WINDOW_TOKENS, MIN_CONTEXT_WINDOW_TOKENS, MIN_TOOL_RESULT_TOKENS, ProfileSource,
    ResolvedProfile, resolve_profile, validate_profile,
};
pub use watchdog::{MAX_WATCHDOG_SECONDS, WatchdogLimits};
