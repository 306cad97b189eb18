//! Skills for agents: which skills an invocation sees, in which scope order and after which
//! overrides (`resolve`), the three tools `skill.list`, `skill.search` and `skill.read` with their
//! per-invocation read budget (`tools`), and their model-facing specs (`specs`). Resolving and
//! journaling an invocation's skills at its start is the engine's (`engine::invocation_setup`).

pub(crate) mod resolve;
pub(crate) mod specs;
pub(crate) mod tools;

#[cfg(test)]
mod behaviour_tests;

pub(crate) use resolve::{ResolvedSkills, resolve_invocation_skills};
pub(crate) use specs::skill_tool_spec;
pub(crate) use tools::{SkillReadBudget, SkillToolEnv, execute};
